"""Kafka's checkpoint files: read back after a run, and written to inject checkpoint faults.

A restarting broker takes its high watermark from ``replication-offset-checkpoint``, so the
HW-truncation anomalies hwchaos replays depend on exactly what these files say; the harness
reads them to compare with the model and rewrites them to stage a stale-HW restart.

All of them share Kafka's ``CheckpointFile`` text format: a version line (``0``), a count
line, then one entry per line, fields separated by whitespace:

- ``replication-offset-checkpoint``, ``recovery-point-offset-checkpoint`` and
  ``log-start-offset-checkpoint`` (one per log dir): ``topic partition offset``;
- ``leader-epoch-checkpoint`` (one per partition dir, 0.11+): ``epoch startOffset``.

Reading follows Kafka: an empty file is an empty checkpoint (a broker creates them empty),
anything else malformed is a one-line ``ValueError`` naming the file and line. Writing also
follows Kafka: a ``.tmp`` sibling, fsync, atomic rename (then fsync of the directory), so a
crash while writing never leaves a half-written checkpoint for the broker to trip over.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

CHECKPOINT_VERSION = 0
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_OFFSET_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


def _entry_lines(path: Path, fields: str, width: int) -> list[tuple[int, list[str]]]:
    """(line number, fields) of each entry, after checking version and count lines."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such checkpoint file") from None
    name = path.name
    lines = text.splitlines()
    if not lines:
        return []
    if lines[0].strip() != str(CHECKPOINT_VERSION):
        raise ValueError(f"{name}: line 1: expected version '0', got {lines[0]!r}")
    if len(lines) < 2:
        raise ValueError(f"{name}: line 2: expected an entry count, got end of file")
    try:
        count = int(lines[1])
    except ValueError:
        raise ValueError(f"{name}: line 2: expected an entry count, got {lines[1]!r}") from None
    out = []
    for number, line in enumerate(lines[2:], start=3):
        parts = line.split()
        if len(parts) != width:
            raise ValueError(f"{name}: line {number}: expected '{fields}', got {line!r}")
        out.append((number, parts))
    if len(out) != count:
        raise ValueError(f"{name}: line 2: count says {count} entries, file has {len(out)}")
    return out


def _int(name: str, number: int, fields: str, line: list[str], text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(
            f"{name}: line {number}: expected '{fields}', got {' '.join(line)!r}"
        ) from None


def read_offset_checkpoint(path: Path | str) -> dict[tuple[str, int], int]:
    """An offset checkpoint (HW, recovery point, log start) as {(topic, partition): offset}."""
    path = Path(path)
    fields = "topic partition offset"
    out: dict[tuple[str, int], int] = {}
    for number, parts in _entry_lines(path, fields, 3):
        partition = _int(path.name, number, fields, parts, parts[1])
        out[(parts[0], partition)] = _int(path.name, number, fields, parts, parts[2])
    return out


def read_leader_epoch_checkpoint(path: Path | str) -> list[tuple[int, int]]:
    """``leader-epoch-checkpoint`` as [(epoch, start_offset)], in file (epoch) order."""
    path = Path(path)
    fields = "epoch startOffset"
    return [
        (
            _int(path.name, number, fields, parts, parts[0]),
            _int(path.name, number, fields, parts, parts[1]),
        )
        for number, parts in _entry_lines(path, fields, 2)
    ]


def _write_atomically(path: Path, entries: list[str]) -> None:
    """Kafka's CheckpointFile.write: tmp file, fsync, rename over the old file."""
    path = Path(path)
    lines = [str(CHECKPOINT_VERSION), str(len(entries)), *entries]
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write("".join(f"{line}\n" for line in lines))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    # The rename is durable only once the directory is synced; best effort, as in Kafka.
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def write_offset_checkpoint(path: Path | str, entries: Mapping[tuple[str, int], int]) -> None:
    """Write an offset checkpoint (sorted by topic and partition, so diffs are stable)."""
    body = []
    for (topic, partition), offset in sorted(entries.items()):
        if not topic or any(c.isspace() for c in topic):
            raise ValueError(f"{Path(path).name}: topic {topic!r} cannot be written")
        if partition < 0:
            raise ValueError(f"{Path(path).name}: negative partition {partition} for {topic}")
        body.append(f"{topic} {partition} {offset}")
    _write_atomically(Path(path), body)


def write_leader_epoch_checkpoint(path: Path | str, entries: Iterable[tuple[int, int]]) -> None:
    """Write a ``leader-epoch-checkpoint``; entries are kept in the order given."""
    _write_atomically(Path(path), [f"{epoch} {start}" for epoch, start in entries])
