"""Protocol generations: the only places where Kafka versions differ in the model.

A :class:`Generation` is a *version profile*: the set of behavioural rules
(``reference_model.profiles.RULES``) in force for one Kafka release, mode (ZooKeeper or
KRaft) and feature set, plus one boolean per rule so the transition function reads a flag
instead of searching a set. ``generation(name)`` is the single entry point: it accepts the
era aliases below, the KRaft aliases, any release number from 0.10.0.0 to 4.1.x and the
harness catalogue names (``3.3.1-kraft``, ``4.0.0-elr``, ``3.3.1-ibp0.10``); see
``reference_model.profiles.resolve``.

Era aliases (unchanged since the model's first version):

``hw`` (before 0.11)
    A follower truncates to its own HW whenever it becomes follower of a new leader (on
    restart: the checkpointed HW). Records carry no leader epoch (message format v0/v1).
``kip101`` (0.11 to 1.1)
    Records carry the leader epoch; the follower asks the leader OffsetsForLeaderEpoch(its
    latest epoch); the leader answers its LEO if that is its latest epoch, else the start
    offset of the next higher epoch; an unknown epoch falls back to HW truncation.
``kip279`` (2.0.0)
    The answer is (largest epoch <= requested, its end offset); a follower lacking that epoch
    steps back and asks again; a leader asked about an epoch newer than its own refuses.
``kip320`` (2.1 to 3.6, ZooKeeper mode)
    Fetch and OffsetsForLeaderEpoch carry the current leader epoch: a replica with a stale
    epoch is fenced instead of served, and a response from a superseded epoch is dropped. A new
    leader writes its epoch into the cache on election (KAFKA-7415), and an epoch older than
    the cache's first entry is answered with that entry's start offset.
``kraft`` / ``kraft-elr``
    Kafka 4.0 (KRaft controller), without / with Eligible Leader Replicas (KIP-966).
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True)
class Generation:
    """One version profile: the rules in force, as a set and as flags (see module docstring).

    Every flag is the membership of the rule of the same name in ``rules``; the rules'
    Kafka references are in ``reference_model.profiles.RULES``.
    """

    name: str
    kafka_versions: str
    epoch_in_log: bool  # KIP-101: message format v2, batches carry partitionLeaderEpoch
    epoch_truncation: bool  # KIP-101 OffsetsForLeaderEpoch on becoming follower
    epoch_walkback: bool  # KIP-279 (largest epoch <= requested, end offset) + step back
    fencing: bool  # KIP-320 current leader epoch in Fetch / OffsetsForLeaderEpoch
    assign_epoch_on_leader: bool  # KAFKA-7415: leader caches (epoch, LEO) on election
    isr_join_epoch_start: bool = False  # KAFKA-7128: join ISR only past the epoch start
    truncate_on_missed_epoch: bool = False  # KAFKA-7164: same leader, epoch jumped > 1
    out_of_range_truncates: bool = False  # KAFKA-7414: follower ahead never halts
    truncate_in_fetch: bool = False  # KAFKA-10554: truncation rides on the first Fetch
    hw_needs_min_isr: bool = False  # KAFKA-15583: no HW advance while ISR < min.insync
    kraft: bool = False  # KIP-500/631: the KRaft quorum controller decides
    no_epoch_bump_on_isr_shrink: bool = False  # KAFKA-15021 (KRaft, metadata.version 3.6)
    kraft_unclean_from_config: bool = False  # KAFKA-12670 (KRaft honours the config, 3.9)
    elr: bool = False  # KIP-966 Eligible Leader Replicas
    unclean_shutdown_detection: bool = False  # KIP-966: unclean restart leaves ISR and ELR
    controller_queue: bool = False  # ZooKeeper ControllerChannelManager: queued, in order
    # Prevention rules (``reference_model.prevention``): they change no transition; they say
    # which steps the broker version makes impossible.
    session_expiry_needs_cut: bool = False  # a running, connected broker's session lives
    registration_needs_expired_session: bool = False  # KRaft DuplicateBrokerRegistration
    caught_up_stays_in_isr: bool = False  # KAFKA-7152 (2.1): LEO = leader's LEO: in sync
    elect_leaders_unclean: bool = False  # KIP-460 (2.4): ElectLeaders UNCLEAN exists
    unclean_election_needs_offline: bool = False  # UNCLEAN: ELECTION_NOT_NEEDED with a leader
    mode: str = "zk"  # zk | kraft
    rules: frozenset[str] = frozenset()


# The rule flags are Generation's boolean fields: one list, so a new rule cannot be
# declared in one place and forgotten in the other.
FLAGS: tuple[str, ...] = tuple(
    f.name for f in fields(Generation) if f.name not in ("name", "kafka_versions", "mode", "rules")
)


def build(name: str, kafka: str, rules: frozenset[str], mode: str) -> Generation:
    """A profile from its rule set: one flag per rule (``profiles.RULES`` documents each)."""
    unknown = rules - set(FLAGS)
    if unknown:
        raise ValueError(f"unknown model rules {sorted(unknown)} (valid: {', '.join(FLAGS)})")
    flags = {f: f in rules for f in FLAGS}
    return Generation(name=name, kafka_versions=kafka, mode=mode, rules=rules, **flags)


# Rules every ZooKeeper-mode release has (the eras are ZooKeeper mode).
_ZK_ALWAYS = (
    "session_expiry_needs_cut",
    "unclean_election_needs_offline",
    "controller_queue",
)


def _era(name: str, kafka: str, rules: tuple[str, ...], mode: str = "zk") -> Generation:
    return build(name, kafka, frozenset(rules + _ZK_ALWAYS), mode)


GENERATIONS: dict[str, Generation] = {
    g.name: g
    for g in (
        _era("hw", "0.8 - 0.10.2", ()),
        _era("kip101", "0.11 - 1.1", ("epoch_in_log", "epoch_truncation")),
        _era("kip279", "2.0.0", ("epoch_in_log", "epoch_truncation", "epoch_walkback")),
        _era(
            "kip320",
            "2.1 - 3.6 (ZooKeeper)",
            (
                "epoch_in_log",
                "epoch_truncation",
                "epoch_walkback",
                "fencing",
                "assign_epoch_on_leader",
                "isr_join_epoch_start",
                "truncate_on_missed_epoch",
                "out_of_range_truncates",
                "caught_up_stays_in_isr",
            ),
        ),
    )
}


def generation(name: str) -> Generation:
    """Resolve an era alias, KRaft alias, release number or catalogue name to its profile.

    Raises ``ValueError`` with a one-line message listing the valid forms.
    """
    g = GENERATIONS.get(name)
    if g is not None:
        return g
    from reference_model.profiles import resolve

    return resolve(name)
