"""What the controller has decided, read from ZooKeeper (the source of truth in ZK mode).

Fences wait on this: who leads, at which leader epoch, the ISR, which brokers are
registered, which broker is the controller. Also the writes the harness makes to
ZooKeeper: deleting a *dead* broker's registration so the controller notices the failure
now instead of after the session timeout (``detect`` steps), and a dead controller's
``/controller`` node (controller failover) - exactly what session expiry would do, minus
the wait.
"""

from __future__ import annotations

import json
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from harness.db.mode.view import PartitionView
from harness.db.names import PARTITION, TOPIC

# kazoo logs every dropped connection; brokers and ZooKeeper dying is this harness's job.
logging.getLogger("kazoo").setLevel(logging.CRITICAL)


@contextmanager
def ctrl_c_after_the_call() -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT) that arrives inside a kazoo call until the call returns.

    kazoo's ``KazooClient._call`` wakes its connection thread with ``write_sock.send`` under
    a bare ``except:`` that sets ``ConnectionClosedError("Connection has been closed")`` on
    the request: a KeyboardInterrupt raised there (the signal handler runs at the next
    bytecode, inside that ``try``) was swallowed, and ``hwchaos run`` interrupted during a
    fence that reads ZooKeeper died with that traceback instead of "interrupted" (a CI trial
    under load). A call takes milliseconds (at most the client's timeout), so the Ctrl-C is
    only late by that much. Outside the main thread, or with a handler that is not Python's,
    nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGINT)
    if not callable(before):  # SIG_IGN or SIG_DFL: no KeyboardInterrupt to misplace
        yield
        return
    held: list[Any] = []

    def hold(signum: int, frame: Any) -> None:
        held.append(frame)

    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
    if held:
        before(signal.SIGINT, held[0])


class _Calls:
    """The kazoo client, each request (what goes through ``_call``) run under
    :func:`ctrl_c_after_the_call`. ``start`` and ``stop`` are left bare: they wait up to the
    client's timeout on a connection, and neither swallows an exception."""

    REQUESTS = frozenset({"exists", "get", "get_children", "create", "delete"})

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._client, name)
        if name not in self.REQUESTS:
            return method  # type: ignore[no-any-return]

        def call(*args: Any, **kwargs: Any) -> Any:
            with ctrl_c_after_the_call():
                return method(*args, **kwargs)

        return call


class ZkView:
    """A short-lived read-mostly ZooKeeper client (kazoo)."""

    def __init__(self, connect: str, timeout: float = 10.0, topic: str = TOPIC) -> None:
        self.topic = topic  # the run's test topic, what ``topic=None`` below means
        from kazoo.client import KazooClient

        client = KazooClient(hosts=connect, timeout=timeout, read_only=False)
        self._zk: Any = _Calls(client)
        try:
            self._zk.start(timeout=timeout)
        except BaseException:  # a time-out closes it; a Ctrl-C during start must too
            self.close()
            raise

    def close(self) -> None:
        try:
            self._zk.stop()
            self._zk.close()
        except Exception:  # closing must never mask the real error
            pass

    def __enter__(self) -> ZkView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def live_brokers(self) -> tuple[int, ...]:
        if not self._zk.exists("/brokers/ids"):
            return ()
        return tuple(sorted(int(x) for x in self._zk.get_children("/brokers/ids")))

    def pending_deletions(self) -> tuple[str, ...]:
        """``/admin/delete_topics``: the controller removes a topic's node there last, once
        every replica stopped and deleted it (TopicDeletionManager.completeDeleteTopic)."""
        from kazoo.exceptions import NoNodeError

        try:
            return tuple(sorted(self._zk.get_children("/admin/delete_topics")))
        except NoNodeError:
            return ()

    def controller(self) -> int:
        if not self._zk.exists("/controller"):
            return -1
        data, _ = self._zk.get("/controller")
        return int(json.loads(data.decode())["brokerid"])

    def partition(
        self, topic: str | None = None, partition: int = PARTITION
    ) -> PartitionView | None:
        topic = topic or self.topic
        path = f"/brokers/topics/{topic}/partitions/{partition}/state"
        from kazoo.exceptions import NoNodeError

        try:
            data, _ = self._zk.get(path)
        except NoNodeError:  # not created yet, or deleted (a topic deletion) meanwhile
            return None
        state = json.loads(data.decode())
        extra: dict[str, str] = {}
        if int(state["leader"]) < 0:
            extra = self._offline_facts(topic, partition)
        return PartitionView(
            leader=int(state["leader"]),
            leader_epoch=int(state["leader_epoch"]),
            isr=tuple(sorted(int(b) for b in state["isr"])),
            live=self.live_brokers(),
            controller=self.controller(),
            extra=extra,
        )

    def _offline_facts(self, topic: str, partition: int) -> dict[str, str]:
        """What decides who the controller may elect for an offline partition: its replica
        assignment (``replicas``, comma-separated) and the topic's
        ``unclean.leader.election.enable`` as ZooKeeper holds it (``unclean``; absent when
        the topic does not set it). Read only while the partition is offline."""
        from kazoo.exceptions import NoNodeError

        facts: dict[str, str] = {}
        try:
            facts["replicas"] = ",".join(str(b) for b in self.assignment(topic, partition))
            data, _ = self._zk.get(f"/config/topics/{topic}")
        except NoNodeError:
            return facts
        flag = json.loads(data.decode()).get("config", {}).get("unclean.leader.election.enable")
        if flag is not None:
            facts["unclean"] = str(flag).lower()
        return facts

    def create(self, path: str, data: bytes) -> None:
        """Create a persistent node (and its parents) unless it exists."""
        if not self._zk.exists(path):
            self._zk.create(path, data, makepath=True)

    def create_topic(self, name: str, replica_ids: list[int], config: dict[str, str]) -> None:
        """Write the assignment and topic config, as AdminUtils does in ZooKeeper mode.

        Writing the znodes (rather than starting a kafka-topics JVM) takes milliseconds and
        works the same on every ZooKeeper-mode version, 0.10 to 3.x.
        """
        self.create(f"/config/topics/{name}", json.dumps({"version": 1, "config": config}).encode())
        self.create(
            f"/brokers/topics/{name}",
            json.dumps({"version": 1, "partitions": {str(PARTITION): replica_ids}}).encode(),
        )

    def delete_topic(self, name: str) -> None:
        """What ``kafka-topics.sh --delete`` writes in ZooKeeper mode (AdminUtils.deleteTopic,
        every release 0.8 to 3.x): ``/admin/delete_topics/<topic>``, which the controller's
        TopicDeletionManager acts on (``delete.topic.enable`` is set). A topic that does not
        exist is left alone."""
        if self._zk.exists(f"/brokers/topics/{name}"):
            self.create(f"/admin/delete_topics/{name}", b"")

    def assignment(self, topic: str | None = None, partition: int = PARTITION) -> list[int]:
        """The partition's replica assignment in order (its head is the preferred leader)."""
        topic = topic or self.topic
        data, _ = self._zk.get(f"/brokers/topics/{topic}")
        return [int(b) for b in json.loads(data.decode())["partitions"][str(partition)]]

    def reassign(
        self, replicas: list[int], topic: str | None = None, partition: int = PARTITION
    ) -> None:
        """Ask the controller for a new assignment: what kafka-reassign-partitions.sh writes.

        ``/admin/reassign_partitions`` (version 1) is read by every ZooKeeper-mode controller,
        0.8 to 3.x (KafkaController.onPartitionReassignment); the controller deletes it when
        the reassignment is complete.
        """
        topic = topic or self.topic
        body = {
            "version": 1,
            "partitions": [{"topic": topic, "partition": partition, "replicas": replicas}],
        }
        self._zk.create("/admin/reassign_partitions", json.dumps(body).encode(), makepath=True)

    def preferred_election(self, topic: str | None = None, partition: int = PARTITION) -> None:
        """What kafka-preferred-replica-election.sh writes (every ZooKeeper-mode release).

        The controller's PreferredReplicaPartitionLeaderSelector (3.x:
        Election.leaderForPreferredReplica) elects the head of the assignment if it is live
        and in the ISR, then deletes the znode.
        """
        topic = topic or self.topic
        body = {"version": 1, "partitions": [{"topic": topic, "partition": partition}]}
        self._zk.create(
            "/admin/preferred_replica_election", json.dumps(body).encode(), makepath=True
        )

    def admin_pending(self, what: str) -> bool:
        """Whether ``/admin/<what>`` still waits for the controller."""
        return bool(self._zk.exists(f"/admin/{what}"))

    def expire_registration(self, broker_id: int) -> bool:
        """Delete a dead broker's ephemeral registration, as session expiry would."""
        path = f"/brokers/ids/{broker_id}"
        if not self._zk.exists(path):
            return False
        self._zk.delete(path)
        return True

    def resign_controller(self, broker_id: int) -> bool:
        """Delete ``/controller`` if it names ``broker_id`` (a dead controller's session).

        What the expiry of the dead controller's session would do, minus the wait: every
        live broker's watch fires and the first to create the node is the new controller.
        """
        if self.controller() != broker_id:
            return False
        self._zk.delete("/controller")
        return True
