"""KRaft mode: a controller quorum (``process.roles=controller``) and the brokers."""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import timing
from harness.db.catalogue.kafka_config import (
    kraft_broker_properties,
    kraft_controller_properties,
    topic_config,
)
from harness.db.mode.base import CONTROLLER_IDS, NOT_CONTROLLER, Decisions, Mode, Wait, await_state
from harness.db.mode.kraft_format import (
    copy_format,
    format_template,
    keep_format,
    random_cluster_id,
)
from harness.db.mode.kraft_view import KRaftView
from harness.db.names import CONTROLLER, PARTITION
from harness.db.specs import BrokerSpec, ClusterError, FenceTimeout, Runtime, TopicSpec
from harness.protocol.wire import (
    WireError,
    alter_partition_reassignments,
    broker_heartbeat,
    elect_leaders,
    partition_view,
)
from harness.readback.log4j import read_rotated

if TYPE_CHECKING:
    from harness.db.catalogue.versions import KafkaVersion
    from harness.db.mode.view import MetadataView, PartitionView


# ---------------------------------------------------------------------------- KRaft


class KRaftMode(Mode):
    """A controller quorum (``process.roles=controller``) and the brokers as pure brokers.

    Liveness is the controller's heartbeat session (``broker.session.timeout.ms``, read by
    the controller; ``BrokerHeartbeatManager``). Two things keep it on the script:

    - a *session keeper* in the harness sends ``BrokerHeartbeat`` for every broker the
      scenario still considers alive to the controller but which cannot heartbeat itself
      (paused between its fetch steps, or crashed and not yet ``detect``-ed), so a short
      session timeout never fences it behind the script's back;
    - ``detect`` sends ``BrokerHeartbeat(WantFence=true)`` for the dead broker: the
      controller fences it at once through the same ``handleBrokerFenced`` path a session
      expiry takes (ISR shrink, election; ELR kept, unlike ``UnregisterBroker``).

    A restart registers a new broker epoch; on 4.x it waits until the old session lapses
    (``DuplicateBrokerRegistrationException`` until then), which the short timeout bounds.
    """

    name = "kraft"
    SESSION_TIMEOUT_MS = 2000
    """The controller's ``broker.session.timeout.ms``.

    From 4.0 the controller refuses a restarted broker's registration until the old
    incarnation's session lapses, and every heartbeat for the old epoch renews it, the
    ``detect`` step's ``BrokerHeartbeat(WantFence)`` included (``BrokerHeartbeatTracker``
    keys contact times by broker id and epoch, fenced or not): a ``restart`` right after
    its ``detect`` waits this long (kip101-scenario1 on 4.0.0: ``A to register`` 4.3 s at
    4000, 2.3 s at 2000). Four heartbeats fit in it (brokers' own and the keeper's, every
    :attr:`KEEPALIVE_INTERVAL`), Kafka's own ratio (2 s / 9 s), and the keeper beats at once
    for a broker that has just gone silent (:meth:`keep_alive`), so a paused broker's
    session is at most one broker interval old when the keeper takes it over."""
    KEEPALIVE_INTERVAL = 0.5

    def __init__(
        self,
        version: KafkaVersion,
        startup_timeout: float = 90.0,
        controllers: int = 1,
        features: dict[str, int] | None = None,
    ) -> None:
        super().__init__(version, startup_timeout)
        if controllers not in (1, 3):
            raise ValueError(f"a KRaft quorum of {controllers} controllers (1 or 3)")
        self.controllers = [CONTROLLER] + [f"{CONTROLLER}{i}" for i in range(2, controllers + 1)]
        self.features = dict(features or {})
        self.cluster_id = random_cluster_id()
        self._alive: set[str] = set()
        self._lock = threading.Lock()  # the kept set
        # Held while the keeper heartbeats, and by ``declare_dead`` to drop a broker: no
        # keeper heartbeat for a broker is in flight or to come once it is dropped. Apart
        # from ``_lock`` so ``keep_alive`` (every step) never waits on a heartbeat's I/O.
        self._beating = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()  # a broker went silent: beat for it now
        self.keeper_rounds = 0  # rounds the keeper finished (tests wait on it)
        self._keeper: threading.Thread | None = None
        self._active = CONTROLLER  # the controller that last accepted a heartbeat
        self._schemas_of: dict[int, Any] | None = None

    def make_nodes(
        self, broker_names: list[str], workdir: Path, free_port: Callable[[], int]
    ) -> dict[str, BrokerSpec]:
        nodes = {
            c: BrokerSpec(
                c, CONTROLLER_IDS[i], free_port(), workdir / c / "data", role="controller"
            )
            for i, c in enumerate(self.controllers)
        }
        for i, name in enumerate(broker_names, start=1):
            nodes[name] = BrokerSpec(name, i, free_port(), workdir / name / "data")
        return nodes

    def voters(self, cluster: Runtime) -> str:
        return ",".join(
            f"{cluster.nodes[c].broker_id}@{cluster.peer_host(c)}:{cluster.peer_port(c)}"
            for c in self.controllers
        )

    def _format(self, cluster: Runtime, name: str, props: dict[str, str]) -> None:
        """``kafka-storage format``: once per node per run, before its first start.

        The tool runs once per tree, role and features; later nodes are formatted from its
        output with their own ids (:mod:`harness.db.mode.kraft_format`).
        """
        data = cluster.nodes[name].data_dir
        if (data / "meta.properties").exists():
            return
        data.mkdir(parents=True, exist_ok=True)
        node = cluster.nodes[name]
        template = format_template(self.version, node.role, self.features)
        if template is not None and copy_format(template, data, node.broker_id, self.cluster_id):
            return
        args = ["format", "-t", self.cluster_id, "-c", "@CONFIG@", "--ignore-formatted"]
        for feature, level in sorted(self.features.items()):
            args += ["--feature", f"{feature}={level}"]
        cluster.run_tool("kafka.tools.StorageTool", args, name, props)
        if template is not None:
            keep_format(data, template)

    def _controller_props(self, cluster: Runtime, c: str) -> dict[str, str]:
        return kraft_controller_properties(
            self.version,
            cluster.nodes[c].broker_id,
            cluster.peer_host(c),
            cluster.peer_port(c),
            cluster.node_path(c, "data"),
            self.voters(cluster),
            self.SESSION_TIMEOUT_MS,
        )

    def start(self, cluster: Runtime) -> None:
        from concurrent.futures import ThreadPoolExecutor

        # Formatting is a JVM per node: run them side by side, once per run.
        configs = {c: self._controller_props(cluster, c) for c in self.controllers}
        configs.update({b: self.broker_config(cluster, b)[1] for b in cluster.brokers})
        with timing.timed_fence("kafka-storage format"), ThreadPoolExecutor(len(configs)) as pool:
            for f in [pool.submit(self._format, cluster, n, p) for n, p in configs.items()]:
                f.result()
        # Controllers and brokers start side by side: a broker retries its registration
        # until the quorum has a leader, so the JVM start-ups overlap instead of adding up.
        for c in self.controllers:
            cluster.launch(c, "kafka.Kafka", configs[c])
        for name in cluster.brokers:
            cluster.start_broker(name)
        view = self.view(cluster)
        await_state(
            cluster,
            lambda: view.image().raft_epoch >= 0 and view.image().offset >= 0,  # type: ignore[attr-defined]
            "the controller quorum to elect a leader",
            None,
            self.startup_timeout,
        )
        ids = tuple(sorted(b.broker_id for b in cluster.brokers.values()))
        await_state(
            cluster,
            lambda: set(ids) <= set(view.live_brokers()),
            f"brokers {ids} to register and be unfenced",
            None,
            self.startup_timeout,
        )
        self._keeper = threading.Thread(target=self._keep, args=(cluster,), daemon=True)
        self._keeper.start()

    def broker_config(self, cluster: Runtime, name: str) -> tuple[str, dict[str, str]]:
        spec = cluster.brokers[name]
        props = kraft_broker_properties(
            self.version,
            spec.broker_id,
            cluster.peer_host(name),
            cluster.peer_port(name),
            cluster.node_path(name, "data"),
            self.voters(cluster),
        )
        return "kafka.Kafka", props

    def bootstrap(self, cluster: Runtime) -> str:
        """Every scenario broker: KRaft has no broker that no fault touches."""
        return ",".join("{}:{}".format(*cluster.broker_address(n)) for n in cluster.brokers)

    def create_topic(self, cluster: Runtime, spec: TopicSpec) -> None:
        """CreateTopics through the brokers (see ``_admin_request``); an earlier attempt
        that did land shows as TOPIC_ALREADY_EXISTS, which is then success."""
        from confluent_kafka import KafkaError
        from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

        # librdkafka 2.x wants the partition count spelled out beside an assignment
        topic = NewTopic(
            spec.name,
            num_partitions=1,
            replication_factor=-1,
            replica_assignment=[self.replica_ids(cluster, spec.replicas)],
            config=topic_config(spec),
        )
        self._admin_request(
            cluster,
            f"creating topic {spec.name}",
            lambda admin: admin.create_topics([topic], request_timeout=30)[spec.name],
            KafkaError.TOPIC_ALREADY_EXISTS,
        )

    def delete_topic(self, cluster: Runtime, topic: str) -> None:
        """DeleteTopics through the brokers (forwarded to the active controller), sent again
        as ``create_topic`` does when lost on the client's side; a missing topic is done."""
        from confluent_kafka import KafkaError

        self._admin_request(
            cluster,
            f"deleting topic {topic}",
            lambda admin: admin.delete_topics([topic], request_timeout=30)[topic],
            KafkaError.UNKNOWN_TOPIC_OR_PART,
            done_at_once=True,
        )

    def _admin_request(
        self,
        cluster: Runtime,
        what: str,
        send: Callable[[Any], Any],
        done_code: int,
        done_at_once: bool = False,
    ) -> None:
        """Send an admin request once the brokers can route it to a controller, again (from
        a new admin client, at most three times) when it is lost on the client's side.

        A KRaft broker names a random live broker as "controller" in its Metadata answer
        only once its own metadata image holds the registrations; before that it names
        none, and librdkafka waits for one until its request timeout (seen under load on
        2 cores: ``Failed while waiting for controller``). So wait (bounded) until a
        Metadata answer names a controller and every scenario broker, then send. A request
        lost on the client's side (timed out, or its broker handle replaced while it
        waited: ``_DESTROY_BROKER``, seen in a CI trial) is sent again; ``done_code`` (the
        topic already exists, or no longer does) then means an earlier attempt landed.
        """
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient

        ids = {b.broker_id for b in cluster.brokers.values()}
        lost = {
            KafkaError._TIMED_OUT,
            KafkaError.REQUEST_TIMED_OUT,
            KafkaError.NOT_CONTROLLER,
            KafkaError._DESTROY_BROKER,
            KafkaError._TRANSPORT,
        }
        attempts = 3
        for attempt in range(1, attempts + 1):
            admin = AdminClient({"bootstrap.servers": self.bootstrap(cluster), "log_level": 0})

            def routable(admin: Any = admin) -> bool:
                md = admin.list_topics(timeout=5)
                return md.controller_id >= 0 and ids <= set(md.brokers)

            await_state(
                cluster,
                routable,
                f"the brokers' metadata to name a controller and brokers {sorted(ids)}",
                None,
                self.startup_timeout,
            )
            try:
                send(admin).result(timeout=60)
                return
            except KafkaException as exc:
                error = exc.args[0]
                if error.code() == done_code and (done_at_once or attempt > 1):
                    return
                if (error.code() in lost or error.retriable()) and attempt < attempts:
                    continue
                raise ClusterError(f"{what}: {exc}") from None
            except Exception as exc:
                raise ClusterError(f"{what}: {exc}") from None

    def view(self, cluster: Runtime) -> MetadataView:
        if self._schemas_of is None:
            # from where the nodes run: the release tree, or the docker backend's image
            self._schemas_of = cluster.metadata_schemas()
        leader = cluster.nodes[CONTROLLER]
        return KRaftView(leader.data_dir, self._schemas_of, leader.broker_id, cluster.topic)

    def _heartbeat(
        self, cluster: Runtime, broker_id: int, epoch: int, offset: int, want_fence: bool
    ) -> int:
        """BrokerHeartbeat to the active controller; the error code (0 = accepted).

        Only the active controller of a quorum accepts heartbeats (the others answer
        NOT_CONTROLLER, 41): try the one that last accepted first, then the others.
        """

        order = [self._active] + [c for c in self.controllers if c != self._active]
        error = -1
        for c in order:
            host, port = cluster.node_address(c)
            try:
                answer = broker_heartbeat(host, port, broker_id, epoch, offset, want_fence)
            except Exception:  # a dead or paused controller: ask the next one
                continue
            error = answer.error
            if error != NOT_CONTROLLER:
                self._active = c
                return error
        return error

    def declare_dead(self, cluster: Runtime, name: str) -> bool:
        # Under the keeper's ``_beating``: once dropped, no heartbeat of the keeper's for
        # ``name`` is in flight or to come. One that reached the controller after the
        # WantFence below would undo it: 3.3.1 unfenced the dead broker at once ("has
        # caught up with the offset of its register broker record") and fenced it again
        # only when that session lapsed.
        with self._beating, self._lock:
            self._alive.discard(name)
        view = self.view(cluster)
        assert isinstance(view, KRaftView)
        bid = cluster.brokers[name].broker_id
        img = view.image()
        state = img.brokers.get(bid)
        if state is None or state.fenced:
            return False
        error = self._heartbeat(cluster, bid, state.epoch, img.offset, want_fence=True)
        if error:
            raise ClusterError(f"fencing broker {name}: the controller answered error {error}")
        return True

    def keep_alive(self, cluster: Runtime, names: set[str]) -> None:
        with self._lock:
            newly_silent = bool(set(names) - self._alive)
            self._alive = set(names)
        if newly_silent:
            self._wake.set()

    def _keep(self, cluster: Runtime) -> None:
        """The session keeper thread: heartbeats for silent brokers the script keeps alive,
        every :attr:`KEEPALIVE_INTERVAL` and at once when one more goes silent."""

        while True:
            self._wake.wait(self.KEEPALIVE_INTERVAL)
            self._wake.clear()
            if self._stop.is_set():
                return
            with self._lock:
                names = set(self._alive)
            if names:
                self._beat(cluster, names)
            self.keeper_rounds += 1

    def _beat(self, cluster: Runtime, names: set[str]) -> None:
        """One heartbeat for each of ``names`` still kept when its turn comes."""
        with contextlib.suppress(Exception):  # a dead controller is the run's to report
            view = self.view(cluster)
            assert isinstance(view, KRaftView)
            img = view.image()
            for n in names:
                state = img.brokers.get(cluster.brokers[n].broker_id)
                if state is None or state.fenced:
                    continue
                with self._beating:
                    with self._lock:
                        kept = n in self._alive
                    if kept:  # else declared dead (or let go) since: not ours to keep
                        self._heartbeat(cluster, state.broker_id, state.epoch, img.offset, False)

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._keeper is not None:
            self._keeper.join(timeout=5)

    # ------------------------------------------------------------ the playbook's verbs

    hub_name = "the controllers"
    held_session_note = "the harness's session keeper heartbeats for it"

    def controller_nodes(self) -> list[str]:
        return list(self.controllers)

    def liveness_hub(self) -> list[str]:
        return list(self.controllers)

    def restart_before_detect(self, can_fail_over: bool) -> str | None:
        return (
            "a KRaft controller refuses the new registration while the old heartbeat "
            "session lives (DuplicateBrokerRegistrationException) and registers it with "
            "a new broker epoch afterwards"
        )

    def end_cut_session(self, cluster: Runtime, name: str, stop_keeping: Callable[[], None]) -> str:
        stop_keeping()
        cluster.declare_dead(name)
        return "stopped keeping its session, BrokerHeartbeat(WantFence) sent for it"

    def decisions(
        self,
        cluster: Runtime,
        decided: Callable[[], PartitionView],
        controllers: Callable[[], list[str]],
    ) -> Decisions:
        return MetadataApplied(cluster, decided)

    def assignment(self, view: MetadataView) -> list[int]:
        assert isinstance(view, KRaftView)
        p = view.image().partition(view.topic, PARTITION)
        if p is None:
            raise FenceTimeout("the controller has no state for the test partition")
        return list(p.replicas)

    def to_controller(
        self, cluster: Runtime, what: str, call: Callable[[str, int], tuple[int, str | None]]
    ) -> tuple[int, str | None]:
        """Send an admin request to the active controller (NOT_CONTROLLER: the next one).

        Not through a broker: an admin client sends it to the broker the Metadata answer
        names as controller, a random one in KRaft, possibly one the harness paused.
        """
        seen: list[str] = []
        for c in self.controllers:
            host, port = cluster.node_address(c)
            try:
                err, msg = call(host, port)
            except WireError as exc:
                seen.append(str(exc))
                continue
            if err == NOT_CONTROLLER:
                continue
            return err, msg
        raise FenceTimeout(f"{what}: no controller answered ({'; '.join(seen) or 'none active'})")

    def _elect_leaders(self, cluster: Runtime, unclean: bool) -> str:
        kind = "UNCLEAN" if unclean else "PREFERRED"
        err, msg = self.to_controller(
            cluster,
            "ElectLeaders",
            lambda h, p: elect_leaders(h, p, cluster.topic, PARTITION, unclean),
        )
        return f"ElectLeaders {kind}" + (f" (error {err} {msg or ''})" if err else "")

    def elect_preferred(
        self,
        cluster: Runtime,
        view: MetadataView,
        name: str,
        release: Callable[[], None],
        wait: Wait,
    ) -> str:
        """AlterPartitionReassignments (a reorder: no epoch bump), then ElectLeaders
        PREFERRED, both to the active controller; ``name`` is resumed first."""
        release()
        bid = cluster.brokers[name].broker_id
        order = [bid] + [i for i in self.assignment(view) if i != bid]
        if self.assignment(view) != order:
            err, msg = self.to_controller(
                cluster,
                "AlterPartitionReassignments",
                lambda h, p: alter_partition_reassignments(h, p, cluster.topic, PARTITION, order),
            )
            if err:
                raise FenceTimeout(f"AlterPartitionReassignments {order}: error {err} {msg or ''}")
            wait(
                lambda: self.assignment(view) == order,
                f"the controller to reorder the assignment to {order}",
            )
        return f"AlterPartitionReassignments {order}; " + self._elect_leaders(cluster, False)

    def elect_unclean(self, cluster: Runtime, name: str) -> str:
        return self._elect_leaders(cluster, True)


def starts_at_epoch(topic: str) -> re.Pattern[str]:
    """Partition.makeLeader / makeFollower of ``topic``'s partition (KRaft and 3.x
    ZooKeeper brokers); per topic, as a reused cluster plays each run on a new one."""
    return re.compile(
        rf"(?:Leader|Follower) {re.escape(topic)}-{PARTITION} "
        r"(?:with topic id \S+ )?starts at leader epoch (\d+)"
    )


def replica_epoch(cluster: Runtime, name: str) -> int:
    """The leader epoch broker ``name``'s Partition last started at (state-change log)."""
    found = starts_at_epoch(cluster.topic).findall(read_rotated(cluster.state_change_log(name)))
    return int(found[-1]) if found else -1


class MetadataApplied(Decisions):
    """KRaft has no LeaderAndIsr: brokers apply the metadata log (``BrokerMetadataPublisher``
    -> ``ReplicaManager.applyDelta``). A broker acted on the controller's decision once its
    Metadata answer has the decided leader, leader epoch and ISR and its Partition logged
    that epoch (makeLeader/makeFollower, after which its epoch cache is written)."""

    def __init__(self, cluster: Runtime, decided: Callable[[], PartitionView]) -> None:
        self.cluster = cluster
        self.decided = decided

    def applied(self, name: str) -> bool:
        v = self.decided()
        host, port = self.cluster.broker_address(name)
        bid = self.cluster.brokers[name].broker_id
        seen = partition_view(host, port, self.cluster.topic, PARTITION, bid)
        if not (
            seen is not None
            and seen.leader == v.leader
            and seen.leader_epoch == v.leader_epoch
            and seen.isr == v.isr
        ):
            return False
        # The metadata cache is published before ReplicaManager.applyDelta runs: wait for
        # the Partition to log the epoch too, unless the partition is offline.
        return v.leader < 0 or replica_epoch(self.cluster, name) == v.leader_epoch

    def _applied_or_none(self, name: str) -> bool:
        try:
            return self.applied(name)
        except Exception:  # not answering yet
            return False

    def mark(self, name: str) -> None:
        """Nothing to count: the decision itself is compared."""

    def settle(self, name: str, wait: Wait) -> None:
        if not self.cluster.is_running(name):
            return
        wait(
            lambda: self._applied_or_none(name),
            f"{name} to apply the controller's latest decision",
        )

    def after_restart(self, name: str, wait: Wait) -> None:
        """Nothing to wait for: :meth:`settle` compares the decision itself."""

    def after_heal(self, name: str, expired: bool, wait: Wait) -> None:
        wait(
            lambda: self._applied_or_none(name),
            f"{name} to apply the controller's latest decision after the heal",
        )
