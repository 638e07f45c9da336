"""KRaft mode: a controller quorum (``process.roles=controller``) and the brokers."""

from __future__ import annotations

import base64
import contextlib
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from harness.db import BrokerSpec, Cluster, ClusterError, TopicSpec
from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.kafka_config import (
    kraft_broker_properties,
    kraft_controller_properties,
    topic_config,
)
from harness.db.mode.base import CONTROLLER_IDS, NOT_CONTROLLER, Mode, await_state
from harness.db.mode.kraft_view import KRaftView
from harness.db.names import CONTROLLER
from harness.protocol.wire import broker_heartbeat
from harness.readback.metadata_records import schemas_for_tree

if TYPE_CHECKING:
    from harness.db.catalogue.versions import KafkaVersion
    from harness.db.mode.view import MetadataView


# ---------------------------------------------------------------------------- KRaft


def random_cluster_id() -> str:
    """What ``kafka-storage random-uuid`` prints: a base64url UUID without padding.

    Like ``Uuid.randomUuid`` it never starts with ``-``, which the tool's argument parser
    would take for an option.
    """
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


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
    SESSION_TIMEOUT_MS = 4000
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
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._keeper: threading.Thread | None = None
        self._schemas: dict[int, object] | None = None
        self._active = CONTROLLER  # the controller that last accepted a heartbeat
        self._tree: Path | None = None

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

    def voters(self, cluster: Cluster) -> str:
        return ",".join(
            f"{cluster.nodes[c].broker_id}@{cluster.peer_host(c)}:{cluster.peer_port(c)}"
            for c in self.controllers
        )

    def _format(self, cluster: Cluster, name: str, props: dict[str, str]) -> None:
        """``kafka-storage format``: once per node per run, before its first start."""
        if (cluster.nodes[name].data_dir / "meta.properties").exists():
            return
        cluster.nodes[name].data_dir.mkdir(parents=True, exist_ok=True)
        args = ["format", "-t", self.cluster_id, "-c", "@CONFIG@", "--ignore-formatted"]
        for feature, level in sorted(self.features.items()):
            args += ["--feature", f"{feature}={level}"]
        cluster.run_tool("kafka.tools.StorageTool", args, name, props)

    def _controller_props(self, cluster: Cluster, c: str) -> dict[str, str]:
        return kraft_controller_properties(
            self.version,
            cluster.nodes[c].broker_id,
            cluster.peer_host(c),
            cluster.peer_port(c),
            cluster.node_path(c, "data"),
            self.voters(cluster),
            self.SESSION_TIMEOUT_MS,
        )

    def start(self, cluster: Cluster) -> None:
        from concurrent.futures import ThreadPoolExecutor

        # Formatting is a JVM per node: run them side by side, once per run.
        configs = {c: self._controller_props(cluster, c) for c in self.controllers}
        configs.update({b: self.broker_config(cluster, b)[1] for b in cluster.brokers})
        with ThreadPoolExecutor(max_workers=len(configs)) as pool:
            for f in [pool.submit(self._format, cluster, n, p) for n, p in configs.items()]:
                f.result()
        for c in self.controllers:
            cluster.launch(c, "kafka.Kafka", configs[c])
        self._tree = find_tree(self.version)
        view = self.view(cluster)
        await_state(
            cluster,
            lambda: view.image().raft_epoch >= 0 and view.image().offset >= 0,  # type: ignore[attr-defined]
            "the controller quorum to elect a leader",
            None,
            self.startup_timeout,
        )
        for name in cluster.brokers:
            cluster.start_broker(name)
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

    def broker_config(self, cluster: Cluster, name: str) -> tuple[str, dict[str, str]]:
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

    def bootstrap(self, cluster: Cluster) -> str:
        """Every scenario broker: KRaft has no broker that no fault touches."""
        return ",".join("{}:{}".format(*cluster.broker_address(n)) for n in cluster.brokers)

    def create_topic(self, cluster: Cluster, spec: TopicSpec) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

        admin = AdminClient({"bootstrap.servers": self.bootstrap(cluster), "log_level": 0})
        # librdkafka 2.x wants the partition count spelled out beside an assignment
        topic = NewTopic(
            spec.name,
            num_partitions=1,
            replication_factor=-1,
            replica_assignment=[self.replica_ids(cluster, spec.replicas)],
            config=topic_config(spec),
        )
        for fut in admin.create_topics([topic], request_timeout=30).values():
            try:
                fut.result(timeout=60)
            except Exception as exc:
                raise ClusterError(f"creating topic {spec.name}: {exc}") from None

    def view(self, cluster: Cluster) -> MetadataView:

        if self._tree is None:
            self._tree = find_tree(self.version)
        leader = cluster.nodes[CONTROLLER]
        return KRaftView(leader.data_dir, schemas_for_tree(self._tree), leader.broker_id)

    def _heartbeat(
        self, cluster: Cluster, broker_id: int, epoch: int, offset: int, want_fence: bool
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

    def declare_dead(self, cluster: Cluster, name: str) -> bool:

        with self._lock:
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

    def keep_alive(self, cluster: Cluster, names: set[str]) -> None:
        with self._lock:
            self._alive = set(names)

    def _keep(self, cluster: Cluster) -> None:
        """The session keeper thread: heartbeats for silent brokers the script keeps alive."""

        while not self._stop.wait(self.KEEPALIVE_INTERVAL):
            with self._lock:
                names = set(self._alive)
            if not names:
                continue
            with contextlib.suppress(Exception):  # a dead controller is the run's to report
                view = self.view(cluster)
                assert isinstance(view, KRaftView)
                img = view.image()
                for n in names:
                    state = img.brokers.get(cluster.brokers[n].broker_id)
                    if state is not None and not state.fenced:
                        self._heartbeat(cluster, state.broker_id, state.epoch, img.offset, False)

    def close(self) -> None:
        self._stop.set()
        if self._keeper is not None:
            self._keeper.join(timeout=5)
