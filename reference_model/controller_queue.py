"""ZooKeeper mode: the controller's request queue per broker (rule ``controller_queue``).

``kafka.controller.ControllerChannelManager`` gives every live broker a ``messageQueue``
and a ``RequestSendThread`` that takes one request at a time and retries it until the
broker answers (``RequestSendThread.doWork``: reconnect, back off, send again). A
LeaderAndIsr the broker cannot receive (cut from the controller, or its JVM stopped) is
therefore *queued*, not lost, and every decision made meanwhile queues behind it: when the
broker can hear the controller again it processes them all, in order
(``ReplicaManager.becomeLeaderOrFollower``, skipping any whose leader epoch is not above
the one it has). Played on real 0.10.2.1, 2.1.1 and 3.3.1
(``scenarios/controller-queue-two-leader-changes.yaml``): a follower cut through two leader
changes becomes follower of the intermediate leader first, and before 0.11 truncates to
its HW there.

A queue dies with its channel: ``ControllerChannelManager.removeBroker`` when the broker's
session expires (``onBrokerFailure``), and the whole channel manager when controllership
moves (``onControllerResignation``); the new controller sends every live broker the
current state only (``onControllerFailover`` -> ``ReplicaStateMachine.startup``). That is
the one way a ZooKeeper-mode broker misses a leader change (what KAFKA-7164 guards
against): the scenario step ``controller_failover: C``.

KRaft has no such queue: a broker cut from the quorum fetches the metadata log from where
it stopped, every record in order, but ``MetadataLoader`` publishes what a catch-up batch
changed as one delta, and ``ReplicaManager.applyDelta`` acts on the partition's final
registration: the model delivers the latest decision (real 3.3.1-kraft and 4.0.0 agree on
the same scenario).

Pure functions over the state; the transition module calls them from its delivery of
pending LeaderAndIsr requests. ``process`` is that module's ``_process_leader_and_isr``,
passed in so that this module does not import it.
"""

from __future__ import annotations

from collections.abc import Callable

from reference_model.state import Config, Controller, PartitionState, QueuedLeaderAndIsr

Process = Callable[[Config, PartitionState, int], PartitionState]


def queued_for(ctrl: Controller, j: int) -> tuple[QueuedLeaderAndIsr, ...]:
    """The decisions queued for broker ``j``, oldest first."""
    return tuple(q for q in ctrl.queued if q.broker == j)


def enqueue(cfg: Config, ctrl: Controller, j: int) -> Controller:
    """The controller's current decision joins broker ``j``'s queue (it cannot hear it now).

    One entry per leader epoch: the same decision seen again (a later delivery round before
    anything changed) is not a new request.
    """
    if not cfg.generation.controller_queue:
        return ctrl
    mine = queued_for(ctrl, j)
    if mine and (mine[-1].leader, mine[-1].epoch) == (ctrl.leader, ctrl.epoch):
        return ctrl
    item = QueuedLeaderAndIsr(broker=j, leader=ctrl.leader, epoch=ctrl.epoch, isr=ctrl.isr)
    return ctrl._replace(queued=(*ctrl.queued, item))


def drop(ctrl: Controller, brokers: frozenset[int] | None = None) -> Controller:
    """Queues end (``brokers``: theirs; None: every queue, the controller moved)."""
    if not ctrl.queued:
        return ctrl
    if brokers is None:
        return ctrl._replace(queued=())
    return ctrl._replace(queued=tuple(q for q in ctrl.queued if q.broker not in brokers))


def drain(cfg: Config, st: PartitionState, j: int, process: Process) -> PartitionState:
    """Broker ``j`` processes its queued LeaderAndIsr requests in order, then the current.

    A request whose leader epoch is not above the one the broker has is ignored, as
    ``becomeLeaderOrFollower`` does ("leader epoch ... is not higher than the current").
    """
    ctrl = st.controller
    if not ctrl.queued:  # KRaft, ZooKeeper before the rule, or nothing queued
        return process(cfg, st, j)
    mine = queued_for(ctrl, j)
    if not mine:
        return process(cfg, st, j)
    st = st._replace(controller=drop(ctrl, frozenset({j})))
    for item in mine:
        rep = st.replicas[j]
        if rep.role != "none" and item.epoch <= rep.epoch:
            continue
        current = st.controller
        then = current._replace(leader=item.leader, epoch=item.epoch, isr=item.isr)
        st = process(cfg, st._replace(controller=then), j)
        st = st._replace(
            controller=st.controller._replace(
                leader=current.leader, epoch=current.epoch, isr=current.isr
            )
        )
    rep = st.replicas[j]
    if rep.role == "none" or st.controller.epoch > rep.epoch:
        st = process(cfg, st, j)
    return st
