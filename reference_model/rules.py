"""The model's rules as data: one :class:`Rule` per Kafka change that alters what the model
tracks, with the KIP or JIRA, the first release of each line that has it, and the broker
class and method it mirrors (the kafka-specification habit of one small delta per change).

Kept apart from :mod:`reference_model.profiles`, which turns release names into the set of
rules in force; the flags the rules set are :class:`reference_model.profiles.Generation`'s
fields (``profiles.FLAGS``), and ``tests/unit/test_profiles.py`` holds each rule's boundary.
"""

from __future__ import annotations

from dataclasses import dataclass


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
        Rule(
            "keep_last_isr",
            "KAFKA-5642 (the asynchronous ZooKeeper controller, 1.1.0)",
            ("1.1.0",),
            "kafka.controller.ReplicaStateMachine.doRemoveReplicasFromIsr (adjustedIsr: an "
            "ISR of one is kept); before: KafkaController.removeReplicaFromIsr kept the last "
            "member only with unclean.leader.election.enable=false",
            "when the last ISR member of a partition fails, the ZooKeeper controller leaves it "
            "in the ISR (leader -1) whatever the unclean setting; before 1.1 only with unclean "
            "election disabled (observed: 2.1.1 and 3.3.1 isr [B], 0.10.2.1 isr [])",
            mode="zk",
            boundary="tests/unit/test_profiles.py::test_kafka_5642_boundary",
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
