"""Rules as data, versions as profiles.

Each behavioural difference between Kafka releases that changes what the model tracks
(final replica contents, acknowledged writes lost, divergence, ISR/ELR, leader and leader
epoch) is a :class:`Rule`: the Kafka change that introduced it (KIP or JIRA), the first
release of each release line that has it (a fix backported to a bug-fix release counts from
that release), the mode it applies to, and the broker class and method it mirrors. A
*profile* (:class:`Generation`) is the set of rules in force for one release; it is
what :func:`resolve` returns for ``2.8.2``, ``3.3.1-kraft``, ``4.0.0-elr`` and so on.

Names :func:`resolve` accepts (so :func:`generation` and ``run.run_scenario`` too):

- an era alias: ``hw``, ``kip101``, ``kip279``, ``kip320``, ``kraft``, ``kraft-elr``;
- a release number ``0.10.0.0`` .. ``4.1.x`` (0.x releases have four parts, later ones
  three; ``x`` stands for the newest patch), ZooKeeper mode below 4.0 and KRaft from 4.0;
- suffixes: ``-kraft`` (KRaft mode, from 3.3), ``-zk`` (ZooKeeper mode, below 4.0),
  ``-elr`` (KIP-966 feature on; from 4.0, the default from 4.1), ``-no-elr`` (feature off),
  ``-ibpX.Y`` (ZooKeeper broker pinned to ``inter.broker.protocol.version`` X.Y, e.g.
  ``3.3.1-ibp0.10``, which replicates like ``hw``).

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
    the cache's first entry is answered with that entry's start offset (later fixes in the
    range, KAFKA-10706 or hw_in_log, are rules of their releases, not of the alias).
``kraft`` / ``kraft-elr``
    Kafka 4.0 (KRaft controller; = ``4.0.0``), without / with ELR (KIP-966; = ``4.0.0-elr``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

Version = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Generation:
    """One version profile: the rules in force, as a set and as flags (see module docstring).

    Every flag is the membership of the rule of the same name in ``rules``; the rules'
    Kafka references are in ``RULES``.
    """

    name: str
    kafka_versions: str
    epoch_in_log: bool  # KIP-101: message format v2, batches carry partitionLeaderEpoch
    epoch_truncation: bool  # KIP-101 OffsetsForLeaderEpoch on becoming follower
    epoch_walkback: bool  # KIP-279 (largest epoch <= requested, end offset) + step back
    fencing: bool  # KIP-320 current leader epoch in Fetch / OffsetsForLeaderEpoch
    assign_epoch_on_leader: bool  # KAFKA-7415: leader caches (epoch, LEO) on election
    epoch_cache_replaces: bool = False  # KAFKA-7415: an older epoch replaces conflicts
    truncate_cleans_epoch_cache: bool = False  # KAFKA-10706: no-op truncation cleans the cache
    isr_join_epoch_start: bool = False  # KAFKA-7128: join ISR only past the epoch start
    truncate_on_missed_epoch: bool = False  # KAFKA-7164: same leader, epoch jumped > 1
    out_of_range_truncates: bool = False  # KAFKA-7414: follower ahead never halts
    truncate_in_fetch: bool = False  # KAFKA-10554: truncation rides on the first Fetch
    hw_in_log: bool = False  # PR #7055 (2.4): truncation clamps a follower's HW to its LEO
    follower_truncates_before_hw: bool = False  # KAFKA-14704: no HW over a divergent tail
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
    """A profile from its rule set: one flag per rule (``RULES`` documents each)."""
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
                "epoch_cache_replaces",
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
    return resolve(name)


@dataclass(frozen=True)
class Rule:
    """One behavioural switch of the model, with the Kafka change behind it."""

    name: str  # the Generation flag it sets
    change: str  # KIP / JIRA that introduced it
    since: tuple[str, ...]  # first release per line that has it, oldest line first
    mirrors: str  # broker class and method the model mirrors
    summary: str  # what changes, in one line
    mode: str = "any"  # any | zk | kraft: where the rule exists at all
    needs_ibp: str = ""  # lowest inter.broker.protocol.version that turns it on (ZK mode)
    feature: str = ""  # "elr": only with eligible.leader.replicas.version=1
    boundary: str = ""  # scenario or test ordering whose outcome differs on its two sides
    # Prevention rules (``reference_model.prevention``) change no transition: they name the
    # event kinds a release makes impossible in some states.
    prevents: tuple[str, ...] = ()


RULES: dict[str, Rule] = {
    r.name: r
    for r in (
        Rule(
            "epoch_in_log",
            "KIP-101 (KAFKA-1211), message format v2",
            ("0.11.0.0",),
            "kafka.log.Log.append (LogValidator assigns partitionLeaderEpoch); "
            "kafka.server.epoch.LeaderEpochFileCache.assign",
            "batches carry the leader epoch and append extends leader-epoch-checkpoint",
            needs_ibp="0.11",
            boundary="tests/unit/test_profiles.py::test_kip101_boundary",
        ),
        Rule(
            "epoch_truncation",
            "KIP-101 (KAFKA-1211)",
            ("0.11.0.0",),
            "kafka.server.ReplicaFetcherThread.maybeTruncate / fetchEpochsFromLeader",
            "a new follower truncates by OffsetsForLeaderEpoch, not to its HW",
            needs_ibp="0.11",
            boundary="scenarios/kip101-scenario1.yaml, "
            "tests/unit/test_profiles.py::test_kip101_boundary",
        ),
        Rule(
            "epoch_walkback",
            "KIP-279 (KAFKA-6361)",
            ("2.0.0",),
            "kafka.server.epoch.LeaderEpochFileCache.endOffsetFor; "
            "kafka.server.AbstractFetcherThread.getOffsetTruncationState",
            "answer (largest epoch <= requested, its end); the follower steps back and asks again",
            needs_ibp="2.0",
            boundary="scenarios/kip279-fast-leader-change.yaml, "
            "tests/unit/test_profiles.py::test_kip279_boundary",
        ),
        Rule(
            "assign_epoch_on_leader",
            "KAFKA-7415",
            ("2.0.1", "2.1.0"),
            "kafka.cluster.Partition.makeLeader (epochCache.assign(leaderEpoch, LEO)); "
            "LeaderEpochFileCache.endOffsetFor (epoch below the first entry)",
            "a new leader caches (epoch, LEO); an epoch older than the cache gets its first start",
            needs_ibp="0.11",
            boundary="tests/unit/test_profiles.py::test_kafka_7415_boundary",
        ),
        Rule(
            "epoch_cache_replaces",
            "KAFKA-7415",
            ("2.0.1", "2.1.0"),
            "kafka.server.epoch.LeaderEpochFileCache.assign (truncateAndAppend)",
            "an appended batch of an older epoch than the cache's latest entry replaces the "
            "entries it conflicts with (before: ignored); a follower that led an epoch with "
            "nothing appended then fetched older batches caches their epoch",
            needs_ibp="0.11",
            boundary="tests/unit/test_profiles.py::test_kafka_7415_cache_boundary",
        ),
        Rule(
            "truncate_cleans_epoch_cache",
            "KAFKA-10706",
            ("2.6.1", "2.7.0"),
            "kafka.log.Log.truncateTo (targetOffset >= logEndOffset: "
            "leaderEpochCache.truncateFromEnd(logEndOffset))",
            "a truncation at or past the LEO still drops epoch-cache entries starting at the "
            "LEO (an epoch a broker led without appending); before, they stayed",
            needs_ibp="0.11",
            boundary="tests/unit/test_profiles.py::test_kafka_10706_boundary",
        ),
        Rule(
            "isr_join_epoch_start",
            "KAFKA-7128",
            ("2.0.1", "2.1.0"),
            "kafka.cluster.Partition.maybeExpandIsr (leaderEpochStartOffsetOpt)",
            "a follower joins the ISR only once its LEO reaches the leader's epoch start offset",
            boundary="tests/unit/test_profiles.py::test_kafka_7128_boundary",
        ),
        Rule(
            "truncate_on_missed_epoch",
            "KAFKA-7164",
            ("2.0.1", "2.1.0"),
            "kafka.cluster.Partition.makeFollower (leader unchanged and epoch +0/+1 only)",
            "a follower that missed a leader epoch change truncates even if the leader is the same",
            boundary="tests/unit/test_profiles.py::test_kafka_7164_boundary",
        ),
        Rule(
            "out_of_range_truncates",
            "KAFKA-7414",
            ("2.1.0",),
            "kafka.server.AbstractFetcherThread.fetchOffsetAndTruncate "
            "(before: ReplicaFetcherThread.handleOffsetOutOfRange halts)",
            "a follower ahead of the leader truncates to its LEO instead of halting the broker",
            boundary="tests/unit/test_profiles.py::test_kafka_7414_boundary",
        ),
        Rule(
            "fencing",
            "KIP-320 (KAFKA-7395)",
            ("2.1.0",),
            "kafka.server.ReplicaManager.fetchMessages / Partition.fetchOffsetForLeaderEpoch "
            "(currentLeaderEpoch); AbstractFetcherThread.processFetchRequest",
            "stale-epoch Fetch/OffsetsForLeaderEpoch fenced, superseded responses dropped",
            needs_ibp="2.1",
            boundary="scenarios/kip320-zombie-follower.yaml, "
            "tests/unit/test_profiles.py::test_kip320_boundary",
        ),
        Rule(
            "truncate_in_fetch",
            "KAFKA-10554 (KIP-595 DivergingEpoch in Fetch)",
            ("2.8.0",),
            "kafka.server.AbstractFetcherThread.processFetchRequest (divergingEpoch -> "
            "truncateOnFetchResponse); ReplicaFetcherThread.isTruncationOnFetchSupported",
            "the truncation decision rides on the first Fetch: a follower whose log then ends "
            "at the leader's LEO has fetched, and is back in the ISR, in the same round",
            needs_ibp="2.7",
            boundary="scenarios/kip101-scenario1.yaml, "
            "tests/unit/test_profiles.py::test_kafka_10554_boundary",
        ),
        Rule(
            "follower_truncates_before_hw",
            "KAFKA-14704",
            ("3.4.1", "3.5.0"),
            "kafka.server.AbstractFetcherThread.processFetchRequest (truncateOnFetchResponse "
            "now before ReplicaFetcherThread.processPartitionData's log.updateHighWatermark)",
            "a follower whose Fetch answer carries a diverging epoch truncates before it applies "
            "the leader's HW; from 2.8 (truncate_in_fetch) until the fix its HW briefly covered "
            "its divergent, uncommitted tail, readable by follower-fetching consumers (KIP-392)",
            boundary="tests/unit/test_profiles.py::test_kafka_14704_boundary",
        ),
        Rule(
            "hw_in_log",
            "apache/kafka PR #7055 (the HW kept in Log, validated against the log range)",
            ("2.4.0",),
            "kafka.log.Log.truncateTo -> updateLogEndOffset (before: ReplicaFetcherThread."
            "truncate only warns that the truncation offset is below Replica.highWatermark)",
            "a follower's truncation lowers its HW to the new LEO; before 2.4 the HW stays "
            "above the LEO (and in its checkpoint) until the next Fetch answer sets "
            "min(LEO, leader's HW)",
            boundary="tests/unit/test_profiles.py::test_hw_in_log_boundary",
        ),
        Rule(
            "hw_needs_min_isr",
            "KAFKA-15583",
            ("3.7.0",),
            "kafka.cluster.Partition.maybeIncrementLeaderHW (isUnderMinIsr)",
            "the leader's HW does not advance while the ISR is below min.insync.replicas",
            boundary="tests/unit/test_profiles.py::test_kafka_15583_boundary",
        ),
        Rule(
            "kraft",
            "KIP-500 / KIP-631 (KRaft controller)",
            ("3.3.0",),
            "org.apache.kafka.controller.ReplicationControlManager.generateLeaderAndIsrUpdates; "
            "ClusterControlManager.registerBroker (new incarnation = shutdown of the old one)",
            "the quorum controller fences brokers; a re-registration ends the previous "
            "incarnation (removed from the ISR, leadership moved); the ISR is never emptied "
            "without ELR",
            mode="kraft",
            boundary="tests/unit/test_profiles.py::test_kraft_restart_without_detect",
        ),
        Rule(
            "no_epoch_bump_on_isr_shrink",
            "KAFKA-15021 (metadata.version 3.6-IV0)",
            ("3.6.0",),
            "org.apache.kafka.controller.PartitionChangeBuilder."
            "triggerLeaderEpochBumpForIsrShrinkIfNeeded",
            "an ISR shrink without a leader change keeps the leader epoch",
            mode="kraft",
            boundary="scenarios/kraft-isr-shrink-epoch.yaml, "
            "tests/unit/test_profiles.py::test_kafka_15021_boundary",
        ),
        Rule(
            "kraft_unclean_from_config",
            "KAFKA-12670",
            ("3.9.0",),
            "org.apache.kafka.controller.ConfigurationControlManager."
            "uncleanLeaderElectionEnabledForTopic",
            "the KRaft controller honours unclean.leader.election.enable "
            "(before: ElectLeaders only)",
            mode="kraft",
            boundary="tests/unit/test_profiles.py::test_kafka_12670_boundary",
        ),
        Rule(
            "elr",
            "KIP-966 (eligible.leader.replicas.version=1)",
            ("4.0.0",),
            "org.apache.kafka.controller.PartitionChangeBuilder.maybePopulateTargetElr / "
            "isValidNewLeader / maybeUpdateRecordElr / maybeUpdateLastKnownLeader",
            "below min ISR the ISR may empty; ELR members stay electable; unclean election "
            "clears ELR",
            mode="kraft",
            feature="elr",
            boundary="scenarios/kip966-last-replica-standing.yaml, "
            "tests/unit/test_profiles.py::test_kip966_boundary",
        ),
        Rule(
            "unclean_shutdown_detection",
            "KIP-966 (clean-shutdown marker, previousBrokerEpoch)",
            ("4.0.0",),
            "org.apache.kafka.controller.ClusterControlManager.registerBroker; "
            "ReplicationControlManager.handleBrokerShutdown",
            "a broker re-registering after an unclean shutdown leaves the ISR and the ELR",
            mode="kraft",
            feature="elr",
            boundary="scenarios/kip966-last-replica-standing.yaml",
        ),
        # ------------------------------------------------------------ prevention rules
        Rule(
            "controller_queue",
            "ZooKeeper controller's request queue per broker (every ZooKeeper release)",
            ("0.10.0.0",),
            "kafka.controller.ControllerChannelManager (messageQueue, "
            "RequestSendThread.doWork retries until the broker answers; removeBroker, "
            "onControllerResignation drop it); ReplicaManager.becomeLeaderOrFollower",
            "LeaderAndIsr a broker cannot hear is queued and processed in order when it can; "
            "lost only on session expiry or controller failover",
            mode="zk",
            boundary="scenarios/controller-queue-two-leader-changes.yaml, "
            "scenarios/controller-failover-missed-change.yaml",
        ),
        Rule(
            "session_expiry_needs_cut",
            "ZooKeeper session / KRaft broker heartbeat (every release)",
            ("0.10.0.0",),
            "kafka.controller.KafkaController.onBrokerFailure (BrokerChange: /brokers/ids/N "
            "gone); org.apache.kafka.controller.BrokerHeartbeatManager (session timeout) -> "
            "ReplicationControlManager.handleBrokerFenced",
            "detect of a running broker that still reaches ZooKeeper (KRaft: the controller) "
            "is impossible: its session does not expire",
            boundary="tests/unit/test_prevention.py::test_detect_of_a_running_broker",
            prevents=("detect",),
        ),
        Rule(
            "registration_needs_expired_session",
            "KIP-631 (KRaft broker registration)",
            ("3.3.0",),
            "org.apache.kafka.controller.ClusterControlManager.registerBroker "
            "(DuplicateBrokerRegistrationException while BrokerHeartbeatManager.hasValidSession)",
            "a KRaft restart the controller did not notice is impossible: the new incarnation "
            "is refused until the old session expires and the broker is fenced",
            mode="kraft",
            boundary="tests/unit/test_prevention.py::test_kraft_restart_before_the_controller_noticed",
            prevents=("restart",),
        ),
        Rule(
            "caught_up_stays_in_isr",
            "KAFKA-7152",
            ("2.1.0",),
            "kafka.cluster.Partition.getOutOfSyncReplicas / isFollowerOutOfSync "
            "(logEndOffset != leaderEndOffset; Replica.isCaughtUp from 2.7)",
            "a follower whose LEO (as the leader knows it) equals the leader's LEO is never out "
            "of sync: isr_shrink of it is impossible",
            boundary="tests/unit/test_prevention.py::test_kafka_7152_boundary",
            prevents=("isr_shrink",),
        ),
        Rule(
            "elect_leaders_unclean",
            "KIP-460 (ElectLeaders v1, ElectionType.UNCLEAN)",
            ("2.4.0",),
            "kafka.controller.KafkaController.processReplicaLeaderElection (UNCLEAN -> "
            "OfflinePartitionLeaderElectionStrategy(allowUnclean=true)); KRaft: "
            "ReplicationControlManager.electLeaders",
            "an unclean election on demand exists (before: only OfflinePartitionLeaderSelector "
            "on a broker failure/startup with unclean.leader.election.enable)",
            boundary="tests/unit/test_prevention.py::test_kip460_boundary",
            prevents=("elect",),
        ),
        Rule(
            "unclean_election_needs_offline",
            "KIP-460 ElectLeaders UNCLEAN (ELECTION_NOT_NEEDED)",
            ("0.10.0.0",),
            "kafka.controller.KafkaController.processReplicaLeaderElection (UNCLEAN only when "
            "the leader is NoLeader or not live); ReplicationControlManager.electLeader",
            "an unclean election of an out-of-sync replica while the partition has a live "
            "leader is impossible on every release",
            boundary="tests/unit/test_prevention.py::test_kip460_boundary",
            prevents=("elect",),
        ),
    )
}

PREVENTION_RULES: tuple[str, ...] = tuple(r.name for r in RULES.values() if r.prevents)

# Release lines from 0.10.0 to 4.1 (0.x lines have three parts, later ones two).
LINES: tuple[Version, ...] = (
    (0, 10, 0),
    (0, 10, 1),
    (0, 10, 2),
    (0, 11, 0),
    (1, 0),
    (1, 1),
    *((2, m) for m in range(9)),
    *((3, m) for m in range(10)),
    (4, 0),
    (4, 1),
)
NEWEST_PATCH = 99  # what "x" stands for in 4.1.x

FORMS = (
    "hw, kip101, kip279, kip320, kraft, kraft-elr, or a release 0.10.0.0..4.1.x "
    "(e.g. 2.8.2, 3.7.1, 4.0.0) with optional -kraft, -zk, -elr, -no-elr, -ibpX.Y "
    "(e.g. 3.3.1-kraft, 4.0.0-elr, 3.3.1-ibp0.10)"
)

_ALIASES = {"kraft": "4.0.0", "kraft-elr": "4.0.0-elr"}
_NUMBER = re.compile(r"^\d+(\.\d+)*(\.x)?$")


def _line(v: Version) -> Version:
    return v[:3] if v[0] == 0 else v[:2]


def parse_version(text: str) -> Version:
    """``0.10.2.1`` -> (0, 10, 2, 1); ``2.8.2`` -> (2, 8, 2); ``4.1.x`` -> (4, 1, 99)."""
    if not _NUMBER.match(text):
        raise ValueError(f"not a Kafka release number: {text!r} (valid: {FORMS})")
    parts = tuple(NEWEST_PATCH if p == "x" else int(p) for p in text.split("."))
    want = 4 if parts[0] == 0 else 3
    if len(parts) != want or _line(parts) not in LINES:
        raise ValueError(f"not a Kafka release 0.10.0.0..4.1.x: {text!r} (valid: {FORMS})")
    return parts


def in_release(rule: Rule, v: Version) -> bool:
    """Whether the broker code of release ``v`` has ``rule`` (backports included).

    The entry of ``rule.since`` on the newest line at or below ``v``'s decides: same line,
    from that release on; an older line, only if that entry is the mainline one (the last).
    """
    since = [parse_version(s) for s in rule.since]
    below = [s for s in since if _line(s) <= _line(v)]
    if not below:
        return False
    s = below[-1]
    if _line(s) == _line(v):
        return v >= s
    return s == since[-1]


def _ibp(text: str) -> Version:
    try:
        return tuple(int(p) for p in text.split("."))
    except ValueError:
        raise ValueError(f"bad inter.broker.protocol.version {text!r} (valid: {FORMS})") from None


def resolve(name: str) -> Generation:
    """The profile for an era alias, release number or catalogue name (see module docstring)."""
    if name in GENERATIONS:
        return GENERATIONS[name]
    text = _ALIASES.get(name, name)
    number, *suffixes = text.split("-")
    if number == "" or not _NUMBER.match(number):
        raise ValueError(f"unknown protocol or Kafka version {name!r} (valid: {FORMS})")
    v = parse_version(number)
    kraft = v >= (4, 0)
    elr = v >= (4, 1)
    ibp: Version | None = None
    k = 0
    while k < len(suffixes):
        s = suffixes[k]
        if s == "kraft":
            kraft = True
        elif s == "zk":
            kraft = False
        elif s == "elr":
            elr = True
        elif s == "no" and k + 1 < len(suffixes) and suffixes[k + 1] == "elr":
            elr = False
            k += 1
        elif s.startswith("ibp"):
            ibp = _ibp(s[3:])
        else:
            raise ValueError(f"unknown suffix {s!r} in {name!r} (valid: {FORMS})")
        k += 1
    if kraft and v < (3, 3):
        raise ValueError(f"{name!r}: KRaft mode is modelled from 3.3 (valid: {FORMS})")
    if not kraft and v >= (4, 0):
        raise ValueError(f"{name!r}: Kafka 4 has no ZooKeeper mode (valid: {FORMS})")
    if kraft and ibp is not None:
        raise ValueError(f"{name!r}: -ibp applies to ZooKeeper mode only (valid: {FORMS})")
    if elr and not kraft:
        raise ValueError(f"{name!r}: ELR needs KRaft (valid: {FORMS})")
    if elr and v < (4, 0):
        raise ValueError(f"{name!r}: ELR is available from 4.0 (valid: {FORMS})")
    mode = "kraft" if kraft else "zk"
    rules = set()
    for r in RULES.values():
        if not in_release(r, v):
            continue
        if r.mode not in ("any", mode):
            continue
        if r.feature == "elr" and not elr:
            continue
        if ibp is not None and r.needs_ibp and ibp < _ibp(r.needs_ibp):
            continue
        rules.add(r.name)
    return build(name, _describe(v, mode, elr, ibp), frozenset(rules), mode)


def _describe(v: Version, mode: str, elr: bool, ibp: Version | None) -> str:
    out = ".".join("x" if p == NEWEST_PATCH else str(p) for p in v)
    out += " KRaft" if mode == "kraft" else " ZooKeeper"
    if elr:
        out += " + ELR"
    if ibp is not None:
        out += " IBP " + ".".join(map(str, ibp))
    return out


def describe_rules(g: Generation) -> list[dict[str, str]]:
    """The rules of a profile with their references (for ``--explain`` and the README)."""
    return [
        {
            "rule": r.name,
            "change": r.change,
            "since": ", ".join(r.since),
            "mirrors": r.mirrors,
            "kind": "prevention" if r.prevents else "behaviour",
        }
        for r in RULES.values()
        if r.name in g.rules
    ]


def with_rule(g: Generation, rule: str, on: bool) -> Generation:
    """``g`` with one rule switched on or off (the counterfactual behind ``--explain``)."""
    rules = g.rules | {rule} if on else g.rules - {rule}
    mode = "kraft" if "kraft" in rules else "zk"
    return build(f"{g.name}{'+' if on else '-'}{rule}", g.kafka_versions, frozenset(rules), mode)
