"""The ZooKeeper-mode controller: ``kafka.controller.KafkaController`` of 0.10 to 3.x.

It bumps the leader epoch on every election and whenever it removes a dead broker from the
ISR; the leader's own ISR shrink/expand (written to ZooKeeper by ``Partition``) does not bump
it. Every function returns the controller's decisions (``reference_model.controller``);
``reference_model.transitions`` sends them to the brokers.
"""

from __future__ import annotations

from reference_model.controller import (
    EVERY_LIVE,
    JOINED,
    ControllerRules,
    Decision,
    Decisions,
    refusal,
)
from reference_model.state import NO_LEADER, Config, Controller


def elect_offline(cfg: Config, ctrl: Controller, live: frozenset[int]) -> Controller | None:
    """``OfflinePartitionLeaderSelector``: the first live ISR member (in assignment order);
    else, if ``unclean.leader.election.enable``, any live replica."""
    n = len(cfg.brokers)
    for j in range(n):
        if j in live and j in ctrl.isr:
            return ctrl._replace(leader=j, epoch=ctrl.epoch + 1, isr=ctrl.isr & live, live=live)
    if cfg.unclean:
        for j in range(n):
            if j in live:
                return ctrl._replace(leader=j, epoch=ctrl.epoch + 1, isr=frozenset({j}), live=live)
    return None


def on_broker_startup(cfg: Config, ctrl: Controller, i: int) -> Decisions:
    """``KafkaController.onBrokerStartup``: the controller hears broker ``i``; an offline
    partition may elect it, else the broker is sent the current LeaderAndIsr."""
    live = ctrl.live | {i}
    ctrl = ctrl._replace(live=live)
    if ctrl.leader == NO_LEADER:
        elected = elect_offline(cfg, ctrl, live)
        if elected is not None:
            note = f"controller elects {cfg.brokers[elected.leader]}"
            return (Decision(elected, note, EVERY_LIVE),)
    return (Decision(ctrl, "", JOINED, i),)


def broker_registered(cfg: Config, ctrl: Controller, i: int, unclean_stop: bool) -> Decisions:
    """A restarted broker's new znode in ``/brokers/ids``: ``onBrokerStartup`` (ZooKeeper mode
    knows nothing of clean or unclean stops)."""
    return on_broker_startup(cfg, ctrl, i)


def on_broker_failure(cfg: Config, ctrl: Controller, i: int) -> Decisions:
    """``KafkaController.onBrokerFailure``: elect a new leader if ``i`` led (the partition goes
    offline if none is eligible), else drop ``i`` from the ISR (with an epoch bump)."""
    live = ctrl.live - {i}
    ctrl = ctrl._replace(live=live)
    name = cfg.brokers[i]
    if ctrl.leader == i:
        elected = elect_offline(cfg, ctrl._replace(isr=ctrl.isr - {i}), live)
        if elected is not None:
            kind = "unclean " if elected.leader not in ctrl.isr else ""
            note = f"controller: {name} failed, {kind}elects {cfg.brokers[elected.leader]}"
            return (Decision(elected, note, EVERY_LIVE),)
        isr = ctrl.isr - {i}
        if not isr and (not cfg.unclean or cfg.generation.keep_last_isr):
            # The last ISR member is kept so it can come back: from 1.1 always
            # (ReplicaStateMachine.doRemoveReplicasFromIsr, KAFKA-5642), before only with
            # unclean election disabled (KafkaController.removeReplicaFromIsr).
            isr = ctrl.isr
        ctrl = ctrl._replace(leader=NO_LEADER, epoch=ctrl.epoch + 1, isr=isr)
        note = f"controller: {name} failed, no eligible leader: partition offline"
        return (Decision(ctrl, note, EVERY_LIVE),)
    if i in ctrl.isr and len(ctrl.isr) > 1:
        ctrl = ctrl._replace(isr=ctrl.isr - {i}, epoch=ctrl.epoch + 1)
        return (Decision(ctrl, f"controller: {name} failed, removed from ISR", EVERY_LIVE),)
    return (Decision(ctrl, f"controller: {name} failed"),)


def session_back(
    cfg: Config, ctrl: Controller, i: int, restarted: bool, unclean_stop: bool
) -> tuple[str, str, Decisions] | None:
    """At a heal: ``KafkaZkClient.registerBroker`` on a new session -> ``onBrokerStartup``,
    for a broker restarted while cut or one the controller had given up."""
    live = i in ctrl.live
    if not restarted and live:
        return None
    label = "registers again (new session)" if not live else "registers"
    return label, ": ", on_broker_startup(cfg, ctrl, i)


def elect(cfg: Config, ctrl: Controller, i: int, unclean: bool) -> Decisions:
    """An election of broker ``i`` (preferred replica election; unclean: any live replica,
    as ``kafka-leader-election.sh --election-type unclean`` from KIP-460)."""
    name = cfg.brokers[i]
    if ctrl.leader == i:
        return refusal(ctrl, f"{name} already leads")
    if i not in ctrl.live:
        return refusal(ctrl, f"controller considers {name} dead: cannot elect it")
    if i not in ctrl.isr and not unclean:
        return refusal(ctrl, f"{name} is not in the ISR: clean election refused")
    isr = ctrl.isr & ctrl.live | {i} if i in ctrl.isr else frozenset({i})
    ctrl = ctrl._replace(leader=i, epoch=ctrl.epoch + 1, isr=isr)
    return (Decision(ctrl, f"controller elects {name}", EVERY_LIVE),)


def isr_shrink(cfg: Config, ctrl: Controller, leader_isr: frozenset[int], f: int) -> Decisions:
    """``Partition.maybeShrinkIsr`` wrote the leader's new ISR to ZooKeeper; the controller's
    view follows it, no epoch bump, nothing sent."""
    return (Decision(ctrl._replace(isr=leader_isr)),)


def isr_expanded(cfg: Config, ctrl: Controller, isr: frozenset[int]) -> Controller:
    """``Partition.maybeExpandIsr`` wrote the new ISR to ZooKeeper."""
    return ctrl._replace(isr=isr)


CONTROLLER = ControllerRules(
    name="zk",
    broker_failed=on_broker_failure,
    broker_registered=broker_registered,
    broker_unfenced=on_broker_startup,
    session_back=session_back,
    elect=elect,
    isr_shrink=isr_shrink,
    isr_expanded=isr_expanded,
    leader_writes_isr=True,
)
