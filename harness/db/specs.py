"""The cluster's plain values and errors: a leaf, so the modes and the catalogue import them
without importing the :class:`harness.db.Cluster` ABC (which names the modes' types)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.db.names import TOPIC

DEFAULT_DISTS = Path("/opt/kafka-dists")


class ClusterError(RuntimeError):
    """A cluster could not be started or reached; the message is one line."""


class NodeExited(ClusterError):
    """A node's JVM exited on its own while the harness waited on it (``node``, ``code``)."""

    def __init__(self, message: str, node: str, code: int) -> None:
        super().__init__(message)
        self.node = node
        self.code = code


class PublishRefused(ClusterError):
    """The Docker daemon could not publish node ``node``'s host port (taken meanwhile)."""

    # what the daemon says then (seen: "driver failed programming external connectivity on
    # endpoint ...: ... address already in use")
    SAID = ("port is already allocated", "address already in use", "external connectivity")

    def __init__(self, message: str, node: str) -> None:
        super().__init__(message)
        self.node = node


class FenceTimeout(RuntimeError):
    """A step's precondition never became true; the run stops rather than guess.

    Defined with the cluster because the modes wait on their own controller's state too.
    """


class StepPrevented(RuntimeError):
    """The step cannot be made to happen on this backend/version (a result, not a bug)."""


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
    """One node: a broker, a KRaft controller or ZooKeeper (``role``)."""

    name: str
    broker_id: int  # broker.id / node.id; -1 for ZooKeeper
    port: int  # the port the harness reaches it on (127.0.0.1)
    data_dir: Path  # this node's log.dirs (one dir), on the host
    props: dict[str, str] = field(default_factory=dict)
    role: str = "broker"  # broker | controller | zookeeper


class Runtime(Protocol):
    """What a mode needs of the cluster it runs on: the nodes, where they are, and how to
    start them. :class:`harness.db.Cluster` is one; the modes are typed against this so that
    the cluster (which holds a mode) and the modes (which drive a cluster) do not import each
    other."""

    brokers: dict[str, BrokerSpec]
    nodes: dict[str, BrokerSpec]
    workdir: Path
    expected_down: set[str]
    topic: str

    def launch(self, name: str, main_class: str, props: dict[str, str]) -> None: ...

    def run_tool(
        self, main_class: str, args: list[str], name: str, props: dict[str, str] | None = None
    ) -> str: ...

    def is_running(self, name: str) -> bool: ...

    def exit_code(self, name: str) -> int | None: ...

    def peer_host(self, name: str) -> str: ...

    def peer_port(self, name: str) -> int: ...

    def node_path(self, name: str, what: str) -> str: ...

    def start_broker(self, name: str) -> None: ...

    def node_address(self, name: str) -> tuple[str, int]: ...

    def broker_address(self, name: str) -> tuple[str, int]: ...

    def state_change_log(self, name: str) -> Path: ...

    def metadata_schemas(self) -> dict[int, Any]: ...

    def declare_dead(self, name: str) -> bool: ...
