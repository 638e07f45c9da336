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

import contextlib
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis import spark_sql
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
    master: str = "local[2]",
    app: str = "hwchaos-analyze",
    driver_memory: str = "2g",
    small: bool = False,
    cds: bool | None = None,
) -> Any:
    """A quiet SparkSession sized for this machine: no UI, adaptive execution, ERROR logs.

    The driver JVM is started here, so driver memory and the log configuration take effect;
    if a session already exists in this process it is returned as is. ``small``: the
    session will only see small inputs (the CLI knows before starting it), so the JVM
    compiles hot code with its quick compiler only (C1): for a few thousand rows the
    optimising compiler's own CPU time is most of a first query, and its faster code is
    never paid back. ``cds``: start the driver JVM from a class-data sharing archive
    (:class:`ClassArchive`; default on unless ``HWCHAOS_SPARK_CDS=0``); stop the session
    with :func:`stop` so the first one can write the archive.
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

    java_opts = [f"-Dlog4j2.configurationFile=file:{log4j}"]
    if small:
        java_opts.append("-XX:TieredStopAtLevel=1")
    from pyspark import SparkContext

    if cds is None:
        cds = os.environ.get("HWCHAOS_SPARK_CDS", "1") != "0"
    archive = None
    # JVM options only count when this starts the process's JVM (a later session reuses it).
    if cds and SparkContext._gateway is None:
        archive = ClassArchive.for_options([*java_opts, f"driver-memory={driver_memory}"])
    if archive is not None:
        java_opts += archive.java_options()
    spark = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.driver.memory", driver_memory)
        .config("spark.driver.extraJavaOptions", " ".join(java_opts))
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
    if archive is not None:
        archive.started(spark)
        _ARCHIVES[id(spark)] = archive
    return spark


def stop(spark: Any, timeout: float = 300.0) -> None:
    """Stop ``spark``; if its JVM is writing a class archive, let it finish and keep it.

    The JVM writes the archive when it exits, so a session that makes one is ended here
    (its gateway's stdin closed: pyspark's JVM exits on that), waited for, and its archive
    renamed into place. Other sessions only stop, as ``spark.stop()`` does.
    """
    spark.stop()
    archive = _ARCHIVES.pop(id(spark), None)
    if archive is not None:
        archive.finish(spark, timeout)


def archive_state(spark: Any) -> str:
    """``mapped``, ``writing`` (this session records the archive) or ``off``, for reports."""
    archive = _ARCHIVES.get(id(spark))
    if archive is None:
        return "off"
    return "writing" if archive.temp is not None else "mapped" if archive.path else "off"


def making_archive(spark: Any) -> Path | None:
    """The folder of the class archive that :func:`stop` will write for ``spark``, if any."""
    archive = _ARCHIVES.get(id(spark))
    return archive.folder if archive is not None and archive.temp is not None else None


def jvm_pid(spark: Any) -> int:
    """The process id of the session's driver JVM."""
    return int(spark._jvm.java.lang.ProcessHandle.current().pid())


_ARCHIVES: dict[int, ClassArchive] = {}


@dataclass
class ClassArchive:
    """The driver JVM's class-data sharing archive (JDK AppCDS, dynamic archive).

    Why: most of a session's start and of its first query is the JVM loading, parsing and
    verifying some 15,000 classes of Spark, Scala and their libraries; a JDK 13+ JVM can
    map them pre-parsed and pre-verified from an archive instead. The archive is made once,
    by a session that ran the real job (``-XX:ArchiveClassesAtExit``, written when that JVM
    exits: :func:`stop`), then mapped by every later one (``-XX:SharedArchiveFile``).

    Where: ``${HWCHAOS_CACHE:-~/.cache/hwchaos}/spark-cds/<key>-<bytes>.jsa``; the key
    hashes what the archive is only valid for (pyspark's version and jars, ``java -version``
    and the JVM options), and the name carries the file's size. Safety: a JVM writes its
    archive to a temp name of its own and it is renamed into place only when that JVM
    exited cleanly, so two sessions starting at once each write one and the last rename
    wins, both valid. JDK 17 crashes (SIGBUS) on a truncated archive instead of falling
    back, so a file whose size differs from its name is removed, never passed; one the
    JVM refuses (another JDK build, a damaged header: it then runs without any sharing) is
    seen in ``/proc/<pid>/maps`` after the start and removed, so the next session makes a
    new one.
    """

    folder: Path
    key: str
    path: Path | None = None  # the archive this session maps
    temp: Path | None = None  # the archive this session's JVM writes at exit
    jvm: int = 0

    @classmethod
    def for_options(cls, options: list[str]) -> ClassArchive | None:
        """The archive for a driver JVM started with ``options``; None without a JDK >= 13."""
        import hashlib
        import shutil
        import subprocess

        import pyspark

        home = os.environ.get("JAVA_HOME")
        java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
        if not java:
            return None
        try:
            version = subprocess.run(
                [java, "-Xshare:auto", "-version"], capture_output=True, text=True, timeout=30
            ).stderr
        except (OSError, subprocess.TimeoutExpired):
            return None
        major = version.split('"')[1].split(".")[0] if version.count('"') >= 2 else "0"
        if not major.isdigit() or int(major) < 13:
            return None  # no dynamic archives before JDK 13
        text = "\n".join(
            [pyspark.__version__, str(Path(pyspark.__file__).parent), java, version, *options]
        )
        key = hashlib.sha256(text.encode()).hexdigest()[:20]
        cache = Path(os.environ.get("HWCHAOS_CACHE") or Path.home() / ".cache" / "hwchaos")
        return cls(cache / "spark-cds", key)

    def java_options(self) -> list[str]:
        """Map the archive if a whole one is there, else write one at this JVM's exit."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return []
        for found in sorted(self.folder.glob(f"{self.key}-*.jsa")):
            size = found.stem.rsplit("-", 1)[1]
            try:
                whole = found.stat().st_size == int(size)
            except (OSError, ValueError):
                whole = False
            if whole:
                self.path = found
                # Warnings only: a refused archive is handled in started().
                return [f"-XX:SharedArchiveFile={found}", "-Xlog:cds=off,cds+dynamic=off"]
            found.unlink(missing_ok=True)
        self._sweep()
        self.temp = self.folder / f"{self.key}.{os.getpid()}.{id(self)}.tmp"
        # Dumping lists every class it cannot keep (signed jars, generated accessors).
        return [f"-XX:ArchiveClassesAtExit={self.temp}", "-Xlog:cds=off,cds+dynamic=off"]

    def _sweep(self) -> None:
        """Remove temp archives of Python processes that are gone (killed mid-write)."""
        for tmp in self.folder.glob("*.tmp"):
            try:
                os.kill(int(tmp.name.split(".")[1]), 0)
            except ProcessLookupError:
                tmp.unlink(missing_ok=True)
            except (ValueError, IndexError, OSError):
                continue

    def started(self, spark: Any) -> None:
        """After the JVM started: drop an archive it refused, so the next session remakes it."""
        self.jvm = jvm_pid(spark)
        if self.path is None:
            return
        try:
            maps = Path(f"/proc/{self.jvm}/maps").read_text()
        except OSError:
            return  # no /proc: cannot tell, keep it
        if str(self.path) not in maps:
            self.path.unlink(missing_ok=True)
            self.path = None

    def finish(self, spark: Any, timeout: float) -> None:
        """End the JVM (it writes the archive as it exits) and move the archive into place."""
        import subprocess

        from pyspark import SparkContext

        if self.temp is None:
            return
        proc = getattr(SparkContext._gateway, "proc", None)
        ok = False
        if proc is not None and proc.pid == self.jvm:
            with contextlib.suppress(Exception):  # the py4j client may be closed already
                SparkContext._gateway.shutdown()  # type: ignore[union-attr]
            SparkContext._gateway = None
            SparkContext._jvm = None
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                ok = proc.wait(timeout) == 0
            except subprocess.TimeoutExpired:
                ok = False
        try:
            if ok and self.temp.is_file() and self.temp.stat().st_size > 0:
                final = self.folder / f"{self.key}-{self.temp.stat().st_size}.jsa"
                os.replace(self.temp, final)
                self.path = final
        except OSError:
            pass
        finally:
            self.temp.unlink(missing_ok=True)


# The interpreted one-partition plan costs about 0.05 CPU ms per row more than the compiled
# files path (28.6k rows: 4.3 against 2.9 CPU s warm; 289k: 18.8 against 3.6): it only pays
# where hundreds of tiny files would each cost a task (a matrix: 2.7k rows in 832 files).
SMALL_ROWS = int(os.environ.get("HWCHAOS_SPARK_SMALL_ROWS", "10000"))
ROWS_PER_PARTITION = 1_500_000
# Replica names up to which the per-run aggregation keeps one slot per replica.
MAX_SLOTS = 8


@dataclass(frozen=True)
class Plan:
    """How one input is read and shuffled (see the module's docstring, Sizing)."""

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

    metas = [pq.read_metadata(f) for fs in files.values() for f in fs]
    rows = sum(m.num_rows for m in metas)
    size = sum(m.row_group(i).total_byte_size for m in metas for i in range(m.num_row_groups))
    small = rows <= (SMALL_ROWS if small_rows is None else small_rows)
    parts = 1 if small else max(parallelism, -(-rows // rows_per_partition))
    # A read task's partial aggregation holds every (run, offset) group of its rows in memory:
    # bound the rows per task, so it never falls back to sorting.
    split = max(1 << 20, size * rows_per_partition // max(rows, 1))
    return Plan(rows, small, parts, split)


def _confs(sizing: Plan) -> dict[str, str]:
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


def _schema(ddl: str) -> Any:
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


def _read(spark: Any, files: list[str], ddl: str, small: bool, table: Any = None) -> Any:
    """The given Parquet files with an explicit schema (no inference pass over footers).

    Small inputs are read on the driver with pyarrow (``table``, from :func:`prepare`) and
    handed over as one Arrow table: no task per file, no file listing.
    """
    schema = _schema(ddl)
    if not files:
        return spark.createDataFrame([], schema)
    if not small:
        return spark.read.schema(schema).parquet(*files)
    return spark.createDataFrame(_arrow(files, ddl) if table is None else table, schema)


@dataclass(frozen=True)
class Inputs:
    """What the driver learns from the input without Spark (:func:`prepare`)."""

    runs: pd.DataFrame
    files: dict[str, list[str]]
    sizing: Plan  # with one core: :func:`summarise` re-plans a large input for the session's
    replicas: Any  # Arrow tables on the small path, else None
    writes: Any


def prepare(root: Path, small_rows: int | None = None) -> Inputs:
    """Locate ``root``'s runs and, for a small input, read its rows into Arrow.

    No JVM is needed, so the CLI runs this while the session's JVM starts (a matrix of
    hundreds of runs spends about a second here, opening hundreds of small files).
    """
    runs, files = locate(root)
    sizing = plan(files, 1, small_rows)
    if not sizing.small:
        return Inputs(runs, files, sizing, None, None)
    replicas = _arrow(files["replicas"], REPLICAS_DDL) if files["replicas"] else None
    writes = _arrow(files["writes"], WRITES_DDL) if files["writes"] else None
    return Inputs(runs, files, sizing, replicas, writes)


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
    for key, value in _confs(sizing).items():
        spark.conf.set(key, value)
    runs = spark.createDataFrame(runs_pd[RUN_COLUMNS], _schema(RUNS_DDL))
    table = inputs.replicas
    replicas = _read(spark, files["replicas"], REPLICAS_DDL, sizing.small, table)
    writes = _read(spark, files["writes"], WRITES_DDL, sizing.small, inputs.writes)
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
    return out


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
