"""What brokers write about one partition: log4j lines -> typed facts.

Kafka has never had a structured event log for replication; what an on-call engineer holds
after an incident is each broker's ``server.log``, ``state-change.log`` and
``controller.log`` (rotated as ``server.log.2026-11-26-09`` or ``server.log.1``). This
module reads those files for 0.10 through 4.x, ZooKeeper and KRaft, and keeps only the
lines that say something about the replication of one partition (plus broker-level lines:
start, shutdown, session expiry, controller changes). A line it does not recognise is
skipped, never fatal: logs of busy clusters hold many topics and hours of unrelated lines,
and a broker killed mid-write leaves a torn last line.

Each recognised line becomes a :class:`Fact` with Kafka's own terms: leader epoch, LEO
(log end offset), HW, ISR, the truncation offset and its reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from harness.readback.log4j import rotated_files, split_name

# log4j's default ``[%d]`` (ISO8601 with a comma), plus the ``%d{ISO8601}`` and
# ``yyyy-MM-dd'T'HH:mm:ss.SSSZ`` layouts seen in shipped log4j/log4j2 configurations.
_TS = re.compile(
    r"^\[?(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:[,.](\d{1,6}))?\s*(Z|[+-]\d{2}:?\d{2})?\]?"
)
_LEVEL = re.compile(r"\b(TRACE|DEBUG|INFO|WARN|ERROR|FATAL)\b")

# Files read per broker folder; stdout.log repeats server.log and is left out.
LOG_KINDS = ("server.log", "state-change.log", "controller.log")


class ReplayError(ValueError):
    """Unusable input (missing or empty LOGDIR, no broker logs); one line."""


@dataclass(frozen=True)
class Fact:
    """One thing a broker or the controller logged about the partition (or itself)."""

    ts: datetime
    seq: int  # order within the broker's files, to keep same-millisecond lines in order
    broker: str  # folder name of the broker that wrote the line
    file: str
    kind: str
    broker_id: int = -1  # the broker the fact is about (controller facts: the subject)
    leader: int = -1
    epoch: int = -1
    offset: int = -1  # LEO, truncation offset, leader start offset
    hw: int = -1
    isr: tuple[int, ...] = ()
    detail: str = ""  # reason of a truncation, election kind, etc.
    line: str = field(default="", compare=False)


def parse_ts(line: str) -> datetime | None:
    m = _TS.match(line)
    if not m:
        return None
    day, clock, frac, _tz = m.groups()
    micro = int((frac or "0").ljust(6, "0")[:6])
    try:  # by hand: strptime costs more than the regexes on a busy broker's log
        return datetime(
            int(day[0:4]),
            int(day[5:7]),
            int(day[8:10]),
            int(clock[0:2]),
            int(clock[3:5]),
            int(clock[6:8]),
            micro,
        )
    except ValueError:
        return None


def _ids(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"-?\d+", text))


class PartitionMatcher:
    """Recognises the partition in every spelling Kafka used: ``t-0``, ``[t,0]``, ``t, 0``."""

    def __init__(self, topic: str, partition: int) -> None:
        t = re.escape(topic)
        p = partition
        self.topic, self.partition = topic, partition
        self.rx = re.compile(
            rf"(?<![\w.-]){t}-{p}(?![\d])|\[{t},{p}\]|topic={t}, partition={p}(?!\d)"
            rf"|TopicPartition\({t},\s*{p}\)|topic={t},\s*partitionId={p}(?!\d)"
        )

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
    r"received LeaderAndIsr request PartitionState\(.*?leader=(-?\d+), leaderEpoch=(\d+), "
    r"isr=\[?([\d, ]*)\]?"
)
_BECOME = re.compile(r"starting the become-(leader|follower) transition")
_FOLLOWER_3X = re.compile(
    r"Follower .*? starts at leader epoch (\d+) from offset (\d+) with partition epoch \d+"
    r"(?: and high watermark (\d+))?\. Current leader is (-?\d+)"
)
_FETCHER_ADDED = re.compile(r"Added fetcher .*?BrokerEndPoint\(?(?:id=)?(\d+).*?leaderEpoch=(\d+)")
_FETCHER_ADDED_010 = re.compile(
    r"Added fetcher for partitions .*?initOffset (\d+) to broker BrokerEndPoint\((\d+)"
)
_TRUNCATE = re.compile(
    r"Truncating log \S+ to offset (\d+)|Truncating to offset (\d+)"
    r"|Truncating partition \S+ to local high watermark (\d+)"
    r"|Truncating partition \S+ with TruncationState\(offset=(\d+).*?due to (.*?)(?: \(kafka|$)"
    r"|Truncating partition \S+ to offset (\d+)|Truncating to (\d+) has no effect"
    r"|[Tt]runcating \S+ to (\d+)"
)
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
    r"FATAL.*truncation.*not allowed|Halting because log truncation is not allowed"
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


@dataclass
class BrokerLogs:
    """What one broker folder says: its id, version, settings and facts."""

    name: str
    broker_id: int = -1
    version: str = ""
    ibp: str = ""
    kraft: bool = False
    facts: list[Fact] = field(default_factory=list)
    lines: int = 0
    files: list[str] = field(default_factory=list)
    torn_tail: bool = False  # last line cut off (the process was killed while writing)


def broker_files(folder: Path, prefix: str = "") -> list[Path]:
    """The broker's log files (rotated ones included, see :mod:`harness.readback.log4j`),
    oldest first per kind."""
    return [p for kind in LOG_KINDS for p in rotated_files(folder / (prefix + kind))]


def parse_broker(name: str, files: list[Path], match: PartitionMatcher) -> BrokerLogs:
    """Read one broker's files; unknown lines are skipped."""
    b = BrokerLogs(name=name, files=[str(f) for f in files])
    seq = 0
    seen: set[str] = set()  # 4.0's log4j2 config writes some lines to two files
    for path in files:
        kind = kind_of(path)
        with path.open(encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        if text and not text.endswith("\n"):
            b.torn_tail = True
        for line in text.splitlines():
            b.lines += 1
            ts = parse_ts(line)
            if ts is None:
                _config_line(b, line)
                continue
            if line in seen:
                continue
            seen.add(line)
            seq += 1
            for f in _facts(line, ts, seq, name, kind, match):
                b.facts.append(f)
            if not b.version:
                m = _VERSION.search(line)
                if m:
                    b.version = m.group(1)
            if b.broker_id < 0:
                m = _STARTED.search(line)
                if m:
                    b.broker_id = int(_first(m))
    b.facts.sort(key=lambda f: (f.ts, f.seq))
    if not b.version and files:
        # 0.10 logs AppInfoParser's "Kafka version" only to the console (stdout.log).
        first = files[0]
        prefix = (split_name(first.name, LOG_KINDS) or ("", ""))[0]
        console = first.parent / f"{prefix}stdout.log"
        if console.is_file():
            with console.open(encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    m = _VERSION.search(line)
                    if m:
                        b.version = m.group(1)
                        break
    return b


def kind_of(path: Path) -> str:
    """``server.log``, ``state-change.log`` or ``controller.log`` (rotated names too)."""
    found = split_name(path.name, LOG_KINDS)
    if found is None:
        raise ReplayError(f"{path}: not a broker log ({', '.join(LOG_KINDS)})")
    return found[1]


def _config_line(b: BrokerLogs, line: str) -> None:
    m = _BROKER_ID_CONF.match(line)
    if m and b.broker_id < 0:
        b.broker_id = int(m.group(1))
        return
    m = _IBP_CONF.match(line)
    if m:
        b.ibp = m.group(1)
        return
    m = _ROLES_CONF.match(line)
    if m and m.group(1).strip():
        b.kraft = True


def _facts(
    line: str, ts: datetime, seq: int, broker: str, file: str, match: PartitionMatcher
) -> list[Fact]:
    """Facts in one line (usually zero or one)."""

    def fact(kind: str, **kw: object) -> Fact:
        return Fact(ts, seq, broker, file, kind, line=line[:400], **kw)  # type: ignore[arg-type]

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
            return [fact("fatal_truncation")]
        return []
    # Lines about the partition. Lines naming many partitions (UpdateMetadata, fetcher
    # lists) say nothing about replication state beyond what the rules below pick out.
    if "UpdateMetadata" in line or "cached leader info" in line:
        return []
    if _FATAL_TRUNC.search(line):
        return [fact("fatal_truncation")]
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
                leader=int(m.group(4)),
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
        return [
            fact(
                "isr_change",
                isr=_int_list(m.group(3)),
                detail=m.group(1).lower(),
                leader=-1,
                hw=-1,
                offset=-1,
                epoch=-1,
                broker_id=-1,
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
