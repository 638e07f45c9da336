"""The KRaft controller: ``ReplicationControlManager`` + ``PartitionChangeBuilder`` (3.3 to 4.1),
with Eligible Leader Replicas (KIP-966, rule ``elr``).

Every change of a partition is one ``PartitionChangeRecord`` built by :func:`partition_change`
(``PartitionChangeBuilder.build``) and replayed by every broker; the other functions are the
``ReplicationControlManager``/``ClusterControlManager`` handlers that ask for one. Each returns
the controller's decisions (``reference_model.controller``); ``reference_model.transitions``
delivers them.
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


def isr_expanded(cfg: Config, ctrl: Controller, isr: frozenset[int]) -> Controller:
    """AlterPartition adding one follower, with its ELR bookkeeping.

    ``PartitionChangeBuilder.maybePopulateTargetElr``: at or above min ISR the ELR is
    cleared, below it the joining replica leaves the ELR; the partition keeps a leader, so
    ``maybeUpdateLastKnownLeader`` clears LastKnownElr. ELR is a no-op without rule ``elr``.
    """
    if cfg.generation.elr and (ctrl.elr or ctrl.last_known_elr):
        ctrl = ctrl._replace(elr=frozenset(), last_known_elr=frozenset())
    return ctrl._replace(isr=isr)


def partition_change(
    cfg: Config,
    ctrl: Controller,
    target_isr: frozenset[int],
    *,
    fenced: int = -1,
    unclean_shutdown: int = -1,
    add: int = -1,
    unclean: bool = False,
    prefer: int = -1,
    what: str = "",
) -> Decision | None:
    """One PartitionChangeRecord of the quorum controller, or None when nothing changes.

    Mirrors ``ReplicationControlManager.generateLeaderAndIsrUpdates`` +
    ``PartitionChangeBuilder.build`` (4.0): ``fenced`` (brokerToRemove) and
    ``unclean_shutdown`` (brokerWithUncleanShutdown) are never acceptable leaders, ``add``
    (brokerToAdd) is acceptable while still fenced. Then:

    - ELR (rule ``elr``, KIP-966): at or above min ISR the ELR is empty; below it
      ELR = (ELR + old ISR) - new ISR - unclean-shutdown replica. A valid leader is an
      acceptable ISR member, or an acceptable ELR member when the ISR is empty; with ISR
      and ELR empty the single LastKnownElr member (the last leader) may be elected
      uncleanly ("balanced recovery"). Leading from the ELR makes the new leader the sole
      ISR member. Any unclean election clears the ELR.
    - Unclean election when nothing is valid: ``unclean`` (ElectLeaders UNCLEAN), or the
      topic config from 3.9 (rule ``kraft_unclean_from_config``, KAFKA-12670); before 3.9
      ``ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic`` returns false.
    - Without ELR the ISR is never emptied: the last member stays (like ZooKeeper mode).
    - The record carries no epoch: replay adds 1 when the leader field is set, i.e. on a
      leader change, and on an ISR shrink while metadata.version < 3.6 (rule
      ``no_epoch_bump_on_isr_shrink``, KAFKA-15021, turns that off).
    - LastKnownElr = [old leader] the first time the ISR empties; cleared once the
      partition has a leader again (``maybeUpdateLastKnownLeader``).
    """
    gen = cfg.generation
    n = len(cfg.brokers)
    old_isr, leader = ctrl.isr, ctrl.leader
    live = ctrl.live

    def acceptable(r: int) -> bool:
        return r != fenced and r != unclean_shutdown and (r == add or r in live)

    elr, lke = ctrl.elr, ctrl.last_known_elr
    if gen.elr:
        if len(target_isr) >= cfg.min_insync:
            elr = frozenset()
        else:
            elr = (elr | old_isr) - target_isr - {unclean_shutdown}

    def valid(r: int) -> bool:
        return (r in target_isr or (not target_isr and r in elr)) and acceptable(r)

    new, was_unclean, how = leader, False, ""
    if prefer >= 0 and valid(prefer):
        new = prefer
    elif not (leader != NO_LEADER and valid(leader)):
        new = next((r for r in range(n) if valid(r)), NO_LEADER)
        if new == NO_LEADER and gen.elr and not elr and not target_isr and len(lke) == 1:
            (last,) = tuple(lke)
            if acceptable(last):
                new, was_unclean, how = last, True, " (last known leader, unclean)"
        if new == NO_LEADER and (unclean or (cfg.unclean and gen.kraft_unclean_from_config)):
            new = next((r for r in range(n) if acceptable(r)), NO_LEADER)
            was_unclean, how = new != NO_LEADER, " (unclean)"
    new_isr: frozenset[int] | None = None
    if new != leader:
        if new in elr:
            target_isr = frozenset({new})
            elr = elr - {new}
            how = " from ELR"
        if was_unclean:
            new_isr = frozenset({new})
    if was_unclean or not gen.elr:
        elr = frozenset()
    if new_isr is None and (target_isr or gen.elr) and target_isr != old_isr:
        new_isr = target_isr
    bump = new != leader
    if (
        not bump
        and new_isr is not None
        and not old_isr <= new_isr
        and not gen.no_epoch_bump_on_isr_shrink
    ):
        bump = True  # metadata.version < 3.6: record.setLeader(partition.leader)
    isr = old_isr if new_isr is None else new_isr
    if gen.elr:
        if new_isr is not None and not new_isr and leader != NO_LEADER and lke != {leader}:
            lke = frozenset({leader})
        elif new != NO_LEADER and lke:
            lke = frozenset()
    out = ctrl._replace(
        leader=new, epoch=ctrl.epoch + (1 if bump else 0), isr=isr, elr=elr, last_known_elr=lke
    )
    if out == ctrl:
        return None
    names = cfg.brokers
    if new != leader:
        note = f"elects {names[new]}{how}" if new != NO_LEADER else "no eligible leader: offline"
    else:
        note = "ISR {" + ",".join(names[j] for j in sorted(isr)) + "}"
        if not bump:
            note += " (no epoch bump)"
    if gen.elr:
        note += f"; ELR {{{','.join(names[j] for j in sorted(elr))}}}"
        if lke:
            note += f" LastKnownElr {{{','.join(names[j] for j in sorted(lke))}}}"
    return Decision(out, f"controller{': ' + what if what else ''}: {note}", EVERY_LIVE)


def _maybe(d: Decision | None) -> Decisions:
    return () if d is None else (d,)


def handle_broker_fenced(cfg: Config, ctrl: Controller, i: int) -> Decisions:
    """``handleBrokerFenced`` / ``handleBrokerInControlledShutdown``: ``i`` leaves the ISR.

    Only partitions with ``i`` in the ISR change (``partitionsWithBrokerInIsr``): a fenced
    ELR member stays in the ELR.
    """
    name = cfg.brokers[i]
    fenced = ctrl._replace(live=ctrl.live - {i})
    if i not in ctrl.isr:
        return (Decision(fenced, f"controller: {name} fenced"),)
    change = partition_change(cfg, fenced, ctrl.isr - {i}, fenced=i, what=f"{name} fenced")
    return (Decision(fenced), *_maybe(change))


def handle_broker_unfenced(cfg: Config, ctrl: Controller, i: int) -> Decisions:
    """``handleBrokerUnfenced``: ``i`` is active again; a leaderless partition tries an
    election, else the broker catches up with the metadata log (the current state)."""
    active = ctrl._replace(live=ctrl.live | {i})
    out: list[Decision] = [Decision(active)]
    if ctrl.leader == NO_LEADER:
        change = partition_change(cfg, active, ctrl.isr, add=i, what=f"{cfg.brokers[i]} unfenced")
        if change is not None:
            if change.controller.leader != NO_LEADER:
                return (*out, change)
            out.append(change._replace(note=""))  # replayed, but the log names no leader
            active = change.controller
    return (*out, Decision(active, "", JOINED, i))


def register_broker(cfg: Config, ctrl: Controller, i: int, unclean_stop: bool) -> Decisions:
    """A restarted broker registers a new incarnation, then is unfenced.

    ``ClusterControlManager.registerBroker``: a new incarnation ends the previous one
    (``handleBrokerShutdown``, 3.8+), even if the controller never noticed it die; in 3.3
    to 3.7 the registration is refused (DuplicateBrokerRegistrationException) until the old
    session expires and the controller fences it, which has the same effect. With
    ``unclean_shutdown_detection`` (KIP-966) a broker without its clean-shutdown marker is
    removed from the ISR *and* the ELR; otherwise it is handled as fenced (ISR only).
    """
    name = cfg.brokers[i]
    ended = ctrl._replace(live=ctrl.live - {i})
    out: list[Decision] = [Decision(ended)]
    change: Decision | None = None
    if cfg.generation.unclean_shutdown_detection and unclean_stop:
        if i in ctrl.isr or i in ctrl.elr:
            change = partition_change(
                cfg,
                ended,
                ctrl.isr - {i},
                unclean_shutdown=i,
                what=f"{name} re-registers after an unclean shutdown",
            )
    elif i in ctrl.isr:
        change = partition_change(cfg, ended, ctrl.isr - {i}, fenced=i, what=f"{name} re-registers")
    if change is not None:
        out.append(change)
        ended = change.controller
    return (*out, *handle_broker_unfenced(cfg, ended, i))


def session_back(
    cfg: Config, ctrl: Controller, i: int, restarted: bool, unclean_stop: bool
) -> tuple[str, str, Decisions] | None:
    """At a heal: a broker restarted while cut registers (``registerBroker``); one the
    controller fenced heartbeats again and is unfenced (``handleBrokerUnfenced``)."""
    if restarted:
        return "registers", ": ", register_broker(cfg, ctrl, i, unclean_stop)
    if i not in ctrl.live:
        return "heartbeats again: unfenced", "; ", handle_broker_unfenced(cfg, ctrl, i)
    return None


def elect_leaders(cfg: Config, ctrl: Controller, i: int, unclean: bool) -> Decisions:
    """ElectLeaders: PREFERRED elects the named broker if it is a valid leader; UNCLEAN
    (``kafka-leader-election.sh --election-type unclean``, KIP-704) only for a partition
    without a leader (else ELECTION_NOT_NEEDED), picking the first acceptable replica."""
    name = cfg.brokers[i]
    if unclean and ctrl.leader != NO_LEADER:
        return refusal(
            ctrl, "ElectLeaders UNCLEAN: ELECTION_NOT_NEEDED (the partition has a leader)"
        )
    if not unclean:
        if ctrl.leader == i:
            return refusal(
                ctrl, f"ElectLeaders PREFERRED: ELECTION_NOT_NEEDED ({name} already leads)"
            )
        if i not in ctrl.live:
            return refusal(ctrl, f"{name} is fenced or not registered: it cannot be elected")
        if not (i in ctrl.isr or (not ctrl.isr and i in ctrl.elr)):
            return refusal(ctrl, f"{name} is not in the ISR: preferred election refused")
    change = partition_change(cfg, ctrl, ctrl.isr, unclean=unclean, prefer=i, what="ElectLeaders")
    if change is None or change.controller.leader == ctrl.leader:
        return refusal(ctrl, f"ElectLeaders: {name} not elected")
    return (change,)


def alter_partition_shrink(
    cfg: Config, ctrl: Controller, leader_isr: frozenset[int], f: int
) -> Decisions:
    """AlterPartition from the leader dropping ``f``: the controller decides (ELR and epoch
    rules apply); the leader's own ISR changes when it replays the record."""
    return _maybe(partition_change(cfg, ctrl, ctrl.isr - {f}, what="AlterPartition shrink"))


CONTROLLER = ControllerRules(
    name="kraft",
    broker_failed=handle_broker_fenced,
    broker_registered=register_broker,
    broker_unfenced=handle_broker_unfenced,
    session_back=session_back,
    elect=elect_leaders,
    isr_shrink=alter_partition_shrink,
    isr_expanded=isr_expanded,
    leader_writes_isr=False,
)
