"""Spark vs pandas on a synthetic results set of >= 10 million replica rows.

Why: the analysis is meant to keep up with broker matrices far larger than the model-only
ones the tests use; this prints what each engine does on the same data on this machine, so
a regression (an extra shuffle, a Python loop) shows as a number. Plain printed figures, no
assertion on time; the script does check that both engines give identical tables.

Run: .venv/bin/python benchmarks/bench_analysis.py [--runs N] [--out DIR] [--master URL]
(default 112,000 runs x 3 replicas x 20 offsets predicted, plus observed rows for the
played runs: about 10.8 million replica rows). Spark is timed twice on one session: the
first pass includes the JVM's warm-up (class loading, JIT, code generation), the second is
the steady state a long-lived cluster sees.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pandas.testing as pdt

from harness.analysis import pandas_job, spark_job
from harness.analysis.common import TABLE_NAMES
from harness.analysis.synthetic import Spec, generate


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--runs", type=int, default=112_000)
    p.add_argument("--out", help="keep the generated set here (default: a temp dir, removed)")
    p.add_argument("--master", default="local[2]")
    args = p.parse_args()
    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="hwchaos-bench-"))
    try:
        t0 = time.perf_counter()
        gen = generate(root, Spec(runs=args.runs, observed_fraction=0.8))
        rows = gen.replica_rows
        print(
            f"generated {rows:,} replica rows + {gen.write_rows:,} write rows "
            f"({gen.spec.runs:,} runs, {gen.runs_played:,} played) in "
            f"{time.perf_counter() - t0:.1f}s under {root}",
            flush=True,
        )
        t0 = time.perf_counter()
        spark = spark_job.session(args.master)
        print(f"spark session ({args.master}) started in {time.perf_counter() - t0:.1f}s")
        try:
            for label in ("first", "second"):
                t0 = time.perf_counter()
                s = spark_job.summarise(root, spark)
                ts = time.perf_counter() - t0
                print(
                    f"spark  ({args.master}, {label:6}): {ts:6.1f}s wall  "
                    f"{rows / ts:12,.0f} replica rows/s",
                    flush=True,
                )
        finally:
            spark.stop()
        t0 = time.perf_counter()
        pdf = pandas_job.summarise(root)
        tp = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        print(
            f"pandas                   : {tp:6.1f}s wall  {rows / tp:12,.0f} replica rows/s"
            f"  (peak RSS {peak:.1f} GiB)"
        )
        for name in TABLE_NAMES:
            pdt.assert_frame_equal(pdf[name], s[name], check_exact=True)
        print("spark and pandas tables are equal")
    finally:
        if not args.out:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
