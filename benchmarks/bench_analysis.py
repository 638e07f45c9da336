"""Spark vs pandas on a synthetic results set of >= 10 million replica rows.

Prints generation time, then each engine's wall time and replica rows/s on the same data,
and checks both engines agree. Run: .venv/bin/python benchmarks/bench_analysis.py
[--runs N] [--out DIR] [--master URL]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pandas.testing as pdt

from harness.analysis import pandas_job, spark_job
from harness.analysis.synthetic import Spec, generate


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=112_000)  # x 90 rows = 10.08 M replica rows
    p.add_argument("--out")
    p.add_argument("--master", default="local[2]")
    args = p.parse_args()
    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="hwchaos-bench-"))
    t0 = time.perf_counter()
    spec = generate(root, Spec(runs=args.runs))
    rows = spec.replica_rows
    print(
        f"generated {rows:,} replica rows ({spec.runs:,} runs) in "
        f"{time.perf_counter() - t0:.1f}s under {root}",
        flush=True,
    )
    spark = spark_job.session(args.master)
    t0 = time.perf_counter()
    s = spark_job.summarise(root, spark)
    ts = time.perf_counter() - t0
    spark.stop()
    print(f"spark  ({args.master}): {ts:7.1f}s  {rows / ts:12,.0f} replica rows/s", flush=True)
    t0 = time.perf_counter()
    pdf = pandas_job.summarise(root)
    tp = time.perf_counter() - t0
    print(f"pandas           : {tp:7.1f}s  {rows / tp:12,.0f} replica rows/s", flush=True)
    for name in pdf:
        pdt.assert_frame_equal(pdf[name], s[name])
    print("spark and pandas tables are equal")


if __name__ == "__main__":
    main()
