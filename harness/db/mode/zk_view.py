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
from typing import Any

from harness.db.mode.view import PartitionView
from harness.db.names import PARTITION, TOPIC

# kazoo logs every dropped connection; brokers and ZooKeeper dying is this harness's job.
logging.getLogger("kazoo").setLevel(logging.CRITICAL)


class ZkView:
    """A short-lived read-mostly ZooKeeper client (kazoo)."""

    def __init__(self, connect: str, timeout: float = 10.0, topic: str = TOPIC) -> None:
        self.topic = topic  # the run's test topic, what ``topic=None`` below means
        from kazoo.client import KazooClient

        self._zk: Any = KazooClient(hosts=connect, timeout=timeout, read_only=False)
        self._zk.start(timeout=timeout)

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
        return PartitionView(
            leader=int(state["leader"]),
            leader_epoch=int(state["leader_epoch"]),
            isr=tuple(sorted(int(b) for b in state["isr"])),
            live=self.live_brokers(),
            controller=self.controller(),
        )

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
