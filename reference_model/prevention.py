"""Steps a broker version makes impossible: ``prevented(cfg, st, ev) -> reason | None``.

"Prevented" means that the Kafka release itself (its controller, its ISR rules, its admin
API) cannot get into the ordering a scenario asks for, never that the harness has no way to
do it yet (issue 9). Each check below belongs to one rule of ``rules.RULES`` (those with
``prevents``): the rule's flag on the profile turns it on, so ``--explain`` lists it with
its KIP/JIRA and first release, and a boundary test plays the ordering on the last release
without it and the first with it. A prevention rule changes no transition:
``run.run_scenario`` stops at the first prevented step (``RunResult.prevented``) and the
explorer never takes a prevented transition under the profile it explores.

Pure and cheap (the explorer asks for every candidate restart, detect, isr_shrink and elect).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from reference_model.cuts import session_cut, session_node
from reference_model.events import NODE_NAMES, Event
from reference_model.kinds import KINDS
from reference_model.rules import RULES
from reference_model.state import NO_LEADER, Config, PartitionState

Check = Callable[[Config, PartitionState, Event], str | None]


# event kind -> its checks, in the order they are asked; filled by ``@check_of(kind)``.
CHECKS: dict[str, tuple[Check, ...]] = {}


def check_of(kind: str) -> Callable[[Check], Check]:
    """Register the decorated check for step kind ``kind`` (a kind of ``reference_model.kinds``)."""
    if kind not in KINDS:
        raise ValueError(f"@check_of({kind!r}): no such step kind in reference_model.kinds")

    def register(check: Check) -> Check:
        CHECKS[kind] = (*CHECKS.get(kind, ()), check)
        return check

    return register


def _why(rule: str, text: str) -> str:
    r = RULES[rule]
    method = r.mirrors.split(";")[0].split(" (")[0].strip()
    return f"{text} [{rule}: {r.change}, since {', '.join(r.since)}; {method}]"


@check_of("detect")
def session_expiry_needs_cut(cfg: Config, st: PartitionState, ev: Event) -> str | None:
    """``detect X`` of a running, unpaused broker that still reaches its session node.

    ZooKeeper mode: the controller acts on a broker's death only when its ephemeral
    ``/brokers/ids/X`` znode goes (``BrokerChangeListener`` -> ``onBrokerFailure``), i.e.
    when its ZooKeeper session expires; a running broker's ZooKeeper client keeps it alive
    with pings. KRaft: ``BrokerHeartbeatManager`` fences a broker only when its heartbeats
    stop for ``broker.session.timeout.ms``. A broker cut from ZooKeeper (KRaft: from the
    controller) loses its session while it runs: that detect is allowed (``reference_model.
    cuts``). The model plays the forbidden step as a no-op; real brokers cannot do it.
    """
    i = ev.replica
    if not cfg.generation.session_expiry_needs_cut or i < 0:
        return None
    rep = st.replicas[i]
    if i not in st.controller.live or not rep.alive or rep.paused:
        return None
    if session_cut(cfg, st.cuts, i):
        return None
    where = NODE_NAMES[session_node(cfg)]
    name = cfg.brokers[i]
    return _why(
        "session_expiry_needs_cut",
        f"detect {name}: {name} is running and reaches {where}, so its session does not "
        f"expire (crash, pause or cut it from {where} first)",
    )


@check_of("restart")
def registration_needs_expired_session(cfg: Config, st: PartitionState, ev: Event) -> str | None:
    """``restart F`` (KRaft) while the quorum controller still counts F registered and unfenced.

    ``ClusterControlManager.registerBroker`` (3.3.1 and 4.0.0 alike) throws
    ``DuplicateBrokerRegistrationException`` for a new incarnation id while
    ``BrokerHeartbeatManager.hasValidSession`` holds for the old one, and the restarted
    broker retries until that session expires; the expiry fences F first
    (``maybeFenceOneStaleBroker`` -> ``ReplicationControlManager.handleBrokerFenced``: F
    leaves the ISR, a new leader is elected). From 3.8 (KAFKA-15586, KIP-966's server side)
    a registration of a new incarnation also runs ``BrokerShutdownHandler.
    addRecordsForShutdown`` for the previous one, and with the ELR feature (4.0,
    ``unclean_shutdown_detection``) a missing clean-shutdown marker also takes F out of the
    ELR; neither lets F register before the old session ends (4.0.0's ``registerBroker``
    keeps the ``hasValidSession`` refusal). A KRaft controller failover does not open the
    gap the ZooKeeper one does: the new active controller (``ClusterControlManager.
    activate``) touches every registered broker, giving it a fresh session, so F is still
    refused and then fenced.

    This is KIP-380's question asked of KRaft. The explorer's kip320 counterexample
    ``produce m1, fetch B, fetch B, power_loss A, restart A`` (the leader comes back with an
    empty log before the controller noticed, still leads, and B truncates m1 away) is real
    on ZooKeeper brokers, because a failed-over ZooKeeper controller cannot know A bounced
    (KIP-380's broker epochs, 2.2, only let a *live* controller see a bounce), and
    impossible here. The scenario must write ``detect: F`` before the restart.
    """
    gen = cfg.generation
    i = ev.replica
    if not gen.registration_needs_expired_session or i < 0:
        return None
    if st.replicas[i].alive or i not in st.controller.live:
        return None
    f = cfg.brokers[i]
    return _why(
        "registration_needs_expired_session",
        f"restart {f} before the controller fenced it: the KRaft controller refuses the new "
        f"registration while {f}'s old session lives (DuplicateBrokerRegistrationException) "
        f"and fences {f} when it expires (write 'detect: {f}' first)",
    )


@check_of("isr_shrink")
def caught_up_stays_in_isr(cfg: Config, st: PartitionState, ev: Event) -> str | None:
    """``isr_shrink F`` while the leader knows F's LEO to equal its own (KAFKA-7152, 2.1.0).

    ``Partition.getOutOfSyncReplicas`` (2.1.0: ``r.logEndOffset != leaderLEO && lag > max``;
    2.5: ``isFollowerOutOfSync``; 2.7+: ``Replica.isCaughtUp`` returns true when
    ``leaderEndOffset == logEndOffset``): a follower whose fetch offset, as last seen by
    the leader, is the leader's LEO is never out of sync however long it stays silent.
    Before 2.1 a caught-up follower that stops fetching for ``replica.lag.time.max.ms``
    is shrunk (the 0.10 Jepsen ordering). The leader's view is the remote LEO
    (``Replica.remote_leo``), not F's own log. One imprecision: a new leader that has not
    heard from F yet knows no LEO of F (-1), while the model's remote LEO is 0; with an
    empty leader log the model prevents a shrink a real broker would do.
    """
    if not cfg.generation.caught_up_stays_in_isr:
        return None
    f = ev.replica
    ctrl = st.controller
    if ctrl.leader == NO_LEADER or f < 0 or f == ctrl.leader:
        return None
    lead = st.replicas[ctrl.leader]
    if not lead.alive or lead.role != "leader" or lead.epoch != ctrl.epoch or f not in lead.isr:
        return None
    if lead.remote_leo[f] != len(lead.log):
        return None
    name, lname = cfg.brokers[f], cfg.brokers[ctrl.leader]
    return _why(
        "caught_up_stays_in_isr",
        f"isr_shrink {name}: {lname} last saw {name} at its own LEO {len(lead.log)}, so "
        f"{name} is never out of sync (produce to {lname} first, then let {name} lag)",
    )


@check_of("elect")
def unclean_election(cfg: Config, st: PartitionState, ev: Event) -> str | None:
    """``elect X unclean`` of a replica outside the ISR.

    Kafka runs an unclean election only for a partition without a live leader: the ZooKeeper
    controller's ``OfflinePartitionLeaderSelector`` (on a broker failure or startup, with
    ``unclean.leader.election.enable``), and from 2.4 (KIP-460) on demand through
    ``ElectLeaders`` with ``ElectionType.UNCLEAN`` (``KafkaController.
    processReplicaLeaderElection``; KRaft ``ReplicationControlManager.electLeader``), which
    answers ``ELECTION_NOT_NEEDED`` while the leader is live. So on every release the step
    is impossible while the partition has a live leader (``unclean_election_needs_offline``),
    and before 2.4 it is impossible on demand at all (``elect_leaders_unclean`` absent).
    ``elect X unclean`` of an ISR member is a clean (preferred) election, which every
    release can do: ``kafka-preferred-replica-election.sh`` after putting X first in the
    assignment (``PreferredReplicaPartitionLeaderSelector``), ElectLeaders PREFERRED from
    2.2 (KIP-183).
    """
    if not ev.unclean or ev.replica < 0:
        return None
    gen = cfg.generation
    ctrl = st.controller
    if ev.replica in ctrl.isr:
        return None
    name = cfg.brokers[ev.replica]
    if gen.unclean_election_needs_offline and ctrl.leader != NO_LEADER and ctrl.leader in ctrl.live:
        return _why(
            "unclean_election_needs_offline",
            f"elect {name} unclean while {cfg.brokers[ctrl.leader]} leads: an unclean "
            "election needs a partition without a live leader (ELECTION_NOT_NEEDED)",
        )
    if not gen.elect_leaders_unclean:
        return _why(
            "elect_leaders_unclean",
            f"elect {name} unclean: no unclean election on demand before KIP-460 (2.4); "
            "only the controller's OfflinePartitionLeaderSelector runs one, on a broker "
            "failure or startup with unclean.leader.election.enable (a rule this release "
            "lacks)",
        )
    return None


PREVENTABLE: Final = frozenset(CHECKS)
"""The kinds some release can make impossible: the explorer asks :func:`prevented` of these only."""


def prevented(cfg: Config, st: PartitionState, ev: Event) -> str | None:
    """A one-line reason (rule, KIP/JIRA, broker method) if ``ev`` cannot happen in ``st``
    on ``cfg``'s Kafka version, else None."""
    checks = CHECKS.get(ev.kind)
    if checks is None:
        return None
    for check in checks:
        reason = check(cfg, st, ev)
        if reason is not None:
            return reason
    return None


def rule_of(reason: str) -> str:
    """The rule name a reason from :func:`prevented` carries (``[rule: ...]``)."""
    head = reason.rsplit(" [", 1)[-1]
    return head.split(":", 1)[0]
