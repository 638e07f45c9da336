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
from typing import TYPE_CHECKING, Protocol

from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

from harness import timing
from harness.db.exits import exit_cause
from harness.db.specs import BrokerSpec, ClusterError, NodeExited, Runtime, TopicSpec

if TYPE_CHECKING:
    from harness.db.catalogue.versions import KafkaVersion
    from harness.db.mode.view import MetadataView, PartitionView

ZOOKEEPER = "zookeeper"
NOT_CONTROLLER = 41  # Errors.NOT_CONTROLLER
# Node ids of KRaft controllers: apart from scenario brokers (1..5).
CONTROLLER_IDS = (0, 90, 91)
# ZooKeeper mode: a second controller-eligible broker (no replicas) for controller failover.
SPARE_CONTROLLER = "controller2"
SPARE_CONTROLLER_ID = 92


def await_state(
    cluster: Runtime, check: Callable[[], bool], what: str, name: str | None, timeout: float
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
            if code is not None and n not in cluster.expected_down:
                logs = cluster.workdir / n / "logs"
                cause = exit_cause(logs)
                raise NodeExited(
                    f"{n} exited with code {code} while waiting for {what}"
                    + (f" ({cause})" if cause else "")
                    + f"; see {logs}",
                    n,
                    code,
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


Wait = Callable[[Callable[[], object], str], object]
"""A bounded wait on observable state, the playbook's fence: ``wait(check, what)``."""


class Decisions(ABC):
    """How the harness sees a broker take up what the controller decided.

    ZooKeeper mode counts LeaderAndIsr requests sent (the controller's state-change log)
    against those the broker handled (its own); KRaft has no LeaderAndIsr and compares the
    broker's Metadata answer and its Partition's epoch with the controller's decision.
    """

    @abstractmethod
    def mark(self, name: str) -> None:
        """Remember where ``name`` stands, before a (re)start or a cut from the controller."""

    @abstractmethod
    def settle(self, name: str, wait: Wait) -> None:
        """Fence: ``name`` has acted on every decision the controller sent it."""

    @abstractmethod
    def after_restart(self, name: str, wait: Wait) -> None:
        """Fence: the controller has sent a just-restarted ``name`` its decision."""

    @abstractmethod
    def after_heal(self, name: str, expired: bool, wait: Wait) -> None:
        """Fence: ``name`` acted on what a cut from the controller held back.

        ``expired``: its session ended while cut, so it registered again.
        """


class ControllerElection(Protocol):
    """The controller-eligible nodes of a cluster with a spare, for a controller failover
    (:mod:`harness.nemesis.failover`): who is controller, who is registered, and ending the
    session of a killed controller as its expiry would."""

    def eligible(self) -> list[str]:
        """The nodes that may be controller (they host no replica of the test topic)."""
        ...

    def controller_id(self) -> int:
        """The active controller's id."""
        ...

    def registered(self, broker_id: int) -> bool:
        """``broker_id`` is registered (live) with the controller's store."""
        ...

    def drop_session(self, broker_id: int) -> None:
        """Remove what the session of a killed ``broker_id`` held: registration, then
        controllership, so the next controller never counts it live."""
        ...

    def describe(self) -> str:
        """Who is controller and who is registered, in a line (for fence timeouts)."""
        ...


class Mode(ABC):
    """ZooKeeper or KRaft: see the module docstring.

    The playbook and the nemesis call these verbs and never ask which mode they run in.
    """

    name: str
    # Who a broker must reach to keep its session, in a sentence: "ZooKeeper".
    hub_name: str
    # How a broker cut from the controller stays registered meanwhile, in a sentence.
    held_session_note: str

    def __init__(self, version: KafkaVersion, startup_timeout: float = 90.0) -> None:
        self.version = version
        self.startup_timeout = startup_timeout

    @abstractmethod
    def make_nodes(
        self, broker_names: list[str], workdir: Path, free_port: Callable[[], int]
    ) -> dict[str, BrokerSpec]:
        """Every node of the cluster, infrastructure first, each with its id and port."""

    @abstractmethod
    def start(self, cluster: Runtime) -> None:
        """Bring the cluster up; return once every broker is registered and live."""

    @abstractmethod
    def broker_config(self, cluster: Runtime, name: str) -> tuple[str, dict[str, str]]:
        """(main class, properties) of broker ``name``."""

    @abstractmethod
    def bootstrap(self, cluster: Runtime) -> str:
        """Client bootstrap servers."""

    @abstractmethod
    def create_topic(self, cluster: Runtime, spec: TopicSpec) -> None:
        """Create the test topic with the scenario's replica assignment and settings."""

    @abstractmethod
    def delete_topic(self, cluster: Runtime, topic: str) -> None:
        """Ask for the topic's deletion (a warm cluster's reset); the caller waits until the
        controller and every broker's disk no longer have it. A missing topic is no error."""

    @abstractmethod
    def view(self, cluster: Runtime) -> MetadataView:
        """A reader of the controller's decisions."""

    @abstractmethod
    def declare_dead(self, cluster: Runtime, name: str) -> bool:
        """Make the controller act on dead broker ``name`` now; False if already done."""

    def keep_alive(self, cluster: Runtime, names: set[str]) -> None:  # noqa: B027
        """Brokers whose liveness the controller must keep seeing although they are silent.

        The scenario decides when the controller notices a failure (``detect``); until then
        a paused or crashed broker must not be noticed by the controller's own timers.
        ZooKeeper mode needs nothing: its 60 s sessions outlast any run's pauses.
        """

    def close(self) -> None:  # noqa: B027
        """Stop whatever the mode runs in the harness itself; idempotent."""

    def add_spare_controller(self, cluster: Runtime, port: int) -> bool:
        """Add a second controller-eligible node (before the cluster starts) for a controller
        failover; False: this mode has no such failover (KRaft's quorum elects by itself)."""
        return False

    def controller_election(self, cluster: Runtime) -> ControllerElection | None:
        """The failover's view of the controller election, None without a spare."""
        return None

    def unexpected_controller(self, cluster: Runtime) -> str | None:
        """One line when the active controller is not the node a fresh cluster elects
        (a reused cluster's clean check, harness.generator.warm), else None. KRaft: any
        member of the quorum will do."""
        return None

    @abstractmethod
    def controller_nodes(self) -> list[str]:
        """The node(s) the model's ``controller`` stands for."""

    @abstractmethod
    def liveness_hub(self) -> list[str]:
        """The node(s) a broker must reach to keep its session (ZooKeeper; KRaft controllers)."""

    @abstractmethod
    def restart_before_detect(self, can_fail_over: bool) -> str | None:
        """Why a broker cannot restart before the controller noticed its failure, or None.

        ``can_fail_over``: the cluster has a spare controller to hand controllership to.
        """

    @abstractmethod
    def end_cut_session(self, cluster: Runtime, name: str, stop_keeping: Callable[[], None]) -> str:
        """End the session of ``name``, cut from the liveness hub; how, in a sentence.

        ``stop_keeping``: stop the harness keeping that session (the KRaft session keeper).
        """

    def short_session_props(self, ms: int) -> dict[str, str]:
        """Broker settings that make a cut broker's session end after ``ms``."""
        return {}

    @abstractmethod
    def decisions(
        self,
        cluster: Runtime,
        decided: Callable[[], PartitionView],
        controllers: Callable[[], list[str]],
    ) -> Decisions:
        """The fences on brokers acting on decisions; ``decided``: the controller's current
        decision; ``controllers``: every node that may have been the controller this run."""

    @abstractmethod
    def assignment(self, view: MetadataView) -> list[int]:
        """The test partition's replica assignment as the controller has it, in order."""

    @abstractmethod
    def elect_preferred(
        self,
        cluster: Runtime,
        view: MetadataView,
        name: str,
        release: Callable[[], None],
        wait: Wait,
    ) -> str:
        """Make ``name`` first in the assignment, then run a preferred-replica election.

        ``release``: resume ``name`` where the mode needs it running first. Returns what was
        sent, in a sentence.
        """

    @abstractmethod
    def elect_unclean(self, cluster: Runtime, name: str) -> str:
        """ElectLeaders UNCLEAN (KIP-460, 2.4+) for the test partition; what was sent."""

    def replica_ids(self, cluster: Runtime, names: list[str]) -> list[int]:
        return [cluster.brokers[n].broker_id for n in names]
