"""A class-data sharing archive (JDK AppCDS) per Kafka release tree, for the local runtime.

Why: a broker JVM spends most of its start loading, parsing and verifying the few thousand
classes of Kafka, Scala, ZooKeeper and their libraries; a run starts 3-5 JVMs (ZooKeeper or
a controller, brokers, the KRaft storage tool) and restarts some, so class loading is paid
a dozen times per run, every run. A JVM can map those classes pre-parsed from an archive.

How, given that the harness SIGKILLs its JVMs (a dynamic archive, ``-XX:ArchiveClassesAtExit``
as the Spark driver uses, is written only by a JVM that exits cleanly): the first cluster of
a tree runs its JVMs with ``-XX:DumpLoadedClassList``, a list the JVM appends to as it loads
classes, so it survives SIGKILL. When that cluster is closed, the lists are merged and a
static archive is dumped from them (``java -Xshare:dump``, one short JVM, once per tree).
Every later JVM of that tree maps it with ``-XX:SharedArchiveFile`` and ``-Xshare:auto``: a
JVM that cannot use it (another JDK, other flags) runs without sharing, never fails.

Where: ``${HWCHAOS_CACHE:-~/.cache/hwchaos}/kafka-cds/<key>-<bytes>.jsa`` (outside the repo);
the key hashes what the archive is only valid for (the tree's jars, ``java -version``, the
JVM options). The size in the name guards against a truncated file (JDK 17 may crash on one
instead of falling back): a file whose size differs is removed, never passed. Two harnesses
building at once each write a temp file of their own and the last rename wins, both valid.

``HWCHAOS_BROKER_CDS=0`` turns it off (A/B measurements, a JDK that misbehaves).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

CLASS_LISTS = "classes-*.lst"  # in each node's folder of the run's work dir, one per JVM
DUMP_TIMEOUT = 180.0
# Quiet: a JVM that maps an archive built with other options only warns, and runs.
_QUIET = "-Xlog:cds=off,cds+dynamic=off,class+path=off"


def enabled() -> bool:
    """Whether broker JVMs use (and build) archives: not with ``HWCHAOS_BROKER_CDS=0``."""
    return os.environ.get("HWCHAOS_BROKER_CDS", "1").strip().lower() not in ("0", "false", "no")


@functools.lru_cache(maxsize=4)
def _java_version(java: str) -> str:
    try:
        return subprocess.run(
            [java, "-Xshare:auto", "-version"], capture_output=True, text=True, timeout=30
        ).stderr
    except (OSError, subprocess.TimeoutExpired):
        return ""


def cache_folder() -> Path:
    base = os.environ.get("HWCHAOS_CACHE") or str(Path.home() / ".cache" / "hwchaos")
    return Path(base).expanduser() / "kafka-cds"


class TreeArchive:
    """The archive of one release tree for JVMs started with ``options`` on ``classpath``."""

    def __init__(self, classpath: str, options: list[str], java: str = "java") -> None:
        self.classpath = classpath
        self.options = list(options)
        self.java = shutil.which(java) or java
        version = _java_version(self.java)
        major = version.split('"')[1].split(".")[0] if version.count('"') >= 2 else "0"
        self.usable = enabled() and major.isdigit() and int(major) >= 13
        jars = []
        for j in classpath.split(os.pathsep):
            with contextlib.suppress(OSError):
                st = os.stat(j)
                jars.append(f"{j}:{st.st_size}:{int(st.st_mtime)}")
        text = "\n".join([self.java, version, *self.options, *jars])
        self.key = hashlib.sha256(text.encode()).hexdigest()[:20]
        self.folder = cache_folder()

    def archive(self) -> Path | None:
        """The whole archive for this key, if one has been built (a torn one is removed)."""
        if not self.usable or not self.folder.is_dir():
            return None
        for found in sorted(self.folder.glob(f"{self.key}-*.jsa")):
            size = found.stem.rsplit("-", 1)[1]
            try:
                whole = found.stat().st_size == int(size)
            except (OSError, ValueError):
                whole = False
            if whole:
                return found
            found.unlink(missing_ok=True)
        return None

    def java_options(self, node_dir: Path, main_class: str) -> list[str]:
        """Map the archive if there is one, else record the classes this JVM loads (in
        ``node_dir``, one list per main class: a node runs the storage tool, then Kafka)."""
        if not self.usable:
            return []
        found = self.archive()
        if found is not None:
            return ["-Xshare:auto", f"-XX:SharedArchiveFile={found}", _QUIET]
        short = main_class.rsplit(".", 1)[-1]
        return [f"-XX:DumpLoadedClassList={node_dir / f'classes-{short}.lst'}"]

    def build(self, node_dirs: list[Path]) -> Path | None:
        """Dump the archive from the class lists the nodes in ``node_dirs`` wrote (if none is
        there yet); None when there is nothing to build from or the dump failed."""
        if not self.usable or self.archive() is not None:
            return None
        classes: dict[str, None] = {}
        lists = [f for d in node_dirs for f in sorted(d.glob(CLASS_LISTS))]
        for f in lists:
            with contextlib.suppress(OSError):
                for line in f.read_text(errors="replace").splitlines():
                    # skip the list's comments and lambda-form lines (JDK-internal, fragile)
                    if line and not line.startswith(("#", "@")):
                        classes.setdefault(line.split()[0])
        if len(classes) < 100:
            return None  # the JVMs died too early to say what a broker loads
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None
        stem = f"{self.key}.{os.getpid()}.{id(self)}"
        lst, tmp = self.folder / f"{stem}.lst", self.folder / f"{stem}.tmp"
        try:
            lst.write_text("\n".join(classes) + "\n")
            proc = subprocess.run(
                [
                    self.java,
                    *self.options,
                    "-Xshare:dump",
                    f"-XX:SharedClassListFile={lst}",
                    f"-XX:SharedArchiveFile={tmp}",
                    "-cp",
                    self.classpath,
                ],
                capture_output=True,
                timeout=DUMP_TIMEOUT,
                stdin=subprocess.DEVNULL,
            )
            if proc.returncode != 0 or not tmp.is_file() or tmp.stat().st_size == 0:
                return None
            final = self.folder / f"{self.key}-{tmp.stat().st_size}.jsa"
            os.replace(tmp, final)
            return final
        except (OSError, subprocess.TimeoutExpired):
            return None
        finally:
            lst.unlink(missing_ok=True)
            tmp.unlink(missing_ok=True)
