"""Kafka's checkpoint files: read them back, and write them for checkpoint faults.

All three share one text format: a version line (``0``), a count line, then one entry per
line. ``replication-offset-checkpoint`` and ``recovery-point-offset-checkpoint`` (and
``log-start-offset-checkpoint``) hold ``topic partition offset``; ``leader-epoch-checkpoint``
(one per partition dir, 0.11+) holds ``epoch start_offset``. Writers go through a temp file,
fsync and rename, as Kafka's ``CheckpointFile`` does, so a reader never sees half a file.
"""

from __future__ import annotations

import os
from pathlib import Path


def _lines(path: Path, what: str) -> list[str]:
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such checkpoint file")
    lines = path.read_text().splitlines()
    if len(lines) < 2:
        raise ValueError(f"{path.name}: expected a version line and a count line")
    if lines[0].strip() != "0":
        raise ValueError(f"{path.name}: line 1: unsupported version {lines[0].strip()!r}")
    try:
        count = int(lines[1])
    except ValueError:
        raise ValueError(f"{path.name}: line 2: expected a count, got {lines[1]!r}") from None
    body = [ln for ln in lines[2:] if ln.strip()]
    if len(body) != count:
        raise ValueError(f"{path.name}: count line says {count} {what}, found {len(body)}")
    return body


def read_offset_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """``replication-offset-checkpoint`` style: {(topic, partition): offset}."""
    out: dict[tuple[str, int], int] = {}
    for n, line in enumerate(_lines(path, "entries"), start=3):
        parts = line.split()
        if len(parts) != 3:
            raise ValueError(
                f"{path.name}: line {n}: expected 'topic partition offset', got {line!r}"
            )
        try:
            out[(parts[0], int(parts[1]))] = int(parts[2])
        except ValueError:
            raise ValueError(f"{path.name}: line {n}: not integers in {line!r}") from None
    return out


def read_leader_epoch_checkpoint(path: Path) -> list[tuple[int, int]]:
    """``leader-epoch-checkpoint``: [(epoch, start_offset)] in file order."""
    out = []
    for n, line in enumerate(_lines(path, "entries"), start=3):
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"{path.name}: line {n}: expected 'epoch start_offset', got {line!r}")
        try:
            out.append((int(parts[0]), int(parts[1])))
        except ValueError:
            raise ValueError(f"{path.name}: line {n}: not integers in {line!r}") from None
    return out


def _write_atomically(path: Path, lines: list[str]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as fh:
        fh.write("".join(f"{ln}\n" for ln in lines))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_offset_checkpoint(path: Path, entries: dict[tuple[str, int], int]) -> None:
    body = [f"{t} {p} {o}" for (t, p), o in sorted(entries.items())]
    _write_atomically(path, ["0", str(len(body)), *body])


def write_leader_epoch_checkpoint(path: Path, entries: list[tuple[int, int]]) -> None:
    body = [f"{e} {o}" for e, o in entries]
    _write_atomically(path, ["0", str(len(body)), *body])
