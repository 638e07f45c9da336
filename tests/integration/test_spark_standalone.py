"""`hwchaos analyze --master spark://...` on a real Spark standalone cluster.

Why: ``local[2]`` runs the job inside the driver's JVM, so nothing there proves that the
job survives serialisation to executors in another JVM, reads its inputs from there, and
gives the same tables. Here a master and one worker are started from the installed pyspark
on 127.0.0.1 (free ports), the CLI runs in its own process against the master, and its tables
must equal the pandas twin's. Both daemons are always stopped (their whole process group),
and the test checks that no JVM of this cluster is left.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pandas.testing as pdt
import pytest
from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

from harness.analysis import pandas_job
from harness.analysis.common import TABLE_NAMES
from harness.analysis.synthetic import Spec, generate

pytestmark = [pytest.mark.spark, pytest.mark.slow]

pyspark = pytest.importorskip("pyspark")
SPARK_HOME = Path(pyspark.__file__).resolve().parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
    pytest.skip("no Java (java on PATH or JAVA_HOME): cannot start a Spark cluster", allow_module_level=True)  # fmt: skip  # noqa: E501


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def master_state(ui_port: int) -> dict[str, object] | None:
    """The master's own JSON status page, or None while it is not serving yet."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as r:
            state: dict[str, object] = json.loads(r.read())
            return state
    except (OSError, ValueError):
        return None


def wait_for(what: str, probe: object, timeout: float = 90.0) -> object:
    """Poll ``probe()`` until it returns something truthy; fail naming ``what`` otherwise."""

    @retry(
        retry=retry_if_result(lambda v: not v),
        stop=stop_after_delay(timeout),
        wait=wait_fixed(0.5),
        retry_error_callback=lambda _state: None,
    )
    def poll() -> object:
        return probe()  # type: ignore[operator]

    got = poll()
    if not got:
        pytest.fail(f"Spark standalone: {what} within {timeout:.0f} s")
    return got


def own_processes(marker: str) -> list[int]:
    """Pids whose command line mentions ``marker`` (this test's temp folder)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            pids.append(int(proc.name))
    return pids


@dataclass
class Cluster:
    url: str
    ui_port: int


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the daemon's whole process group (its executors too), then SIGKILL."""
    if proc.poll() is not None:
        return
    for sig, grace in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A master and one worker (2 cores, 2 GiB) on 127.0.0.1, stopped whatever happens."""
    home = tmp_path / "spark"
    home.mkdir()
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(home / "logs"),
        "SPARK_WORKER_DIR": str(home / "work"),
        "PYSPARK_PYTHON": sys.executable,
        # Only the test's own folder in the daemons' command lines: what own_processes finds.
        "SPARK_DAEMON_JAVA_OPTS": f"-Dhwchaos.test={home}",
    }
    port, ui = free_port(), free_port()
    procs: list[subprocess.Popen[bytes]] = []

    def start(cls: str, args: list[str], log: str) -> None:
        with open(home / log, "wb") as out:
            procs.append(
                subprocess.Popen(
                    [str(SPARK_CLASS), cls, *args],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: killpg reaches all
                )
            )

    try:
        start(
            "org.apache.spark.deploy.master.Master",
            ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)],
            "master.log",
        )
        wait_for(
            "master ALIVE",
            lambda: (master_state(ui) or {}).get("status") == "ALIVE",
        )
        start(
            "org.apache.spark.deploy.worker.Worker",
            ["--host", "127.0.0.1", "--port", str(free_port()),
             "--webui-port", str(free_port()), "--cores", "2", "--memory", "2g",
             "--work-dir", str(home / "work"), f"spark://127.0.0.1:{port}"],
            "worker.log",
        )  # fmt: skip
        wait_for(
            "worker registered with the master",
            lambda: any(
                w.get("state") == "ALIVE"
                for w in (master_state(ui) or {}).get("workers", [])  # type: ignore[attr-defined]
            ),
        )
        yield Cluster(f"spark://127.0.0.1:{port}", ui)
    finally:
        for proc in reversed(procs):  # worker (and its executors) first, then the master
            _stop(proc)
    left = own_processes(str(home))
    assert not left, f"Spark processes left behind: {left}"


def test_analyze_on_standalone_cluster_equals_pandas(tmp_path: Path, cluster: Cluster) -> None:
    data = tmp_path / "set"
    generate(data, Spec(runs=400, offsets=6, chunk_runs=150, mismatch_rate=0.05))
    out = tmp_path / "out"
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        # Executors read the Parquet files themselves (no driver-side small-input path):
        # the path a cluster runs, and the one a second JVM could get wrong.
        "HWCHAOS_SPARK_SMALL_ROWS": "0",
        # The driver's class archive is test_spark_cds.py's subject; none in the user's cache.
        "HWCHAOS_SPARK_CDS": "0",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", "analyze", str(data), "--master", cluster.url,
         "--out", str(out)],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"starting Spark ({cluster.url})" in proc.stdout
    expected = pandas_job.summarise(data)
    for name in TABLE_NAMES:
        pdt.assert_frame_equal(pd.read_parquet(out / f"{name}.parquet"), expected[name])
    # The job ran on the cluster (an executor of this worker), not in a local fallback.
    state = master_state(cluster.ui_port) or {}
    apps = state.get("completedapps", []) + state.get("activeapps", [])  # type: ignore[operator]
    assert any(a.get("name") == "hwchaos-analyze" for a in apps), apps
