"""``hwchaos analyze DIR [--master URL] [--out OUTDIR] [--engine spark|pandas]``.

Reads a results folder (a matrix, a single run folder, or a bulk set with ``runs.parquet``;
see :mod:`harness.analysis.common`), writes the summary tables as Parquet and CSV under
OUTDIR (default ``DIR/analysis``) and an HTML report with charts. Spark is the default
engine, as matrices of broker runs outgrow one process; ``--engine pandas`` skips the JVM
for small folders and gives the same tables.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from harness.analysis.common import NoResults, locate


def _progress(t0: float, text: str) -> None:
    print(f"analyze [{time.perf_counter() - t0:5.1f}s] {text}", flush=True)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the ``hwchaos`` parser or a parser of its own."""
    p.add_argument("dir", help="a results folder: matrix output, run folder or bulk set")
    p.add_argument("--master", default="local[2]", help="Spark master URL (default local[2])")
    p.add_argument("--out", help="output folder (default DIR/analysis)")
    p.add_argument("--engine", choices=["spark", "pandas"], default="spark")


def run(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    out = Path(args.out) if args.out else root / "analysis"
    t0 = time.perf_counter()
    try:
        # Fail on a missing or empty folder before a JVM is started for nothing.
        runs, files = locate(root)
        _progress(t0, f"{root}: {len(runs)} runs, {len(files['replicas'])} replica files")
        tables: dict[str, pd.DataFrame]
        if args.engine == "spark":
            from harness.analysis import spark_job

            _progress(t0, f"starting Spark ({args.master})")
            small = spark_job.plan(files, 2).small
            # The JVM takes seconds to start; the input is read meanwhile (pure Python).
            with ThreadPoolExecutor(1) as pool:
                starting = pool.submit(spark_job.session, args.master, small=small)
                try:
                    inputs = spark_job.prepare(root)
                except BaseException:
                    spark_job.stop(starting.result())
                    raise
                spark = starting.result()
            try:
                _progress(t0, "computing tables on Spark")
                tables = spark_job.analyze(root, out, spark, inputs)
            finally:
                archive = spark_job.making_archive(spark)
                if archive:
                    _progress(t0, f"writing the JVM's class archive once: {archive}")
                spark_job.stop(spark)
        else:
            from harness.analysis import pandas_job

            _progress(t0, "computing tables with pandas")
            tables = pandas_job.analyze(root, out)
    except NoResults as exc:
        print(f"hwchaos analyze: {exc}", file=sys.stderr)
        return 2
    from harness.analysis.report import write_report

    _progress(t0, "rendering report")
    page = write_report(tables, out, args.engine, str(root))
    _progress(t0, f"done -> {out}")
    for name, df in tables.items():
        print(f"  {out / (name + '.parquet')}  ({len(df)} rows; also {name}.csv)")
    print(f"  {page}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="hwchaos analyze",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
