"""The *db* of the Jepsen split: how a Kafka cluster starts, stops and is reached.

Backends (``local`` JVM processes, ``docker`` containers) implement :class:`Cluster`; the
nemesis, client, generator and checker only ever talk to this interface, so a scenario plays
the same way on both. Names are the scenario's broker names (``A``, ``B``...); every cluster
also runs one extra broker, the *controller broker*, that hosts no replica of the test
partition: faults on replicas then never pause or kill the controller by accident, and
controller behaviour stays what the scenario says.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

CONTROLLER = "controller"
TOPIC = "hwchaos"
PARTITION = 0

DEFAULT_DISTS = Path("/opt/kafka-dists")


class ClusterError(RuntimeError):
    """A cluster could not be started or reached; the message is one line."""


class BrokerUnavailable(ClusterError):
    """No Kafka release tree (or Docker daemon) is configured on this machine."""


def kafka_dists() -> Path | None:
    """Where Kafka release trees live: ``$HWCHAOS_KAFKA_DISTS``, else /opt/kafka-dists."""
    env = os.environ.get("HWCHAOS_KAFKA_DISTS")
    path = Path(env) if env else DEFAULT_DISTS
    return path if path.is_dir() else None


@dataclass
class TopicSpec:
    """The test partition: replicas in preference order (first = initial leader)."""

    replicas: list[str]
    min_insync: int
    unclean: bool
    name: str = TOPIC


@dataclass
class BrokerSpec:
    name: str
    broker_id: int
    port: int
    data_dir: Path  # this broker's log.dirs (one dir)
    props: dict[str, str] = field(default_factory=dict)


class Cluster(ABC):
    """One ZooKeeper, one controller broker and 2-5 replica brokers of one Kafka version.

    Backends differ in how processes start, stop and take signals; both publish every
    broker on 127.0.0.1 and keep its data and log dirs under ``workdir/<name>/`` on the
    host, so addresses, paths and topic creation are shared here.
    """

    brokers: dict[str, BrokerSpec]
    workdir: Path
    zk_port: int

    @abstractmethod
    def start(self) -> None:
        """Start ZooKeeper and every broker; return once all are registered."""

    @abstractmethod
    def close(self) -> None:
        """Stop everything and release every process/container; idempotent, never raises."""

    @abstractmethod
    def start_broker(self, name: str) -> None:
        """Start (or restart) one broker with its own id, port and data dir."""

    @abstractmethod
    def signal(self, name: str, sig: int) -> None:
        """Send a signal to one broker's JVM (SIGKILL, SIGTERM, SIGSTOP, SIGCONT)."""

    @abstractmethod
    def is_running(self, name: str) -> bool:
        """Whether the broker's JVM process exists (a stopped process counts as running)."""

    @abstractmethod
    def wait_exit(self, name: str, timeout: float) -> None:
        """Wait until the broker's process has exited (after SIGTERM or SIGKILL)."""

    def bootstrap(self) -> str:
        """Clients bootstrap from the controller broker, which no fault touches."""
        return f"127.0.0.1:{self.brokers[CONTROLLER].port}"

    def zk_connect(self) -> str:
        return f"127.0.0.1:{self.zk_port}"

    def log_dir(self, name: str) -> Path:
        """Broker ``name``'s log.dirs entry: where the checkpoint files live."""
        return self.brokers[name].data_dir

    def partition_dir(self, name: str, topic: str = TOPIC) -> Path:
        return self.brokers[name].data_dir / f"{topic}-{PARTITION}"

    def broker_log(self, name: str) -> Path | None:
        path = self.workdir / name / "logs" / "server.log"
        return path if path.exists() else None

    def state_change_log(self, name: str) -> Path | None:
        """The broker's state-change log (LeaderAndIsr handling), read by fences."""
        return self.workdir / name / "logs" / "state-change.log"

    def create_topic(self, spec: TopicSpec) -> None:
        """Create the test topic with an explicit replica assignment (through ZooKeeper)."""
        from harness.db.kafka_config import topic_config
        from harness.metadata.zk import ZkView

        with ZkView(self.zk_connect()) as zk:
            zk.create_topic(
                spec.name, [self.brokers[n].broker_id for n in spec.replicas], topic_config(spec)
            )

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
