"""Spark vs pandas: a 320-run matrix, a synthetic set of ~10 M replica rows, and (optionally)
a set of >= 200 M replica rows that pandas cannot hold.

Why: the analysis is meant to keep up with broker matrices far larger than the model-only
ones the tests use; this prints what each engine does on the same data on this machine, so
a regression (an extra shuffle, a Python loop) shows as a number. Figures, no assertion on
time; the script does check that both engines give identical tables. Each figure is also
printed as a ``BENCH {json}`` line for ``benchmarks/table.py``.

Targets (issue 13): Spark <= pandas wall time at ~10 M rows in the same run; the
``make demo`` matrix analysed in <= 5 s once the session is up; >= 200 M rows analysed by
Spark within this machine's memory. Wall time on a shared machine depends on the load, so
the CPU seconds each engine used (Spark: its JVM; pandas: its process) are printed too.

Order: the matrix in child processes, each on a session started as ``hwchaos analyze``
starts one for a small input (the input read while the JVM starts; first query of that
session, then again), alternately with and without the driver's class archive (CDS; the
medians of ``--rounds`` each, and session start + first query as one figure; a session that
records the archive is not counted); one Spark session for the 10 M set, run twice ("cold"
includes the JVM compiling the job's generated code, "warm" is the second pass); session
stopped; pandas on the same Parquet files, and the tables of both compared. The first query
of each matrix session also counts its py4j round trips to the driver JVM. ``--matrix-only``
stops after the matrix sessions.

Run: .venv/bin/python benchmarks/bench_analysis.py [--runs N] [--master URL] [--rounds N]
[--matrix-only] [--scale-rows 200000000] (or HWCHAOS_BENCH_SCALE_ROWS): the scale run
writes its set in chunks under a temp dir (about 100 MB on disk, plus Spark's shuffle
files), runs Spark with ``--driver-memory`` (default 4g), then pandas in a subprocess
limited to ``--pandas-limit`` GiB of address space (RLIMIT_AS), and removes the set.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import pandas.testing as pdt  # noqa: E402
from table import bench_line  # noqa: E402

from harness.analysis import pandas_job, spark_job  # noqa: E402
from harness.analysis.common import TABLE_NAMES  # noqa: E402
from harness.analysis.synthetic import Spec, generate  # noqa: E402

MATRIX_ARGS = ["--model-only", "--acks", "1,all", "--min-insync", "1,2", "--unclean", "false,true"]


def emit(figure: str, value: float | int | str, unit: str, target: str | None = None,
         met: bool | None = None) -> None:  # fmt: skip
    print(bench_line(figure, value, unit, target, met), flush=True)


class JvmClock:
    """CPU seconds used by the session's JVM (user + system), read from /proc."""

    def __init__(self, spark: Any) -> None:
        self.pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())

    def __call__(self) -> float:
        try:
            f = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed_spark(
    spark: Any, clock: JvmClock, root: Path, inputs: Any = None
) -> tuple[dict[str, Any], float, float]:
    t0, c0, p0 = time.perf_counter(), clock(), own_cpu()
    tables = spark_job.summarise(root, spark, inputs=inputs)
    return tables, time.perf_counter() - t0, clock() - c0 + own_cpu() - p0


def same(a: dict[str, Any], b: dict[str, Any]) -> None:
    for name in TABLE_NAMES:
        pdt.assert_frame_equal(a[name], b[name], check_exact=True)


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def versus(wall: float, limit: float, name: str) -> str:
    """The target text: the limit, and when missed by how much, with the load at the time."""
    text = f"<= {name} {limit:.1f} s" if name else f"<= {limit:g} s"
    if wall <= limit:
        return text
    return f"{text}; missed by {wall - limit:.1f} s ({100 * (wall / limit - 1):.0f}%), {load()}"


MATRIX_CHILD = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from bench_analysis import JvmClock, own_cpu, same, timed_spark, load
from harness.analysis import pandas_job, spark_job
matrix = Path(sys.argv[1])
from concurrent.futures import ThreadPoolExecutor
t0, p0 = time.perf_counter(), own_cpu()
# As the CLI does: the input is read while the JVM starts.
small = spark_job.plan(spark_job.locate(matrix)[1], 2).small
with ThreadPoolExecutor(1) as pool:
    starting = pool.submit(spark_job.session, sys.argv[2], small=small)
    inputs = spark_job.prepare(matrix)
    spark = starting.result()
out = {"startup": time.perf_counter() - t0, "runs": len(inputs.runs), "passes": []}
clock = JvmClock(spark)
out["startup_cpu"] = clock() + own_cpu() - p0
out["cds"] = spark_job.archive_state(spark)
expected = pandas_job.summarise(matrix)
# Round trips to the driver JVM (py4j commands) per query: each costs a socket exchange and
# whatever the JVM does for it, so a plan built call by call shows here.
import py4j.clientserver
sent = [0]
send = py4j.clientserver.ClientServerConnection.send_command
def counted(self, command):
    sent[0] += 1
    return send(self, command)
py4j.clientserver.ClientServerConnection.send_command = counted
try:
    for i in range(3):
        sent[0] = 0
        tables, wall, cpu = timed_spark(spark, clock, matrix, inputs if i == 0 else None)
        same(tables, expected)
        out["passes"].append([wall, cpu, load(), sent[0]])
finally:
    spark_job.stop(spark)
print("JSON " + json.dumps(out))
"""


def matrix_child(matrix: Path, master: str, cds: bool) -> dict[str, Any] | str:
    """One session for the matrix in a child process: its figures, or why it failed.

    A child process, since the JVM's options are fixed when the first session of a process
    starts, and the CLI picks them by the input's size (see ``spark_job.session``).
    """
    proc = subprocess.run(
        [sys.executable, "-c", MATRIX_CHILD, str(matrix), master, str(ROOT / "benchmarks")],
        capture_output=True, text=True, cwd=ROOT,
        env={**os.environ, "HWCHAOS_SPARK_CDS": "1" if cds else "0"},
    )  # fmt: skip
    line = [x for x in proc.stdout.splitlines() if x.startswith("JSON ")]
    if proc.returncode or not line:
        err = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return f"failed (exit {proc.returncode}): {err[:60]}"
    got: dict[str, Any] = json.loads(line[0][5:])
    return got


def matrix_figures(matrix: Path, master: str, rounds: int) -> None:
    """The matrix on sessions started as ``hwchaos analyze`` starts them, CDS on and off.

    Sessions alternate between the driver JVM mapping its class archive and not (A, B, A,
    B: the same minutes, the same load); medians are printed. A session that has no archive
    yet records one (``cds: writing``): it is not counted, and another one is started.
    """
    runs: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    tries = 0
    while min(len(v) for v in runs.values()) < rounds and tries < 4 * rounds:
        for cds in (True, False):
            if len(runs[cds]) >= rounds:
                continue
            tries += 1
            got = matrix_child(matrix, master, cds)
            if isinstance(got, str):
                emit("spark: matrix", got, "")
                return
            first = got["passes"][0]
            print(
                f"spark matrix session (cds {got['cds']}): start {got['startup']:.2f}s "
                f"({got['startup_cpu']:.2f} CPU s), first query {first[0]:.2f}s "
                f"({first[1]:.2f} CPU s, {first[3]} py4j round trips), "
                f"again {got['passes'][1][0]:.2f}s; {first[2]}",
                flush=True,
            )
            if got["cds"] != "writing":
                runs[cds].append(got)
    if not runs[True] or not runs[False]:
        emit("spark: matrix", "no session mapped the class archive", "")
        return
    n = runs[True][0]["runs"]
    for cds in (True, False):
        got_runs = runs[cds]
        tag = "CDS" if cds else "no CDS"
        start = median([g["startup"] for g in got_runs])
        start_cpu = median([g["startup_cpu"] for g in got_runs])
        walls = [median([g["passes"][i][0] for g in got_runs]) for i in range(3)]
        cpus = [median([g["passes"][i][1] for g in got_runs]) for i in range(3)]
        total = median([g["startup"] + g["passes"][0][0] for g in got_runs])
        pre = f"spark ({tag}, median of {len(got_runs)})"
        emit(f"{pre}: session start, input read meanwhile (small: C1 JIT)", start, "s")
        emit(f"{pre}: session start, CPU", start_cpu, "CPU s")
        for i, label in enumerate(("first query of the session", "again")):
            name = f"{pre}: {n}-run matrix, {label}"
            emit(name, walls[i], "s", versus(walls[i], 5.0, ""), walls[i] <= 5)
            emit(f"{name}, CPU", cpus[i], "CPU s")
        trips = median([g["passes"][0][3] for g in got_runs])
        emit(f"{pre}: {n}-run matrix, first query, py4j round trips", int(trips), "calls")
        emit(f"{pre}: {n}-run matrix, session start + first query", total, "s")


def standard(args: argparse.Namespace) -> None:
    """The matrix and the ~10 M row set, Spark then pandas."""
    tmp = Path(tempfile.mkdtemp(prefix="hwchaos-bench-"))
    try:
        from harness.cli.matrix import main as matrix_main

        matrix = tmp / "matrix"
        t0 = time.perf_counter()
        with open(tmp / "matrix.log", "w") as log:
            sys.stdout, saved = log, sys.stdout
            sys.stderr, saved_err = log, sys.stderr
            try:
                matrix_main([*MATRIX_ARGS, "--out", str(matrix)])
            finally:
                sys.stdout, sys.stderr = saved, saved_err
        print(f"matrix (make demo's) written in {time.perf_counter() - t0:.1f}s", flush=True)
        if args.matrix_only:
            matrix_figures(matrix, args.master, args.rounds)
            return
        data = tmp / "set"
        t0 = time.perf_counter()
        gen = generate(data, Spec(runs=args.runs, observed_fraction=0.8))
        rows = gen.replica_rows
        print(
            f"generated {rows:,} replica rows + {gen.write_rows:,} write rows "
            f"({gen.spec.runs:,} runs, {gen.runs_played:,} played) in "
            f"{time.perf_counter() - t0:.1f}s; {load()}",
            flush=True,
        )
        matrix_figures(matrix, args.master, args.rounds)
        t0 = time.perf_counter()
        spark = spark_job.session(args.master)
        clock = JvmClock(spark)
        startup = time.perf_counter() - t0
        cds = spark_job.archive_state(spark)
        print(f"spark session ({args.master}, cds {cds}) started in {startup:.1f}s", flush=True)
        emit(f"spark session start ({args.master}, cds {cds})", startup, "s")
        try:
            results = []
            for label in ("first", "second"):
                tables, wall, cpu = timed_spark(spark, clock, data)
                results.append((wall, cpu))
                print(
                    f"spark  ({args.master}, {label:6}): {wall:6.1f}s wall  {cpu:6.1f} CPU s  "
                    f"{rows / wall:12,.0f} replica rows/s; {load()}",
                    flush=True,
                )
        finally:
            if spark_job.making_archive(spark):
                print("spark: writing the class archive for later sessions (not timed)")
            spark_job.stop(spark)
        t0, c0 = time.perf_counter(), own_cpu()
        pdf = pandas_job.summarise(data)
        tp, cp = time.perf_counter() - t0, own_cpu() - c0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        print(
            f"pandas                   : {tp:6.1f}s wall  {cp:6.1f} CPU s  "
            f"{rows / tp:12,.0f} replica rows/s  (peak RSS {peak:.1f} GiB); {load()}"
        )
        same(tables, pdf)
        print("spark and pandas tables are equal")
        m = f"{rows / 1e6:.1f} M rows"
        emit(f"pandas: {m}", tp, "s")
        emit(f"pandas: {m}, CPU", cp, "CPU s")
        for (wall, cpu), label in zip(results, ("cold", "warm"), strict=True):
            name = f"spark: {m}, {label} (cds {cds})"
            emit(name, wall, "s", versus(wall, tp, "pandas"), wall <= tp)
            emit(f"{name}, CPU", cpu, "CPU s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


PANDAS_CHILD = """
import resource, sys, time
limit = int(sys.argv[2]) * 2**30
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
import pandas as pd
from pathlib import Path
from harness.analysis import pandas_job
t0 = time.perf_counter()
seen = {"files": 0, "rows": 0}
read = pd.read_parquet
def counting(*a, **k):
    df = read(*a, **k)
    seen["files"] += 1
    seen["rows"] += len(df)
    return df
pandas_job.pd.read_parquet = counting
try:
    pandas_job.summarise(Path(sys.argv[1]))
    print("OK", time.perf_counter() - t0, seen["files"], seen["rows"])
except MemoryError:
    print("OOM", time.perf_counter() - t0, seen["files"], seen["rows"])
"""


def scale(args: argparse.Namespace) -> None:
    """Spark, then pandas under a memory limit, on a set of >= ``args.scale_rows`` rows."""
    # rows per run: replicas x offsets predicted, the same again for played runs
    spec = Spec(runs=1, observed_fraction=0.8)
    per_run = spec.replicas * spec.offsets * (1 + 0.8 * 0.75)
    runs = int(args.scale_rows / per_run * 1.02)
    tmp = Path(tempfile.mkdtemp(prefix="hwchaos-scale-"))
    try:
        t0 = time.perf_counter()
        gen = generate(tmp, Spec(runs=runs, observed_fraction=0.8, chunk_runs=20_000))
        rows = gen.replica_rows
        size = sum(f.stat().st_size for f in tmp.rglob("*.parquet")) / 2**20
        print(
            f"scale set: {rows:,} replica rows + {gen.write_rows:,} write rows, {runs:,} runs, "
            f"{size:.0f} MiB, written in {time.perf_counter() - t0:.0f}s; {load()}",
            flush=True,
        )
        emit("scale set: replica rows", rows, "rows", ">= 200,000,000", rows >= 200_000_000)
        spark = spark_job.session(args.master, driver_memory=args.driver_memory)
        clock = JvmClock(spark)
        try:
            t0, c0 = time.perf_counter(), clock()
            tables = spark_job.summarise(tmp, spark)
            wall, cpu = time.perf_counter() - t0, clock() - c0
        finally:
            spark_job.stop(spark)
        totals = tables["by_config"]
        ok = (
            int(totals["runs"].sum()) == runs
            and int(totals["model_mismatches"].sum()) == gen.model_mismatches
        )
        print(
            f"spark scale ({args.driver_memory} driver): {wall:.0f}s wall, {cpu:.0f} CPU s, "
            f"{rows / wall:,.0f} rows/s, totals match the generator: {ok}; {load()}",
            flush=True,
        )
        emit(
            f"spark: {rows / 1e6:.0f} M rows ({args.driver_memory} driver)",
            wall,
            "s",
            "finishes within memory",
            ok,
        )
        emit(f"spark: {rows / 1e6:.0f} M rows, CPU", cpu, "CPU s")
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", PANDAS_CHILD, str(tmp), str(args.pandas_limit)],
            capture_output=True, text=True, cwd=ROOT,
        )  # fmt: skip
        words = (proc.stdout.strip().splitlines() or ["?"])[-1].split()
        if words[0] == "OK":
            note = f"finished in {float(words[1]):.0f}s"
            emit(f"pandas: {rows / 1e6:.0f} M rows", float(words[1]), "s")
        elif words[0] == "OOM":
            note = (
                f"MemoryError at {args.pandas_limit} GiB after {float(words[1]):.0f}s, "
                f"having read {words[2]} files ({int(words[3]):,} rows)"
            )
            emit(
                f"pandas: {rows / 1e6:.0f} M rows, {args.pandas_limit} GiB limit",
                f"out of memory after {int(words[3]) / 1e6:.0f} M rows read",
                "",
            )
        else:
            err = (proc.stderr.strip().splitlines() or ["?"])[-1]
            note = f"failed (exit {proc.returncode}): {err}"
            emit(f"pandas: {rows / 1e6:.0f} M rows", note[:60], "")
        print(f"pandas scale: {note}; {load()}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--runs", type=int, default=112_000)
    p.add_argument("--master", default="local[2]")
    p.add_argument(
        "--rounds", type=int, default=2, help="matrix sessions per CDS setting (on, off alternate)"
    )
    p.add_argument(
        "--scale-rows", type=int, default=int(os.environ.get("HWCHAOS_BENCH_SCALE_ROWS", "0"))
    )
    p.add_argument("--scale-only", action="store_true", help="skip the matrix and 10 M set")
    p.add_argument(
        "--matrix-only", action="store_true", help="only the matrix sessions (no 10 M set)"
    )
    p.add_argument("--driver-memory", default="4g")
    p.add_argument("--pandas-limit", type=int, default=10, help="GiB of address space")
    args = p.parse_args()
    if not args.scale_only:
        standard(args)
    if args.scale_rows:
        scale(args)
    else:
        emit("scale: >= 200 M rows", "not run (set HWCHAOS_BENCH_SCALE_ROWS=200000000)", "")
    print(json.dumps({"done": True}))


if __name__ == "__main__":
    main()
