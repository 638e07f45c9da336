"""The driver JVM's class-data sharing archive, for :func:`harness.analysis.spark_session.session`.

Why a module of its own: the archive's life (made once by a session that ran the real job,
mapped by every later one, dropped when a JVM refuses it) is independent of what the
session then computes; see :class:`ClassArchive`.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def jvm_pid(spark: Any) -> int:
    """The process id of the session's driver JVM."""
    return int(spark._jvm.java.lang.ProcessHandle.current().pid())


@dataclass
class ClassArchive:
    """The driver JVM's class-data sharing archive (JDK AppCDS, dynamic archive).

    Why: most of a session's start and of its first query is the JVM loading, parsing and
    verifying some 15,000 classes of Spark, Scala and their libraries; a JDK 13+ JVM can
    map them pre-parsed and pre-verified from an archive instead. The archive is made once,
    by a session that ran the real job (``-XX:ArchiveClassesAtExit``, written when that JVM
    exits: :func:`stop`), then mapped by every later one (``-XX:SharedArchiveFile``).

    Where: ``${HWCHAOS_CACHE:-~/.cache/hwchaos}/spark-cds/<key>-<bytes>.jsa``; the key
    hashes what the archive is only valid for (pyspark's version and jars, ``java -version``
    and the JVM options), and the name carries the file's size. Safety: a JVM writes its
    archive to a temp name of its own and it is renamed into place only when that JVM
    exited cleanly, so two sessions starting at once each write one and the last rename
    wins, both valid. JDK 17 crashes (SIGBUS) on a truncated archive instead of falling
    back, so a file whose size differs from its name is removed, never passed; one the
    JVM refuses (another JDK build, a damaged header: it then runs without any sharing) is
    seen in ``/proc/<pid>/maps`` after the start and removed, so the next session makes a
    new one.
    """

    folder: Path
    key: str
    path: Path | None = None  # the archive this session maps
    temp: Path | None = None  # the archive this session's JVM writes at exit
    jvm: int = 0

    @classmethod
    def for_options(cls, options: list[str]) -> ClassArchive | None:
        """The archive for a driver JVM started with ``options``; None without a JDK >= 13."""
        import hashlib
        import shutil
        import subprocess

        import pyspark

        home = os.environ.get("JAVA_HOME")
        java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
        if not java:
            return None
        try:
            version = subprocess.run(
                [java, "-Xshare:auto", "-version"], capture_output=True, text=True, timeout=30
            ).stderr
        except (OSError, subprocess.TimeoutExpired):
            return None
        major = version.split('"')[1].split(".")[0] if version.count('"') >= 2 else "0"
        if not major.isdigit() or int(major) < 13:
            return None  # no dynamic archives before JDK 13
        text = "\n".join(
            [pyspark.__version__, str(Path(pyspark.__file__).parent), java, version, *options]
        )
        key = hashlib.sha256(text.encode()).hexdigest()[:20]
        cache = Path(os.environ.get("HWCHAOS_CACHE") or Path.home() / ".cache" / "hwchaos")
        return cls(cache / "spark-cds", key)

    def java_options(self) -> list[str]:
        """Map the archive if a whole one is there, else write one at this JVM's exit."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return []
        for found in sorted(self.folder.glob(f"{self.key}-*.jsa")):
            size = found.stem.rsplit("-", 1)[1]
            try:
                whole = found.stat().st_size == int(size)
            except (OSError, ValueError):
                whole = False
            if whole:
                self.path = found
                # Warnings only: a refused archive is handled in started().
                return [f"-XX:SharedArchiveFile={found}", "-Xlog:cds=off,cds+dynamic=off"]
            found.unlink(missing_ok=True)
        self._sweep()
        self.temp = self.folder / f"{self.key}.{os.getpid()}.{id(self)}.tmp"
        # Dumping lists every class it cannot keep (signed jars, generated accessors).
        return [f"-XX:ArchiveClassesAtExit={self.temp}", "-Xlog:cds=off,cds+dynamic=off"]

    def _sweep(self) -> None:
        """Remove temp archives of Python processes that are gone (killed mid-write)."""
        for tmp in self.folder.glob("*.tmp"):
            try:
                os.kill(int(tmp.name.split(".")[1]), 0)
            except ProcessLookupError:
                tmp.unlink(missing_ok=True)
            except (ValueError, IndexError, OSError):
                continue

    def started(self, spark: Any) -> None:
        """After the JVM started: drop an archive it refused, so the next session remakes it."""
        self.jvm = jvm_pid(spark)
        if self.path is None:
            return
        try:
            maps = Path(f"/proc/{self.jvm}/maps").read_text()
        except OSError:
            return  # no /proc: cannot tell, keep it
        if str(self.path) not in maps:
            self.path.unlink(missing_ok=True)
            self.path = None

    def finish(self, spark: Any, timeout: float) -> None:
        """End the JVM (it writes the archive as it exits) and move the archive into place."""
        import subprocess

        from pyspark import SparkContext

        if self.temp is None:
            return
        proc = getattr(SparkContext._gateway, "proc", None)
        ok = False
        if proc is not None and proc.pid == self.jvm:
            with contextlib.suppress(Exception):  # the py4j client may be closed already
                SparkContext._gateway.shutdown()  # type: ignore[union-attr]
            SparkContext._gateway = None
            SparkContext._jvm = None
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                ok = proc.wait(timeout) == 0
            except subprocess.TimeoutExpired:
                ok = False
        try:
            if ok and self.temp.is_file() and self.temp.stat().st_size > 0:
                final = self.folder / f"{self.key}-{self.temp.stat().st_size}.jsa"
                os.replace(self.temp, final)
                self.path = final
        except OSError:
            pass
        finally:
            self.temp.unlink(missing_ok=True)
