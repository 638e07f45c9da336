"""What one log event says about one partition (or its broker): Kafka's line texts -> facts.

Kafka has never had a structured event log for replication; what an on-call engineer holds
is each broker's ``server.log``, ``state-change.log`` and ``controller.log``, or lines
pasted from them. The rules below know the texts 0.8 through 4.x write (read from Kafka's
own source per release: ``ReplicaFetcherThread``, ``AbstractFetcherThread``, ``Partition``,
``Log``/``UnifiedLog``, the controllers) and keep only what says something about the
replication of one partition, plus broker-level lines (start, shutdown, session expiry,
controller changes). A line no rule knows is skipped, never fatal.

Each recognised line becomes a :class:`Fact` with Kafka's own terms: leader epoch, LEO
(log end offset), HW, ISR, the truncation offset and its reason, and the place
(``file:line``) it was read from, which every claim built on it cites.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Fact:
    """One thing a broker or the controller logged about the partition (or itself)."""

    ts: datetime
    seq: int  # order within the broker's files, to keep same-millisecond lines in order
    broker: str  # name of the broker that wrote the line
    file: str
    kind: str
    broker_id: int = -1  # the broker the fact is about (controller facts: the subject)
    leader: int = -1
    epoch: int = -1
    offset: int = -1  # LEO, truncation offset, leader start offset, the leader's LEO
    hw: int = -1
    isr: tuple[int, ...] = ()
    detail: str = ""  # reason of a truncation, election kind, etc.
    line: str = field(default="", compare=False)
    other: int = -1  # a second offset: the follower's LEO in a halt line, the HW moved to
    cite: str = field(default="", compare=False)  # ``file:line`` the fact was read from
    timed: bool = field(default=True, compare=False)  # False: the line had no timestamp


def _ids(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"-?\d+", text))


class PartitionMatcher:
    """Recognises the partition in every spelling Kafka used: ``t-0``, ``[t,0]``, ``t, 0``;
    and 0.8/0.9's halt line, which names only the topic (``for topic t,``)."""

    def __init__(self, topic: str, partition: int) -> None:
        t = re.escape(topic)
        p = partition
        self.topic, self.partition = topic, partition
        self.rx = re.compile(
            rf"(?<![\w.-]){t}-{p}(?![\d])|\[{t},{p}\]|topic={t}, partition={p}(?!\d)"
            rf"|TopicPartition\({t},\s*{p}\)|topic={t},\s*partitionId={p}(?!\d)"
            rf"|truncation is not allowed for topic {t},"
        )
        self.topic_only = re.compile(rf"truncation is not allowed for topic {t},")

    def __call__(self, line: str) -> bool:
        return self.rx.search(line) is not None


# ----------------------------------------------------------------------- line rules
# Broker-level lines (no partition named).
_START = re.compile(
    r"INFO (?:\[KafkaServer id=\d+\] )?starting \(kafka\.server\.KafkaServer\)"
    r"|\[KafkaRaftServer nodeId=\d+\] Starting|Transition from SHUTDOWN to STARTING"
)
_STARTED = re.compile(
    r"\[Kafka ?Server (?:id=)?(\d+)\],? started"
    r"|\[KafkaRaftServer nodeId=(\d+)\] Kafka Server started"
    r"|\[BrokerServer id=(\d+)\] Transition from STARTING to STARTED"
)
_SHUTDOWN_BEGIN = re.compile(
    r"\[Kafka ?Server (?:id=)?(\d+)\],? shutting down|\[BrokerServer id=(\d+)\] shutting down"
    r"|\[KafkaServer id=(\d+)\] Starting controlled shutdown"
)
_SHUTDOWN_DONE = re.compile(
    r"\[Kafka ?Server (?:id=)?(\d+)\],? shut down completed"
    r"|\[BrokerServer id=(\d+)\] shut down completed|\[KafkaRaftServer nodeId=(\d+)\] shut down"
)
_UNCLEAN_DIR = re.compile(r"since no clean shutdown file was found|Found no clean shutdown")
_SESSION_EXPIRED = re.compile(r"(?i:zookeeper session expired|session.{0,30}has expired)")
_CONTROLLER_ELECTED = re.compile(
    r"(\d+) successfully elected as the controller|Broker (\d+) starting become controller"
    r"|\[Controller (\d+)\]: Controller starting up|Becoming the active controller"
    r"|\[QuorumController id=(\d+)\] Becoming the active controller"
)
_BROKER_FAILURE = re.compile(
    r"Broker failure callback for ([\d, ]+)|deleted brokers: ([\d,]+)"
    r"|(?<![Uu]n)Fenced broker: (\d+)|Fencing broker (\d+)|Broker (\d+) (?:has been|is now) fenced"
    r"|Unfenced broker (\d+) has requested and been granted fencing"
    r"|BrokerRegistrationChangeRecord\(brokerId=(\d+), brokerEpoch=\d+, fenced=1\b"
    r"|Unregistered broker: (\d+)|registration for broker (\d+) .*expired"
)
_BROKER_ADDED = re.compile(
    r"Newly added brokers: ([\d,]+)|New broker startup callback for ([\d,]+)"
    r"|Unfenced broker: (\d+)|Registered new broker: .*?brokerId=(\d+)"
    r"|Re-registered broker id (\d+)|Replayed (?:initial )?RegisterBrokerRecord for broker (\d+)"
    r"|BrokerRegistrationChangeRecord\(brokerId=(\d+), brokerEpoch=\d+, fenced=-1\b"
)
_BROKER_ID_CONF = re.compile(r"^\s*(?:broker\.id|node\.id)\s*=\s*(\d+)")
_IBP_CONF = re.compile(r"^\s*inter\.broker\.protocol\.version\s*=\s*(\S+)")
_ROLES_CONF = re.compile(r"^\s*process\.roles\s*=\s*\[?([\w, ]*)\]?")
_VERSION = re.compile(r"Kafka version\s*:\s*([\w.-]+)")

# Partition lines.
_LOADED = re.compile(
    r"Completed load of log .*?log[ -]end[ -]offset (\d+)"
    r"|Completed load of Log\(.*?logEndOffset=(\d+)"
)
_RECOVERING = re.compile(r"Recovering unflushed segment")
_HW_LOADED = re.compile(r"with initial high watermark (\d+)")
_LEADER_STARTS = re.compile(
    r"starts at [Ll]eader [Ee]poch (\d+) from offset (\d+)(?:.*?high watermark (\d+))?"
    r"(?:.*?ISR \[([\d,]*)\])?"
)
_LAI_RECEIVED = re.compile(
    r"[Rr]eceived LeaderAndIsr request PartitionState\(.*?leader=(-?\d+), leaderEpoch=(\d+), "
    r"isr=\[?([\d, ]*)\]?"
)
_BECOME = re.compile(r"starting the become-(leader|follower) transition")
# 2.8: "Follower t-0 starts at leader epoch 3 from offset 7 with high watermark 5. Previous
# leader epoch was 2."; 3.x adds "with partition epoch N ... Current leader is L".
_FOLLOWER_3X = re.compile(
    r"Follower .*? starts at leader epoch (\d+) from offset (\d+)"
    r"(?:.*?high watermark (\d+))?(?:.*?Current leader is (-?\d+))?"
)
_FETCHER_ADDED = re.compile(r"Added fetcher .*?BrokerEndPoint\(?(?:id=)?(\d+).*?leaderEpoch=(\d+)")
_FETCHER_ADDED_010 = re.compile(
    r"Added fetcher for partitions .*?initOffset (\d+) to broker BrokerEndPoint\((\d+)"
)
_TRUNCATE = re.compile(
    r"Truncating log \S+ to offset (\d+)|Truncating to offset (\d+)"
    r"|Truncating partition \S+ to local high watermark (\d+)"
    r"|Truncating partition \S+ with TruncationState\(offset=(\d+).*?due to (.*?)(?: \(kafka|$)"
    r"|Truncating partition \S+ to offset (\d+)"
    r"|Truncating (?:\S+ )?to (\d+) has no effect"  # 0.8-0.11 name the partition, 1.0+ not
    r"|[Tt]runcating \S+ to (\d+)"
)
# 2.1+ (KAFKA-7415 era): a follower truncating below its own HW says so (KAFKA-14704's
# symptom, an unclean election's too); "Truncating t-0 to offset 5 below high watermark 7".
_BELOW_HW = re.compile(r"Truncating \S+ to offset (\d+) below high watermark (\d+)")
# 1.1+ replaces 0.8-1.0's halt by a reset when the leader is behind an unclean follower.
_RESET_TO_LEADER = re.compile(
    r"Reset fetch offset for partition \S+ from (\d+) to current leader's latest offset (\d+)"
)
# 0.8-1.0's halt with its two offsets: "Current leader 1's latest offset 100 is less than
# replica 2's latest offset 105" (0.8-0.10), "current leader's latest offset 100 is less than
# replica's latest offset 105" (1.0).
_HALT_OFFSETS = re.compile(
    r"[Cc]urrent leader(?: (\d+))?'s latest offset (\d+) is less than replica(?: (\d+))?'s "
    r"latest offset (\d+)"
)
# 2.x-3.x Partition: "Non-monotonic update of high watermark from (offset=7 ...) to (offset=5"
# (LogOffsetMetadata(messageOffset=7, ...) in older releases).
_HW_REGRESSION = re.compile(
    r"Non-monotonic update of high watermark from \D*?(\d+).*? to \D*?(\d+)"
)
_OUT_OF_ORDER = re.compile(r"OffsetsOutOfOrderException|Out of order offsets found")
_UNKNOWN_EPOCH = re.compile(r"UNKNOWN_LEADER_EPOCH|FENCED_LEADER_EPOCH|[Uu]nknown leader epoch")
_SHRINK_NUMBERS = re.compile(r"highWatermark: (\d+), endOffset: (\d+)")
_ISR_CHANGE = re.compile(
    r"(Shrinking|Expanding) ISR (?:for partition \S+ )?from ([\d,]*) to ([\d,]*)"
    r"|ISR updated to ([\d,]*)"
)
_ELECTION_010 = re.compile(
    r"New leader and ISR for partition \S+ is "
    r"\{\"leader\":(-?\d+),\"leader_epoch\":(\d+),\"isr\":\[([\d,]*)\]\}"
    r"|Selected new leader and ISR "
    r"\{\"leader\":(-?\d+),\"leader_epoch\":(\d+),\"isr\":\[([\d,]*)\]\} for (\w+) partition"
)
_ELECTION_2X = re.compile(
    r"Changed partition \S+ from (\w+) to OnlinePartition with state LeaderAndIsr\(leader=(-?\d+), "
    r"leaderEpoch=(\d+), isr=(?:List|Vector)?\(?([\d, ]*)\)?"
)
_PARTITION_CHANGE_RECORD = re.compile(
    r"PartitionChangeRecord\(.*?leader=(-?\d+).*?\)|partition change .*?leader (-?\d+)"
)
_OFFLINE = re.compile(r"to OfflinePartition|No broker in ISR is alive|Failed to elect leader")
_UNCLEAN = re.compile(
    r"There's potential data loss|[Uu]nclean leader election|elect leader \d+ from live brokers"
)
_FATAL_TRUNC = re.compile(
    r"FATAL.*truncation.*not allowed|(?:Halting|Exiting) because log truncation is not allowed"
)
_HW_LINE = re.compile(r"[Hh]igh watermark (?:updated to|to) (\d+)|highWatermark=(\d+)")


# Substrings every broker-level rule needs; a line without any is skipped at once.
_BROKER_KEYWORDS = (
    "tarting",
    "STARTING",
    "started",
    "shut",
    "xpired",
    "elected",
    "ontroller",
    "roker failure",
    "deleted brokers",
    "enc",
    "added brokers",
    "startup callback",
    "egistered",
    "RegisterBrokerRecord",
    "FATAL",
    "truncation",
)
_BROKER_ANY = re.compile(
    "|".join(
        f"(?:{rx.pattern})"
        for rx in (
            _START,
            _STARTED,
            _SHUTDOWN_BEGIN,
            _SHUTDOWN_DONE,
            _UNCLEAN_DIR,
            _SESSION_EXPIRED,
            _CONTROLLER_ELECTED,
            _BROKER_FAILURE,
            _BROKER_ADDED,
            _FATAL_TRUNC,
        )
    )
)


def _first(m: re.Match[str]) -> str:
    return next(g for g in m.groups() if g is not None)


def _int_list(text: str) -> tuple[int, ...]:
    return tuple(sorted(int(x) for x in re.findall(r"\d+", text)))


def facts(
    line: str,
    ts: datetime,
    seq: int,
    broker: str,
    file: str,
    match: PartitionMatcher,
    cite: str = "",
    timed: bool = True,
) -> list[Fact]:
    """Facts in one line (usually zero or one)."""

    def fact(kind: str, **kw: object) -> Fact:
        return Fact(
            ts,
            seq,
            broker,
            file,
            kind,
            line=line[:400],
            cite=cite,
            timed=timed,
            **kw,  # type: ignore[arg-type]
        )

    ours = match(line)
    if not ours:
        # Broker-level lines only: they name no partition. One combined search first: most
        # lines of a busy broker are about other partitions and match none of them.
        if not any(k in line for k in _BROKER_KEYWORDS) or not _BROKER_ANY.search(line):
            return []
        if _START.search(line):
            return [fact("start")]
        m = _STARTED.search(line)
        if m:
            return [fact("started", broker_id=int(_first(m)))]
        m = _SHUTDOWN_BEGIN.search(line)
        if m:
            return [fact("shutdown_begin", broker_id=int(_first(m)))]
        m = _SHUTDOWN_DONE.search(line)
        if m:
            return [fact("shutdown_complete", broker_id=int(_first(m)))]
        if _UNCLEAN_DIR.search(line):
            return [fact("unclean_dir")]
        if _SESSION_EXPIRED.search(line):
            return [fact("session_expired")]
        m = _CONTROLLER_ELECTED.search(line)
        if m:
            ids = [g for g in m.groups() if g is not None]
            return [fact("controller_change", broker_id=int(ids[0]) if ids else -1)]
        m = _BROKER_FAILURE.search(line)
        if m:
            return [fact("broker_failure", broker_id=i) for i in _int_list(_first(m))]
        m = _BROKER_ADDED.search(line)
        if m:
            return [fact("broker_added", broker_id=i) for i in _int_list(_first(m))]
        if _FATAL_TRUNC.search(line):
            # Another partition's halt: the broker stopped, which ends its lines here too.
            return [fact("fatal_other_partition")]
        return []
    # Lines about the partition. Lines naming many partitions (UpdateMetadata, fetcher
    # lists) say nothing about replication state beyond what the rules below pick out.
    if "UpdateMetadata" in line or "cached leader info" in line:
        return []
    if _FATAL_TRUNC.search(line):
        m = _HALT_OFFSETS.search(line)
        where = "topic only: 0.8/0.9 name no partition" if match.topic_only.search(line) else ""
        if m is None:
            return [fact("fatal_truncation", detail=where)]
        return [
            fact(
                "fatal_truncation",
                leader=int(m.group(1)) if m.group(1) else -1,
                offset=int(m.group(2)),
                broker_id=int(m.group(3)) if m.group(3) else -1,
                other=int(m.group(4)),
                detail=where,
            )
        ]
    m = _HW_REGRESSION.search(line)
    if m:
        return [fact("hw_regression", hw=int(m.group(1)), other=int(m.group(2)))]
    if _OUT_OF_ORDER.search(line):
        return [fact("out_of_order")]
    m = _UNKNOWN_EPOCH.search(line)
    if m:
        return [fact("epoch_error", detail=m.group(0))]
    m = _BELOW_HW.search(line)
    if m:
        return [
            fact(
                "truncate",
                offset=int(m.group(1)),
                hw=int(m.group(2)),
                detail=f"below its high watermark {m.group(2)}",
            )
        ]
    m = _RESET_TO_LEADER.search(line)
    if m:
        return [
            fact(
                "truncate",
                offset=int(m.group(2)),
                other=int(m.group(1)),
                detail="the leader's log is shorter: reset to the leader's latest offset",
            )
        ]
    if "Created log for partition" in line:
        return [fact("log_created", detail=line.partition("properties")[2][:4000])]
    m = _LOADED.search(line)
    if m:
        return [fact("log_loaded", offset=int(_first(m)))]
    if _RECOVERING.search(line):
        return [fact("log_recovery")]
    m = _HW_LOADED.search(line)
    if m:
        return [fact("hw_loaded", hw=int(m.group(1)))]
    m = _FOLLOWER_3X.search(line)
    if m:
        hw = int(m.group(3)) if m.group(3) else -1
        return [
            fact(
                "become_follower",
                epoch=int(m.group(1)),
                offset=int(m.group(2)),
                hw=hw,
                leader=int(m.group(4)) if m.group(4) else -1,
            )
        ]
    m = _LEADER_STARTS.search(line)
    if m:
        hw = int(m.group(3)) if m.group(3) else -1
        isr = _int_list(m.group(4)) if m.group(4) is not None else ()
        return [
            fact("become_leader", epoch=int(m.group(1)), offset=int(m.group(2)), hw=hw, isr=isr)
        ]
    m = _LAI_RECEIVED.search(line)
    if m:
        return [
            fact(
                "leader_and_isr",
                leader=int(m.group(1)),
                epoch=int(m.group(2)),
                isr=_int_list(m.group(3)),
            )
        ]
    m = _BECOME.search(line)
    if m:
        return [fact("become_" + m.group(1) + "_010")]
    m = _TRUNCATE.search(line)
    if m:
        g = m.groups()
        off = int(_first(m))
        if g[0] is not None:
            reason = "high watermark (pre-0.11: truncate to HW on becoming follower)"
        elif g[2] is not None:
            reason = "local high watermark (no leader epoch known)"
        elif g[3] is not None:
            reason = g[4] or ""
        elif g[6] is not None:
            reason = "no effect (log already ends there)"
        else:
            reason = ""
        if "leader epoch" in line or "EpochEndOffset" in line or "OffsetsForLeaderEpoch" in line:
            reason = reason or "OffsetsForLeaderEpoch"
        if "diverging" in line.lower():
            reason = "diverging epoch in Fetch response (KIP-595)"
        return [fact("truncate", offset=off, detail=reason)]
    m = _ISR_CHANGE.search(line)
    if m:
        if m.group(4) is not None:
            return [fact("isr_change", isr=_int_list(m.group(4)), detail="updated")]
        n = _SHRINK_NUMBERS.search(line)  # 2.x+: the leader's HW and LEO at the change
        return [
            fact(
                "isr_change",
                isr=_int_list(m.group(3)),
                detail=m.group(1).lower(),
                hw=int(n.group(1)) if n else -1,
                offset=int(n.group(2)) if n else -1,
            )
        ]
    m = _ELECTION_010.search(line)
    if m:
        g = m.groups()
        if g[0] is not None:
            return [
                fact("election", leader=int(g[0]), epoch=int(g[1]), isr=_int_list(g[2]), detail="")
            ]
        return [
            fact(
                "election",
                leader=int(g[3]),
                epoch=int(g[4]),
                isr=_int_list(g[5]),
                detail=g[6].lower(),
            )
        ]
    m = _ELECTION_2X.search(line)
    if m:
        return [
            fact(
                "election",
                leader=int(m.group(2)),
                epoch=int(m.group(3)),
                isr=_int_list(m.group(4)),
                detail=m.group(1).replace("Partition", "").lower(),
            )
        ]
    m = _PARTITION_CHANGE_RECORD.search(line)
    if m and "leader=-2" not in line:
        lead = next(g for g in m.groups() if g is not None)
        return [fact("election", leader=int(lead), detail="kraft")]
    if _UNCLEAN.search(line) and "disabled" not in line:
        return [fact("unclean_election")]
    if _OFFLINE.search(line):
        return [fact("offline")]
    m = _HW_LINE.search(line)
    if m:
        return [fact("hw", hw=int(_first(m)))]
    return []


_facts = facts  # the fixture cutter's name for it
