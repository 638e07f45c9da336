"""Finding the brokers in a LOGDIR and reading them: folders per broker, or prefixed files.

A run folder's ``logs/`` has one folder per broker (``A/server.log``, ...); an incident
bundle often has ``broker-1.server.log`` etc. side by side. Both are accepted; a folder
without any broker log gets a one-line :class:`ReplayError`.
"""

from __future__ import annotations

from pathlib import Path

from harness.readback.log4j import split_name
from harness.replay.parse import (
    LOG_KINDS,
    BrokerLogs,
    PartitionMatcher,
    ReplayError,
    broker_files,
    parse_broker,
)


def find_brokers(logdir: Path) -> dict[str, list[Path]]:
    """Broker name -> its log files (oldest first per kind)."""
    if not logdir.exists():
        raise ReplayError(f"{logdir}: no such directory")
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
        found = split_name(p.name, LOG_KINDS)  # rotated names too
        if found is not None and found[0].endswith("."):
            prefixes.add(found[0])
    for prefix in sorted(prefixes):
        files = broker_files(logdir, prefix)
        if files:
            out.setdefault(prefix.rstrip("."), files)
    if not out:
        raise ReplayError(
            f"{logdir}: no broker logs found (expected <broker>/server.log or "
            "<broker>.server.log, state-change.log, controller.log)"
        )
    if all(f.stat().st_size == 0 for files in out.values() for f in files):
        raise ReplayError(f"{logdir}: every broker log is empty")
    return out


def read_logdir(logdir: Path, topic: str, partition: int) -> list[BrokerLogs]:
    match = PartitionMatcher(topic, partition)
    brokers = [parse_broker(name, files, match) for name, files in find_brokers(logdir).items()]
    if not any(b.lines for b in brokers):
        raise ReplayError(f"{logdir}: the broker logs hold no lines")
    if not any(b.facts for b in brokers):
        raise ReplayError(f"{logdir}: no line in the broker logs is a Kafka log4j line")
    return brokers
