"""The plugin's command-line options and what this machine can run (one-line skip reasons)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from harness.db.catalogue.versions import CATALOGUE, KafkaVersion, resolve_version
from reference_model.profiles import GENERATIONS, generation

if TYPE_CHECKING:
    from harness.generator.warm import WarmClusters

RUN_FOLDER = "hwchaos_run_folder"
DEFAULT_VERSION = "3.3.1"
DEFAULT_BROKERS = 3


# ---------------------------------------------------------------- options and configuration


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("hwchaos", "hwchaos: Kafka replication chaos tests")
    g.addoption(
        "--hwchaos-kafka",
        default="",
        metavar="V1,V2",
        help=f"play every scenario file on these Kafka versions ({', '.join(CATALOGUE)})",
    )
    g.addoption(
        "--hwchaos-profile",
        "--hwchaos-protocol",
        dest="hwchaos_protocol",
        default="",
        metavar="P1,P2",
        help=f"also check every scenario file against the model alone ({', '.join(GENERATIONS)})",
    )
    g.addoption(
        "--hwchaos-backend",
        default="local",
        choices=["local", "docker"],
        help="how clusters run: local JVMs (release trees) or docker containers",
    )
    g.addoption(
        "--hwchaos-fail-on-loss",
        action="store_true",
        help="fail a scenario test whose run loses an acknowledged write or leaves replicas "
        "divergent, even when the model predicted it (a scenario's expect: still decides the "
        "parts it gives)",
    )
    g.addoption(
        "--hwchaos-fresh",
        action="store_true",
        help="a fresh cluster for every scenario item (default: items of one version and "
        "cluster configuration reuse one running cluster per session, checked clean and "
        "reset between them)",
    )
    g.addoption(
        "--hwchaos-out",
        default="hwchaos-runs",
        help="parent folder of run folders (default: ./hwchaos-runs)",
    )


@dataclass(frozen=True)
class Settings:
    versions: tuple[str, ...]
    protocols: tuple[str, ...]
    backend: str
    out: Path
    fail_on_loss: bool = False
    fresh: bool = False

    @property
    def active(self) -> bool:
        return bool(self.versions or self.protocols)


_SETTINGS = pytest.StashKey[Settings]()


def _split(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def pytest_configure(config: pytest.Config) -> None:
    from harness.pytest_plugin.workers import claim_ports

    claim_ports(config)  # under pytest-xdist: this worker's own ports
    config.addinivalue_line("markers", "broker: needs real Kafka brokers (hwchaos)")
    config.addinivalue_line(
        "markers",
        "hwchaos(version='3.3.1', brokers=3, network=False): Kafka version and size of the "
        "hwchaos_cluster fixture; network=True puts each node in its own network namespace",
    )
    versions = _split(config.getoption("hwchaos_kafka"))
    protocols = _split(config.getoption("hwchaos_protocol"))
    for v in versions:
        try:
            resolve_version(v)
        except ValueError as exc:
            raise pytest.UsageError(f"--hwchaos-kafka: {exc}") from None
    for p in protocols:
        try:
            generation(p)  # a generation name, a release number or a catalogue name
        except ValueError:
            raise pytest.UsageError(
                f"--hwchaos-profile: unknown profile {p!r} (known: {', '.join(GENERATIONS)}, "
                "or a Kafka release such as 2.0.1)"
            ) from None
    # Resolved once, against the directory pytest was started in: JVMs run elsewhere.
    out = Path(str(config.getoption("hwchaos_out"))).expanduser()
    if not out.is_absolute():
        out = Path(config.invocation_params.dir) / out
    config.stash[_SETTINGS] = Settings(
        versions,
        protocols,
        str(config.getoption("hwchaos_backend")),
        out.resolve(),
        bool(config.getoption("hwchaos_fail_on_loss")),
        bool(config.getoption("hwchaos_fresh")),
    )


_WARM = pytest.StashKey["WarmClusters"]()


def warm_clusters(config: pytest.Config) -> WarmClusters | None:
    """This session's (this worker's, under xdist) warm clusters; None with --hwchaos-fresh.

    Made at the first broker item; :func:`pytest_unconfigure` closes them.
    """
    if _settings(config).fresh:
        return None
    if _WARM not in config.stash:
        from harness.generator.warm import WarmClusters

        # beside the run folders (per-process dir names, so xdist workers do not collide)
        config.stash[_WARM] = WarmClusters(_settings(config).out / "warm-clusters")
    return config.stash[_WARM]


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the session's warm clusters (each cluster's reaper covers a killed session),
    then give back this worker's port range."""
    from harness.pytest_plugin.workers import release_ports

    warm = config.stash.get(_WARM, None)
    try:
        if warm is not None:
            warm.close()
    finally:
        release_ports(config)


def _settings(config: pytest.Config) -> Settings:
    return config.stash[_SETTINGS]


def unavailable(version: KafkaVersion, backend: str) -> str | None:
    """Why this machine cannot run ``version`` on ``backend``, in one line; None if it can."""
    if backend == "docker":
        from harness.db.runtime.docker import docker_available, image_for

        reason = docker_available()
        return reason if reason is not None else _missing_image(image_for(version))
    from harness.db.runtime.local import local_unavailable

    return local_unavailable(version)


def _missing_image(image: str) -> str | None:
    """One line when the docker backend's image for a version is not on this daemon."""
    from docker.errors import ImageNotFound

    import docker

    client = docker.from_env(timeout=10)  # type: ignore[attr-defined]
    try:
        client.images.get(image)
    except ImageNotFound:
        return f"no image {image} on the Docker daemon (build it: see docker/README.md)"
    except Exception as exc:  # the SDK raises several unrelated types here
        return f"cannot inspect image {image}: {str(exc).splitlines()[0][:160]}"
    finally:
        client.close()
    return None


def _unique(folder: Path) -> Path:
    """A new, empty folder: two items of the same scenario and version in one second get
    distinct ones, even in two pytest-xdist workers (the folder is claimed by creating it,
    which only one process can do)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    candidate, n = folder, 1
    while True:
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            n += 1
            candidate = folder.with_name(f"{folder.name}-{n}")
