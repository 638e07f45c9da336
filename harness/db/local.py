"""The ``local`` backend: ZooKeeper and brokers as JVM processes on 127.0.0.1.

Kafka comes from release trees on disk under their official names
(``$HWCHAOS_KAFKA_DISTS/kafka_2.11-0.10.2.1``, ...). The JVM is started directly rather than
through ``bin/kafka-server-start.sh``: the 0.10-era scripts pass GC-logging flags Java 17
rejects, and the harness needs the JVM's own pid to signal it. Each broker keeps its id,
port and data dir across restarts. Every pid is written to ``pids.json`` in the work dir,
so :func:`kill_leftovers` can clean up after a harness that was itself killed.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import IO

from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

from harness.db import (
    CONTROLLER,
    BrokerSpec,
    BrokerUnavailable,
    Cluster,
    ClusterError,
    kafka_dists,
)
from harness.db.kafka_config import (
    broker_properties,
    render,
    zookeeper_properties,
)
from harness.db.process import spawn
from harness.db.versions import KafkaVersion

HEAP = ["-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
_EXCLUDED_JARS = ("-sources.jar", "-javadoc.jar", "-scaladoc.jar", "-test.jar", "-test-sources")


def find_tree(version: KafkaVersion, dists: Path | None = None) -> Path:
    """The release tree for ``version``, or BrokerUnavailable with a one-line reason.

    Looks in ``dists`` if given, else in $HWCHAOS_KAFKA_DISTS and then in the cache
    ``hwchaos kafka install`` fills. The path is absolute: JVMs run with another cwd.
    """
    from harness.db.dists import cache_dir

    roots = [dists] if dists is not None else [r for r in (kafka_dists(), cache_dir()) if r]
    roots = list(dict.fromkeys(r for r in roots if r.is_dir())) or roots[:1]
    if not roots:
        raise BrokerUnavailable(
            "no Kafka release trees: set HWCHAOS_KAFKA_DISTS (default /opt/kafka-dists) "
            "or run `hwchaos kafka install VERSION`"
        )
    for root in roots:
        tree = root / version.dist_name
        if tree.is_dir():
            break
    else:
        where = " or ".join(str(r) for r in roots)
        raise BrokerUnavailable(f"no {version.dist_name} under {where}")
    core = tree / "libs" / f"{version.dist_name}.jar"
    if not core.is_file():
        raise BrokerUnavailable(f"{tree} lacks its core jar libs/{core.name}")
    return tree.resolve()


def classpath(tree: Path) -> str:
    jars = sorted(
        str(j) for j in (tree / "libs").glob("*.jar") if not j.name.endswith(_EXCLUDED_JARS)
    )
    return os.pathsep.join(jars)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class LocalCluster(Cluster):
    """ZooKeeper + a controller broker + replica brokers, each its own JVM."""

    def __init__(
        self,
        version: KafkaVersion,
        broker_names: list[str],
        workdir: Path,
        dists: Path | None = None,
        startup_timeout: float = 90.0,
    ) -> None:
        self.version = version
        self.tree = find_tree(version, dists)
        self.workdir = workdir
        self.startup_timeout = startup_timeout
        self.zk_port = free_port()
        self.brokers = {}
        for i, name in enumerate([CONTROLLER, *broker_names]):
            bdir = workdir / name
            self.brokers[name] = BrokerSpec(name, i, free_port(), bdir / "data")
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._logs: dict[str, IO[bytes]] = {}
        self._closed = False
        atexit.register(self.close)

    # ------------------------------------------------------------------ processes

    def _java(self, main_class: str, props: Path, name: str) -> list[str]:
        logs = self.workdir / name / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log4j = self.tree / "config" / "log4j.properties"
        return [
            "java",
            *HEAP,
            *self.version.jvm_flags,
            "-Djava.awt.headless=true",
            "-Djava.net.preferIPv4Stack=true",
            f"-Dkafka.logs.dir={logs}",
            f"-Dlog4j.configuration=file:{log4j}",
            "-Dzookeeper.admin.enableServer=false",
            "-cp",
            classpath(self.tree),
            main_class,
            str(props),
        ]

    def _spawn(self, name: str, cmd: list[str]) -> None:
        out = (self.workdir / name / "logs" / "stdout.log").open("ab")
        self._logs[name] = out
        # Its own process group (Ctrl-C reaches only us), SIGKILLed if the harness dies.
        self._procs[name] = spawn(cmd, stdout=out, cwd=self.workdir / name)
        self._write_pids()

    def _write_pids(self) -> None:
        pids = {n: p.pid for n, p in self._procs.items() if p.poll() is None}
        (self.workdir / "pids.json").write_text(json.dumps(pids))

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        zk_dir = self.workdir / "zookeeper"
        (zk_dir / "data").mkdir(parents=True, exist_ok=True)
        zk_props = zk_dir / "zookeeper.properties"
        zk_props.write_text(render(zookeeper_properties(str(zk_dir / "data"), self.zk_port)))
        self._spawn(
            "zookeeper",
            self._java("org.apache.zookeeper.server.quorum.QuorumPeerMain", zk_props, "zookeeper"),
        )
        self._await(lambda: _port_open(self.zk_port), "ZooKeeper to listen", "zookeeper")
        self.start_broker(CONTROLLER)
        from harness.metadata.zk import ZkView

        with ZkView(self.zk_connect()) as zk:
            self._await(
                lambda: zk.controller() == 0, "the controller broker to be elected", CONTROLLER
            )
            for name in self.brokers:
                if name != CONTROLLER:
                    self.start_broker(name)
            ids = tuple(sorted(b.broker_id for b in self.brokers.values()))
            self._await(lambda: zk.live_brokers() == ids, f"brokers {ids} to register", None)

    def _await(self, check: Callable[[], bool], what: str, name: str | None) -> None:
        """Wait for ``check`` (bounded); a JVM that dies meanwhile fails fast."""

        @retry(
            stop=stop_after_delay(self.startup_timeout),
            wait=wait_fixed(0.2),
            retry=retry_if_result(lambda ok: not ok),
            reraise=True,
        )
        def poll() -> bool:
            for n, p in self._procs.items():
                if p.poll() is not None and (name is None or n == name):
                    raise ClusterError(
                        f"{n} exited with code {p.returncode} while waiting for {what}; "
                        f"see {self.workdir / n / 'logs'}"
                    )
            return check()

        try:
            poll()
        except ClusterError:
            self.close()
            raise
        except Exception:
            self.close()
            raise ClusterError(
                f"timed out after {self.startup_timeout:.0f}s waiting for {what} "
                f"(logs in {self.workdir})"
            ) from None

    def start_broker(self, name: str) -> None:
        spec = self.brokers[name]
        if name in self._procs and self._procs[name].poll() is None:
            raise ClusterError(f"broker {name} is already running")
        spec.data_dir.mkdir(parents=True, exist_ok=True)
        props = broker_properties(
            self.version,
            spec.broker_id,
            "127.0.0.1",
            spec.port,
            str(spec.data_dir),
            self.zk_connect(),
        )
        props.update(spec.props)
        path = self.workdir / name / "server.properties"
        path.write_text(render(props))
        self._spawn(name, self._java("kafka.Kafka", path, name))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for p in self._procs.values():
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGCONT)
                    os.killpg(p.pid, signal.SIGKILL)
        for p in self._procs.values():
            with contextlib.suppress(Exception):
                p.wait(timeout=30)
        for f in self._logs.values():
            with contextlib.suppress(Exception):
                f.close()
        with contextlib.suppress(FileNotFoundError):
            (self.workdir / "pids.json").unlink()

    # ------------------------------------------------------------------ interface

    def signal(self, name: str, sig: int) -> None:
        p = self._procs.get(name)
        if p is not None and p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, sig)

    def is_running(self, name: str) -> bool:
        p = self._procs.get(name)
        return p is not None and p.poll() is None

    def wait_exit(self, name: str, timeout: float) -> None:
        p = self._procs.get(name)
        if p is not None:
            p.wait(timeout=timeout)
        self._write_pids()


def kill_leftovers(workdir: Path) -> int:
    """Kill the JVMs a previous harness left behind (from its ``pids.json``)."""
    path = workdir / "pids.json"
    if not path.exists():
        return 0
    killed = 0
    for pid in json.loads(path.read_text()).values():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(int(pid), signal.SIGKILL)
            killed += 1
    path.unlink()
    return killed
