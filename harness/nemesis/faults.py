"""The *nemesis*: faults injected into a running cluster, each as the scenario names it.

- crash: SIGKILL. The page cache survives, so the log files keep every appended byte.
- power loss: a crash, then each log is cut back to what the scenario flushed (the bytes an
  fsync would have made durable), the index files of cut segments are dropped (Kafka
  rebuilds them on recovery) and there is no clean-shutdown marker.
- torn write (a fault): while the broker is down, its last batch is cut mid-way, as a power
  cut mid-write leaves it; Kafka's log recovery drops the torn batch at the next start.
- stale HW checkpoint (a fault, never a model value): ``replication-offset-checkpoint`` is
  rewritten while the broker is down, so the restart reads the HW the scenario's
  ``stale_checkpoint`` step names (otherwise Kafka checkpoints its own HW every 10 ms; see
  kafka_config).
- clean stop, restart, pause/resume (SIGSTOP/SIGCONT).
- network partition of chosen links between brokers, controller, ZooKeeper and the
  harness's clients, one way or both, and heal (harness.db.runtime.netns: the local backend
  started with ``network=True`` runs each JVM in its own namespace; root only). Without a
  run network :func:`partition` raises NotSupported with the reason in one line.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness import timing
from harness.db import Cluster, ClusterError
from harness.db.names import PARTITION
from harness.db.runtime.linkcuts import CLIENT, Direction, Partitions, network_available
from harness.db.runtime.process import stopped
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


def pause(cluster: Cluster, name: str, timeout: float = 10.0) -> None:
    """SIGSTOP, then wait until every thread of the JVM has stopped.

    The signal is queued at once but takes hold thread by thread: a broker "paused" by the
    harness could still answer a request or send a Fetch for a few milliseconds (more on a
    loaded machine), behind the scenario's back.
    """
    from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

    cluster.signal(name, signal.SIGSTOP)
    pid = cluster.host_pid(name)
    if pid is None:
        return

    @retry(
        retry=retry_if_result(lambda done: not done),
        stop=stop_after_delay(timeout),
        wait=wait_fixed(0.005),
        retry_error_callback=lambda _s: False,
    )
    def poll() -> bool:
        return stopped(pid)

    with timing.timed_fence(f"{name} to stop (SIGSTOP)"):
        if not poll():
            raise ClusterError(f"{name} (pid {pid}) did not stop within {timeout:.0f}s of SIGSTOP")


def resume(cluster: Cluster, name: str) -> None:
    cluster.signal(name, signal.SIGCONT)


def write_hw_checkpoint(cluster: Cluster, name: str, hw: int, topic: str | None = None) -> None:
    """Set the partition's entry (``topic``: default the run's) in the broker's
    replication-offset-checkpoint to ``hw``."""
    topic = topic or cluster.topic
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


@dataclass(frozen=True)
class Torn:
    """What :func:`tear_last_batch` did, read back from the segment file."""

    segment: str  # the segment file's name
    offset: int  # the torn batch's base offset: the LEO Kafka's recovery will find
    size: int  # the batch's size in bytes
    kept: int  # of those, the bytes left on disk


def tear_last_batch(partition_dir: Path) -> Torn | None:
    """Cut the log's last batch mid-way (a torn sector); None when the log has no batch.

    Truncates the last segment holding a batch to half of that batch (the size field and
    header survive, the records do not), then reads the file back: the batch must now be
    the torn tail (``read_segment``: one batch fewer, bytes past the valid prefix), which
    is what Kafka's ``LogSegment.recover`` will cut at the next start. Index files are left
    alone: recovery rebuilds them (the broker has no clean-shutdown marker).
    """
    for seg in sorted(partition_dir.glob("*.log"), reverse=True):
        res = read_segment(seg, verify=False)
        if not res.batches:
            continue
        last = res.batches[-1]
        kept = max(1, last.size // 2)
        with seg.open("r+b") as fh:
            fh.truncate(last.position + kept)
        after = read_segment(seg, verify=False)
        if len(after.batches) != len(res.batches) - 1 or not after.torn_tail:
            raise ClusterError(f"{seg}: tearing the batch at offset {last.base_offset} failed")
        return Torn(seg.name, last.base_offset, last.size, kept)
    return None


def torn_write(cluster: Cluster, name: str) -> Torn | None:
    """The fault ``torn_write``: broker ``name`` (down) loses the end of its last batch and
    its clean-shutdown marker (a power cut mid-write), so its next start runs log recovery."""
    if cluster.is_running(name):
        raise ClusterError(f"torn_write {name}: the broker is running")
    (cluster.log_dir(name) / CLEAN_SHUTDOWN_MARKER).unlink(missing_ok=True)
    pdir = cluster.partition_dir(name)
    return tear_last_batch(pdir) if pdir.is_dir() else None


def _network(cluster: Cluster) -> Partitions:
    """The cluster's partition capability, or NotSupported saying why there is none."""
    if cluster.network is None:
        reason = network_available() or (
            "this cluster was started without per-node network namespaces (network=True)"
        )
        raise NotSupported(f"network partitions unavailable: {reason}")
    return cluster.network


def partition(
    cluster: Cluster,
    src: str | Iterable[str],
    dst: str | Iterable[str],
    direction: Direction = "both",
) -> list[tuple[str, str]]:
    """Cut the links src -> dst (and back unless ``one-way``); returns the links newly cut.

    Peers are broker names, ``controller``, ``zookeeper`` and ``client`` (the harness's
    clients). Every packet on a cut link is dropped, open connections included.
    """
    return _network(cluster).partition(src, dst, direction)


def isolate(cluster: Cluster, name: str, keep: Iterable[str] = (CLIENT,)) -> list[tuple[str, str]]:
    """Cut ``name`` from every other process; the clients still reach it unless not kept."""
    return _network(cluster).isolate(name, keep)


def heal(
    cluster: Cluster,
    src: str | Iterable[str] | None = None,
    dst: str | Iterable[str] | None = None,
    direction: Direction = "both",
) -> list[tuple[str, str]]:
    """Restore cut links (all, those of ``src``, or those between ``src`` and ``dst``)."""
    return _network(cluster).heal(src, dst, direction)
