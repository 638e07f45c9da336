"""The analysis on Spark (PySpark): the tables of :mod:`harness.analysis.common`, at matrix scale.

Why Spark: a broker matrix over many versions, configs and orderings, played repeatedly,
grows past what one pandas process holds comfortably, and the same job then runs on a
cluster unchanged (``--master``). Locally it runs as ``local[2]`` with a small driver, which
is what this 2-core machine has.

Shape of the job: run metadata is small (one row per run) and joins as a broadcast, which
also swaps each row's ``run_id`` string for a dense run number and drops rows of runs
without metadata before anything moves. Replica rows are repartitioned by run number once;
every later grouping is keyed by the run plus something, which that partitioning already
satisfies, so the replica rows cross the network one time instead of once per grouping.
Replica names and records travel as 64-bit hashes, so shuffled rows are fixed-width and every
grouping is a hash aggregate over longs. The per-run measures (one row per run) are cached,
since both summary tables are grouped from them, and only the grouped tables come back to
the driver as pandas DataFrames. No Python runs per row: every step is a Catalyst expression.

Sizing (:func:`plan`): the row count comes from the Parquet footers (no scan). The shuffle
gets one partition per :data:`ROWS_PER_PARTITION` rows (at least the cores', so both run),
and adaptive execution coalesces what turns out small. Inputs of at most
:data:`SMALL_ROWS` rows (a model-only matrix of hundreds of runs has a few thousand) take the
fast path: the driver reads them with pyarrow and hands Spark one Arrow table per kind, and
the plan runs in one shuffle partition. Opening hundreds of tiny files from tasks and
scheduling dozens of near-empty tasks per stage is what a small matrix spent its time on.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis.common import (
    CAUSE_KEYS,
    CONFIG_KEYS,
    MEASURES,
    RUN_COLUMNS,
    SCENARIO_KEYS,
    locate,
    normalise,
    write_tables,
)

# Spark's own messages below ERROR only add noise to a CLI that prints its own progress. The
# gateway logger at the root's level keeps the "Setting default log level" banner away.
_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.repl.name = org.apache.spark.api.python.PythonGatewayServer
logger.repl.level = error
"""

RUNS_DDL = (
    "run_id string, scenario string, version string, protocol string, acks string, "
    "min_insync long, unclean boolean, rf long, backend string, records long, "
    "verdict string, model_match boolean"
)
REPLICAS_DDL = "run_id string, source string, replica string, offset long, epoch int, record string"
WRITES_DDL = (
    "run_id string, source string, acked boolean, lost boolean, lost_step int, lost_event string"
)


def session(
    master: str = "local[2]", app: str = "hwchaos-analyze", driver_memory: str = "2g"
) -> Any:
    """A quiet SparkSession sized for this machine: no UI, adaptive execution, ERROR logs.

    The driver JVM is started here, so driver memory and the log configuration take effect;
    if a session already exists in this process it is returned as is.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master.startswith("local"):
        # Binding the loopback address keeps a laptop's "hostname resolves to loopback"
        # warning away; a cluster master needs the real address, so only for local mode.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log4j = Path(tempfile.gettempdir()) / "hwchaos-log4j2.properties"
    if not log4j.is_file() or log4j.read_text() != _LOG4J:
        log4j.write_text(_LOG4J)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.driver.memory", driver_memory)
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # Adaptive execution: coalesce the shuffle partitions that turn out small, read
        # shuffle output locally where no exchange is needed after all.
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.adaptive.coalescePartitions.enabled", "true")
        .config("spark.sql.adaptive.coalescePartitions.parallelismFirst", "false")
        .config("spark.sql.adaptive.advisoryPartitionSizeInBytes", "32m")
        .config("spark.sql.adaptive.localShuffleReader.enabled", "true")
        # Listing hundreds of run folders is a few stat calls on the driver; above this
        # threshold Spark would run a whole job with a task per folder to do it.
        .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "100000")
        .config("spark.sql.autoBroadcastJoinThreshold", "64m")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


SMALL_ROWS = int(os.environ.get("HWCHAOS_SPARK_SMALL_ROWS", "1000000"))
ROWS_PER_PARTITION = 1_500_000


@dataclass(frozen=True)
class Plan:
    """How one input is read and shuffled (see the module's docstring, Sizing)."""

    rows: int  # replica plus write rows, from the Parquet footers
    small: bool  # read on the driver into Arrow, one shuffle partition
    partitions: int  # shuffle partitions before adaptive coalescing


def plan(
    files: dict[str, list[str]],
    parallelism: int,
    small_rows: int | None = None,
    rows_per_partition: int = ROWS_PER_PARTITION,
) -> Plan:
    """The read and shuffle sizing for ``files``, from their footers' row counts."""
    import pyarrow.parquet as pq

    rows = sum(pq.read_metadata(f).num_rows for fs in files.values() for f in fs)
    small = rows <= (SMALL_ROWS if small_rows is None else small_rows)
    parts = 1 if small else max(parallelism, -(-rows // rows_per_partition))
    return Plan(rows, small, parts)


def _small_confs(small: bool) -> dict[str, str]:
    """Session settings that differ between the small path and the files path.

    For a few thousand rows, compiling each stage to Java (whole-stage code generation) and
    re-planning after every shuffle (adaptive execution) cost more than running the plan:
    the small path interprets a fixed single-partition plan.
    """
    return {
        "spark.sql.codegen.wholeStage": str(not small).lower(),
        "spark.sql.adaptive.enabled": str(not small).lower(),
    }


def _read(spark: Any, files: list[str], ddl: str, small: bool) -> Any:
    """The given Parquet files with an explicit schema (no inference pass over footers).

    Small inputs are read here, on the driver, with pyarrow and handed over as one Arrow
    table: no task per file, no file listing.
    """
    if not files:
        return spark.createDataFrame([], ddl)
    if not small:
        return spark.read.schema(ddl).parquet(*files)
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = spark.createDataFrame([], ddl).schema
    cols = [f.name for f in schema.fields]
    tables = [pq.read_table(f, columns=cols).replace_schema_metadata() for f in files]
    # One chunk, no empty ones: Spark's Arrow hand-over stops at an empty record batch.
    table = pa.concat_tables([t for t in tables if t.num_rows] or tables[:1]).combine_chunks()
    return spark.createDataFrame(table, schema)


def per_run(runs: Any, replicas: Any, writes: Any) -> Any:
    """One row per run of ``runs`` with the per-run measures (0 where a run has no rows).

    ``runs`` carries a dense ``run_no`` per ``run_id``; joining it as a broadcast first puts
    that number on every row (and drops rows of runs without metadata) before the shuffle.
    """
    from pyspark.sql import functions as F

    ids = F.broadcast(runs.select("run_id", "run_no"))
    pred = F.col("pred")
    positions = (
        replicas.join(ids, "run_id")
        .select(
            "run_no",
            # Records and replica names are compared by their 64-bit xxhash: aggregates
            # over longs run as hash aggregates over fixed-width rows, over strings Spark
            # falls back to sorting. Two different records of one offset of one run would
            # have to collide (~1e-19).
            F.xxhash64("replica").alias("replica"),
            "offset",
            "epoch",
            (F.col("source") == "predicted").alias("pred"),
            F.xxhash64("record").alias("record"),
        )
        .repartition("run_no")
        .groupBy("run_no", "replica", "offset")
        .agg(
            F.max(F.when(pred, F.col("record"))).alias("rp"),
            F.max(F.when(~pred, F.col("record"))).alias("ro"),
            F.max(F.when(pred, F.col("epoch"))).alias("ep"),
            F.max(F.when(~pred, F.col("epoch"))).alias("eo"),
        )
    )
    both = F.col("rp").isNotNull() & F.col("ro").isNotNull()
    offsets = positions.groupBy("run_no", "offset").agg(
        # countDistinct(record) > 1 is min != max: one pass, no Expand of the rows per source
        (F.min("rp") != F.max("rp")).cast("long").alias("div_p"),
        (F.min("ro") != F.max("ro")).cast("long").alias("div_o"),
        F.max((~F.col("rp").eqNullSafe(F.col("ro"))).cast("int")).alias("mm"),
        F.max(
            (
                both
                & (F.col("rp") == F.col("ro"))
                & (F.col("ep") >= 0)
                & (F.col("eo") >= 0)
                & (F.col("ep") != F.col("eo"))
            ).cast("int")
        ).alias("em"),
        F.max(F.col("ro").isNotNull().cast("int")).alias("has_obs"),
    )
    rep = offsets.groupBy("run_no").agg(
        F.sum(F.coalesce("div_p", F.lit(0))).alias("divergent_offsets_predicted"),
        F.sum(F.coalesce("div_o", F.lit(0))).alias("divergent_offsets_observed"),
        F.max("mm").alias("mm"),
        F.max("em").alias("em"),
        F.max("has_obs").alias("obs_replicas"),
    )
    obs = F.col("source") == "observed"
    wagg = (
        writes.join(ids, "run_id")
        .groupBy("run_no")
        .agg(*_write_measures(F), F.max(obs.cast("int")).alias("obs_writes"))
    )
    played = F.greatest(
        F.coalesce("obs_replicas", F.lit(0)), F.coalesce("obs_writes", F.lit(0))
    ).cast("long")
    return (
        runs.join(rep, "run_no", "left")
        .join(wagg, "run_no", "left")
        .withColumn("runs_played", played)
        # A model-only run has nothing observed to mismatch: its missing rows are not a diff.
        .withColumn("model_mismatches", (F.coalesce("mm", F.lit(0)) * played).cast("long"))
        .withColumn("epoch_mismatches", (F.coalesce("em", F.lit(0)) * played).cast("long"))
        .drop("mm", "em", "obs_replicas", "obs_writes")
        .fillna(0)
    )


def _write_measures(F: Any) -> list[Any]:
    """Acknowledged and lost-acknowledged writes per source, as aggregate expressions."""
    lost_acked = F.col("acked") & F.col("lost")
    out = []
    for src in ("predicted", "observed"):
        mine = F.col("source") == src
        out.append(F.sum((mine & F.col("acked")).cast("long")).alias(f"writes_acked_{src}"))
        out.append(F.sum((mine & lost_acked).cast("long")).alias(f"acked_lost_{src}"))
    return out


def derived(metrics: Any) -> Any:
    """The evidence columns: observed figures for played runs, predicted for the others."""
    from pyspark.sql import functions as F

    played = F.col("runs_played") > 0
    for m in ("writes_acked", "acked_lost", "divergent_offsets"):
        metrics = metrics.withColumn(
            m, F.when(played, F.col(f"{m}_observed")).otherwise(F.col(f"{m}_predicted"))
        )
    return metrics.withColumn("runs", F.lit(1)).withColumn(
        "acked_lost_predicted_played",
        F.when(played, F.col("acked_lost_predicted")).otherwise(F.lit(0)),
    )


def summarise(root: Path, spark: Any, small_rows: int | None = None) -> dict[str, pd.DataFrame]:
    """The three summary tables of ``root`` (see :mod:`harness.analysis.common`).

    ``small_rows`` overrides :data:`SMALL_ROWS`, the size up to which the driver reads the
    input itself (0: always let the executors read the files).
    """
    from pyspark.sql import functions as F

    runs_pd, files = locate(root)
    sizing = plan(files, spark.sparkContext.defaultParallelism, small_rows)
    spark.conf.set("spark.sql.shuffle.partitions", str(sizing.partitions))
    for key, value in _small_confs(sizing.small).items():
        spark.conf.set(key, value)
    runs_pd = runs_pd[RUN_COLUMNS].assign(run_no=range(len(runs_pd)))
    runs = F.broadcast(spark.createDataFrame(runs_pd, f"{RUNS_DDL}, run_no int"))
    replicas = _read(spark, files["replicas"], REPLICAS_DDL, sizing.small)
    writes = _read(spark, files["writes"], WRITES_DDL, sizing.small)
    metrics = derived(per_run(runs, replicas, writes)).cache()
    try:
        out: dict[str, pd.DataFrame] = {}
        for name, keys in (("by_config", CONFIG_KEYS), ("by_scenario_version", SCENARIO_KEYS)):
            g = metrics.groupBy(*keys).agg(*[F.sum(m).cast("long").alias(m) for m in MEASURES])
            out[name] = normalise(_pandas(g)[[*keys, *MEASURES]], keys)
        causes = (
            writes.where(F.col("acked") & F.col("lost"))
            .join(runs.select("run_id", "scenario", "version", "protocol"), "run_id")
            .groupBy(*CAUSE_KEYS)
            .agg(F.count(F.lit(1)).alias("lost_writes"))
        )
        out["loss_causes"] = normalise(_pandas(causes)[[*CAUSE_KEYS, "lost_writes"]], CAUSE_KEYS)
    finally:
        metrics.unpersist()
    return out


def analyze(root: Path, out: Path, spark: Any) -> dict[str, pd.DataFrame]:
    """Compute the tables and write them as Parquet and CSV under ``out``; return them."""
    tables = summarise(root, spark)
    write_tables(tables, out)
    return tables


def _pandas(df: Any) -> pd.DataFrame:
    """A small grouped Spark result on the driver (Arrow transfer)."""
    out: pd.DataFrame = df.toPandas()
    return out
