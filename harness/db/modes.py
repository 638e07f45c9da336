"""The *mode* axis of a cluster: ZooKeeper or KRaft.

A mode says which nodes exist besides the scenario's brokers, how each is configured, how
the cluster comes up, how the test topic is created, how the controller's decisions are read
and how the harness makes the controller act on a dead broker. It never starts a process
itself: it asks the cluster's runtime (:meth:`harness.db.Cluster.launch`,
:meth:`harness.db.Cluster.run_tool`), so every mode runs on every runtime.
"""

from __future__ import annotations

import base64
import contextlib
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

from harness import timing
from harness.db import CONTROLLER, BrokerSpec, Cluster, ClusterError, TopicSpec
from harness.db.kafka_config import (
    broker_properties,
    kraft_broker_properties,
    kraft_controller_properties,
    topic_config,
    zookeeper_properties,
)

if TYPE_CHECKING:
    from harness.db.versions import KafkaVersion
    from harness.metadata import MetadataView

ZOOKEEPER = "zookeeper"
NOT_CONTROLLER = 41  # Errors.NOT_CONTROLLER
# Node ids of KRaft controllers: apart from scenario brokers (1..5).
CONTROLLER_IDS = (0, 90, 91)
# ZooKeeper mode: a second controller-eligible broker (no replicas) for controller failover.
SPARE_CONTROLLER = "controller2"
SPARE_CONTROLLER_ID = 92


def await_state(
    cluster: Cluster, check: Callable[[], bool], what: str, name: str | None, timeout: float
) -> None:
    """Wait (bounded) for ``check``; a node that exits meanwhile fails fast, naming it."""

    @retry(
        stop=stop_after_delay(timeout),
        wait=wait_fixed(0.2),
        retry=retry_if_result(lambda ok: not ok),
        reraise=True,
    )
    def poll() -> bool:
        for n in cluster.nodes if name is None else [name]:
            code = cluster.exit_code(n)
            if code is not None and n not in getattr(cluster, "expected_down", set()):
                raise ClusterError(
                    f"{n} exited with code {code} while waiting for {what}; "
                    f"see {cluster.workdir / n / 'logs'}"
                )
        try:
            return check()
        except ClusterError:
            raise
        except Exception:  # not up yet: connection refused, no file yet...
            return False

    try:
        with timing.timed_fence(what):
            poll()
    except ClusterError:
        raise
    except Exception:
        raise ClusterError(
            f"timed out after {timeout:.0f}s waiting for {what} (logs in {cluster.workdir})"
        ) from None


class Mode(ABC):
    """ZooKeeper or KRaft: see the module docstring."""

    name: str

    def __init__(self, version: KafkaVersion, startup_timeout: float = 90.0) -> None:
        self.version = version
        self.startup_timeout = startup_timeout

    @abstractmethod
    def make_nodes(
        self, broker_names: list[str], workdir: Path, free_port: Callable[[], int]
    ) -> dict[str, BrokerSpec]:
        """Every node of the cluster, infrastructure first, each with its id and port."""

    @abstractmethod
    def start(self, cluster: Cluster) -> None:
        """Bring the cluster up; return once every broker is registered and live."""

    @abstractmethod
    def broker_config(self, cluster: Cluster, name: str) -> tuple[str, dict[str, str]]:
        """(main class, properties) of broker ``name``."""

    @abstractmethod
    def bootstrap(self, cluster: Cluster) -> str:
        """Client bootstrap servers."""

    @abstractmethod
    def create_topic(self, cluster: Cluster, spec: TopicSpec) -> None:
        """Create the test topic with the scenario's replica assignment and settings."""

    @abstractmethod
    def view(self, cluster: Cluster) -> MetadataView:
        """A reader of the controller's decisions."""

    @abstractmethod
    def declare_dead(self, cluster: Cluster, name: str) -> bool:
        """Make the controller act on dead broker ``name`` now; False if already done."""

    def keep_alive(self, cluster: Cluster, names: set[str]) -> None:  # noqa: B027
        """Brokers whose liveness the controller must keep seeing although they are silent.

        The scenario decides when the controller notices a failure (``detect``); until then
        a paused or crashed broker must not be noticed by the controller's own timers.
        ZooKeeper mode needs nothing: its 60 s sessions outlast any run's pauses.
        """

    def close(self) -> None:  # noqa: B027
        """Stop whatever the mode runs in the harness itself; idempotent."""

    def replica_ids(self, cluster: Cluster, names: list[str]) -> list[int]:
        return [cluster.brokers[n].broker_id for n in names]


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

    def add_spare(self, cluster: Cluster, port: int) -> str:
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

    def make_nodes(
        self, broker_names: list[str], workdir: Path, free_port: Callable[[], int]
    ) -> dict[str, BrokerSpec]:
        nodes = {ZOOKEEPER: BrokerSpec(ZOOKEEPER, -1, free_port(), workdir / ZOOKEEPER / "data",
                                       role="zookeeper")}  # fmt: skip
        for i, name in enumerate([CONTROLLER, *broker_names]):
            nodes[name] = BrokerSpec(name, i, free_port(), workdir / name / "data")
        return nodes

    def zk_connect(self, cluster: Cluster) -> str:
        return "{}:{}".format(*cluster.node_address(ZOOKEEPER))

    def _peer_zk_connect(self, cluster: Cluster) -> str:
        return f"{cluster.peer_host(ZOOKEEPER)}:{cluster.peer_port(ZOOKEEPER)}"

    def start(self, cluster: Cluster) -> None:
        from harness.metadata.zk import ZkView

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

        def zk_up() -> bool:
            with ZkView(self.zk_connect(cluster), timeout=2.0):
                return True

        await_state(cluster, zk_up, "ZooKeeper to listen", ZOOKEEPER, self.startup_timeout)
        cluster.start_broker(CONTROLLER)
        with ZkView(self.zk_connect(cluster)) as view:
            await_state(
                cluster,
                lambda: view.controller() == 0,
                "the controller broker to be elected",
                CONTROLLER,
                self.startup_timeout,
            )
            from harness.db.kafka_config import offsets_topic_znodes

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

    def broker_config(self, cluster: Cluster, name: str) -> tuple[str, dict[str, str]]:
        spec = cluster.brokers[name]
        props = broker_properties(
            self.version,
            spec.broker_id,
            cluster.peer_host(name),
            cluster.peer_port(name),
            cluster.node_path(name, "data"),
            self._peer_zk_connect(cluster),
        )
        return "kafka.Kafka", props

    def bootstrap(self, cluster: Cluster) -> str:
        """Clients bootstrap from the controller broker(s), which no scenario fault touches.

        With a spare both are listed: a failover kills one of them for a while.
        """
        return ",".join(
            "{}:{}".format(*cluster.broker_address(n)) for n in self.controller_brokers()
        )

    def create_topic(self, cluster: Cluster, spec: TopicSpec) -> None:
        """Write the assignment and config znodes (milliseconds, every ZK-mode version)."""
        from harness.metadata.zk import ZkView

        with ZkView(self.zk_connect(cluster)) as zk:
            zk.create_topic(spec.name, self.replica_ids(cluster, spec.replicas), topic_config(spec))

    def view(self, cluster: Cluster) -> MetadataView:
        from harness.metadata.zk import ZkView

        return ZkView(self.zk_connect(cluster))

    def declare_dead(self, cluster: Cluster, name: str) -> bool:
        from harness.metadata.zk import ZkView

        with ZkView(self.zk_connect(cluster)) as zk:
            return zk.expire_registration(cluster.brokers[name].broker_id)


# ---------------------------------------------------------------------------- KRaft


FORMAT_FILES = ("meta.properties", "bootstrap.checkpoint")


def format_template(version: KafkaVersion, role: str, features: dict[str, int]) -> Path | None:
    """Where the storage tool's output for (tree, role, features) is kept; None: not kept
    (``HWCHAOS_KRAFT_FORMAT_CACHE=0``, or no usable cache folder)."""
    import hashlib
    import os

    if os.environ.get("HWCHAOS_KRAFT_FORMAT_CACHE", "1").strip().lower() in ("0", "false", "no"):
        return None
    from harness.db.local import find_tree

    try:
        tree = find_tree(version)
        stamp = (tree / "libs" / f"{version.dist_name}.jar").stat().st_mtime_ns
    except Exception:  # no tree on this machine (docker backend from its image): no template
        return None
    text = "\n".join([str(tree), str(stamp), version.name, role, repr(sorted(features.items()))])
    base = os.environ.get("HWCHAOS_CACHE") or str(Path.home() / ".cache" / "hwchaos")
    return Path(base).expanduser() / "kraft-format" / hashlib.sha256(text.encode()).hexdigest()[:20]


def keep_format(data: Path, template: Path) -> None:
    """Keep what the storage tool wrote in ``data`` as ``template`` (atomic; best effort)."""
    import os
    import shutil

    if template.is_dir() or not all((data / f).is_file() for f in FORMAT_FILES):
        return
    tmp = template.with_name(f"{template.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        tmp.mkdir(parents=True, exist_ok=True)
        for f in FORMAT_FILES:
            shutil.copy2(data / f, tmp / f)
        os.rename(tmp, template)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


def copy_format(template: Path, data: Path, node_id: int, cluster_id: str) -> bool:
    """Format ``data`` from ``template``: its bootstrap.checkpoint, and its meta.properties
    with this node's id, this run's cluster id and a new directory id. False: no template."""
    import shutil

    try:
        lines = (template / "meta.properties").read_text().splitlines()
        shutil.copy2(template / "bootstrap.checkpoint", data / "bootstrap.checkpoint")
    except OSError:
        return False
    own = {"node.id": str(node_id), "cluster.id": cluster_id, "directory.id": random_cluster_id()}
    out = []
    for line in lines:
        key = line.split("=", 1)[0]
        out.append(f"{key}={own[key]}" if key in own and "=" in line else line)
    (data / "meta.properties").write_text("\n".join(out) + "\n")
    return True


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

    def voters(self, cluster: Cluster) -> str:
        return ",".join(
            f"{cluster.nodes[c].broker_id}@{cluster.peer_host(c)}:{cluster.peer_port(c)}"
            for c in self.controllers
        )

    def _format(self, cluster: Cluster, name: str, props: dict[str, str]) -> None:
        """``kafka-storage format``: once per node per run, before its first start.

        The tool is a JVM per node (seconds of CPU each, three per run); what it writes is
        the same for every node but for the ids in ``meta.properties``. So the tool really
        runs once per tree, role and features, its output is kept as a template (cache,
        :func:`format_template`), and every later node gets the template's
        ``bootstrap.checkpoint`` and a ``meta.properties`` with its own node id, this run's
        cluster id and (where the tool writes one) a fresh directory id.
        """
        data = cluster.nodes[name].data_dir
        if (data / "meta.properties").exists():
            return
        data.mkdir(parents=True, exist_ok=True)
        role = cluster.nodes[name].role
        template = format_template(self.version, role, self.features)
        if template is not None and copy_format(template, data, cluster.nodes[name].broker_id,
                                                self.cluster_id):  # fmt: skip
            return
        args = ["format", "-t", self.cluster_id, "-c", "@CONFIG@", "--ignore-formatted"]
        for feature, level in sorted(self.features.items()):
            args += ["--feature", f"{feature}={level}"]
        cluster.run_tool("kafka.tools.StorageTool", args, name, props)
        if template is not None:
            keep_format(data, template)

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
        from harness.metadata.kraft import KRaftView
        if self._schemas_of is None:
            # from where the nodes run: the release tree, or the docker backend's image
            self._schemas_of = cluster.metadata_schemas()
        leader = cluster.nodes[CONTROLLER]
        return KRaftView(leader.data_dir, self._schemas_of, leader.broker_id)

    def _heartbeat(
        self, cluster: Cluster, broker_id: int, epoch: int, offset: int, want_fence: bool
    ) -> int:
        """BrokerHeartbeat to the active controller; the error code (0 = accepted).

        Only the active controller of a quorum accepts heartbeats (the others answer
        NOT_CONTROLLER, 41): try the one that last accepted first, then the others.
        """
        from harness.client.wire import broker_heartbeat

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
        from harness.metadata.kraft import KRaftView

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
        from harness.metadata.kraft import KRaftView

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


def make_mode(version: KafkaVersion, controllers: int = 1) -> Mode:
    if version.mode == "kraft":
        return KRaftMode(version, controllers=controllers, features=dict(version.features))
    return ZooKeeperMode(version)
