"""The *db* of the Jepsen split: how a Kafka cluster starts, stops and is reached.

Two axes, composed rather than multiplied (as Jepsen's ``db/kafka.clj`` and
``db/redpanda.clj`` implement the same small protocols):

- the **runtime** (how one JVM node runs: a local process or a container) is the
  :class:`Cluster` subclass: ``LocalCluster`` (``local.py``), ``DockerCluster``
  (``containers.py``). It implements the node capabilities: :meth:`Cluster.launch`,
  :meth:`Cluster.run_tool`, :meth:`Cluster.signal`, :meth:`Cluster.is_running`,
  :meth:`Cluster.wait_exit`, and where files and peers are.
- the **mode** (ZooKeeper or KRaft) is a :class:`harness.db.mode.Mode` the cluster holds:
  which nodes exist besides the scenario's brokers, their configuration, how the cluster
  starts, how a topic is created, how the controller's decisions are read
  (:class:`harness.db.mode.view.MetadataView`) and how a dead broker is declared dead.

The nemesis, client, generator and checker only talk to :class:`Cluster`, so a scenario plays
the same way on every combination. Names are the scenario's broker names (``A``, ``B``...);
in ZooKeeper mode the cluster also runs a *controller broker* (``controller``) that hosts no
replica of the test partition; in KRaft mode ``controller`` is the dedicated controller
process of the quorum (``process.roles=controller``). Either way faults on replicas never
touch the controller by accident.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.db.names import PARTITION, TOPIC

# The cluster's values and errors live in the leaf harness.db.specs; re-exported here.
from harness.db.specs import (
    DEFAULT_DISTS as DEFAULT_DISTS,
)
from harness.db.specs import (
    BrokerSpec as BrokerSpec,
)
from harness.db.specs import (
    BrokerUnavailable as BrokerUnavailable,
)
from harness.db.specs import (
    ClusterError as ClusterError,
)
from harness.db.specs import (
    FenceTimeout as FenceTimeout,
)
from harness.db.specs import (
    StepPrevented as StepPrevented,
)
from harness.db.specs import (
    TopicSpec as TopicSpec,
)
from harness.db.specs import (
    kafka_dists as kafka_dists,
)

if TYPE_CHECKING:
    from harness.db.catalogue.versions import KafkaVersion
    from harness.db.mode import Mode
    from harness.db.mode.view import MetadataView
    from harness.db.runtime.linkcuts import Partitions


class Cluster(ABC):
    """One Kafka cluster of one version: the mode's infrastructure plus 2-5 replica brokers.

    ``brokers`` holds every broker (the scenario's and, in ZooKeeper mode, the controller
    broker); ``nodes`` holds every node, brokers included. Data and log dirs live under
    ``workdir/<name>/`` on the host for every runtime, so the read-back, checkpoint faults
    and power-loss cuts work on host files.
    """

    version: KafkaVersion
    mode: Mode
    brokers: dict[str, BrokerSpec]
    nodes: dict[str, BrokerSpec]
    workdir: Path
    network: Partitions | None = None  # cuts links between nodes; None: this runtime cannot
    # The run's test topic. A fresh cluster's first run uses TOPIC; a reused cluster
    # (harness.generator.warm) gets a new name per run, set by the runner before the
    # playbook starts, so nothing of an earlier run's partition is read as this run's.
    topic: str = TOPIC
    # Nodes stopped on purpose: a node exiting while the mode waits is an error, unless listed.
    expected_down: set[str]
    # Why a start attempt failed before the one that came up (each runtime retries once).
    failed_starts: tuple[str, ...] = ()

    # ------------------------------------------------------------------ runtime capabilities

    @abstractmethod
    def launch(self, name: str, main_class: str, props: dict[str, str]) -> None:
        """Write ``props`` as node ``name``'s config file and start its JVM with it."""

    @abstractmethod
    def run_tool(
        self, main_class: str, args: list[str], name: str, props: dict[str, str] | None = None
    ) -> str:
        """Run a Kafka tool JVM to completion for node ``name`` (e.g. StorageTool format).

        ``props``, when given, is written as the node's config file and ``@CONFIG@`` in
        ``args`` replaced by its path. Paths are node paths (:meth:`node_path`). Returns the
        output; a failure raises ClusterError naming the tool and its last output line.
        """

    @abstractmethod
    def signal(self, name: str, sig: int) -> None:
        """Send a signal to one node's JVM (SIGKILL, SIGTERM, SIGSTOP, SIGCONT)."""

    @abstractmethod
    def host_pid(self, name: str) -> int | None:
        """The node's JVM as a process id of this host (None: not running), so faults can
        watch it through ``/proc`` (e.g. that SIGSTOP has stopped every thread)."""

    @abstractmethod
    def is_running(self, name: str) -> bool:
        """Whether the node's JVM process exists (a stopped process counts as running)."""

    @abstractmethod
    def wait_exit(self, name: str, timeout: float) -> None:
        """Wait until the node's process has exited (after SIGTERM or SIGKILL)."""

    @abstractmethod
    def exit_code(self, name: str) -> int | None:
        """The node's exit code once it has exited, else None."""

    @abstractmethod
    def close(self) -> None:
        """Stop everything and release every process/container; idempotent, never raises."""

    def peer_host(self, name: str) -> str:
        """The host name other nodes use to reach ``name`` (listeners, quorum voters)."""
        return "127.0.0.1"

    def peer_port(self, name: str) -> int:
        """The port other nodes use to reach ``name``."""
        return self.nodes[name].port

    def node_path(self, name: str, what: str) -> str:
        """Node ``name``'s ``data``/``logs``/``config`` dir as the node itself sees it."""
        return str(self.workdir / name / what)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the mode's infrastructure and every broker; return once all are registered."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.mode.start(self)

    def keep_failed_start(self, why: Exception, fresh_port: Callable[[], int]) -> None:
        """Before a runtime's one more start (local: a node exited; docker: that, or a host
        port the daemon could not publish): the failed attempt's node folders kept under
        ``failed-start/`` with the cause in ``why.txt`` (paths in it pointing there), the
        cause in :attr:`failed_starts`, and fresh ports for every node."""
        aside = self.workdir / "failed-start"
        aside.mkdir(parents=True, exist_ok=True)
        node = str(getattr(why, "node", ""))
        text = str(why).replace(str(self.workdir / node), str(aside / node)) if node else str(why)
        (aside / "why.txt").write_text(f"{text}\n")
        self.failed_starts = (*self.failed_starts, text)
        for name, spec in self.nodes.items():
            if (self.workdir / name).exists():
                (self.workdir / name).rename(aside / name)
            spec.port = fresh_port()
        self.expected_down.clear()

    def start_broker(self, name: str) -> None:
        """Start (or restart) one broker with its own id, port and data dir."""
        spec = self.brokers[name]
        spec.data_dir.mkdir(parents=True, exist_ok=True)
        main_class, props = self.mode.broker_config(self, name)
        props.update(spec.props)
        self.launch(name, main_class, props)

    # ------------------------------------------------------------------ addressing

    def bootstrap(self) -> str:
        """Where clients bootstrap (the mode decides: a broker no fault touches, or all)."""
        return self.mode.bootstrap(self)

    def node_address(self, name: str) -> tuple[str, int]:
        """Where the harness reaches node ``name`` (a broker, a controller, ZooKeeper)."""
        return ("127.0.0.1", self.nodes[name].port)

    def broker_address(self, name: str) -> tuple[str, int]:
        """Where the harness reaches broker ``name`` directly."""
        return self.node_address(name)

    def log_dir(self, name: str) -> Path:
        """Broker ``name``'s log.dirs entry: where the checkpoint files live."""
        return self.nodes[name].data_dir

    def partition_dir(self, name: str, topic: str | None = None) -> Path:
        """Broker ``name``'s directory of the test partition (of ``topic``, default the run's)."""
        return self.nodes[name].data_dir / f"{topic or self.topic}-{PARTITION}"

    def broker_log(self, name: str) -> Path:
        """The broker's ``server.log`` (it may not exist yet; rotated files sit beside it)."""
        return self.workdir / name / "logs" / "server.log"

    def state_change_log(self, name: str) -> Path:
        """The broker's state-change log (LeaderAndIsr handling), read by fences with the
        files rotated out of it (:func:`harness.readback.log4j.read_rotated`)."""
        return self.workdir / name / "logs" / "state-change.log"

    # ------------------------------------------------------------------ the mode's verbs

    def create_topic(self, spec: TopicSpec) -> None:
        """Create the test topic with an explicit replica assignment."""
        self.mode.create_topic(self, spec)

    def delete_topic(self, topic: str) -> None:
        """Ask for the topic's deletion (the mode's way); the caller observes it done."""
        self.mode.delete_topic(self, topic)

    def metadata(self) -> MetadataView:
        """A view of the controller's decisions; the caller closes it."""
        return self.mode.view(self)

    def metadata_schemas(self) -> dict[int, Any]:
        """The KRaft metadata-record schemas of this cluster's Kafka (by api key), read
        from the ``kafka-metadata`` jar of what the nodes run: the release tree (local) or
        the image (docker), so the host needs nothing else. Each runtime says where."""
        raise ClusterError(f"{type(self).__name__} cannot read the metadata-record schemas")

    def declare_dead(self, name: str) -> bool:
        """Make the controller act on dead broker ``name`` now (what its session expiry does)."""
        return self.mode.declare_dead(self, name)

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
