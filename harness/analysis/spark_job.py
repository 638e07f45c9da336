"""The analysis on Spark (PySpark): the same tables as :mod:`pandas_job`, at matrix scale.

Local mode (``local[2]``) by default, any cluster through ``--master``. Run metadata is
small and joined as a broadcast; replica and write rows stay in Spark end to end and only
the grouped tables come back to the driver.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis.common import (
    CAUSE_KEYS,
    CONFIG_KEYS,
    MEASURES,
    SCENARIO_KEYS,
    load_runs,
    normalise,
    table_files,
)


def session(master: str = "local[2]", app: str = "hwchaos-analyze") -> Any:
    """A quiet SparkSession sized for this machine (2 cores, no UI)."""
    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)  # type: ignore[attr-defined]
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.driver.memory", "3g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def summarise(root: Path, spark: Any) -> dict[str, pd.DataFrame]:
    from pyspark.sql import functions as F

    runs_pd = load_runs(root)
    runs = F.broadcast(spark.createDataFrame(runs_pd))
    replicas = spark.read.parquet(*table_files(root, "replicas")).select(
        "run_id", "source", "replica", "offset", "record"
    )
    writes = spark.read.parquet(*table_files(root, "writes")).select(
        "run_id", "source", "record", "acked", "lost", "lost_step", "lost_event"
    )

    w = writes.withColumn("lost_acked", (F.col("acked") & F.col("lost")).cast("long"))
    wagg = w.groupBy("run_id").agg(
        *[
            F.sum(F.when(F.col("source") == src, F.col(c).cast("long")).otherwise(0)).alias(name)
            for src in ("predicted", "observed")
            for c, name in (("acked", f"writes_acked_{src}"), ("lost_acked", f"acked_lost_{src}"))
        ]
    )
    div = (
        replicas.groupBy("run_id", "source", "offset")
        .agg(F.countDistinct("record").alias("n"))
        .where("n > 1")
        .groupBy("run_id")
        .agg(
            *[
                F.sum(F.when(F.col("source") == src, 1).otherwise(0)).alias(
                    f"divergent_offsets_{src}"
                )
                for src in ("predicted", "observed")
            ]
        )
    )
    obs = replicas.where("source = 'observed'").select(
        "run_id", "replica", "offset", F.col("record").alias("record_o")
    )
    observed_runs = obs.select("run_id").distinct()
    pred = (
        replicas.where("source = 'predicted'")
        .join(observed_runs, "run_id", "left_semi")
        .select("run_id", "replica", "offset", F.col("record").alias("record_p"))
    )
    mism = (
        pred.join(obs, ["run_id", "replica", "offset"], "full_outer")
        .where("record_p IS NULL OR record_o IS NULL OR record_p != record_o")
        .select("run_id")
        .distinct()
        .withColumn("model_mismatches", F.lit(1))
    )
    played = (
        replicas.where("source = 'observed'")
        .select("run_id")
        .union(writes.where("source = 'observed'").select("run_id"))
        .distinct()
        .withColumn("runs_played", F.lit(1))
    )
    metrics = (
        runs.join(wagg, "run_id", "left")
        .join(div, "run_id", "left")
        .join(mism, "run_id", "left")
        .join(played, "run_id", "left")
        .fillna(0)
        .withColumn("runs", F.lit(1))
        .withColumn(
            "acked_lost_predicted_played", F.col("acked_lost_predicted") * F.col("runs_played")
        )
    )
    out = {}
    for name, keys in (("by_config", CONFIG_KEYS), ("by_scenario", SCENARIO_KEYS)):
        g = metrics.groupBy(*keys).agg(*[F.sum(m).cast("long").alias(m) for m in MEASURES])
        out[name] = normalise(_pandas(g)[[*keys, *MEASURES]], keys)
    causes = (
        w.where("lost_acked = 1")
        .join(runs.select("run_id", "scenario", "version", "protocol"), "run_id")
        .groupBy(*CAUSE_KEYS)
        .agg(F.count("*").alias("lost_writes"))
    )
    out["loss_causes"] = normalise(_pandas(causes)[[*CAUSE_KEYS, "lost_writes"]], CAUSE_KEYS)
    return out


def _pandas(df: Any) -> pd.DataFrame:
    """A small grouped Spark result on the driver."""
    out: pd.DataFrame = df.toPandas()
    return out
