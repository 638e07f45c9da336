"""The driver JVM's class-data sharing archive (``spark_job.ClassArchive``), on real JVMs.

Why: the archive is what makes a Spark session start in about half the CPU, and it is a
file the JVM maps into memory: made by one session, mapped by the next, and when it is
damaged the analysis must still run and give the same tables (a truncated archive crashes
a JDK 17 JVM outright, one with a bad header silently turns sharing off). Each session runs
in a child process of its own, since a process keeps the JVM (and its options) of its first
session; whether an archive is mapped is read from the JVM's own ``/proc/<pid>/maps``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pandas.testing as pdt
import pytest

from harness.analysis import pandas_job, spark_job
from harness.analysis.common import TABLE_NAMES
from harness.analysis.synthetic import Spec, generate

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, sys
from pathlib import Path
from harness.analysis import spark_job
root, out = Path(sys.argv[1]), Path(sys.argv[2])
spark = spark_job.session(small=True)
pid = spark_job.jvm_pid(spark)
maps = sorted({l.split()[-1] for l in open(f"/proc/{pid}/maps") if l.rstrip().endswith(".jsa")})
tables = spark_job.summarise(root, spark)
spark_job.stop(spark)
for name, df in tables.items():
    df.to_parquet(out / f"{name}.parquet", index=False)
print("JSON " + json.dumps({"maps": maps}))
"""


def analyse(root: Path, cache: Path, out: Path) -> list[str]:
    """One session in a child process: its tables under ``out``; the .jsa files it mapped."""
    out.mkdir(parents=True)
    env = {**os.environ, "HWCHAOS_CACHE": str(cache), "HWCHAOS_SPARK_CDS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), str(out)],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("JSON ")]
    assert line, proc.stdout[-2000:]
    maps: list[str] = json.loads(line[0][5:])["maps"]
    return maps


def archives(cache: Path) -> list[Path]:
    return sorted((cache / "spark-cds").glob("*"))


def ours(maps: list[str], cache: Path) -> list[str]:
    """The mapped archives that are in our cache (the JDK's own base archive is not)."""
    return [m for m in maps if m.startswith(str(cache))]


def same_tables(out: Path, expected: dict[str, pd.DataFrame]) -> None:
    for name in TABLE_NAMES:
        pdt.assert_frame_equal(pd.read_parquet(out / f"{name}.parquet"), expected[name])


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/maps").is_file(), reason="needs /proc/<pid>/maps")
@pytest.mark.skipif(
    not (shutil.which("java") or os.environ.get("JAVA_HOME")), reason="no Java for Spark"
)
def test_archive_made_once_mapped_after_and_damage_falls_back(tmp_path: Path) -> None:
    data, cache = tmp_path / "set", tmp_path / "cache"
    generate(data, Spec(runs=120, offsets=5, chunk_runs=50, mismatch_rate=0.1))
    expected = pandas_job.summarise(data)

    # First session: nothing to map; its JVM writes the archive as it exits, renamed into
    # place whole (name carries the size), no temp file left.
    assert not ours(analyse(data, cache, tmp_path / "o1"), cache)
    made = archives(cache)
    assert len(made) == 1 and made[0].suffix == ".jsa", made
    assert made[0].stat().st_size == int(made[0].stem.rsplit("-", 1)[1]) > 0
    same_tables(tmp_path / "o1", expected)

    # Second session: the JVM maps that very file (its own memory map says so).
    assert ours(analyse(data, cache, tmp_path / "o2"), cache) == [str(made[0])]
    same_tables(tmp_path / "o2", expected)
    assert archives(cache) == made

    # Truncated (a JDK 17 JVM would die of SIGBUS mapping it): never passed, removed, and
    # this session makes a whole one again.
    with open(made[0], "r+b") as f:
        f.truncate(made[0].stat().st_size // 2)
    assert not ours(analyse(data, cache, tmp_path / "o3"), cache)
    same_tables(tmp_path / "o3", expected)
    remade = archives(cache)
    assert len(remade) == 1 and remade[0].stat().st_size == int(remade[0].stem.rsplit("-")[1])

    # Same size, damaged header: the JVM refuses it and runs without sharing; the analysis
    # is unchanged and the file is removed so that the next session makes a new one.
    with open(remade[0], "r+b") as f:
        f.write(b"XXXXXXXX")
    assert not ours(analyse(data, cache, tmp_path / "o4"), cache)
    same_tables(tmp_path / "o4", expected)
    assert archives(cache) == []


def test_archive_file_of_wrong_size_is_never_passed(tmp_path: Path) -> None:
    """No JVM: a file whose size differs from its name is dropped; dead writers' temps too."""
    folder = tmp_path / "spark-cds"
    folder.mkdir()
    short = folder / "k-100.jsa"
    short.write_bytes(b"x" * 40)
    dead = folder / "k.999999999.1.tmp"  # no such pid
    dead.write_bytes(b"x")
    mine = folder / f"k.{os.getpid()}.1.tmp"  # a live writer's: kept
    mine.write_bytes(b"x")
    archive = spark_job.ClassArchive(folder, "k")
    opts = archive.java_options()
    assert not short.exists() and not dead.exists() and mine.exists()
    assert archive.path is None and archive.temp is not None
    assert opts[0] == f"-XX:ArchiveClassesAtExit={archive.temp}"
    whole = folder / "k-40.jsa"
    whole.write_bytes(b"x" * 40)
    again = spark_job.ClassArchive(folder, "k")
    assert again.java_options()[0] == f"-XX:SharedArchiveFile={whole}"
    assert again.path == whole and again.temp is None
