"""Controller freeze and failover: a restart the ZooKeeper-mode controller did not notice.

The model's ``restart F`` while its controller still counts F live (no ``detect F`` first)
is a bounce no controller saw: F comes back still in the ISR, and on becoming follower
truncates as its version does (to its checkpointed HW before 0.11, KIP-101), so it can
later be elected *cleanly* without what it truncated. A live ZooKeeper-mode controller sees
every bounce (the registration goes: ``onBrokerFailure``; it comes back:
``onBrokerStartup``), so the harness lets the bounce happen while no controller looks, then
hands controllership to a broker that never knew F was gone:

1. **freeze** the active controller broker (SIGSTOP): its ZooKeeper watches queue unread;
2. delete F's registration if it is still there (F crashed; its 60 s session has not
   expired yet), start F and wait until it registered again;
3. **fail over**: pause every running scenario broker for the election (so the spare, a
   broker that hosts no replica, is the only one that can win it and no later crash step
   kills the controller), kill the frozen controller and delete its ephemeral nodes (its
   ``/brokers/ids`` entry, then ``/controller``), as the expiry of its session would;
4. the new controller's ``KafkaController.onControllerFailover`` reads the partition state
   from ZooKeeper (F in the ISR, the same leader and leader epoch) and sends every live
   replica a LeaderAndIsr (``ReplicaStateMachine.startup``: live replicas -> OnlineReplica),
   so F becomes follower of the current leader without leaving the ISR;
5. the old controller broker is started again, as the spare of a later failover.

The decision to run a spare is the model's: :func:`prepare` adds it when the prediction has
such a restart. KRaft is not covered: the quorum controller refuses the new registration
while the old heartbeat session lives (the model predicts that restart as prevented).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.db import Cluster
from harness.db.runtime.ports import free_port
from harness.nemesis import faults
from reference_model.run import RunResult

# (check, what, timeout, seen) -> the truthy value check returned; raises on timeout
Wait = Callable[[Callable[[], Any], str, float, Callable[[], str] | None], Any]


def unnoticed_restarts(prediction: RunResult) -> list[int]:
    """1-based steps that restart a down broker the model's controller still counts live."""
    out = []
    for k in range(1, len(prediction.steps)):
        before = prediction.steps[k - 1].state
        for ev in prediction.steps[k].events:
            if (
                ev.kind == "restart"
                and ev.replica in before.controller.live
                and not before.replicas[ev.replica].alive
            ):
                out.append(k)
                break
    return out


def prepare(cluster: Cluster, prediction: RunResult) -> bool:
    """Give a ZooKeeper-mode cluster its spare controller broker if the run needs a failover.

    Call before the cluster starts. True when a spare was added (a mode without such a
    failover, KRaft, adds none).
    """
    failovers = any(
        ev.kind == "controller_failover" for step in prediction.steps for ev in step.events
    )
    if not unnoticed_restarts(prediction) and not failovers:
        return False
    return cluster.mode.add_spare_controller(cluster, free_port())


def has_spare(cluster: Cluster) -> bool:
    """The cluster was given a spare controller to fail over to."""
    return cluster.mode.controller_election(cluster) is not None


class ControllerFailover:
    """Freeze, fail over and restore the controller brokers of one ZooKeeper-mode cluster."""

    def __init__(self, cluster: Cluster, wait: Wait, timeout: float = 45.0) -> None:
        election = cluster.mode.controller_election(cluster)
        if election is None:
            raise ValueError("controller failover needs a ZooKeeper-mode cluster with a spare")
        self.cluster = cluster
        self.election = election
        self.wait = wait
        self.timeout = timeout
        self.frozen: str | None = None

    # ------------------------------------------------------------------ observing

    def eligible(self) -> list[str]:
        """The brokers that may be controller (they host no replica of the test topic)."""
        return self.election.eligible()

    def controller_id(self) -> int:
        return self.election.controller_id()

    def name_of(self, broker_id: int) -> str | None:
        return next((n for n in self.eligible() if self._id(n) == broker_id), None)

    def _id(self, name: str) -> int:
        return self.cluster.brokers[name].broker_id

    def _registered(self, name: str) -> bool:
        return self.election.registered(self._id(name))

    def _seen(self) -> str:
        return self.election.describe()

    # ------------------------------------------------------------------ the fault

    def freeze(self) -> str:
        """SIGSTOP the active controller broker; returns its name.

        Frozen, it reads no ZooKeeper event: a registration that goes and comes back is
        never handled by it.
        """
        active = self.name_of(self.controller_id())
        if active is None:
            raise RuntimeError(f"the controller is not a controller broker ({self._seen()})")
        faults.pause(self.cluster, active)
        self.frozen = active
        return active

    def fail_over(self, pause: list[str]) -> str:
        """Kill the frozen controller; the other controller broker wins the election.

        ``pause``: the scenario brokers that are running unpaused; they are frozen for the
        moment of the election (the first broker to create ``/controller`` wins it) and
        resumed once it is decided. Returns the new controller's name.
        """
        if self.frozen is None:
            raise RuntimeError("fail_over before freeze")
        old = self.frozen
        new = next(n for n in self.eligible() if n != old)
        new_id = self._id(new)
        for n in pause:
            faults.pause(self.cluster, n)
        try:
            faults.crash(self.cluster, old)  # SIGKILL ends a stopped JVM too
            self.frozen = None
            # its session outlives the process (60 s): remove what it held, registration
            # first so the new controller never counts the dead one live
            self.election.drop_session(self._id(old))
            self.wait(
                lambda: self.controller_id() == new_id,
                f"{new} (broker {new_id}) to win the controller election",
                self.timeout,
                self._seen,
            )
        finally:
            for n in pause:
                faults.resume(self.cluster, n)
        return new

    def restore_standby(self, name: str) -> None:
        """Start the killed controller broker again: the spare of a later failover.

        Its old session may still hold nothing (both its nodes were deleted), so it
        registers at once; ``/controller`` exists, so it does not become controller.
        """
        self.cluster.start_broker(name)
        self.wait(
            lambda: self._registered(name),
            f"{name} to register again as the spare controller broker",
            self.timeout,
            self._seen,
        )
