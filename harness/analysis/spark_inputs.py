"""What the Spark job reads and how: schemas, sizing, the small path's Arrow tables.

Why apart from the job: all of this runs on the driver without a JVM (pyarrow reads the
Parquet footers, dictionaries and, for small inputs, the rows), so the CLI runs
:func:`prepare` while the session's JVM starts; :mod:`harness.analysis.spark_job` then only
hands the result to Spark. See that module's docstring (Sizing) for the thresholds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis.common import RUN_COLUMNS, locate

RUNS_DDL = (
    "run_id string, scenario string, version string, protocol string, acks string, "
    "min_insync long, unclean boolean, rf long, backend string, records long, "
    "verdict string, model_match boolean, agreement string, safety string, "
    + ", ".join(f"{c} long" for c in RUN_COLUMNS[RUN_COLUMNS.index("safety") + 1 :])
)
REPLICAS_DDL = "run_id string, source string, replica string, offset long, epoch int, record string"
WRITES_DDL = (
    "run_id string, source string, acked boolean, lost boolean, lost_step int, lost_event string"
)


# The interpreted one-partition plan costs about 0.05 CPU ms per row more than the compiled
# files path (28.6k rows: 4.3 against 2.9 CPU s warm; 289k: 18.8 against 3.6): it only pays
# where hundreds of tiny files would each cost a task (a matrix: 2.7k rows in 832 files).
SMALL_ROWS = int(os.environ.get("HWCHAOS_SPARK_SMALL_ROWS", "10000"))
ROWS_PER_PARTITION = 1_500_000
# Replica names up to which the per-run aggregation keeps one slot per replica.
MAX_SLOTS = 8


@dataclass(frozen=True)
class Plan:
    """How one input is read and shuffled (see :mod:`harness.analysis.spark_job`, Sizing)."""

    rows: int  # replica plus write rows, from the Parquet footers
    small: bool  # read on the driver into Arrow, one shuffle partition
    partitions: int  # shuffle partitions before adaptive coalescing
    split_bytes: int  # most Parquet bytes one read task takes


def plan(
    files: dict[str, list[str]],
    parallelism: int,
    small_rows: int | None = None,
    rows_per_partition: int = ROWS_PER_PARTITION,
) -> Plan:
    """The read and shuffle sizing for ``files``, from their footers' row counts."""
    import pyarrow.parquet as pq

    # The replica and write rows are what the main job reads; steps are a side query.
    metas = [pq.read_metadata(f) for k in ("replicas", "writes") for f in files.get(k, [])]
    rows = sum(m.num_rows for m in metas)
    size = sum(m.row_group(i).total_byte_size for m in metas for i in range(m.num_row_groups))
    small = rows <= (SMALL_ROWS if small_rows is None else small_rows)
    parts = 1 if small else max(parallelism, -(-rows // rows_per_partition))
    # A read task's partial aggregation holds every (run, offset) group of its rows in memory:
    # bound the rows per task, so it never falls back to sorting.
    split = max(1 << 20, size * rows_per_partition // max(rows, 1))
    return Plan(rows, small, parts, split)


def session_confs(sizing: Plan) -> dict[str, str]:
    """Session settings for one input, set before its plan is built.

    For a few thousand rows, compiling each stage to Java (whole-stage code generation) and
    re-planning after every shuffle (adaptive execution) cost more than running the plan:
    the small path interprets a fixed single-partition plan.
    """
    return {
        # No Janino compilation of expressions either on the small path: on a fresh JVM,
        # compiling each projection costs more than evaluating it over a few thousand rows.
        # (An internal setting, read when each plan is built; FALLBACK is Spark's default.)
        "spark.sql.codegen.factoryMode": "NO_CODEGEN" if sizing.small else "FALLBACK",
        "spark.sql.shuffle.partitions": str(sizing.partitions),
        "spark.sql.codegen.wholeStage": str(not sizing.small).lower(),
        "spark.sql.adaptive.enabled": str(not sizing.small).lower(),
        "spark.sql.files.maxPartitionBytes": str(sizing.split_bytes),
        "spark.sql.files.openCostInBytes": str(min(sizing.split_bytes // 8, 4 << 20)),
    }


def _columns(ddl: str) -> list[str]:
    """The column names of a ``name type, ...`` schema string."""
    return [part.split()[0] for part in ddl.split(",")]


_TYPES = {
    "string": "StringType",
    "long": "LongType",
    "int": "IntegerType",
    "boolean": "BooleanType",
}


def struct_type(ddl: str) -> Any:
    """The ``name type, ...`` schema string as a PySpark ``StructType``, built in Python.

    Spark would parse the string in the JVM (a py4j round trip, and on a fresh JVM the
    parser's first use) each time a DataFrame is made from it.
    """
    from pyspark.sql import types

    fields = []
    for part in ddl.split(","):
        name, kind = part.split()
        fields.append(types.StructField(name, getattr(types, _TYPES[kind])()))
    return types.StructType(fields)


def _arrow(files: list[str], ddl: str) -> Any:
    """The given Parquet files as one Arrow table of the DDL's columns (the small path).

    Pure Python (pyarrow), no JVM: :func:`prepare` can run it while the JVM starts.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = _columns(ddl)
    tables = [pq.read_table(f, columns=cols).replace_schema_metadata() for f in files]
    # One chunk, no empty ones: Spark's Arrow hand-over stops at an empty record batch.
    return pa.concat_tables([t for t in tables if t.num_rows] or tables[:1]).combine_chunks()


def to_spark(spark: Any, files: list[str], ddl: str, small: bool, table: Any = None) -> Any:
    """The given Parquet files with an explicit schema (no inference pass over footers).

    Small inputs are read on the driver with pyarrow (``table``, from :func:`prepare`) and
    handed over as one Arrow table: no task per file, no file listing.
    """
    schema = struct_type(ddl)
    if not files:
        return spark.createDataFrame([], schema)
    if not small:
        return spark.read.schema(schema).parquet(*files)
    return spark.createDataFrame(_arrow(files, ddl) if table is None else table, schema)


STEPS_DDL = "run_id string, step int, event string, observed_hw long, realised_hw long"


def hw_steps(files: list[str]) -> Any:
    """The rows of the per-step HW check (observed_hw >= 0) of every steps file, as Arrow.

    Pure pyarrow, used by both engines' readers: folders written before the check have no
    ``observed_hw``/``realised_hw`` columns (read as -1, so never compared), and a model-only
    run has -1 throughout, so most steps files contribute no row at all.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    schema = struct_arrow(STEPS_DDL)
    tables = []
    for f in files:
        meta = pq.read_metadata(f)
        names = meta.schema.names
        if not {"observed_hw", "realised_hw"} <= set(names) or _none_observed(meta, names):
            continue
        t = pq.read_table(f, columns=schema.names).replace_schema_metadata().cast(schema)
        t = t.filter(pc.greater_equal(pc.fill_null(t.column("observed_hw"), -1), 0))
        if t.num_rows:
            tables.append(t)
    return pa.concat_tables(tables).combine_chunks() if tables else schema.empty_table()


def _none_observed(meta: Any, names: list[str]) -> bool:
    """The footer's statistics say no row has ``observed_hw >= 0`` (a model-only run): the
    file's rows need not be read."""
    col = names.index("observed_hw")
    for i in range(meta.num_row_groups):
        stats = meta.row_group(i).column(col).statistics
        if stats is None or not stats.has_min_max or stats.max >= 0:
            return False
    return True


def struct_arrow(ddl: str) -> Any:
    """The ``name type, ...`` schema string as an Arrow schema."""
    import pyarrow as pa

    kinds = {"string": pa.string(), "long": pa.int64(), "int": pa.int32(), "boolean": pa.bool_()}
    return pa.schema([(p.split()[0], kinds[p.split()[1]]) for p in ddl.split(",")])


@dataclass(frozen=True)
class Inputs:
    """What the driver learns from the input without Spark (:func:`prepare`)."""

    runs: pd.DataFrame
    files: dict[str, list[str]]
    sizing: Plan  # with one core: :func:`summarise` re-plans a large input for the session's
    replicas: Any  # Arrow tables on the small path, else None
    writes: Any
    # The steps rows with an observed HW (:func:`hw_steps`), read here too: a matrix has a
    # steps file per run, and opening them overlaps the JVM's start-up this way.
    steps: Any = None


def prepare(root: Path, small_rows: int | None = None) -> Inputs:
    """Locate ``root``'s runs and, for a small input, read its rows into Arrow.

    No JVM is needed, so the CLI runs this while the session's JVM starts (a matrix of
    hundreds of runs spends about a second here, opening hundreds of small files).
    """
    runs, files = locate(root)
    sizing = plan(files, 1, small_rows)
    if not sizing.small:
        return Inputs(runs, files, sizing, None, None, hw_steps(files["steps"]))
    replicas = _arrow(files["replicas"], REPLICAS_DDL) if files["replicas"] else None
    writes = _arrow(files["writes"], WRITES_DDL) if files["writes"] else None
    return Inputs(runs, files, sizing, replicas, writes, hw_steps(files["steps"]))


def replica_names(files: list[str], table: Any = None, limit: int = MAX_SLOTS) -> list[str] | None:
    """The distinct replica names of the input, sorted; None when there are more than ``limit``.

    Read from the Parquet dictionaries of the ``replica`` column (pyarrow decodes only the
    small integer indices), or from the Arrow table the small path already holds. A broker
    cluster has a handful of replicas, so this is a few names; the per-run aggregation then
    keeps one slot per name (see :func:`per_run`).
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    names: set[str] = set()
    if table is not None:
        names.update(pc.unique(table.column("replica")).to_pylist())
    else:
        for f in files:
            col = pq.read_table(f, columns=["replica"], read_dictionary=["replica"]).column(0)
            for chunk in col.chunks:
                if isinstance(chunk, pa.DictionaryArray):
                    chunk = chunk.dictionary
                names.update(pc.unique(chunk).to_pylist())
            if len(names) > limit:
                return None
    names.discard(None)
    return sorted(names) if len(names) <= limit else None
