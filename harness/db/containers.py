"""The ``docker`` backend: the same cluster as the local one, in containers.

One user-defined bridge network per run; ZooKeeper, the controller broker and one container
per scenario broker, each with a fixed hostname and internal listener
(``INTERNAL://<name>:9092``) for replication, plus an ``EXTERNAL`` listener published on
127.0.0.1 for the harness's clients. Data and log dirs are bind mounts under the run's work
dir, so the read-back, the checkpoint faults and the power-loss cuts work on host files
exactly as with the local backend. Every container and the network carry the label
``hwchaos.run=<run id>``; :func:`cleanup_leftovers` removes whatever a killed harness left.

Images: ``hwchaos/kafka:<release>`` built by ``docker/Dockerfile.kafka`` from the official
release tarball (sha512 pinned in ``docker/checksums.txt`` and GPG-checked), or any image
with the same entrypoint contract named by ``HWCHAOS_DOCKER_IMAGE_<version with dots as _>``.

docker (the SDK) is imported lazily: without it, or without a daemon,
:func:`docker_available` gives the one-line reason the tests skip with.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal as signals
import time
from pathlib import Path
from typing import Any

from harness.db import CONTROLLER, BrokerSpec, Cluster, ClusterError
from harness.db.kafka_config import (
    broker_properties,
    offsets_topic_znodes,
    render,
    zookeeper_properties,
)
from harness.db.local import free_port
from harness.db.versions import KafkaVersion

LABEL = "hwchaos.run"
SIGNALS = {
    signals.SIGKILL: "SIGKILL",
    signals.SIGTERM: "SIGTERM",
    signals.SIGSTOP: "SIGSTOP",
    signals.SIGCONT: "SIGCONT",
}


def docker_available() -> str | None:
    """None when a Docker daemon answers, else a one-line reason."""
    try:
        import docker
    except ImportError:
        return "the docker Python package is not installed (pip install '.[docker]')"
    try:
        client = docker.from_env(timeout=3)  # type: ignore[attr-defined]
        client.ping()
        client.close()
    except Exception as exc:  # the SDK raises several unrelated types here
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"no Docker daemon: {first[:160]}"
    return None


def image_for(version: KafkaVersion) -> str:
    env = "HWCHAOS_DOCKER_IMAGE_" + version.name.replace(".", "_").replace("-", "_")
    return os.environ.get(env, f"hwchaos/kafka:{version.release}")


def cleanup_leftovers() -> int:
    """Remove every container and network labelled by an earlier hwchaos run."""
    import docker

    client = docker.from_env()  # type: ignore[attr-defined]
    n = 0
    for c in client.containers.list(all=True, filters={"label": LABEL}):
        with contextlib.suppress(Exception):
            c.remove(force=True)
            n += 1
    for net in client.networks.list(filters={"label": LABEL}):
        with contextlib.suppress(Exception):
            net.remove()
    return n


class DockerCluster(Cluster):
    def __init__(
        self,
        version: KafkaVersion,
        broker_names: list[str],
        workdir: Path,
        run_id: str,
        image: str | None = None,
        startup_timeout: float = 120.0,
    ) -> None:
        import docker

        self.version = version
        self.workdir = workdir
        self.run_id = run_id.replace(":", "-")
        self.image = image or image_for(version)
        self.startup_timeout = startup_timeout
        self.client: Any = docker.from_env()  # type: ignore[attr-defined]
        self.zk_port = free_port()
        self.brokers = {
            name: BrokerSpec(name, i, free_port(), workdir / name / "data")
            for i, name in enumerate([CONTROLLER, *broker_names])
        }
        from harness.db.modes import ZooKeeperMode

        self.mode = ZooKeeperMode(version)
        self.nodes = dict(self.brokers)
        self._containers: dict[str, Any] = {}
        self._network: Any = None
        self._closed = False
        atexit.register(self.close)

    # ------------------------------------------------------------------ containers

    def zk_connect(self) -> str:
        return f"127.0.0.1:{self.zk_port}"

    def launch(self, name: str, main_class: str, props: dict[str, str]) -> None:
        raise ClusterError("the docker runtime does not launch single nodes yet")

    def run_tool(
        self, main_class: str, args: list[str], name: str, props: dict[str, str] | None = None
    ) -> str:
        raise ClusterError("the docker runtime does not run Kafka tools yet")

    def exit_code(self, name: str) -> int | None:
        return None if self.is_running(name) else 0

    def _host(self, name: str) -> str:
        return name.lower()

    def _run(self, name: str, role: str, ports: dict[str, tuple[str, int]]) -> Any:
        d = self.workdir / name
        (d / "logs").mkdir(parents=True, exist_ok=True)
        (d / "data").mkdir(parents=True, exist_ok=True)
        return self.client.containers.run(
            self.image,
            detach=True,
            name=f"hwchaos-{self.run_id}-{self._host(name)}"[:63],
            hostname=self._host(name),
            network=self._network.name,
            environment={"ROLE": role, "KAFKA_HEAP_OPTS": "-Xms64m -Xmx256m"},
            volumes={
                str(d / "config"): {"bind": "/config", "mode": "ro"},
                str(d / "data"): {"bind": "/data", "mode": "rw"},
                str(d / "logs"): {"bind": "/logs", "mode": "rw"},
            },
            ports=ports,
            labels={LABEL: self.run_id},
            mem_limit="512m",
        )

    def start(self) -> None:
        self._network = self.client.networks.create(
            f"hwchaos-{self.run_id}"[:63], driver="bridge", labels={LABEL: self.run_id}
        )
        zk_dir = self.workdir / "zookeeper" / "config"
        zk_dir.mkdir(parents=True, exist_ok=True)
        (zk_dir / "zookeeper.properties").write_text(
            render(zookeeper_properties("/data", 2181, host="0.0.0.0"))
        )
        self._containers["zookeeper"] = self._run(
            "zookeeper", "zookeeper", {"2181/tcp": ("127.0.0.1", self.zk_port)}
        )
        from harness.metadata.zk import ZkView

        self._wait(lambda: _zk_up(self.zk_connect()), "ZooKeeper")
        self.start_broker(CONTROLLER)
        with ZkView(self.zk_connect()) as zk:
            self._wait(lambda: zk.controller() == 0, "the controller broker")
            for path, doc in offsets_topic_znodes(0).items():
                import json

                zk.create(path, json.dumps(doc).encode())
            for name in self.brokers:
                if name != CONTROLLER:
                    self.start_broker(name)
            ids = tuple(sorted(b.broker_id for b in self.brokers.values()))
            self._wait(lambda: zk.live_brokers() == ids, f"brokers {ids} to register")

    def _wait(self, check: Any, what: str) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            try:
                if check():
                    return
            except Exception:  # not up yet
                pass
            time.sleep(0.25)  # polling interval of a bounded wait, not synchronisation
        self.close()
        raise ClusterError(f"timed out waiting for {what} (container logs in {self.workdir})")

    def start_broker(self, name: str) -> None:
        spec = self.brokers[name]
        if name in self._containers:
            self._containers[name].start()
            return
        host = self._host(name)
        props = broker_properties(
            self.version, spec.broker_id, host, 9092, "/data", "zookeeper:2181"
        )
        props.update(
            {
                "listeners": f"INTERNAL://0.0.0.0:9092,EXTERNAL://0.0.0.0:{spec.port}",
                "advertised.listeners": f"INTERNAL://{host}:9092,EXTERNAL://127.0.0.1:{spec.port}",
                "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
                "inter.broker.listener.name": "INTERNAL",
            }
        )
        props.update(spec.props)
        cfg = self.workdir / name / "config"
        cfg.mkdir(parents=True, exist_ok=True)
        (cfg / "server.properties").write_text(render(props))
        self._containers[name] = self._run(
            name, "broker", {f"{spec.port}/tcp": ("127.0.0.1", spec.port)}
        )

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for c in self._containers.values():
            with contextlib.suppress(Exception):
                c.remove(force=True)
        if self._network is not None:
            with contextlib.suppress(Exception):
                self._network.remove()
        with contextlib.suppress(Exception):
            self.client.close()

    # ------------------------------------------------------------------ interface

    def signal(self, name: str, sig: int) -> None:
        c = self._containers.get(name)
        if c is None:
            return
        with contextlib.suppress(Exception):
            if sig == signals.SIGSTOP:
                c.pause()
            elif sig == signals.SIGCONT:
                c.unpause()
            else:
                c.kill(signal=SIGNALS.get(signals.Signals(sig), str(int(sig))))

    def is_running(self, name: str) -> bool:
        c = self._containers.get(name)
        if c is None:
            return False
        with contextlib.suppress(Exception):
            c.reload()
            return c.status in ("running", "paused")
        return False

    def wait_exit(self, name: str, timeout: float) -> None:
        c = self._containers.get(name)
        if c is not None:
            c.wait(timeout=timeout)


def _zk_up(connect: str) -> bool:
    from harness.metadata.zk import ZkView

    with ZkView(connect, timeout=2.0):
        return True
