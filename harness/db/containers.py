"""The ``docker`` backend: the same cluster as the local one, in containers.

- **Lifecycle** through testcontainers-python: a :class:`~testcontainers.core.network.Network`
  per run and one :class:`~testcontainers.core.container.DockerContainer` per node
  (ZooKeeper, the controller broker, one per scenario broker) with labels and a log wait
  strategy; the docker SDK for what testcontainers does not cover (restart of the same
  container, signals, status). Ryuk is disabled (its image cannot be pulled here); the
  project's reaper (:mod:`harness.db.reaper`) removes what a killed harness left.
- **Network**: one user-defined bridge per run with IP masquerading off, fixed addresses per
  container (a restarted broker keeps its IP, so peers' cached addresses and the partition
  rules stay right) and, when we are root, the default route removed inside every
  container's network namespace: no route out of the machine. ``internal=True`` is not used
  because Docker does not publish ports of containers on internal networks, and the harness
  reaches every node through ports published on 127.0.0.1 (``EXTERNAL`` listener), while
  brokers replicate over ``INTERNAL://<name>:9092``.
- **Files**: data and log dirs are bind mounts under the run's work dir, so the read-back,
  the checkpoint faults and the power-loss cuts work on host files exactly as with the local
  backend (the host page cache survives a container kill, as it survives a process kill).
- **Faults**: the JVM is PID 1 of its container (``exec java`` in the entrypoint), so
  SIGKILL/SIGTERM/SIGSTOP/SIGCONT reach Java itself; network partitions are per link and
  asymmetric: iptables in the sender's network namespace, entered from the host with
  ``nsenter -t <pid> -n``; :meth:`DockerCluster.heal` and closing remove every rule.

Images come from :mod:`harness.db.images` (built from the release tree or the tarball when
missing). docker and testcontainers are imported lazily: without them, or without a
daemon, :func:`docker_available` gives the one-line reason the tests skip with.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import signal as signals
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

from harness.db import CONTROLLER, BrokerSpec, Cluster, ClusterError
from harness.db import reaper as reaper_mod
from harness.db.daemon import docker_available
from harness.db.kafka_config import (
    broker_properties,
    offsets_topic_znodes,
    render,
    zookeeper_properties,
)
from harness.db.local import free_port
from harness.db.reaper import RUN_LABEL as LABEL
from harness.db.versions import KafkaVersion

__all__ = ["LABEL", "DockerCluster", "NetworkFaultError", "docker_available", "image_for"]

CHAIN = "HWCHAOS"
INTERNAL_PORT = 9092
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
    ) -> None:
        """Resolve (and if needed build) the image now, so a missing one fails in one line."""
        from testcontainers.core.config import testcontainers_config

        import docker
        from harness.db.images import ensure_image

        testcontainers_config.ryuk_disabled = True
        self.version = version
        self.workdir = workdir
        safe = "".join(ch if ch.isalnum() or ch in "_.-" else "-" for ch in run_id)
        self.run_id = f"{safe[:40]}-{uuid.uuid4().hex[:6]}"
        self.startup_timeout = startup_timeout
        self.say = say
        self.client: Any = docker.from_env(timeout=120)  # type: ignore[attr-defined]
        self.image = image or ensure_image(version, say, build=build, client=self.client)
        self.zk_port = free_port()
        self.brokers = {
            name: BrokerSpec(name, i, free_port(), workdir / name / "data")
            for i, name in enumerate([CONTROLLER, *broker_names])
        }
        self.labels = reaper_mod.labels(self.run_id)
        self._containers: dict[str, Any] = {}  # name -> testcontainers DockerContainer
        self._network: Any = None
        self._ips: dict[str, str] = {}
        self._blocked: set[tuple[str, str]] = set()
        self._closed = False
        self.isolated = _nsenter_ok()  # default route removed in every container

    # ------------------------------------------------------------------ containers

    def _host(self, name: str) -> str:
        return name.lower()

    def container_name(self, name: str) -> str:
        return f"hwchaos-{self.run_id}-{self._host(name)}"[:63]

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
        taken = {cfg.get("Gateway")}
        hosts = (str(h) for h in subnet.hosts())
        for name in ["zookeeper", *self.brokers]:
            ip = next(hosts)
            while ip in taken or ip.endswith(".1"):
                ip = next(hosts)
            taken.add(ip)
            self._ips[name] = ip

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

    def _after_start(self, name: str) -> None:
        """A fresh network namespace: no route out, and the links blocked so far."""
        if not self.isolated:
            return
        pid = self._pid(name)
        if pid is None:
            return
        _nsenter(pid, "ip", "route", "del", "default", check=False)
        if any(src == name for src, _ in self._blocked):
            self._apply_blocks(name)

    def start(self) -> None:
        from harness.metadata.zk import ZkView

        reaper_mod.reap_orphans(self.say)
        reaper_mod.register(id(self), self.close)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._create_network()
        zk_dir = self.workdir / "zookeeper" / "config"
        zk_dir.mkdir(parents=True, exist_ok=True)
        (zk_dir / "zookeeper.properties").write_text(
            render(zookeeper_properties("/data", 2181, host="0.0.0.0"))
        )
        zk = self._container(
            "zookeeper", "zookeeper", {2181: self.zk_port}, wait_for="binding to port"
        )
        self._containers["zookeeper"] = zk
        self._start_container("zookeeper")
        self._await(lambda: _zk_up(self.zk_connect()), "ZooKeeper to answer")
        self.start_broker(CONTROLLER)
        with ZkView(self.zk_connect()) as view:
            self._await(lambda: view.controller() == 0, "the controller broker to be elected")
            for path, doc in offsets_topic_znodes(0).items():
                view.create(path, json.dumps(doc).encode())
            for name in self.brokers:
                if name != CONTROLLER:
                    self.start_broker(name)
            ids = tuple(sorted(b.broker_id for b in self.brokers.values()))
            self._await(lambda: view.live_brokers() == ids, f"brokers {ids} to register")

    def _start_container(self, name: str) -> None:
        c = self._containers[name]
        try:
            c.start()
        except Exception as exc:
            self.close()
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ClusterError(
                f"container {self.container_name(name)} did not start: {first[:200]} "
                f"(logs in {self.workdir / name / 'logs'})"
            ) from None
        self._after_start(name)

    def _await(self, check: Callable[[], bool], what: str) -> None:
        """Wait (bounded) for ``check``; a container that exits meanwhile fails fast."""

        @retry(
            stop=stop_after_delay(self.startup_timeout),
            wait=wait_fixed(0.2),
            retry=retry_if_result(lambda ok: not ok),
            reraise=True,
        )
        def poll() -> bool:
            for n in self._containers:
                status = self._status(n)
                if status in ("exited", "dead"):
                    raise ClusterError(
                        f"{n} exited while waiting for {what}; see {self.workdir / n / 'logs'}"
                    )
            try:
                return check()
            except ClusterError:
                raise
            except Exception:  # not up yet
                return False

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
        if name in self._containers:
            if self.is_running(name):
                raise ClusterError(f"broker {name} is already running")
            self._containers[name].get_wrapped_container().start()  # same container, same data
            self._after_start(name)
            return
        host = self._host(name)
        props = broker_properties(
            self.version, spec.broker_id, host, INTERNAL_PORT, "/data", "zookeeper:2181"
        )
        props.update(
            {
                "listeners": f"INTERNAL://0.0.0.0:{INTERNAL_PORT},EXTERNAL://0.0.0.0:{spec.port}",
                "advertised.listeners": (
                    f"INTERNAL://{host}:{INTERNAL_PORT},EXTERNAL://127.0.0.1:{spec.port}"
                ),
                "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
                "inter.broker.listener.name": "INTERNAL",
            }
        )
        props.update(spec.props)
        cfg = self.workdir / name / "config"
        cfg.mkdir(parents=True, exist_ok=True)
        (cfg / "server.properties").write_text(render(props))
        self._containers[name] = self._container(name, "broker", {spec.port: spec.port})
        self._start_container(name)

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
        self._blocked.clear()
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

    def _status(self, name: str) -> str | None:
        w = self._wrapped(name)
        if w is None:
            return None
        try:
            w.reload()
        except Exception:
            return None
        return str(w.status)

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
        """Signal the broker's JVM: PID 1 of its container (``docker kill -s``)."""
        w = self._wrapped(name)
        if w is None:
            return
        with contextlib.suppress(Exception):  # already exited: nothing to signal
            w.kill(signal=SIGNALS.get(signals.Signals(sig), str(int(sig))))

    def is_running(self, name: str) -> bool:
        return self._status(name) in ("running", "paused", "restarting")

    def wait_exit(self, name: str, timeout: float) -> None:
        w = self._wrapped(name)
        if w is not None:
            w.wait(timeout=timeout)

    # ------------------------------------------------------------------ network faults

    def ip(self, name: str) -> str:
        return self._ips[name]

    def block(self, src: str, dst: str) -> None:
        """Drop every packet ``src`` sends to ``dst`` (one direction of one link)."""
        self._require_netns()
        for n in (src, dst):
            if n not in self._ips:
                raise NetworkFaultError(f"no node {n!r} in this cluster")
        self._blocked.add((src, dst))
        if self.is_running(src):
            self._apply_blocks(src)

    def partition(self, side_a: list[str], side_b: list[str]) -> None:
        """Cut every link between the two sides, both directions."""
        for a in side_a:
            for b in side_b:
                self.block(a, b)
                self.block(b, a)

    def heal(self, links: list[tuple[str, str]] | None = None) -> None:
        """Remove the given blocked links (all when None); rules leave every namespace."""
        doomed = set(self._blocked) if links is None else set(links) & self._blocked
        self._blocked -= doomed
        for src in {s for s, _ in doomed}:
            if self.is_running(src):
                self._apply_blocks(src)

    def blocked(self) -> set[tuple[str, str]]:
        return set(self._blocked)

    def iptables_rules(self, name: str) -> str:
        """``iptables -S`` inside the node's network namespace (what tests look at)."""
        self._require_netns()
        pid = self._pid(name)
        if pid is None:
            return ""
        return _nsenter(pid, "iptables", "-w", "-S").stdout

    def _require_netns(self) -> None:
        if not _nsenter_ok():
            raise NetworkFaultError(
                "network partitions need root and nsenter (iptables in each container's "
                "network namespace, entered from the host)"
            )

    def _apply_blocks(self, src: str) -> None:
        """Rewrite ``src``'s HWCHAOS chain to exactly the links blocked from it."""
        pid = self._pid(src)
        if pid is None:
            return
        dsts = sorted(self._ips[d] for s, d in self._blocked if s == src)
        ipt = ("iptables", "-w")
        exists = _nsenter(pid, *ipt, "-S", CHAIN, check=False).returncode == 0
        if not dsts:
            if exists:
                _nsenter(pid, *ipt, "-D", "OUTPUT", "-j", CHAIN, check=False)
                _nsenter(pid, *ipt, "-F", CHAIN)
                _nsenter(pid, *ipt, "-X", CHAIN)
            return
        if not exists:
            _nsenter(pid, *ipt, "-N", CHAIN)
            _nsenter(pid, *ipt, "-I", "OUTPUT", "1", "-j", CHAIN)
        _nsenter(pid, *ipt, "-F", CHAIN)
        for ip in dsts:
            _nsenter(pid, *ipt, "-A", CHAIN, "-d", f"{ip}/32", "-j", "DROP")


def _nsenter(pid: int, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(
        ["nsenter", "-t", str(pid), "-n", *cmd], capture_output=True, text=True, timeout=30
    )
    if check and res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["?"])[-1]
        raise NetworkFaultError(f"{' '.join(cmd)} in the netns of pid {pid} failed: {last[:160]}")
    return res


def _zk_up(connect: str) -> bool:
    from harness.metadata.zk import ZkView

    with ZkView(connect, timeout=2.0):
        return True
