"""Broker logs -> per broker: its id, version, settings and the facts about one partition.

Reads a broker's ``server.log``, ``state-change.log`` and ``controller.log`` (rotated and
gzip'd ones too) or one paste holding lines of several brokers, through
:mod:`harness.replay.ingest` (prefixes, JSON layouts, wrapped lines, missing timestamps)
and :mod:`harness.replay.rules` (Kafka's line texts per release). Which broker wrote a
line is taken from where Kafka writes it: the folder or file prefix, a compose/kubectl
host prefix, or the line itself (``[KafkaServer id=1]``, ``[Broker id=1]``,
``[ReplicaFetcher replicaId=2, leaderId=1]``, ``[Partition t-0 broker=1]``,
``Broker 1 handling LeaderAndIsr``, ``[Controller id=0]``). Brokers other lines name
(``leaderId=1``, ``Current leader 1's latest offset``, ISR lists) are kept as peers: a
one-broker paste still has the leader it followed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from harness.readback.log4j import rotated_files, split_name
from harness.replay.ingest import Record, parse_ts, read_text, records
from harness.replay.rules import (
    _BROKER_ID_CONF,
    _IBP_CONF,
    _ROLES_CONF,
    _STARTED,
    _VERSION,
    Fact,
    PartitionMatcher,
    _first,
    facts,
)

__all__ = [
    "LOG_KINDS",
    "BrokerLogs",
    "Fact",
    "PartitionMatcher",
    "ReplayError",
    "broker_files",
    "parse_broker",
    "parse_ts",
]

# Files read per broker folder; stdout.log repeats server.log and is left out.
LOG_KINDS = ("server.log", "state-change.log", "controller.log")

# Lines without a timestamp get one from this base, one millisecond apart, in written order:
# the order is what the paste says; the time is unknown (``Fact.timed`` is False).
UNTIMED_BASE = datetime(1970, 1, 1)

# Who wrote a line, as Kafka's loggers put it in the line (0.8 to 4.x).
_SELF_ID = re.compile(
    r"\[Kafka ?Server (?:id=)?(\d+)\]|\[(?:Broker|BrokerServer|BrokerLifecycleManager) id=(\d+)\]"
    r"|\[ReplicaFetcher replicaId=(\d+)|\[ReplicaAlterLogDirsThread replicaId=(\d+)"
    r"|\[Partition \S+ broker=(\d+)\]|\[ReplicaManager broker=(\d+)\]"
    r"|\[Replica ?Manager on [Bb]roker (\d+)\]|\[ReplicaFetcherManager on broker (\d+)\]"
    r"|(?:^|\s)Broker (\d+) (?:handling|cached|received|completed|ignoring|skipped)"
    r"|\[KafkaApi-(\d+)\]|\[Controller id=(\d+)\b|\[Controller (\d+)\]"
    r"|\[QuorumController id=(\d+)\]|\[KafkaRaftServer nodeId=(\d+)\]|\[RaftManager id=(\d+)\]"
    r"|\[(?:BrokerMetadataListener|BrokerMetadataPublisher|MetadataLoader) id=(\d+)\]"
    r"|replica (\d+)'s latest offset"
)
# Brokers a line names as the leader it fetches from or as a peer.
_PEER_IDS = re.compile(
    r"leaderId=(\d+)|[Cc]urrent leader (\d+)'s|Current leader is (\d+)"
    r"|BrokerEndPoint\((?:id=)?(\d+)|ReplicaFetcherThread-\d+-(\d+)"
    r"|brokerId: (\d+), endOffset"
)


class ReplayError(ValueError):
    """Unusable input (missing or empty LOGDIR, no broker logs); one line."""


@dataclass
class BrokerLogs:
    """What one broker's logs say: its id, version, settings and facts."""

    name: str
    broker_id: int = -1
    version: str = ""
    ibp: str = ""
    kraft: bool = False
    facts: list[Fact] = field(default_factory=list)
    lines: int = 0
    files: list[str] = field(default_factory=list)
    torn_tail: bool = False  # last line cut off (the process was killed while writing)
    peers: set[int] = field(default_factory=set)  # broker ids its partition lines name
    untimed: int = 0  # lines without a timestamp
    skipped: list[str] = field(default_factory=list)  # first lines no rule could use
    peer_only: bool = False  # no logs: only named by other brokers' lines
    elr: bool = False  # KIP-966 feature finalized (eligible.leader.replicas.version=1)


def self_id(text: str) -> int | None:
    """The id of the broker that wrote ``text``, if the line says it."""
    m = _SELF_ID.search(text)
    return int(_first(m)) if m else None


def broker_files(folder: Path, prefix: str = "") -> list[Path]:
    """The broker's log files (rotated and gzip'd ones included), oldest first per kind."""
    out: list[Path] = []
    for kind in LOG_KINDS:
        plain = rotated_files(folder / (prefix + kind))
        gz = [
            p
            for p in (folder.iterdir() if folder.is_dir() else [])
            if p.is_file()
            and p.name.endswith(".gz")
            and (found := split_name(p.name[:-3], (kind,))) is not None
            and found[0] == prefix
        ]
        # gzip'd files are the oldest rotations (logrotate compresses what it rotated out).
        out += sorted(gz, key=lambda p: p.name, reverse=True) + plain
    return out


def parse_broker(name: str, files: list[Path], match: PartitionMatcher) -> BrokerLogs:
    """Read one broker's files; unknown lines are skipped."""
    recs: list[Record] = []
    torn = False
    for path in files:
        text = read_text(path)
        torn = torn or (bool(text) and not text.endswith("\n"))
        recs += records(text, _cite_name(path))
    b = parse_records(name, recs, match)
    b.files = [str(f) for f in files]
    b.torn_tail = torn
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


def _cite_name(path: Path) -> str:
    """``A/server.log`` for a broker folder's file, the file name otherwise."""
    found = split_name(path.name.removesuffix(".gz"), LOG_KINDS)
    if found is not None and found[0] == "":
        return f"{path.parent.name}/{path.name}"
    return path.name


def parse_records(name: str, recs: list[Record], match: PartitionMatcher) -> BrokerLogs:
    """One broker's records (in written order) -> its facts."""
    b = BrokerLogs(name=name)
    seq = 0
    seen: set[str] = set()  # 4.0's log4j2 config writes some lines to two files
    last_ts: datetime | None = None
    said: dict[int, int] = {}
    for r in recs:
        b.lines += 1
        if r.config:
            _config_line(b, r.text)
            continue
        timed = r.ts is not None
        key = f"{r.ts}|{r.text}" if timed else f"{r.file}:{r.lineno}|{r.text}"
        if key in seen:
            continue
        seen.add(key)
        seq += 1
        if r.ts is not None:
            ts = last_ts = r.ts
        else:
            b.untimed += 1
            # An untimed line between timed ones sits just after the last timed one; lines
            # of one paste keep the paste's order across brokers (its line numbers).
            ts = (last_ts or UNTIMED_BASE) + timedelta(microseconds=r.lineno)
        cite = f"{r.file}:{r.lineno}"
        got = facts(r.text, ts, seq, name, _kind(r.file), match, cite=cite, timed=timed)
        b.facts += got
        if not got and match(r.text) and len(b.skipped) < 3:
            b.skipped.append(f"{cite}: {r.text[:160]}")
        if got and any(f.kind not in _BROKER_LEVEL for f in got):
            for pm in _PEER_IDS.finditer(r.text):
                b.peers.add(int(_first(pm)))
            for f in got:
                b.peers.update(f.isr)
                if f.leader >= 0:
                    b.peers.add(f.leader)
        if "eligible.leader.replicas.version=1" in r.text:
            b.elr = True
        if not b.version:
            m = _VERSION.search(r.text)
            if m:
                b.version = m.group(1)
        if b.broker_id < 0:
            m = _STARTED.search(r.text)
            if m:
                b.broker_id = int(_first(m))
            else:
                sid = self_id(r.text)
                if sid is not None:
                    said[sid] = said.get(sid, 0) + 1
    if b.broker_id < 0 and said:
        # The config dump and the "started" line are the broker's own word; failing them,
        # the id most of its lines write.
        b.broker_id = max(said, key=lambda i: said[i])
    b.facts.sort(key=lambda f: (f.ts, f.seq))
    return b


PARTITION_KINDS = {
    "log_loaded",
    "log_recovery",
    "hw_loaded",
    "become_leader",
    "become_follower",
    "leader_and_isr",
    "become_leader_010",
    "become_follower_010",
    "truncate",
    "isr_change",
}
"""Fact kinds about the partition's replicas (the brokers that write them are replicas)."""

_BROKER_LEVEL = {
    "start",
    "started",
    "shutdown_begin",
    "shutdown_complete",
    "unclean_dir",
    "session_expired",
    "controller_change",
    "broker_failure",
    "broker_added",
}


def _kind(file: str) -> str:
    found = split_name(Path(file).name.removesuffix(".gz"), LOG_KINDS)
    return found[1] if found else "server.log"


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


def split_paste(recs: list[Record]) -> dict[str, list[Record]]:
    """One paste of several brokers' lines -> per broker name, lines in paste order.

    A host prefix (``broker1 | ``, ``[pod/kafka-1/kafka]``) names the broker; otherwise the
    broker id the line itself writes (``broker1`` for id 1); a line naming none belongs to
    the broker of the line before it (a paste keeps a broker's lines together)."""
    out: dict[str, list[Record]] = {}
    current = ""
    hosts = any(r.host for r in recs)
    for r in recs:
        if hosts and r.host:
            current = r.host
        elif not hosts:
            sid = self_id(r.text)
            if sid is not None:
                current = f"broker{sid}"
        out.setdefault(current, []).append(r)
    # Lines before the first that names its broker belong to that broker.
    head = out.pop("", [])
    if head:
        first = next(iter(out), "pasted")
        out = {first: head + out.get(first, []), **{k: v for k, v in out.items() if k != first}}
    return out
