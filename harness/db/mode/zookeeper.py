"""ZooKeeper mode: a ZooKeeper node, a controller broker that hosts no replica, the brokers.

Everything the harness does the ZooKeeper way lives here: the znodes it writes (topic
creation, ``/admin`` reassignment and preferred election, expiring a registration), and how it
sees a broker act on the controller's decisions (:class:`LeaderAndIsrLog`).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from harness.db.catalogue.kafka_config import (
    CONTROLLER_HW_CHECKPOINT_INTERVAL_MS,
    broker_properties,
    offsets_topic_znodes,
    topic_config,
    zookeeper_properties,
)
from harness.db.mode.base import (
    SPARE_CONTROLLER,
    SPARE_CONTROLLER_ID,
    ZOOKEEPER,
    ControllerElection,
    Decisions,
    Mode,
    Wait,
    await_state,
)
from harness.db.mode.zk_view import ZkView
from harness.db.names import CONTROLLER, PARTITION
from harness.db.specs import BrokerSpec, FenceTimeout, Runtime, TopicSpec
from harness.protocol.fetch import CONSUMER, fetch, fetch_version, serves_kip392
from harness.protocol.wire import WireError
from harness.readback.log4j import read_rotated

if TYPE_CHECKING:
    from harness.db.catalogue.versions import KafkaVersion
    from harness.db.mode.view import MetadataView, PartitionView


# ---------------------------------------------------------------------------- ZooKeeper


class ZooKeeperMode(Mode):
    """ZooKeeper + a controller broker that hosts no replica + the scenario's brokers.

    ``detect`` deletes the dead broker's ephemeral registration, which is what the expiry of
    its ZooKeeper session does; the session timeout (60 s) is longer than any run's pauses.

    A run that fails the controller over (:mod:`harness.nemesis.failover`) also gets a
    *spare*: a second broker that hosts no replica (``controller2``, id 92), started after
    the controller broker won its election, so controllership can move to a broker no
    scenario fault touches. Clients then bootstrap from both.
    """

    name = "zookeeper"
    spare: str | None = None

    def add_spare(self, cluster: Runtime, port: int) -> str:
        """Add the spare controller-eligible broker to ``cluster`` (before it starts)."""
        if self.spare is None:
            spec = BrokerSpec(
                SPARE_CONTROLLER,
                SPARE_CONTROLLER_ID,
                port,
                cluster.workdir / SPARE_CONTROLLER / "data",
            )
            cluster.nodes[SPARE_CONTROLLER] = spec
            cluster.brokers[SPARE_CONTROLLER] = spec
            self.spare = SPARE_CONTROLLER
        return SPARE_CONTROLLER

    def controller_brokers(self) -> list[str]:
        """The brokers that may be controller: never a scenario broker."""
        return [CONTROLLER] + ([self.spare] if self.spare else [])

    def add_spare_controller(self, cluster: Runtime, port: int) -> bool:
        self.add_spare(cluster, port)
        return True

    def controller_election(self, cluster: Runtime) -> ControllerElection | None:
        return ZkControllerElection(self, cluster) if self.spare is not None else None

    def make_nodes(
        self, broker_names: list[str], workdir: Path, free_port: Callable[[], int]
    ) -> dict[str, BrokerSpec]:
        nodes = {ZOOKEEPER: BrokerSpec(ZOOKEEPER, -1, free_port(), workdir / ZOOKEEPER / "data",
                                       role="zookeeper")}  # fmt: skip
        for i, name in enumerate([CONTROLLER, *broker_names]):
            nodes[name] = BrokerSpec(name, i, free_port(), workdir / name / "data")
        return nodes

    def zk_connect(self, cluster: Runtime) -> str:
        return "{}:{}".format(*cluster.node_address(ZOOKEEPER))

    def _peer_zk_connect(self, cluster: Runtime) -> str:
        return f"{cluster.peer_host(ZOOKEEPER)}:{cluster.peer_port(ZOOKEEPER)}"

    def start(self, cluster: Runtime) -> None:
        zk = cluster.nodes[ZOOKEEPER]
        zk.data_dir.mkdir(parents=True, exist_ok=True)
        host = "0.0.0.0" if cluster.peer_host(ZOOKEEPER) != "127.0.0.1" else "127.0.0.1"
        cluster.launch(
            ZOOKEEPER,
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            zookeeper_properties(
                cluster.node_path(ZOOKEEPER, "data"), cluster.peer_port(ZOOKEEPER), host=host
            ),
        )
        # The controller broker's JVM starts beside ZooKeeper's: its ZooKeeper client retries
        # for zookeeper.connection.timeout.ms (30 s), so the two start-ups overlap. The
        # other brokers wait until it is elected, so controllership never lands on them.
        cluster.start_broker(CONTROLLER)

        def zk_up() -> bool:
            with ZkView(self.zk_connect(cluster), timeout=2.0):
                return True

        await_state(cluster, zk_up, "ZooKeeper to listen", ZOOKEEPER, self.startup_timeout)
        with ZkView(self.zk_connect(cluster)) as view:
            await_state(
                cluster,
                lambda: view.controller() == 0,
                "the controller broker to be elected",
                CONTROLLER,
                self.startup_timeout,
            )

            for path, doc in offsets_topic_znodes(0).items():
                import json

                view.create(path, json.dumps(doc).encode())
            for name in cluster.brokers:
                if name != CONTROLLER:
                    cluster.start_broker(name)
            ids = tuple(sorted(b.broker_id for b in cluster.brokers.values()))
            await_state(
                cluster,
                lambda: view.live_brokers() == ids,
                f"brokers {ids} to register",
                None,
                self.startup_timeout,
            )

    def broker_config(self, cluster: Runtime, name: str) -> tuple[str, dict[str, str]]:
        spec = cluster.brokers[name]
        props = broker_properties(
            self.version,
            spec.broker_id,
            cluster.peer_host(name),
            cluster.peer_port(name),
            cluster.node_path(name, "data"),
            self._peer_zk_connect(cluster),
        )
        if name in self.controller_brokers():
            # It hosts no replica of the run's partitions, so no reading waits on its HW
            # checkpoint; at the replicas' 10 ms the timer alone kept ~4 % of a core busy
            # per idle broker (a quarter of an idle cluster's CPU, 8 Dec 2026).
            props["replica.high.watermark.checkpoint.interval.ms"] = str(
                CONTROLLER_HW_CHECKPOINT_INTERVAL_MS
            )
        return "kafka.Kafka", props

    def bootstrap(self, cluster: Runtime) -> str:
        """Clients bootstrap from the controller broker(s), which no scenario fault touches.

        With a spare both are listed: a failover kills one of them for a while.
        """
        return ",".join(
            "{}:{}".format(*cluster.broker_address(n)) for n in self.controller_brokers()
        )

    def create_topic(self, cluster: Runtime, spec: TopicSpec) -> None:
        """Write the assignment and config znodes (milliseconds, every ZK-mode version)."""

        with ZkView(self.zk_connect(cluster)) as zk:
            zk.create_topic(spec.name, self.replica_ids(cluster, spec.replicas), topic_config(spec))

    def delete_topic(self, cluster: Runtime, topic: str) -> None:
        """Write the deletion znode, as ``create_topic`` writes the assignment: no broker
        request to lose (a DeleteTopics sent to a 3.3.1 controller once went unanswered for
        30 s in a CI trial, under load)."""
        with ZkView(self.zk_connect(cluster)) as zk:
            zk.delete_topic(topic)

    def view(self, cluster: Runtime) -> MetadataView:
        return ZkView(self.zk_connect(cluster), topic=cluster.topic)

    def declare_dead(self, cluster: Runtime, name: str) -> bool:
        with ZkView(self.zk_connect(cluster)) as zk:
            return zk.expire_registration(cluster.brokers[name].broker_id)

    # ------------------------------------------------------------ the playbook's verbs

    hub_name = "ZooKeeper"
    held_session_note = "it keeps its ZooKeeper session"

    def controller_nodes(self) -> list[str]:
        return [CONTROLLER]

    def liveness_hub(self) -> list[str]:
        return [ZOOKEEPER]

    def unexpected_controller(self, cluster: Runtime) -> str | None:
        """The controller broker (started first, hosting no replica) must hold
        ``/controller``: a scenario broker as controller changes what its faults do."""
        want = cluster.brokers[CONTROLLER].broker_id
        with ZkView(self.zk_connect(cluster), timeout=5.0) as zk:
            got = zk.controller()
        return None if got == want else f"the controller is broker {got}, not {want}"

    def restart_before_detect(self, can_fail_over: bool) -> str | None:
        if can_fail_over:
            return None  # the bounce no controller sees: harness.nemesis.failover
        return (
            "the cluster was started without a spare controller broker to fail "
            "over to (harness.nemesis.failover.prepare)"
        )

    def end_cut_session(self, cluster: Runtime, name: str, stop_keeping: Callable[[], None]) -> str:
        timeout = cluster.brokers[name].props.get("zookeeper.session.timeout.ms", "?")
        return f"its ZooKeeper session expired (zookeeper.session.timeout.ms={timeout})"

    def short_session_props(self, ms: int) -> dict[str, str]:
        return {"zookeeper.session.timeout.ms": str(ms)}

    def decisions(
        self,
        cluster: Runtime,
        decided: Callable[[], PartitionView],
        controllers: Callable[[], list[str]],
    ) -> Decisions:
        return LeaderAndIsrLog(cluster, controllers, decided, self.version)

    def assignment(self, view: MetadataView) -> list[int]:
        assert isinstance(view, ZkView)
        return view.assignment()

    def elect_preferred(
        self,
        cluster: Runtime,
        view: MetadataView,
        name: str,
        release: Callable[[], None],
        wait: Wait,
    ) -> str:
        """The reassignment znode, then the preferred-election znode (what
        kafka-reassign-partitions.sh and kafka-preferred-replica-election.sh write, 0.8-3.x)."""
        assert isinstance(view, ZkView)
        zk = view
        bid = cluster.brokers[name].broker_id
        old = zk.assignment()
        order = [bid] + [i for i in old if i != bid]
        if old != order:
            zk.reassign(order)
            wait(
                lambda: zk.assignment() == order and not zk.admin_pending("reassign_partitions"),
                f"the controller to reorder the assignment to {order}",
            )
        zk.preferred_election()
        wait(
            lambda: not zk.admin_pending("preferred_replica_election"),
            "the controller to run the preferred-replica election",
        )
        return (
            f"/admin/reassign_partitions {old} -> {order}, then /admin/preferred_replica_election"
        )

    def elect_unclean(self, cluster: Runtime, name: str) -> str:
        """ElectLeaders through broker ``name`` alone (librdkafka forwards it to the
        controller; another broker may be paused, and a request to it would hang)."""
        from confluent_kafka import ElectionType, TopicPartition
        from confluent_kafka.admin import AdminClient

        host, port = cluster.broker_address(name)
        admin = AdminClient({"bootstrap.servers": f"{host}:{port}", "log_level": 0})
        fut = admin.elect_leaders(
            ElectionType.UNCLEAN, [TopicPartition(cluster.topic, PARTITION)]
        )  # kwargs: SystemError (2.16.1)
        try:
            result = fut.result(timeout=30)
        except Exception as exc:
            raise FenceTimeout(f"ElectLeaders UNCLEAN for {name}: {exc}") from None
        errors = [str(e) for e in result.values() if e is not None]
        return "ElectLeaders UNCLEAN" + (f" ({'; '.join(errors)})" if errors else "")


NOT_SERVING = (3, 6)
"""Fetch error codes of a broker that does not (yet) lead the partition:
UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_FOR_PARTITION (NOT_LEADER_OR_FOLLOWER from 2.6)."""

# A broker's log of LeaderAndIsr handled: one "Finished" line per request (3.x), or per
# partition one "completed" (applied) or "ignoring" (stale epoch) line (0.10-2.x).
LAI_FINISHED = re.compile(r"Finished LeaderAndIsr request")
LAI_DONE = re.compile(r"(?i)(completed|ignoring) LeaderAndIsr request")
# The controller's log of LeaderAndIsr sent: one line per request (3.x) or per partition
# (0.10-2.x); what a broker handled is counted the same way (LAI_FINISHED, LAI_DONE).
LAI_SENT_REQUEST = re.compile(r"Sending LeaderAndIsr request to broker (\d+) with")
LAI_SENT_PARTITION = re.compile(
    r"(?i)sending become-(?:leader|follower) LeaderAndIsr request .* to broker (\d+) for partition"
)
# ControllerChannelManager.sendRequest (controller.log, every release): a request to a broker
# the controller no longer counts live is dropped, after the state-change log said "Sending"
# (a broker failure handled while an earlier one's decisions go out). Not sent, not pending.
LAI_REFUSED = re.compile(
    r"Not sending request \(type=LeaderAndIsRequest\b.*? to broker (\d+), since it is offline"
)


class LeaderAndIsrLog(Decisions):
    """A broker acted on the controller's decisions once it handled every LeaderAndIsr sent
    to it: counted in the controllers' state-change logs against the broker's own; and a
    broker ZooKeeper names leader once it also serves the partition as its leader.

    Why the second: the controller writes its election to ZooKeeper
    (``updateLeaderAndIsr``) before it logs "sending become-leader LeaderAndIsr request" to
    the new leader (``ControllerBrokerRequestBatch.sendRequestsToBrokers``). A fence that
    looked in that gap counted nothing sent, nothing pending, and passed: seen in a CI run
    of kip101-scenario1 on 0.10.2.1 (load 24), where the consumer read after ``detect B``
    found A, elected, answering NOT_LEADER_FOR_PARTITION 3 ms before its become-leader
    transition. Its Fetch answer is what a consumer sees, so that is what is waited for.
    """

    def __init__(
        self,
        cluster: Runtime,
        controllers: Callable[[], list[str]],
        decided: Callable[[], PartitionView] | None = None,
        version: KafkaVersion | None = None,
    ) -> None:
        self.cluster = cluster
        self.controllers = controllers
        self.decided = decided
        self.version = version
        self.base: dict[str, tuple[int, int]] = {}  # name -> (sent, handled) at mark()

    def serves_as_leader(self, name: str) -> bool:
        """``name`` answers a consumer's Fetch of the test partition other than with
        NOT_LEADER_FOR_PARTITION or UNKNOWN_TOPIC_OR_PARTITION (not yet its leader here)."""
        if self.version is None:
            return True
        ver = fetch_version(self.version.epoch_on_disk, serves_kip392(self.version.release))
        host, port = self.cluster.broker_address(name)
        try:
            answer = fetch(host, port, self.cluster.topic, PARTITION, ver, CONSUMER, timeout=1.0)
        except (WireError, OSError, struct.error, IndexError):
            return False  # not answering yet
        return answer.error not in NOT_SERVING

    def _elected(self, name: str) -> bool:
        """ZooKeeper (the controller's decision) names ``name`` the leader."""
        if self.decided is None:
            return False
        return self.decided().leader == self.cluster.brokers[name].broker_id

    def done(self, name: str) -> int:
        """LeaderAndIsr requests broker ``name`` handled so far."""
        text = read_rotated(self.cluster.state_change_log(name))
        pattern = LAI_FINISHED if LAI_FINISHED.search(text) else LAI_DONE
        return len(pattern.findall(text))

    def sent(self, name: str) -> int:
        """LeaderAndIsr requests sent to ``name`` by every controller of the run so far (less
        those the controller's channel dropped: ``name`` was offline, :data:`LAI_REFUSED`)."""
        total = 0
        bid = str(self.cluster.brokers[name].broker_id)
        for controller in self.controllers():
            # The refusals first: a refusal read is then always of a "Sending" line written
            # before it, so a request is never subtracted without having been counted.
            log = self.cluster.state_change_log(controller)
            refused = read_rotated(log.with_name("controller.log"))
            dropped = [m.group(0) for m in LAI_REFUSED.finditer(refused) if m.group(1) == bid]
            text = read_rotated(log)
            if LAI_SENT_REQUEST.search(text):  # 3.x: a line per request, sent and dropped
                total += sum(1 for m in LAI_SENT_REQUEST.finditer(text) if m.group(1) == bid)
                total -= len(dropped)
            else:
                # 0.10-2.x: "sending" is a line per partition, a dropped request one line
                # naming each of its partitions (the test partition and the run's doorbell:
                # seen on 0.10.2.1, power-loss-all-replicas, a 45 s fence for nothing)
                total += sum(1 for m in LAI_SENT_PARTITION.finditer(text) if m.group(1) == bid)
                total -= sum(max(1, d.count("=PartitionState(")) for d in dropped)
        return total

    def mark(self, name: str) -> None:
        self.base[name] = (self.sent(name), self.done(name))

    def pending(self, name: str) -> int:
        sent0, done0 = self.base.get(name, (0, 0))
        return (self.sent(name) - sent0) - (self.done(name) - done0)

    def settle(self, name: str, wait: Wait) -> None:
        wait(
            lambda: self.pending(name) <= 0,
            f"{name} to process the LeaderAndIsr requests sent to it",
        )
        if self._elected(name):
            wait(
                lambda: self.serves_as_leader(name) and self.pending(name) <= 0,
                f"{name} to serve as the leader the controller elected",
            )

    def after_restart(self, name: str, wait: Wait) -> None:
        sent0 = self.base[name][0]
        wait(
            lambda: self.sent(name) > sent0,
            f"the controller to send {name} its LeaderAndIsr",
        )
        if self.decided is not None:
            wait(
                lambda: not self.election_pending(),
                "the controller to elect a leader for the offline partition",
            )

    def election_pending(self) -> bool:
        """The partition is offline while a broker the controller would elect is live: one
        of its ISR, or, where the topic allows unclean elections, any live replica of its
        assignment (``PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection``;
        ``OfflinePartitionLeaderSelector`` before 2.1): the controller has yet to elect it.

        Why: a broker's startup is two decisions in one controller event
        (``KafkaController.onBrokerStartup``): the replica goes online first (a LeaderAndIsr
        naming the old, absent leader), then ``triggerOnlinePartitionStateChange`` elects a
        leader for every offline partition (``OfflinePartitionLeaderSelector``: a live ISR
        member). The first request alone satisfied the restart fence; on 0.10.2.1 under load
        (kip101-scenario2, ``matrix --jobs 3``) the election came 67 ms later, after the
        harness had held B as a follower: the controller's requests to the paused B timed
        out, the produce of m3 to B timed out, and the run was a model mismatch the harness
        did not name. The unclean case the same: with the topic's
        ``unclean.leader.election.enable`` true, a broker restarting into a partition whose
        ISR is all dead is elected by that same startup event; the first request (naming no
        leader) satisfied the fence, the harness held the restarted broker as a follower
        before the election reached it, and its HW stayed at its checkpoint (3.3.1,
        kip279-fast-leader-change on a warm cluster, the CI trial of 7 Dec 2026). An unclean
        election of the explicit ``elect_unclean`` step waits for itself.
        """
        assert self.decided is not None
        v = self.decided()
        if v.leader >= 0:
            return False
        live = set(v.live)
        if set(v.isr) & live:
            return True
        replicas = {int(b) for b in v.extra.get("replicas", "").split(",") if b}
        return v.extra.get("unclean") == "true" and bool(replicas & live)

    def after_heal(self, name: str, expired: bool, wait: Wait) -> None:
        if expired:
            # The controller dropped its channel to the expired session (queued requests
            # with it) and sends the new registration a LeaderAndIsr of its own.
            done0 = self.base.get(name, (0, self.done(name)))[1]
            wait(
                lambda: self.done(name) > done0,
                f"{name} to process a LeaderAndIsr after registering again",
            )
            self.mark(name)
            return
        sent0, done0 = self.base.get(name, (self.sent(name), self.done(name)))
        wait(
            lambda: (self.sent(name) - sent0) - (self.done(name) - done0) <= 0,
            f"{name} to process the LeaderAndIsr requests held back from it",
        )


class ZkControllerElection:
    """The controller election as ZooKeeper holds it: ``/controller``, ``/brokers/ids``."""

    def __init__(self, mode: ZooKeeperMode, cluster: Runtime) -> None:
        self.mode = mode
        self.cluster = cluster

    def _zk(self) -> ZkView:
        return ZkView(self.mode.zk_connect(self.cluster))

    def eligible(self) -> list[str]:
        return self.mode.controller_brokers()

    def controller_id(self) -> int:
        with self._zk() as zk:
            return int(zk.controller())

    def registered(self, broker_id: int) -> bool:
        with self._zk() as zk:
            return broker_id in zk.live_brokers()

    def drop_session(self, broker_id: int) -> None:
        # its session outlives the process (60 s): remove what it held, registration first
        with self._zk() as zk:
            zk.expire_registration(broker_id)
            zk.resign_controller(broker_id)

    def describe(self) -> str:
        try:
            with self._zk() as zk:
                return f"/controller={zk.controller()} /brokers/ids={list(zk.live_brokers())}"
        except Exception as exc:
            return f"(ZooKeeper unreadable: {exc})"
