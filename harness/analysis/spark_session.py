"""The SparkSession the analysis runs on: quiet, sized for this machine, and its stop.

Why here, apart from the job: the JVM's options (driver memory, quick compiler for small
inputs, class archive) are fixed when a process starts its first session, so the CLI starts
it while it reads the input (:func:`harness.analysis.spark_job.prepare`) and stops it with
:func:`stop`, which lets a session that records the class archive finish writing it.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness.analysis.spark_cds import ClassArchive

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


_ARCHIVES: dict[int, ClassArchive] = {}
