"""The ``local`` backend: ZooKeeper, controllers and brokers as JVM processes on 127.0.0.1.

With ``network=True`` (root only) every node runs in its own network namespace on a private
subnet instead (harness.db.runtime.netns), listening on its own address, so the nemesis can
cut links between them; the harness stays in the root namespace and reaches every node.

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
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

from harness.db import (
    BrokerUnavailable,
    Cluster,
    ClusterError,
)
from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.kafka_config import render
from harness.db.catalogue.versions import KafkaVersion
from harness.db.mode import make_mode
from harness.db.runtime import ramdata
from harness.db.runtime.cds import TreeArchive
from harness.db.runtime.logconf import with_harness_loggers
from harness.db.runtime.netns import RunNetwork
from harness.db.runtime.ports import free_port
from harness.db.runtime.process import renice, spawn
from harness.db.runtime.ramdata import RamData
from harness.db.specs import NodeExited

HEAP = ["-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
_EXCLUDED_JARS = ("-sources.jar", "-javadoc.jar", "-scaladoc.jar", "-test.jar", "-test-sources")


def classpath(tree: Path) -> str:
    jars = sorted(
        str(j) for j in (tree / "libs").glob("*.jar") if not j.name.endswith(_EXCLUDED_JARS)
    )
    return os.pathsep.join(jars)


def local_unavailable(version: KafkaVersion) -> str | None:
    """Why this machine cannot run ``version`` as local JVMs (one line), None if it can."""
    if shutil.which("java") is None:
        return "no java on PATH (Kafka brokers need a JRE; see `hwchaos doctor`)"
    try:
        find_tree(version)
    except BrokerUnavailable as exc:
        return f"{exc} (`hwchaos kafka install {version.release}` or set HWCHAOS_KAFKA_DISTS)"
    return None


class LocalCluster(Cluster):
    """The local runtime: every node (ZooKeeper, controllers, brokers) its own JVM process."""

    def __init__(
        self,
        version: KafkaVersion,
        broker_names: list[str],
        workdir: Path,
        dists: Path | None = None,
        startup_timeout: float = 90.0,
        controllers: int = 1,
        network: bool = False,
    ) -> None:
        """``network``: each node in its own network namespace, so links can be cut."""

        self.version = version
        self.tree = find_tree(version, dists)
        self.workdir = workdir
        self.startup_timeout = startup_timeout
        self.mode = make_mode(version, controllers)
        self.mode.startup_timeout = startup_timeout
        self.nodes = self.mode.make_nodes(broker_names, workdir, free_port)
        self.brokers = {n: s for n, s in self.nodes.items() if s.role == "broker"}
        self.expected_down: set[str] = set()
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._logs: dict[str, IO[bytes]] = {}
        self._closed = False
        self._want_network = network
        self.network: RunNetwork | None = None
        # Class-data sharing for every JVM of this tree (harness.db.runtime.cds): mapped if built,
        # else this cluster's JVMs list what they load and close() builds it.
        self.cds = TreeArchive(classpath(self.tree), [*HEAP, *version.jvm_flags])
        self._cds_mapped = self.cds.archive() is not None
        self._started = False  # the archive is built only from a cluster that came up
        # data dirs in memory while the cluster runs (harness.db.runtime.ramdata: the 10 ms
        # HW checkpoint costs the kernel far less on tmpfs), copied back when it closes
        self._ram: RamData | None = None
        # the nice value (per thread and of its autogroup) of every JVM launched while set:
        # the warm pool's background start (harness.generator.warm.BACKGROUND_NICE)
        self.start_nice: int | None = None
        atexit.register(self.close)

    # ------------------------------------------------------------------ processes

    def _java(self, main_class: str, args: list[str], name: str) -> list[str]:
        logs = self.workdir / name / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        if self.version.log4j2:
            log_config = f"-Dlog4j2.configurationFile=file:{self._log_config()}"
        else:
            log_config = f"-Dlog4j.configuration=file:{self._log_config()}"
        return [
            "java",
            *HEAP,
            *self.version.jvm_flags,
            *self.cds.java_options(self.workdir / name, main_class),
            "-Djava.awt.headless=true",
            "-Djava.net.preferIPv4Stack=true",
            f"-Dkafka.logs.dir={logs}",
            log_config,
            "-Dzookeeper.admin.enableServer=false",
            "-cp",
            classpath(self.tree),
            main_class,
            *args,
        ]

    def _log_config(self) -> Path:
        """The release's log4j.properties (log4j2.yaml from 4.0) with the loggers the fences
        read (harness.db.runtime.logconf): the leader's record of each follower's fetch
        position, and before 0.11 the follower's HW after each fetch round. A copy in the
        cluster's work dir; the release tree is never written.
        """
        name = "log4j2.yaml" if self.version.log4j2 else "log4j.properties"
        path = self.workdir / name
        if not path.exists():
            base = (self.tree / "config" / name).read_text()
            text = with_harness_loggers(
                base, self.version.log4j2, fetcher_trace=not self.version.epoch_on_disk
            )
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return path

    def _write_config(self, name: str, props: dict[str, str], file: str) -> Path:
        path = self.workdir / name / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(props))
        return path

    def launch(self, name: str, main_class: str, props: dict[str, str]) -> None:
        if self._closed:  # stopped while it started (the warm pool's background start)
            raise ClusterError(f"{name} not started: the cluster was stopped")
        if name in self._procs and self._procs[name].poll() is None:
            raise ClusterError(f"{name} is already running")
        file = (
            "zookeeper.properties" if main_class.endswith("QuorumPeerMain") else "server.properties"
        )
        path = self._write_config(name, props, file)
        self.expected_down.discard(name)
        (self.workdir / name / "logs").mkdir(parents=True, exist_ok=True)
        out = (self.workdir / name / "logs" / "stdout.log").open("ab")
        self._logs[name] = out
        cmd = self._java(main_class, [str(path)], name)
        if self.network is not None:
            cmd = self.network.wrap(name, cmd)
        # Its own process group (Ctrl-C reaches only us), SIGKILLed if the harness dies.
        self._procs[name] = spawn(cmd, stdout=out, cwd=self.workdir / name)
        if self.start_nice is not None:  # a start in the background (harness.generator.warm)
            renice(self._procs[name].pid, self.start_nice, group=self.start_nice)
        if self._closed:  # closed from another thread while this node was being launched
            self._kill_all()
            raise ClusterError(f"{name} stopped: the cluster was stopped while it started")
        self._write_pids()

    def run_tool(
        self, main_class: str, args: list[str], name: str, props: dict[str, str] | None = None
    ) -> str:
        if props is not None:
            path = self._write_config(name, props, "server.properties")
            args = [str(path) if a == "@CONFIG@" else a for a in args]
        (self.workdir / name / "logs").mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            self._java(main_class, args, name),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=self.startup_timeout,
            cwd=self.workdir / name,
        )
        out = proc.stdout + proc.stderr
        if proc.returncode != 0:
            last = (out.strip().splitlines() or ["no output"])[-1]
            raise ClusterError(f"{main_class.rsplit('.', 1)[-1]} for {name} failed: {last}")
        return out

    def _write_pids(self) -> None:
        pids = {n: p.pid for n, p in self._procs.items() if p.poll() is None}
        (self.workdir / "pids.json").write_text(json.dumps(pids))

    def start(self) -> None:
        """Start every node; a node that exits on its own during the start gets one more try.

        Why the second try: a cluster start is set-up, not part of what a run judges, and a
        start can fail for reasons outside the cluster (a port chosen free and taken by
        another process before the JVM bound it). As Jepsen's ``db/cycle!`` retries a failed
        set-up, the first attempt's nodes are stopped, their folders kept aside under
        ``failed-start/`` with the cause in ``failed-start/why.txt``, every node gets fresh
        ports, and the cluster starts once more. A second exit is the error.
        """
        try:
            try:
                self._start_once()
            except NodeExited as first:
                self._set_aside(first)
                self._start_once()  # a second exit is the error
        except BaseException:
            self.close()
            raise

    def _start_once(self) -> None:
        if self._want_network and self.network is None:
            self.network = RunNetwork(self.nodes, run_dir=self.workdir)
        if self._ram is None and ramdata.available() is None:
            ramdata.reap_orphans()
            self._ram = RamData(self.workdir)
        if self._ram is not None:
            self._ram.place(spec.data_dir for spec in self.nodes.values())
        super().start()
        self._started = True

    def _set_aside(self, why: NodeExited) -> None:
        """Undo a failed start: stop its JVMs, keep its node folders, choose fresh ports.

        The mode is not closed: what it runs in the harness (KRaft's session keeper) starts
        only once its start has succeeded, and closing it would stop the next one for good.
        """
        self._kill_all()
        self._procs.clear()
        self._logs.clear()
        self._write_pids()  # none alive: a reaper must not signal their pids (reusable)
        if self.network is not None:
            self.network.close()
            self.network = None
        self.keep_failed_start(why, lambda: free_port())  # looked up late: tests swap it

    def _kill_all(self) -> None:
        """SIGKILL every JVM (resumed first, so a paused one dies), reap them, close logs.

        Copies of the tables: a start on another thread (the warm pool's background start)
        may be launching a node meanwhile (:meth:`launch` kills it when it sees the close)."""
        procs = list(self._procs.values())
        for p in procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGCONT)
                    os.killpg(p.pid, signal.SIGKILL)
        for p in procs:
            with contextlib.suppress(Exception):
                p.wait(timeout=30)
        for f in list(self._logs.values()):
            with contextlib.suppress(Exception):
                f.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self.mode.close()
        self._kill_all()
        with contextlib.suppress(FileNotFoundError):
            (self.workdir / "pids.json").unlink()
        if self.network is not None:
            self.network.close()
        if self._ram is not None:
            # the JVMs are dead: the data back on disk, the memory freed (always, even when
            # the copy fails, e.g. a full disk: a stop must not raise over the run's result,
            # but a run folder missing its data must say why: one line on stderr)
            try:
                self._ram.close()
            except OSError as exc:
                why = f"hwchaos: data dirs of {self.workdir} not copied back: {exc}"
                print(why, file=sys.stderr)
        if self._started and not self._cds_mapped:
            # the first cluster of this tree: its JVMs listed their classes; build the archive
            # every later JVM maps (one short JVM, once per tree and JDK). Last, so a Ctrl-C
            # that cuts the build short leaves nothing else undone.
            with contextlib.suppress(Exception):
                self.cds.build([self.workdir / n for n in self.nodes])

    # ------------------------------------------------------------------ interface

    def metadata_schemas(self) -> dict[int, Any]:
        """From the tree these JVMs run (which may be another than the default search's)."""
        from harness.readback.metadata_records import schemas_for_tree

        return schemas_for_tree(self.tree)

    def peer_host(self, name: str) -> str:
        """The node's own address in its namespace, or 127.0.0.1 without a run network."""
        return self.network.address(name) if self.network is not None else "127.0.0.1"

    def node_address(self, name: str) -> tuple[str, int]:
        return (self.peer_host(name), self.nodes[name].port)

    def signal(self, name: str, sig: int) -> None:
        p = self._procs.get(name)
        if p is not None and p.poll() is None:
            if sig in (signal.SIGKILL, signal.SIGTERM):
                self.expected_down.add(name)
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, sig)

    def host_pid(self, name: str) -> int | None:
        p = self._procs.get(name)
        return p.pid if p is not None and p.poll() is None else None

    def is_running(self, name: str) -> bool:
        p = self._procs.get(name)
        return p is not None and p.poll() is None

    def exit_code(self, name: str) -> int | None:
        p = self._procs.get(name)
        return None if p is None else p.poll()

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
