"""The ``docker`` backend: the same cluster as the local one, in containers.

- **Lifecycle** through testcontainers-python: a :class:`~testcontainers.core.network.Network`
  per run and one :class:`~testcontainers.core.container.DockerContainer` per node
  (ZooKeeper, the controller broker, one per scenario broker) with labels and a log wait
  strategy; the docker SDK for what testcontainers does not cover (restart of the same
  container, signals, status). Ryuk is disabled (its image cannot be pulled here); the
  project's reaper (:mod:`harness.db.runtime.reaper`) removes what a killed harness left.
- **Network**: one user-defined bridge per run with IP masquerading off, fixed addresses per
  container (a restarted broker keeps its IP, so peers' cached addresses and the partition
  rules stay right) and, when we are root, the default route removed inside every
  container's network namespace: no route out of the machine. ``internal=True`` is not used
  because Docker does not publish ports of containers on internal networks, and the harness
  reaches every node through ports published on 127.0.0.1 (brokers: an ``EXTERNAL``
  listener added to the mode's configuration), while nodes talk to each other by container
  host name over the mode's own listeners.
- **Runtime, not mode**: this is the container *runtime* of :class:`harness.db.Cluster`
  (:meth:`~DockerCluster.launch`, :meth:`~DockerCluster.run_tool`, signals, status, where
  files and peers are); the mode (ZooKeeper or KRaft, :mod:`harness.db.mode`) decides
  which nodes exist and how they are configured, so both modes run in containers.
- **Files**: data and log dirs are bind mounts under the run's work dir, so the read-back,
  the checkpoint faults and the power-loss cuts work on host files exactly as with the local
  backend (the host page cache survives a container kill, as it survives a process kill).
- **Faults**: the JVM is PID 1 of its container (``exec java`` in the entrypoint), so
  SIGKILL/SIGTERM/SIGSTOP/SIGCONT reach Java itself; network partitions are per link and
  asymmetric: ``cluster.network`` is a :class:`harness.db.runtime.netns.LinkCuts` (the same
  rules as the local backend's run network: one DROP per cut link in a node's namespace),
  entered from the host with ``nsenter -t <pid> -n``; rules are re-inserted when a container
  restarts (a fresh namespace), removed on heal, and go with the containers at close.

Images come from :mod:`harness.db.runtime.images` (built from the release tree or the tarball when
missing). docker and testcontainers are imported lazily: without them, or without a
daemon, :func:`docker_available` gives the one-line reason the tests skip with.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import signal as signals
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.db import Cluster, ClusterError
from harness.db.catalogue.kafka_config import render
from harness.db.catalogue.versions import KafkaVersion
from harness.db.mode import make_mode
from harness.db.runtime import reaper as reaper_mod
from harness.db.runtime.daemon import docker_available
from harness.db.runtime.images import KAFKA_HOME, ensure_image, image_file
from harness.db.runtime.linkcuts import LinkCuts
from harness.db.runtime.logconf import with_harness_loggers
from harness.db.runtime.ports import free_port
from harness.db.runtime.reaper import RUN_LABEL as LABEL
from harness.db.specs import NodeExited, PublishRefused

__all__ = ["LABEL", "DockerCluster", "NetworkFaultError", "docker_available", "image_for"]

CHAIN = "HWCHAOS"
EXTERNAL_PORT = 19092  # the container port of the harness's listener on every broker
PEER_SOCKET_TIMEOUT_MS = 5000
INNER_PORTS = {"zookeeper": 2181, "controller": 9093, "broker": 9092}
SIGNALS = {
    signals.SIGKILL: "SIGKILL",
    signals.SIGTERM: "SIGTERM",
    signals.SIGSTOP: "SIGSTOP",
    signals.SIGCONT: "SIGCONT",
}


class NetworkFaultError(ClusterError):
    """A network fault could not be injected or removed; the message is one line."""


def _say(msg: str) -> None:
    print(f"hwchaos docker: {msg}", file=sys.stderr, flush=True)


def image_for(version: KafkaVersion) -> str:
    env = "HWCHAOS_DOCKER_IMAGE_" + version.name.replace(".", "_").replace("-", "_")
    return os.environ.get(env, f"hwchaos/kafka:{version.release}")


def cleanup_leftovers() -> int:
    """Remove every container and network an earlier, now dead, hwchaos run left."""
    return reaper_mod.reap_orphans()[0]


def _nsenter_ok() -> bool:
    return os.geteuid() == 0 and shutil.which("nsenter") is not None


class DockerCluster(Cluster):
    def __init__(
        self,
        version: KafkaVersion,
        broker_names: list[str],
        workdir: Path,
        run_id: str,
        image: str | None = None,
        startup_timeout: float = 120.0,
        say: Callable[[str], None] = _say,
        build: bool = True,
        controllers: int = 1,
    ) -> None:
        """Resolve (and if needed build) the image now, so a missing one fails in one line."""
        from testcontainers.core.config import testcontainers_config

        import docker

        testcontainers_config.ryuk_disabled = True
        self.version = version
        self.workdir = workdir
        safe = "".join(ch if ch.isalnum() or ch in "_.-" else "-" for ch in run_id)
        self.run_id = f"{safe[:30]}-{uuid.uuid4().hex[:6]}"
        self.startup_timeout = startup_timeout
        self.say = say
        self.client: Any = docker.from_env(timeout=120)  # type: ignore[attr-defined]
        self.image = image or ensure_image(version, say, build=build, client=self.client)

        self.mode = make_mode(version, controllers)
        self.mode.startup_timeout = startup_timeout
        self.nodes = self.mode.make_nodes(broker_names, workdir, free_port)
        self.brokers = {n: s for n, s in self.nodes.items() if s.role == "broker"}
        self.expected_down: set[str] = set()
        self.labels = reaper_mod.labels(self.run_id)
        self._containers: dict[str, Any] = {}  # name -> testcontainers DockerContainer
        self._network: Any = None
        self._ips: dict[str, str] = {}
        self._published: dict[str, dict[int, int]] = {}  # container port -> host port
        self._host_pids: dict[str, int] = {}  # the JVM's pid here, checked before each use
        self.network: Any = None  # harness.db.runtime.netns.LinkCuts once the net exists
        self._closed = False
        self.isolated = _nsenter_ok()  # default route removed in every container

    # ------------------------------------------------------------------ containers

    def _host(self, name: str) -> str:
        return name.lower()

    def peer_host(self, name: str) -> str:
        """Peers reach a node by its container host name on the run's network."""
        return self._host(name)

    def peer_port(self, name: str) -> int:
        """Fixed in-container ports; the harness's host port (``nodes[name].port``) is
        published to them (0.10 brokers refuse two advertised listeners on one port)."""
        return INNER_PORTS[self.nodes[name].role]

    def node_path(self, name: str, what: str) -> str:
        """Every node sees its own dirs at /data, /logs, /config (bind mounts)."""
        return f"/{what}"

    def container_name(self, name: str) -> str:
        return f"hwchaos-{self.run_id}-{self._host(name)}"  # <= 63: run_id is cut to 37

    def _create_network(self) -> None:
        """The run's bridge, with a subnet of its own so each container gets a fixed address.

        Docker only honours a container's ``ipv4_address`` on a network created with an
        explicit subnet, so the daemon first picks a free one (a throwaway network), then the
        run's network is created with it; a concurrent run taking it meanwhile means retry.
        """
        import docker.errors
        from docker.types import IPAMConfig, IPAMPool
        from testcontainers.core.network import Network

        for _attempt in range(5):
            probe = self.client.networks.create(
                f"hwchaos-{self.run_id}-probe"[:63], driver="bridge", labels=self.labels
            )
            try:
                probe.reload()
                cfg = probe.attrs["IPAM"]["Config"][0]
            finally:
                probe.remove()
            net = Network(
                docker_network_kw={
                    "driver": "bridge",
                    "labels": self.labels,
                    "options": {"com.docker.network.bridge.enable_ip_masquerade": "false"},
                    "ipam": IPAMConfig(
                        pool_configs=[IPAMPool(subnet=cfg["Subnet"], gateway=cfg.get("Gateway"))]
                    ),
                }
            )
            net.name = f"hwchaos-{self.run_id}"[:63]
            try:
                self._network = net.create()
                break
            except docker.errors.APIError as exc:
                if "overlap" not in str(exc).lower():
                    raise
        else:
            raise ClusterError("could not create the run's Docker network (address pools busy)")
        subnet = ipaddress.ip_network(cfg["Subnet"])
        gateway = cfg.get("Gateway") or str(next(subnet.hosts()))
        taken = {gateway}
        hosts = (str(h) for h in subnet.hosts())
        for name in self.nodes:
            ip = next(hosts)
            while ip in taken or ip.endswith(".1"):
                ip = next(hosts)
            taken.add(ip)
            self._ips[name] = ip
        if self.isolated:
            # The harness's clients reach containers through docker-proxy, from the gateway.
            self.network = LinkCuts(
                self._ips,
                gateway,
                self._enter,
                f"hwchaos:{self.run_id}",
                gone=lambda node: self._pid(node) is None,
            )

    def _container(
        self, name: str, role: str, ports: dict[int, int], wait_for: str | None = None
    ) -> Any:
        from docker.types import EndpointConfig
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.wait_strategies import LogMessageWaitStrategy

        d = self.workdir / name
        for sub in ("logs", "data", "config"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        c = DockerContainer(self.image)
        c.with_name(self.container_name(name))
        c.with_envs(
            ROLE=role,
            KAFKA_HEAP_OPTS="-Xms64m -Xmx256m",
            HWCHAOS_JVM_FLAGS=" ".join(self.version.jvm_flags),
        )
        c.with_volume_mapping(str(d / "config"), "/config", "ro")
        name_in_image, conf = self._log_config()
        c.with_volume_mapping(str(conf), f"{KAFKA_HOME}/config/{name_in_image}", "ro")
        c.with_volume_mapping(str(d / "data"), "/data", "rw")
        c.with_volume_mapping(str(d / "logs"), "/logs", "rw")
        for inside, outside in ports.items():
            # published on loopback only; testcontainers' port map takes the docker SDK form
            c.ports[f"{inside}/tcp"] = ("127.0.0.1", outside)  # type: ignore[assignment]
        c.with_kwargs(
            hostname=self._host(name),
            labels=self.labels,
            mem_limit="512m",
            network=self._network.name,
            networking_config={
                self._network.name: EndpointConfig(
                    "1.41", aliases=[self._host(name)], ipv4_address=self._ips[name]
                )
            },
        )
        if wait_for:
            strategy = LogMessageWaitStrategy(wait_for)
            strategy.with_startup_timeout(int(self.startup_timeout)).with_poll_interval(0.2)
            c.waiting_for(strategy)
        return c

    def _log_config(self) -> tuple[str, Path]:
        """The image's own log configuration (:func:`image_file`) with the loggers the
        fences read (harness.db.runtime.logconf), bind-mounted over the image's file."""
        name = "log4j2.yaml" if self.version.log4j2 else "log4j.properties"
        path = self.workdir / name
        if not path.exists():
            base = image_file(self.client, self.image, f"{KAFKA_HOME}/config/{name}").read_text()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(with_harness_loggers(base, self.version.log4j2))
        return name, path

    def _after_start(self, name: str) -> None:
        """A fresh network namespace: no route out, and the links blocked so far."""
        if not self.isolated:
            return
        pid = self._pid(name)
        if pid is None:
            return
        _nsenter(pid, "ip", "route", "del", "default", check=False)
        if self.network is not None:
            self.network.reapply(name)  # a restarted container has a fresh namespace

    def start(self) -> None:
        """The run's network, then whatever the mode starts (through :meth:`launch`); one
        more try, as the local runtime's start, when a node gives up: a cluster start is
        set-up, not judged, and can fail from outside (a host port chosen free and taken
        before Docker published it, a JVM exiting). The first attempt's containers go, its
        node folders stay under ``failed-start/`` with ``why.txt``; fresh host ports, same
        network. A second failure is the error."""
        reaper_mod.reap_orphans(self.say)
        reaper_mod.register(id(self), self.close)
        try:
            self.workdir.mkdir(parents=True, exist_ok=True)
            self._create_network()
            try:
                super().start()
            except (NodeExited, PublishRefused) as first:
                self._set_aside(first)
                super().start()  # a second failure is the error
        except BaseException:
            self.close()
            raise

    def _set_aside(self, why: ClusterError) -> None:
        """Undo a failed start: remove its containers, keep its node folders, fresh ports."""
        with contextlib.suppress(Exception):  # by label: one created and never started too
            mine = {"label": f"{LABEL}={self.run_id}"}
            for c in self.client.containers.list(all=True, filters=mine):
                c.remove(force=True, v=True)
        self._containers.clear()
        self._published.clear()
        self._host_pids.clear()
        if self.network is not None:
            self.network.forget()  # the namespaces went with the containers
        self.keep_failed_start(why, lambda: free_port())  # looked up late: tests swap it

    def _role(self, name: str, main_class: str) -> str:
        if main_class.endswith("QuorumPeerMain"):
            return "zookeeper"
        return "controller" if self.nodes[name].role == "controller" else "broker"

    def _external_listener(self, name: str, props: dict[str, str]) -> dict[str, str]:
        """A broker's config as the mode wrote it, plus an ``EXTERNAL`` listener for us.

        The mode's listener (``PLAINTEXT://<host>:<port>``) stays for replication and the
        controller; the harness's clients reach the broker at 127.0.0.1:<port>, published
        to the container's ``EXTERNAL`` port and advertised as such.
        """
        port, ext = self.nodes[name].port, EXTERNAL_PORT
        props = dict(props)
        props["listeners"] = f"{props['listeners']},EXTERNAL://0.0.0.0:{ext}"
        props["advertised.listeners"] = (
            f"{props['advertised.listeners']},EXTERNAL://127.0.0.1:{port}"
        )
        pmap = props.get("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT")
        props["listener.security.protocol.map"] = f"{pmap},EXTERNAL:PLAINTEXT"
        if "security.inter.broker.protocol" not in props:
            props.setdefault("inter.broker.listener.name", "PLAINTEXT")
        # A stopped container's address vanishes: peers get no RST (as from a dead local
        # process) and wait out their socket timeout (30 s) on the old connection before
        # reaching the restarted broker. Bound that wait; it only matters when a peer is gone.
        for key in ("controller.socket.timeout.ms", "replica.socket.timeout.ms"):
            props.setdefault(key, str(PEER_SOCKET_TIMEOUT_MS))
        self._published[name] = {ext: port}
        return props

    def launch(self, name: str, main_class: str, props: dict[str, str]) -> None:
        """Start node ``name``'s container (create it the first time, restart it after)."""
        role = self._role(name, main_class)
        if role == "broker":
            props = self._external_listener(name, props)
        else:
            self._published[name] = {self.peer_port(name): self.nodes[name].port}
        cfg = self.workdir / name / "config"
        cfg.mkdir(parents=True, exist_ok=True)
        file = "zookeeper.properties" if role == "zookeeper" else "server.properties"
        (cfg / file).write_text(render(props))
        self.expected_down.discard(name)
        if name in self._containers:
            if self.is_running(name):
                raise ClusterError(f"{name} is already running")
            self._containers[name].get_wrapped_container().start()  # same container, same data
            self._after_start(name)
            return
        wait_for = "binding to port" if role == "zookeeper" else None
        self._containers[name] = self._container(
            name, role, self._published[name], wait_for=wait_for
        )
        self._start_container(name)

    def run_tool(
        self, main_class: str, args: list[str], name: str, props: dict[str, str] | None = None
    ) -> str:
        """A one-off container of the same image with node ``name``'s mounts, no network."""
        import docker

        cfg = self.workdir / name / "config"
        for sub in ("data", "logs", "config"):
            (self.workdir / name / sub).mkdir(parents=True, exist_ok=True)
        if props is not None:
            (cfg / "server.properties").write_text(render(props))
            args = ["/config/server.properties" if a == "@CONFIG@" else a for a in args]
        client = docker.from_env(timeout=300)  # type: ignore[attr-defined]
        tool = main_class.rsplit(".", 1)[-1]
        try:
            c = client.containers.run(
                self.image,
                args,
                detach=True,
                name=f"{self.container_name(name)}-{tool.lower()}"[:63],
                environment={
                    "ROLE": "tool",
                    "MAIN_CLASS": main_class,
                    "KAFKA_HEAP_OPTS": "-Xms32m -Xmx256m",
                    "HWCHAOS_JVM_FLAGS": " ".join(self.version.jvm_flags),
                },
                volumes={
                    str(cfg): {"bind": "/config", "mode": "ro"},
                    str(self.workdir / name / "data"): {"bind": "/data", "mode": "rw"},
                    str(self.workdir / name / "logs"): {"bind": "/logs", "mode": "rw"},
                },
                labels=self.labels,
                network_mode="none",
            )
            try:
                code = int(c.wait(timeout=self.startup_timeout)["StatusCode"])
                out = c.logs().decode(errors="replace")
            finally:
                with contextlib.suppress(Exception):
                    c.remove(force=True)
        finally:
            client.close()
        if code != 0:
            last = (out.strip().splitlines() or ["no output"])[-1]
            raise ClusterError(f"{tool} for {name} failed: {last[:200]}")
        return str(out)

    def metadata_schemas(self) -> dict[int, Any]:
        """From the image the nodes run, not from a release tree on the host (there may be
        none): its ``kafka-metadata`` jar, copied out once per image."""
        from harness.db.runtime.images import image_file
        from harness.readback.metadata_records import load_schemas

        jar = f"/opt/kafka/libs/kafka-metadata-{self.version.release}.jar"
        return load_schemas(image_file(self.client, self.image, jar))

    def exit_code(self, name: str) -> int | None:
        w = self._reloaded(name)
        if w is None:
            return None
        if w.status in ("exited", "dead"):
            return int(w.attrs["State"]["ExitCode"])
        return None

    def _start_container(self, name: str) -> None:
        c = self._containers[name]
        try:
            c.start()
        except Exception as exc:
            # the daemon's explanation ends with the cause ("... bind: address already in use")
            text = str(getattr(exc, "explanation", None) or exc).strip()
            first = (text.splitlines() or [type(exc).__name__])[0]
            cause = first if len(first) <= 200 else "..." + first[-200:]
            said = (
                f"container {self.container_name(name)} did not start: {cause} "
                f"(logs in {self.workdir / name / 'logs'})"
            )
            if any(m in str(exc) for m in PublishRefused.SAID):
                raise PublishRefused(said, name) from None
            raise ClusterError(said) from None
        self._after_start(name)

    def close(self) -> None:
        """Remove every container and the network; idempotent, never raises."""
        if self._closed:
            return
        self._closed = True
        reaper_mod.unregister(id(self))
        for c in self._containers.values():
            with contextlib.suppress(Exception):
                c.get_wrapped_container().remove(force=True, v=True)
        if self._network is not None:
            with contextlib.suppress(Exception):
                self._network.remove()
        with contextlib.suppress(Exception):  # whatever a half-started run created
            reaper_mod.reap(self.client, only_orphans=False, run_id=self.run_id)
        if self.network is not None:
            self.network.forget()  # the namespaces went with the containers
        with contextlib.suppress(Exception):
            self.client.close()

    # ------------------------------------------------------------------ interface

    def _wrapped(self, name: str) -> Any:
        c = self._containers.get(name)
        if c is None:
            return None
        with contextlib.suppress(Exception):
            return c.get_wrapped_container()
        return None

    def _reloaded(self, name: str) -> Any:
        """The node's container with fresh state from the daemon; None if it is gone."""
        w = self._wrapped(name)
        if w is None:
            return None
        try:
            w.reload()
        except Exception:
            return None
        return w

    def _status(self, name: str) -> str | None:
        w = self._reloaded(name)
        return None if w is None else str(w.status)

    def _pid(self, name: str) -> int | None:
        w = self._wrapped(name)
        if w is None:
            return None
        with contextlib.suppress(Exception):
            w.reload()
            pid = int(w.attrs["State"]["Pid"])
            return pid or None
        return None

    def signal(self, name: str, sig: int) -> None:
        """Signal the broker's JVM: PID 1 of its container (``docker kill -s``).

        SIGSTOP and SIGCONT go straight to the JVM's pid when this host sees it (the daemon
        on this machine, root): a fetch step must pause its follower within one parked
        Fetch (``replica.fetch.wait.max.ms``) of its round, and a daemon round trip under
        load took a good part of that (the docker fetch steps that failed paused 1.1-1.3 s
        after their round).
        """
        w = self._wrapped(name)
        if w is None:
            return
        if sig in (signals.SIGSTOP, signals.SIGCONT) and self._signal_here(name, w.id, sig):
            return
        if sig in (signals.SIGKILL, signals.SIGTERM):
            self.expected_down.add(name)
        with contextlib.suppress(Exception):  # already exited: nothing to signal
            w.kill(signal=SIGNALS.get(signals.Signals(sig), str(int(sig))))

    def _signal_here(self, name: str, container_id: str, sig: int) -> bool:
        """``os.kill`` to the container's PID 1 if its cgroup names this container (never a
        pid of another PID namespace or a reused one); False: not sent, use the daemon."""
        pid = self._host_pids.get(name)
        if pid is None or not _in_container(pid, container_id):
            pid = self._pid(name)
            if pid is None or not _in_container(pid, container_id):
                return False
            self._host_pids[name] = pid
        try:
            os.kill(pid, sig)
        except OSError:
            return False
        return True

    def host_pid(self, name: str) -> int | None:
        """PID 1 of the container as this host sees it (the JVM: the entrypoint execs it)."""
        return self._pid(name)

    def is_running(self, name: str) -> bool:
        return self._status(name) in ("running", "paused", "restarting")

    def wait_exit(self, name: str, timeout: float) -> None:
        w = self._wrapped(name)
        if w is not None:
            w.wait(timeout=timeout)

    # ------------------------------------------------------------------ network faults

    def ip(self, name: str) -> str:
        return self._ips[name]

    def _enter(self, node: str) -> list[str]:
        """The command prefix that runs a program in ``node``'s network namespace."""
        pid = self._pid(node)
        if pid is None:
            raise NetworkFaultError(f"{node} is not running: its network namespace is gone")
        return ["nsenter", "-t", str(pid), "-n"]

    def iptables_rules(self, name: str) -> str:
        """``iptables -S`` inside the node's network namespace (what tests look at)."""
        pid = self._pid(name)
        return "" if pid is None else _nsenter(pid, "iptables", "-w", "-S").stdout


def _nsenter(pid: int, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(
        ["nsenter", "-t", str(pid), "-n", *cmd], capture_output=True, text=True, timeout=30
    )
    if check and res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["?"])[-1]
        raise NetworkFaultError(f"{' '.join(cmd)} in the netns of pid {pid} failed: {last[:160]}")
    return res


def _in_container(pid: int, container_id: str) -> bool:
    """Whether process ``pid`` here is in the cgroup of container ``container_id``."""
    try:
        return bool(container_id) and container_id in Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return False
