"""The analysis on Spark (PySpark): the tables of :mod:`harness.analysis.common`, at matrix scale.

Why Spark: a broker matrix over many versions, configs and orderings, played repeatedly,
grows past what one pandas process holds comfortably, and the same job then runs on a
cluster unchanged (``--master``). Locally it runs as ``local[2]`` with a small driver, which
is what this 2-core machine has.

Shape of the job: run metadata is small (one row per run) and joins as a broadcast. Replica
rows are repartitioned by ``run_id`` once; every later grouping is keyed by ``run_id`` plus
something, which that partitioning already satisfies, so the replica rows cross the network
one time instead of once per grouping, and records travel as 64-bit hashes, so every
grouping is a hash aggregate over fixed-width values. The per-run measures (one row per
run) are cached, since both summary tables are grouped from them, and only the grouped
tables come back to the driver as pandas DataFrames.
"""

from __future__ import annotations

import os
import sys
import tempfile
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
    """A quiet SparkSession sized for this machine: no UI, 8 shuffle partitions, ERROR logs.

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
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _read(spark: Any, files: list[str], ddl: str) -> Any:
    """The given Parquet files with an explicit schema (no inference pass over footers)."""
    if not files:
        return spark.createDataFrame([], ddl)
    return spark.read.schema(ddl).parquet(*files)


def per_run(runs: Any, replicas: Any, writes: Any) -> Any:
    """One row per run of ``runs`` with the per-run measures (0 where a run has no rows).

    Rows of runs without metadata are grouped like the others and then dropped by the left
    join from ``runs``, which is cheaper than filtering ten million rows up front.
    """
    from pyspark.sql import functions as F

    pred = F.col("source") == "predicted"
    obs = F.col("source") == "observed"
    positions = (
        # Records are compared by their 64-bit xxhash: aggregates over longs run as hash
        # aggregates, over strings Spark falls back to sorting every row (3x slower here).
        # Two different records of one offset of one run would have to collide (~1e-19).
        replicas.withColumn("record", F.xxhash64("record"))
        .repartition("run_id")
        .groupBy("run_id", "replica", "offset")
        .agg(
            F.max(F.when(pred, F.col("record"))).alias("rp"),
            F.max(F.when(obs, F.col("record"))).alias("ro"),
            F.max(F.when(pred, F.col("epoch"))).alias("ep"),
            F.max(F.when(obs, F.col("epoch"))).alias("eo"),
        )
    )
    both = F.col("rp").isNotNull() & F.col("ro").isNotNull()
    offsets = positions.groupBy("run_id", "offset").agg(
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
    rep = offsets.groupBy("run_id").agg(
        F.sum(F.coalesce("div_p", F.lit(0))).alias("divergent_offsets_predicted"),
        F.sum(F.coalesce("div_o", F.lit(0))).alias("divergent_offsets_observed"),
        F.max("mm").alias("mm"),
        F.max("em").alias("em"),
        F.max("has_obs").alias("obs_replicas"),
    )
    wagg = writes.groupBy("run_id").agg(
        *_write_measures(F),
        F.max(obs.cast("int")).alias("obs_writes"),
    )
    played = F.greatest(
        F.coalesce("obs_replicas", F.lit(0)), F.coalesce("obs_writes", F.lit(0))
    ).cast("long")
    return (
        runs.join(rep, "run_id", "left")
        .join(wagg, "run_id", "left")
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


def summarise(root: Path, spark: Any) -> dict[str, pd.DataFrame]:
    """The three summary tables of ``root`` (see :mod:`harness.analysis.common`)."""
    from pyspark.sql import functions as F

    runs_pd, files = locate(root)
    runs = F.broadcast(spark.createDataFrame(runs_pd[RUN_COLUMNS], RUNS_DDL))
    replicas = _read(spark, files["replicas"], REPLICAS_DDL)
    writes = _read(spark, files["writes"], WRITES_DDL)
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
