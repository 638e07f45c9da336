"""The high watermark of every replica, as the broker itself reports it.

Two sources, both produced by Kafka, never by the model:

- **Every replica: its own ``replication-offset-checkpoint``.** ``ReplicaManager`` writes
  the in-memory HW of every local partition (leader and follower alike) on a timer,
  ``replica.high.watermark.checkpoint.interval.ms``; hwchaos clusters set it to
  :data:`HW_CHECKPOINT_INTERVAL_MS`. The file is written to a ``.tmp`` sibling and renamed,
  so every write is a new inode: a write is *fresh* when ``(inode, mtime)`` changed. A
  running broker's HW is read once two fresh writes in a row carry the same value
  (:func:`stable_hw`), a paused broker's file is frozen at its last write before the pause,
  and a dead broker's file is exactly what it will restart with.
- **The leader, also on the wire:** ListOffsets(latest) answers the HW (what consumers may
  read) on every version hwchaos runs (read in ``harness.generator.playbook.state``).

Why not the alternatives, per version: see ``docs/observing-the-hw.md``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.readback.checkpoints import REPLICATION_OFFSET_CHECKPOINT, read_offset_checkpoint

HW_CHECKPOINT_INTERVAL_MS = 10
"""``replica.high.watermark.checkpoint.interval.ms`` of hwchaos brokers (Kafka's default is
5000): short, so a step can wait for the broker's own checkpoint instead of writing one.
Every step's observation waits for two fresh writes of each running broker (one or two
intervals), so this interval is paid about 1.5 times per step: 10 ms rather than 50 took
~60 ms off every step's observation (docs/performance.md)."""

HW_POLL = 0.005
"""Seconds between two looks at the checkpoint files: under the write interval, so a write is
seen about when it lands (a ``stat`` per running broker; cheap)."""

NO_HW = -1
"""No checkpoint entry for the partition (no file yet, or the broker never wrote it)."""


@dataclass(frozen=True)
class HwReading:
    """One replica's HW as its broker wrote it, and how much that reading can be trusted.

    ``stable``: two fresh writes in a row agreed (a running broker), or the broker cannot
    write (paused or down: the file is what it is). ``writes``: fresh writes seen while
    waiting (0 for a frozen file).
    """

    hw: int
    stable: bool
    writes: int


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns


def checkpointed_hw(log_dir: Path, topic: str, partition: int) -> int:
    """The HW the broker last checkpointed for ``topic-partition``; :data:`NO_HW` if none.

    A file caught mid-rename or torn by a crash reads as :data:`NO_HW` rather than raise:
    a torn checkpoint is an observation of its own (Kafka would refuse to start on it).
    """
    path = Path(log_dir) / REPLICATION_OFFSET_CHECKPOINT
    try:
        return read_offset_checkpoint(path).get((topic, partition), NO_HW)
    except (FileNotFoundError, ValueError):
        return NO_HW


def stable_hw(
    log_dir: Path,
    topic: str,
    partition: int,
    timeout: float = 5.0,
    poll: float = HW_POLL,
) -> HwReading:
    """A running broker's HW: wait for two fresh checkpoint writes in a row that agree.

    Bounded on *stability*, never on a value: a broker whose HW keeps moving for
    ``timeout`` seconds is returned as it last was, with ``stable=False``. The caller
    compares the value with the model; this function does not know what to expect.
    """
    return stable_hws({"": Path(log_dir)}, topic, partition, timeout, poll)[""]


def stable_hws(
    log_dirs: dict[str, Path],
    topic: str,
    partition: int,
    timeout: float = 5.0,
    poll: float = HW_POLL,
    meanwhile: Callable[[], object] | None = None,
) -> dict[str, HwReading]:
    """:func:`stable_hw` of several running brokers at once (one polling loop).

    Each broker's checkpoint timer runs on its own, so waiting for them one after another
    cost one broker's wait per running broker (~0.1 s each, every step); together it costs
    the slowest one's. ``meanwhile`` (other readings of the same moment, e.g. the leader on
    the wire) runs once after the files' current writes are noted: the two fresh writes
    waited for are then still writes made after it started, and its time is spent inside
    the one or two intervals the two writes take anyway.
    """
    paths = {k: Path(d) / REPLICATION_OFFSET_CHECKPOINT for k, d in log_dirs.items()}
    deadline = time.monotonic() + timeout
    last_stamp = {k: _stamp(p) for k, p in paths.items()}
    last_value: dict[str, int | None] = dict.fromkeys(paths)
    writes = dict.fromkeys(paths, 0)
    value = {k: checkpointed_hw(d, topic, partition) for k, d in log_dirs.items()}
    if meanwhile is not None:
        meanwhile()
    done: dict[str, HwReading] = {}
    while len(done) < len(paths) and time.monotonic() < deadline:
        for k, path in paths.items():
            if k in done:
                continue
            stamp = _stamp(path)
            if stamp is not None and stamp != last_stamp[k]:
                last_stamp[k] = stamp
                value[k] = checkpointed_hw(log_dirs[k], topic, partition)
                writes[k] += 1
                if value[k] == last_value[k]:
                    done[k] = HwReading(value[k], True, writes[k])
                last_value[k] = value[k]
        if len(done) < len(paths):
            time.sleep(poll)
    return {k: done.get(k, HwReading(value[k], False, writes[k])) for k in paths}
