"""The *nemesis*: faults injected into a running cluster, each as the scenario names it.

- crash: SIGKILL. The page cache survives, so the log files keep every appended byte.
- power loss: a crash, then each log is cut back to what the scenario flushed (the bytes an
  fsync would have made durable), the index files of cut segments are dropped (Kafka
  rebuilds them on recovery) and there is no clean-shutdown marker.
- stale HW checkpoint: ``replication-offset-checkpoint`` is rewritten while the broker is
  down, so the restart reads the HW the scenario says (the checkpoint thread runs hourly in
  hwchaos clusters; see kafka_config).
- clean stop, restart, pause/resume (SIGSTOP/SIGCONT).
- network partition between chosen brokers: needs network namespaces, which the local
  backend does not set up; :func:`partition` says so in one line.
"""

from __future__ import annotations

import signal
from pathlib import Path

from harness.db import PARTITION, TOPIC, Cluster
from harness.readback.checkpoints import read_offset_checkpoint, write_offset_checkpoint
from harness.readback.logformat import read_segment

CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"
HW_CHECKPOINT = "replication-offset-checkpoint"


class NotSupported(RuntimeError):
    """A fault this backend cannot inject here; the message says why, in one line."""


def crash(cluster: Cluster, name: str, timeout: float = 30.0) -> None:
    cluster.signal(name, signal.SIGKILL)
    cluster.wait_exit(name, timeout)


def clean_stop(cluster: Cluster, name: str, timeout: float = 60.0) -> None:
    cluster.signal(name, signal.SIGCONT)  # a stopped JVM cannot run its shutdown hook
    cluster.signal(name, signal.SIGTERM)
    cluster.wait_exit(name, timeout)


def pause(cluster: Cluster, name: str) -> None:
    cluster.signal(name, signal.SIGSTOP)


def resume(cluster: Cluster, name: str) -> None:
    cluster.signal(name, signal.SIGCONT)


def write_hw_checkpoint(cluster: Cluster, name: str, hw: int, topic: str = TOPIC) -> None:
    """Set the partition's entry in the broker's replication-offset-checkpoint to ``hw``."""
    path = cluster.log_dir(name) / HW_CHECKPOINT
    entries: dict[tuple[str, int], int] = {}
    if path.exists():
        entries = read_offset_checkpoint(path)
    entries[(topic, PARTITION)] = hw
    write_offset_checkpoint(path, entries)


def cut_log_to(partition_dir: Path, offset: int) -> int:
    """Truncate a partition's segments so the log ends before ``offset``; bytes removed.

    Cuts at the first batch whose last offset is >= ``offset`` (hwchaos produces one record
    per batch, so batch and record boundaries coincide), deletes later segments, and drops
    the index files of every segment it touched.
    """
    removed = 0
    for seg in sorted(partition_dir.glob("*.log")):
        base = int(seg.stem)
        if base >= offset and base > 0:
            removed += seg.stat().st_size
            seg.unlink()
            _drop_indexes(seg)
            continue
        res = read_segment(seg, verify=False)
        cut = next((b.position for b in res.batches if b.last_offset >= offset), None)
        if cut is None:
            continue
        size = seg.stat().st_size
        with seg.open("r+b") as fh:
            fh.truncate(cut)
        removed += size - cut
        _drop_indexes(seg)
    return removed


def _drop_indexes(seg: Path) -> None:
    for suffix in (".index", ".timeindex", ".txnindex"):
        seg.with_suffix(suffix).unlink(missing_ok=True)


def power_loss(cluster: Cluster, name: str, flushed_offset: int) -> int:
    """Crash the broker and lose everything past ``flushed_offset``; returns bytes lost."""
    if cluster.is_running(name):
        crash(cluster, name)
    (cluster.log_dir(name) / CLEAN_SHUTDOWN_MARKER).unlink(missing_ok=True)
    pdir = cluster.partition_dir(name)
    return cut_log_to(pdir, flushed_offset) if pdir.is_dir() else 0


def partition(cluster: Cluster, side_a: list[str], side_b: list[str]) -> None:
    raise NotSupported(
        "network partitions need per-broker network namespaces; the local backend runs all "
        "brokers on 127.0.0.1 (use the docker backend, or run as root with netns support)"
    )
