"""Finding the brokers in what the engineer brings, and reading them.

Accepted: a run folder's ``logs/`` (one folder per broker: ``A/server.log``, ...), an
incident bundle (``broker-1.server.log`` etc. side by side, gzip'd rotations too), one
pasted file with lines of one or several brokers (any name), a folder of such pastes, or
``-`` for stdin. Brokers that no file speaks for but whose id other lines name (the leader
a follower fetched from, ISR members) are added as peers without logs. Input that holds
nothing about the partition gets a one-line :class:`ReplayError` naming the first lines
it could not use and why, and the option that would help.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

from harness.readback.log4j import split_name
from harness.replay.ingest import Record, read_text, records
from harness.replay.parse import (
    LOG_KINDS,
    BrokerLogs,
    Fact,
    PartitionMatcher,
    ReplayError,
    broker_files,
    parse_broker,
    parse_records,
    split_paste,
)
from harness.replay.parse import PARTITION_KINDS as _PARTITION_KINDS

_PASTE_SUFFIXES = (".log", ".txt", ".json", ".out", ".gz")
_TP = re.compile(r"(?<![\w.-])([A-Za-z_][\w.-]*?)-(\d+)(?![\w.-])|\[([\w.-]+),(\d+)\]")


def find_brokers(logdir: Path) -> dict[str, list[Path]]:
    """Broker name -> its log files (oldest first per kind), for a folder of broker logs."""
    if not logdir.exists():
        raise ReplayError(f"{logdir}: no such directory or file")
    if not logdir.is_dir():
        raise ReplayError(f"{logdir}: not a directory")
    out: dict[str, list[Path]] = {}
    for sub in sorted(p for p in logdir.iterdir() if p.is_dir()):
        files = broker_files(sub)
        if files:
            out[sub.name] = files
    prefixes = set()
    for p in logdir.iterdir():
        if not p.is_file():
            continue
        found = split_name(p.name.removesuffix(".gz"), LOG_KINDS)  # rotated names too
        if found is not None and found[0].endswith("."):
            prefixes.add(found[0])
    for prefix in sorted(prefixes):
        files = broker_files(logdir, prefix)
        if files:
            out.setdefault(prefix.rstrip("."), files)
    return out


def _pastes(logdir: Path) -> list[Path]:
    """Files in a folder that are not ``[<broker>.]<kind>`` logs: pastes."""
    return sorted(
        p
        for p in logdir.iterdir()
        if p.is_file()
        and p.name.endswith(_PASTE_SUFFIXES)
        and split_name(p.name.removesuffix(".gz"), LOG_KINDS) is None
        and not p.name.startswith(("expected", "case", "stdout"))
    )


def read_logdir(logdir: Path, topic: str, partition: int) -> list[BrokerLogs]:
    """Every broker the input speaks for, plus the peers their lines name."""
    match = PartitionMatcher(topic, partition)
    brokers: list[BrokerLogs] = []
    recs_all: list[Record] = []
    if str(logdir) == "-":
        text = _stdin()
        recs = records(text, "stdin")
        recs_all += recs
        brokers += _from_paste(recs, match, "stdin")
    elif logdir.is_file():
        found = split_name(logdir.name.removesuffix(".gz"), LOG_KINDS)
        recs = records(read_text(logdir), logdir.name)
        recs_all += recs
        if found is not None and found[0].endswith("."):
            b = parse_records(found[0].rstrip("."), recs, match)
            b.files = [str(logdir)]
            brokers.append(b)
        else:
            brokers += _from_paste(recs, match, logdir.name.split(".")[0])
    else:
        for name, files in find_brokers(logdir).items():
            brokers.append(parse_broker(name, files, match))
        for p in _pastes(logdir):
            recs = records(read_text(p), p.name)
            recs_all += recs
            brokers += _from_paste(recs, match, p.name.split(".")[0])
        if not brokers:
            raise ReplayError(
                f"{logdir}: no broker logs found (expected <broker>/server.log, "
                "<broker>.server.log, state-change.log, controller.log, or a pasted .log/.txt)"
            )
    if not any(b.lines for b in brokers):
        raise ReplayError(f"{logdir}: every broker log is empty")
    brokers = _merge_same_id(brokers)
    if not any(_about_partition(b) for b in brokers):
        raise ReplayError(_refusal(logdir, brokers, recs_all, match))
    return _with_peers(brokers)


def _from_paste(recs: list[Record], match: PartitionMatcher, stem: str) -> list[BrokerLogs]:
    out = []
    for name, rs in split_paste(recs).items():
        b = parse_records(name if name != "pasted" else stem, rs, match)
        b.files = sorted({r.file for r in rs})
        out.append(b)
    return out


def _merge_same_id(brokers: list[BrokerLogs]) -> list[BrokerLogs]:
    """Two sources naming the same broker id (``broker1`` from a paste and ``kafka-1``'s
    folder) are one broker: facts merged, the folder's name kept."""
    by_id: dict[int, BrokerLogs] = {}
    out: list[BrokerLogs] = []
    for b in brokers:
        if b.broker_id >= 0 and b.broker_id in by_id:
            keep = by_id[b.broker_id]
            keep.facts = sorted(
                keep.facts + [_rename(f, keep.name) for f in b.facts], key=lambda f: (f.ts, f.seq)
            )
            keep.lines += b.lines
            keep.peers |= b.peers
            keep.files += b.files
            keep.version = keep.version or b.version
            continue
        if b.broker_id >= 0:
            by_id[b.broker_id] = b
        out.append(b)
    return out


def _rename(f: Fact, name: str) -> Fact:
    from dataclasses import replace

    return replace(f, broker=name)


def _about_partition(b: BrokerLogs) -> bool:
    return any(f.kind in _PARTITION_KINDS or f.kind in _EVIDENCE_KINDS for f in b.facts)


_EVIDENCE_KINDS = {"fatal_truncation", "hw_regression", "out_of_order", "epoch_error", "election"}


def _with_peers(brokers: list[BrokerLogs]) -> list[BrokerLogs]:
    known = {b.broker_id for b in brokers if b.broker_id >= 0}
    named = sorted({i for b in brokers for i in b.peers if i >= 0} - known)
    return brokers + [
        BrokerLogs(name=f"broker{i}", broker_id=i, peer_only=True)
        for i in named
        if f"broker{i}" not in {b.name for b in brokers}
    ]


def _refusal(
    logdir: Path, brokers: list[BrokerLogs], recs: list[Record], match: PartitionMatcher
) -> str:
    """Why nothing about the partition was read, with the first lines and what to try."""
    skipped = [s for b in brokers for s in b.skipped]
    want = f"{match.topic}-{match.partition}"
    if skipped:
        return (
            f"{logdir}: lines name {want} but none says something replay reads "
            f"(first: {skipped[0]}); if the logs come from a release replay does not know, "
            "say which with --kafka"
        )
    seen: Counter[str] = Counter()
    for b in brokers:
        for f in b.facts:
            for m in _TP.finditer(f.line):
                seen[f"{m.group(1) or m.group(3)}-{m.group(2) or m.group(4)}"] += 1
    for r in recs:
        if "artition" in r.text or "runcat" in r.text:
            for m in _TP.finditer(r.text):
                seen[f"{m.group(1) or m.group(3)}-{m.group(2) or m.group(4)}"] += 1
    if not seen and str(logdir) != "-":
        try:
            gt, gp, _note = guess_partition(logdir, None)
            seen[f"{gt}-{gp}"] += 1
        except ReplayError:
            pass
    first = recs[0] if recs else None
    shown = f"; first line: {first.file}:{first.lineno}: {first.text[:120]}" if first else ""
    if seen:
        top = ", ".join(tp for tp, _n in seen.most_common(3))
        tp, _n = seen.most_common(1)[0]
        topic, _, part = tp.rpartition("-")
        return (
            f"{logdir}: no line names {want}; the lines name {top}: try --topic {topic} "
            f"--partition {part}"
        )
    return (
        f"{logdir}: no line is a Kafka broker log line about any partition "
        f"(no leader, follower, truncation, ISR or election line){shown}"
    )


_STDIN: list[str] = []


def _stdin() -> str:
    """stdin's text, read once (the partition guess and the read both need it)."""
    if not _STDIN:
        _STDIN.append(sys.stdin.read())
    return _STDIN[0]


_REPLICATION_WORDS = re.compile(
    r"runcat|starts at|ISR|high watermark|leader|[Ll]og end offset|not allowed|Out of order"
)


def guess_partition(logdir: Path, partition: int | None) -> tuple[str, int, str]:
    """The partition the replication lines name most, when --topic is not given."""
    if str(logdir) == "-":
        texts = [_stdin()]
    elif logdir.is_file():
        texts = [read_text(logdir)]
    elif logdir.is_dir():
        files = [f for fs in find_brokers(logdir).values() for f in fs] + _pastes(logdir)
        texts = [read_text(f) for f in files]
    else:
        raise ReplayError(f"{logdir}: no such directory or file")
    seen: Counter[tuple[str, int]] = Counter()
    for text in texts:
        for line in text.splitlines():
            if not _REPLICATION_WORDS.search(line):
                continue
            for m in _TP.finditer(line):
                t, p = m.group(1) or m.group(3), int(m.group(2) or m.group(4))
                if partition is None or p == partition:
                    seen[(t, p)] += 1
    if not seen:
        raise ReplayError(f"{logdir}: no replication line names a partition: say --topic")
    (t, p), n = seen.most_common(1)[0]
    others = ", ".join(f"{a}-{b}" for (a, b), _ in seen.most_common(4)[1:])
    more = f" (also named: {others}; say --topic/--partition for another)" if others else ""
    return t, p, f"no --topic: replaying {t}-{p}, named by {n} replication lines{more}"
