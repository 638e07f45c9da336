"""``hwchaos analyze DIR [--master URL] [--engine spark|pandas] [--out OUT]``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hwchaos analyze", description=__doc__)
    p.add_argument("dir", help="a results folder (matrix output or run folders)")
    p.add_argument("--master", default="local[2]", help="Spark master URL")
    p.add_argument("--engine", choices=["spark", "pandas"], default="spark")
    p.add_argument("--out", help="output folder (default DIR/analysis)")
    args = p.parse_args(argv)
    root = Path(args.dir)
    if not root.is_dir():
        print(f"hwchaos analyze: {root}: no such folder", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else root / "analysis"
    t0 = time.perf_counter()
    try:
        if args.engine == "spark":
            from harness.analysis import spark_job

            print(f"analyze: starting Spark ({args.master})", file=sys.stderr)
            spark = spark_job.session(args.master)
            try:
                tables = spark_job.summarise(root, spark)
            finally:
                spark.stop()
        else:
            from harness.analysis import pandas_job

            tables = pandas_job.summarise(root)
    except FileNotFoundError as exc:
        print(f"hwchaos analyze: {exc}", file=sys.stderr)
        return 2
    from harness.analysis.report import write_outputs

    page = write_outputs(tables, out, args.engine)
    runs = int(tables["by_config"]["runs"].sum())
    print(f"analyze: {runs} runs in {time.perf_counter() - t0:.1f}s -> {out}", file=sys.stderr)
    for name in tables:
        print(f"  {out / (name + '.parquet')} ({len(tables[name])} rows, also .csv)")
    print(f"  {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
