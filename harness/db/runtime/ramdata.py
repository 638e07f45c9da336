"""Brokers' and ZooKeeper's data dirs in memory (tmpfs) while a local cluster runs.

Why: the harness reads every broker's HW from its ``replication-offset-checkpoint``, which
Kafka rewrites every ``replica.high.watermark.checkpoint.interval.ms`` (10 ms here,
:data:`harness.readback.hw.HW_CHECKPOINT_INTERVAL_MS`): a new file, an ``fsync`` and a
rename, 100 times a second per broker. On ext4 that is journal commits and writeback for
the kernel on top of the JVM's own work: an idle 0.10.2.1 cluster (ZooKeeper, the controller
broker, three brokers) kept the machine 0.09-0.25 cores busy with its dirs on ext4 and
0.035-0.12 on tmpfs (2 cores, 30 s windows, 6 Dec 2026). On a 2-core machine running
three clusters at once (CI, ``matrix --jobs``) that is a large share of what there is.

How: the node's ``<workdir>/<node>/data`` is a symbolic link to a directory under
``/dev/shm`` while the cluster runs, so every path the harness, the modes and the brokers
use is unchanged. When the cluster closes, each link is replaced by a copy of what it
pointed to (holes kept: Kafka preallocates its index files) and the memory is freed: the
run folder holds the same files as before. Nothing in Kafka's behaviour depends on the
medium; a power loss is the harness cutting the log to what it observed flushed
(``harness.generator.playbook.crash``), not the page cache.

Left behind by a harness killed with SIGKILL (no ``close``): the directory's name carries
its owner (boot id, pid, process start time, as the container labels of
:mod:`harness.db.runtime.reaper`), and the next local cluster start removes those whose
owner is gone. ``HWCHAOS_DATA_ON_DISK=1`` keeps the data dirs on disk; so does a
``/dev/shm`` that is missing, not tmpfs, or has under :data:`MIN_FREE` free.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from harness.db.runtime.reaper import owner_alive, owner_id

RAM_ROOT = Path("/dev/shm")
PREFIX = "hwchaos-data-"
MIN_FREE = 1 << 30  # bytes free on the tmpfs below which the data stay on disk


def _is_tmpfs(path: Path) -> bool:
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return False
    for line in mounts:
        parts = line.split()
        if len(parts) >= 3 and parts[1] == str(path):
            return parts[2] == "tmpfs"
    return False


def available(root: Path = RAM_ROOT) -> str | None:
    """Why the data dirs stay on disk (one line), None when they can go to ``root``."""
    if os.environ.get("HWCHAOS_DATA_ON_DISK", "").strip().lower() in ("1", "true", "yes"):
        return "HWCHAOS_DATA_ON_DISK is set"
    if not root.is_dir() or not os.access(root, os.W_OK):
        return f"no writable {root}"
    if not _is_tmpfs(root):
        return f"{root} is not a tmpfs"
    if shutil.disk_usage(root).free < MIN_FREE:
        return f"under {MIN_FREE >> 20} MiB free on {root}"
    return None


def reap_orphans(root: Path = RAM_ROOT) -> int:
    """Remove the data of harnesses that are gone (killed before their ``close``)."""
    n = 0
    if not root.is_dir():
        return 0
    for d in root.glob(f"{PREFIX}*"):
        owner = d.name[len(PREFIX) :].rsplit("-", 1)[0]
        if owner.count(":") == 2 and not owner_alive(owner):
            shutil.rmtree(d, ignore_errors=True)
            n += 1
    return n


class RamData:
    """One cluster's data dirs in memory; :meth:`close` copies them back and frees them."""

    def __init__(self, workdir: Path, root: Path = RAM_ROOT) -> None:
        self.workdir = workdir
        self.root = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{owner_id()}-", dir=root))
        self._attempt = 0

    def place(self, data_dirs: Iterable[Path]) -> None:
        """Link each data dir that does not exist yet to a fresh directory in memory.

        A dir that exists (a restart, a retried start's survivor) is left as it is. Each
        start attempt gets its own subfolder: a failed attempt's nodes are set aside whole
        (``failed-start/``), links included, and must not share files with the next one.
        """
        self._attempt += 1
        for d in data_dirs:
            if d.exists() or d.is_symlink():
                continue
            target = self.root / str(self._attempt) / d.parent.name
            target.mkdir(parents=True, exist_ok=True)
            d.parent.mkdir(parents=True, exist_ok=True)
            d.symlink_to(target, target_is_directory=True)

    def _links(self) -> list[Path]:
        found = []
        for d in self.workdir.rglob("data"):
            if d.is_symlink() and str(os.readlink(d)).startswith(str(self.root)):
                found.append(d)
        return found

    def close(self) -> None:
        """Each link replaced by a copy of its directory (holes kept), the memory freed.

        Called once the JVMs are dead (nothing writes any more); idempotent."""
        if not self.root.exists():
            return
        try:
            for link in self._links():
                target = Path(os.readlink(link))
                link.unlink()
                if target.is_dir():
                    shutil.copytree(target, link, copy_function=copy_sparse, symlinks=True)
                else:
                    link.mkdir()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def copy_sparse(src: str, dst: str) -> str:
    """``shutil.copy2`` that writes only the file's data extents (``SEEK_DATA``/``SEEK_HOLE``).

    Kafka preallocates each segment's offset and time index (10 MiB each) and trims them
    only on a clean close; a crashed broker's are mostly holes. Copied byte by byte they
    would be tens of MiB of zeros per partition written to disk at every cluster stop.
    """
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        fd = fi.fileno()
        size = os.fstat(fd).st_size
        off = 0
        while off < size:
            try:
                start = os.lseek(fd, off, os.SEEK_DATA)
            except OSError:  # ENXIO: only a hole after ``off``
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            os.lseek(fd, start, os.SEEK_SET)
            fo.seek(start)
            left = end - start
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                fo.write(chunk)
                left -= len(chunk)
            off = end
        fo.truncate(size)
    with contextlib.suppress(OSError):
        shutil.copystat(src, dst)
    return dst
