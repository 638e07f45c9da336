"""The *mode* axis of a cluster: ZooKeeper or KRaft.

A mode says which nodes exist besides the scenario's brokers, how each is configured, how
the cluster comes up, how the test topic is created, how the controller's decisions are read
and how the harness makes the controller act on a dead broker. It never starts a process
itself: it asks the cluster's runtime (:meth:`harness.db.Cluster.launch`,
:meth:`harness.db.Cluster.run_tool`), so every mode runs on every runtime.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

from harness.db import BrokerSpec, Cluster, ClusterError, TopicSpec

if TYPE_CHECKING:
    from harness.db.catalogue.versions import KafkaVersion
    from harness.db.mode.view import MetadataView

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
