"""The analysis on Spark (PySpark): the tables of :mod:`harness.analysis.common`, at matrix scale.

Why Spark: a broker matrix over many versions, configs and orderings, played repeatedly,
grows past what one pandas process holds comfortably, and the same job then runs on a
cluster unchanged (``--master``). Locally it runs as ``local[2]`` with a small driver, which
is what this 2-core machine has.

Shape of the job (one Spark job for the three tables, no Python per row, the whole plan one
Spark SQL statement, :mod:`harness.analysis.spark_sql`, so building it costs a handful of
py4j round trips instead of thousands):

* Run key: ``run_h = xxhash64(run_id)``, computed where the rows are read; the run metadata
  (one row per run) joins only the per-run results, never the rows.
* Replica rows: one aggregation per (run, offset), with a *slot* per replica name (the names
  come from the Parquet dictionaries of the ``replica`` column, :func:`replica_names`): per
  slot the predicted and observed record (a 64-bit hash) and leader epoch. Predicted and
  observed are thus paired without a grouping per replica, and divergence is
  ``least != greatest`` over the slots. A (run, offset) lives in one file, so the map-side
  partial aggregation collapses a run's rows before the one big shuffle, which then moves
  one row per (run, offset) instead of one per replica row. Above :data:`MAX_SLOTS`
  replica names the job pairs per (run, replica, offset) instead, after partitioning by run
  once (:func:`harness.analysis.spark_sql.positions_by_replica`).
* Write rows: grouped per (run, source, lost_step, lost_event) once; the per-run write
  measures and the loss causes are both summed from that, and Spark reuses its exchange.
* Per run: replica and write sides stacked and summed by ``run_h``; joined to the metadata;
  both summary tables from one aggregation with grouping sets; the loss causes unioned in,
  so a single small result crosses to the driver (Arrow).

Sizing (:func:`plan`): the row count comes from the Parquet footers (no scan). The shuffle
gets one partition per :data:`ROWS_PER_PARTITION` rows (at least the cores', so both run),
read tasks take at most about as many rows (their partial aggregation holds its groups in
memory and must not fall back to sorting), and adaptive execution coalesces what turns out
small. Inputs of at most :data:`SMALL_ROWS` rows (a model-only matrix of hundreds of runs
has a few thousand) take the fast path: the driver reads them with pyarrow and hands Spark
one Arrow table per kind, and the plan runs interpreted in one partition (inputs coalesced
to one partition, so no shuffle but the grouping sets', joins hashed in the task instead of
broadcast: one job of two stages); the CLI also starts the JVM with its quick compiler
only for them (:func:`session`). Opening hundreds of tiny files from tasks, scheduling
near-empty tasks, shuffling and JIT-compiling is what a small matrix spent its time on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis import spark_sql
from harness.analysis.common import (
    CAUSE_KEYS,
    CONFIG_KEYS,
    HW_STEP_KEYS,
    HW_STEP_MEASURES,
    MEASURES,
    RUN_COLUMNS,
    SCENARIO_KEYS,
    hunt_files,
    hunt_frame,
    hw_step_table,
    locate,
    normalise,
    run_verdicts,
    write_tables,
)
from harness.analysis.spark_cds import ClassArchive, jvm_pid
from harness.analysis.spark_inputs import (
    MAX_SLOTS,
    REPLICAS_DDL,
    ROWS_PER_PARTITION,
    RUNS_DDL,
    SMALL_ROWS,
    STEPS_DDL,
    WRITES_DDL,
    Inputs,
    Plan,
    hw_steps,
    plan,
    prepare,
    replica_names,
    session_confs,
    struct_type,
    to_spark,
)
from harness.analysis.spark_session import archive_state, making_archive, session, stop

# The module's API as before the split: callers (the CLI, tests, benchmarks) use spark_job.
__all__ = [
    "MAX_SLOTS",
    "ROWS_PER_PARTITION",
    "SMALL_ROWS",
    "ClassArchive",
    "Inputs",
    "Plan",
    "analyze",
    "archive_state",
    "jvm_pid",
    "locate",
    "making_archive",
    "plan",
    "prepare",
    "replica_names",
    "session",
    "stop",
    "summarise",
]


def summarise(
    root: Path,
    spark: Any,
    small_rows: int | None = None,
    slots: bool = True,
    inputs: Inputs | None = None,
) -> dict[str, pd.DataFrame]:
    """The three summary tables of ``root`` (see :mod:`harness.analysis.common`).

    ``small_rows`` overrides :data:`SMALL_ROWS`, the size up to which the driver reads the
    input itself (0: always let the executors read the files); ``slots=False`` forces the
    pairing by replica that inputs with more than :data:`MAX_SLOTS` replica names take;
    ``inputs``: what :func:`prepare` already read of ``root`` (same ``small_rows``).
    One Spark job for the three tables, planned from one SQL statement
    (:mod:`harness.analysis.spark_sql`): the plan costs a handful of py4j round trips.
    """
    if inputs is None:
        inputs = prepare(root, small_rows)
    runs_pd, files = inputs.runs, inputs.files
    # One partition when small, whatever the cores; else sized for the session's cores.
    sizing = inputs.sizing
    if not sizing.small:
        sizing = plan(files, spark.sparkContext.defaultParallelism, small_rows)
    for key, value in session_confs(sizing).items():
        spark.conf.set(key, value)
    runs = spark.createDataFrame(runs_pd[RUN_COLUMNS], struct_type(RUNS_DDL))
    table = inputs.replicas
    replicas = to_spark(spark, files["replicas"], REPLICAS_DDL, sizing.small, table)
    writes = to_spark(spark, files["writes"], WRITES_DDL, sizing.small, inputs.writes)
    names = replica_names(files["replicas"], table) if slots and files["replicas"] else None
    if names is None and not files["replicas"]:
        names = []
    text, values = spark_sql.job(names, sizing.partitions, single=sizing.small)
    both = _pandas(spark.sql(text, runs=runs, replicas=replicas, writes=writes, **values))
    out: dict[str, pd.DataFrame] = {}
    for name, keys in (("by_config", CONFIG_KEYS), ("by_scenario_version", SCENARIO_KEYS)):
        out[name] = normalise(both[both["gid"] == spark_sql.gid(keys)][[*keys, *MEASURES]], keys)
    cause_rows = both[both["gid"] == -1][[*CAUSE_KEYS, "lost_writes"]]
    out["loss_causes"] = normalise(cause_rows, CAUSE_KEYS)
    out["run_verdicts"] = run_verdicts(runs_pd)
    out["hw_by_step"] = hw_by_step(spark, runs, files["steps"], inputs.steps)
    hunts = hunt_files(root)
    if hunts:
        # A few rows per hunt: read by Spark (so the table is Spark's), typed on the driver;
        # tables of older hunts may lack a column (mergeSchema fills it with nulls).
        df = spark.read.option("mergeSchema", "true").parquet(*hunts)
        out["hunt_confirm"] = hunt_frame(_pandas(df))
    return out


_HW_BY_STEP = """SELECT r.scenario, r.version, s.step, s.event,
       CAST(count(DISTINCT s.run_id) AS BIGINT) AS runs, CAST(count(*) AS BIGINT) AS hw_compared,
       CAST(sum(CAST(s.observed_hw = s.realised_hw AS INT)) AS BIGINT) AS hw_agreeing,
       CAST(sum(CAST(s.observed_hw < s.realised_hw AS INT)) AS BIGINT) AS hw_below_model,
       CAST(sum(CAST(s.observed_hw > s.realised_hw AS INT)) AS BIGINT) AS hw_above_model
FROM {steps} s JOIN {runs} r ON s.run_id = r.run_id
WHERE coalesce(s.observed_hw, -1) >= 0
GROUP BY r.scenario, r.version, s.step, s.event"""


def hw_by_step(spark: Any, runs: Any, files: list[str], table: Any = None) -> pd.DataFrame:
    """``hw_by_step`` on Spark (see :func:`harness.analysis.pandas_job.hw_by_step`).

    The driver first keeps only the steps rows a broker's HW was observed for (pyarrow,
    :func:`hw_steps`; ``table``: what :func:`prepare` already read): a model-only matrix has
    none, and then no Spark job is run at all.
    """
    if table is None:
        table = hw_steps(files)
    if not table.num_rows:
        empty = {c: pd.Series(dtype="int64") for c in HW_STEP_MEASURES}
        keys = {c: pd.Series(dtype="int64" if c == "step" else str) for c in HW_STEP_KEYS}
        return hw_step_table(pd.DataFrame({**keys, **empty}))
    steps = spark.createDataFrame(table, struct_type(STEPS_DDL))
    return hw_step_table(_pandas(spark.sql(_HW_BY_STEP, steps=steps, runs=runs)))


def analyze(
    root: Path, out: Path, spark: Any, inputs: Inputs | None = None
) -> dict[str, pd.DataFrame]:
    """Compute the tables and write them as Parquet and CSV under ``out``; return them."""
    tables = summarise(root, spark, inputs=inputs)
    write_tables(tables, out)
    return tables


def _pandas(df: Any) -> pd.DataFrame:
    """A small grouped Spark result on the driver (Arrow transfer)."""
    out: pd.DataFrame = df.toPandas()
    return out
