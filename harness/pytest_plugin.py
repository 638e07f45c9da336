"""pytest plugin ``hwchaos``: scenario files as tests, and fixtures for your own chaos tests.

Scenario files as tests::

    pytest -p hwchaos --hwchaos-kafka 0.10.2.1,2.1.1,3.3.1 [--hwchaos-backend local|docker] \\
        [--hwchaos-protocol hw,kip320] [--hwchaos-out runs] scenarios/

collects every scenario file x Kafka version (and x model generation with
``--hwchaos-protocol``) as one test item. A broker item plays the scenario on a fresh
cluster (:func:`harness.generator.runner.run_on_brokers`) and fails when the brokers
disagree with the model, with the per-replica diff (predicted vs observed logs, the first
differing step) in the message. A scenario's optional ``expect:`` block (``lost_acked``,
``divergent_offsets``, ``replicas``) is checked against what the brokers did (broker
items) or what the model predicts (model items). The run folder is attached to the report
as the ``hwchaos_run_folder`` user property, so ``--junitxml`` carries it.

Without any ``--hwchaos-*`` option nothing is collected: the plugin is registered through
the ``pytest11`` entry point and so is loaded in every pytest session of the environment.

Fixtures for application tests (see the README): ``hwchaos_cluster`` (a running cluster;
version and size from ``@pytest.mark.hwchaos(version=..., brokers=N)``, else the first
``--hwchaos-kafka`` version, else 3.3.1 with 3 brokers), ``hwchaos_nemesis`` (crash, power
loss, pause, resume, clean stop, restart, partition where the backend can) and
``hwchaos_readback`` (every replica's log as written on disk). Whatever this machine lacks
(a release tree, java, a Docker daemon) skips the test with a one-line reason.
"""

from __future__ import annotations

import json
import re
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.db import PARTITION, TOPIC, Cluster, TopicSpec
from harness.db.versions import CATALOGUE, KafkaVersion, resolve_version
from harness.metadata import PartitionView
from reference_model.generations import GENERATIONS, generation
from reference_model.scenario import Scenario, ScenarioError

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
        "--hwchaos-protocol",
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

    @property
    def active(self) -> bool:
        return bool(self.versions or self.protocols)


_SETTINGS = pytest.StashKey[Settings]()


def _split(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def pytest_configure(config: pytest.Config) -> None:
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
                f"--hwchaos-protocol: unknown generation {p!r} (known: {', '.join(GENERATIONS)}, "
                "or a Kafka release such as 2.0.1)"
            ) from None
    # Resolved once, against the directory pytest was started in: JVMs run elsewhere.
    out = Path(str(config.getoption("hwchaos_out"))).expanduser()
    if not out.is_absolute():
        out = Path(config.invocation_params.dir) / out
    config.stash[_SETTINGS] = Settings(
        versions, protocols, str(config.getoption("hwchaos_backend")), out.resolve()
    )


def _settings(config: pytest.Config) -> Settings:
    return config.stash[_SETTINGS]


def unavailable(version: KafkaVersion, backend: str) -> str | None:
    """Why this machine cannot run ``version`` on ``backend``, in one line; None if it can."""
    if backend == "docker":
        from harness.db.containers import docker_available, image_for

        reason = docker_available()
        return reason if reason is not None else _missing_image(image_for(version))
    from harness.db.local import local_unavailable

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


# ---------------------------------------------------------------- scenario files as tests


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    settings = _settings(parent.config)
    if not settings.active or file_path.suffix not in (".yaml", ".yml"):
        return None
    if not _looks_like_scenario(file_path):
        return None
    collector: ScenarioFile = ScenarioFile.from_parent(parent, path=file_path)
    return collector


def _looks_like_scenario(path: Path) -> bool:
    """A YAML file with a top-level ``steps:`` key (other YAML files are not ours)."""
    try:
        head = path.read_bytes()[:65536]
    except OSError:
        return False
    return re.search(rb"(?m)^steps\s*:", head) is not None


class ScenarioFile(pytest.File):
    """One scenario file: one item per Kafka version and per model generation."""

    def collect(self) -> Iterator[pytest.Item]:
        from harness.generator.scenarios import load_scenario

        settings = _settings(self.config)
        try:
            scenario = load_scenario(self.path)
        except ScenarioError as exc:
            yield BadScenarioItem.from_parent(self, name=self.path.stem, message=str(exc))
            return
        for v in settings.versions:
            yield ScenarioItem.from_parent(
                self, name=f"{scenario.name}[{v}]", scenario=scenario, target=v
            )
        for p in settings.protocols:
            yield ScenarioItem.from_parent(
                self, name=f"{scenario.name}[model:{p}]", scenario=scenario, target=f"model:{p}"
            )


class HwchaosFailure(AssertionError):
    """The brokers, the model or the ``expect:`` block disagree; the message is the diff."""


class BadScenarioItem(pytest.Item):
    """A scenario file that does not load: fails with the loader's one-line message."""

    def __init__(self, *, message: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.message = message

    def runtest(self) -> None:
        raise HwchaosFailure(self.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        return self.message

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.name


class ScenarioItem(pytest.Item):
    """One scenario on one target: a Kafka version, or ``model:<generation>``."""

    def __init__(self, *, scenario: Scenario, target: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.scenario = scenario
        self.target = target
        if not target.startswith("model:"):
            self.add_marker(pytest.mark.broker)

    def runtest(self) -> None:
        if self.target.startswith("model:"):
            self._run_model(self.target.split(":", 1)[1])
        else:
            self._run_brokers(resolve_version(self.target))

    def _run_model(self, protocol: str) -> None:
        from reference_model.run import run_scenario

        pj = run_scenario(self.scenario, protocol).to_json()
        predicted = {n: [e["record"] for e in log] for n, log in pj["replicas"].items()}
        problems = expect_problems(
            self.scenario, pj["lost_acked"], pj["divergent_offsets"], predicted
        )
        if problems:
            raise HwchaosFailure(
                "\n".join(
                    [
                        f"{self.scenario.name} under the model ({protocol}): expect: does not hold",
                        *problems,
                        *replica_table(predicted, None, _expected_logs(self.scenario)),
                        *_lost_steps(self.scenario, pj),
                    ]
                )
            )

    def _run_brokers(self, version: KafkaVersion) -> None:
        from harness.generator.runner import run_on_brokers

        settings = _settings(self.config)
        reason = unavailable(version, settings.backend)
        if reason is not None:
            pytest.skip(reason)
        run_id = f"{self.scenario.name}__{version.name}__{time.strftime('%Y%m%dT%H%M%S')}"
        folder = _unique(settings.out / run_id)
        self.user_properties.append((RUN_FOLDER, str(folder)))
        self.add_report_section("call", "hwchaos", f"run folder: {folder}")
        run_on_brokers(self.scenario, version.name, settings.backend, folder, folder.name)
        doc = json.loads((folder / "verdict.json").read_text())
        where = f"{self.scenario.name} on Kafka {version.name} ({version.generation})"
        verdict = doc.get("verdict")
        failure = str(doc.get("extra", {}).get("failure", ""))
        if verdict == "step_prevented":
            # Not a skip: the model does not predict this step prevented on this version, so
            # the harness failing to play it is a gap (issue 9), not a property of Kafka.
            raise HwchaosFailure(
                f"{where}: step_prevented (the model does not predict it): {failure}\n"
                f"run folder: {folder}"
            )
        detail = doc.get("verdict_detail") or {}
        hw = detail.get("hw") or {}
        if hw:
            # The per-step HW check, for --junitxml: agreement counts and the first step.
            self.user_properties.append(("hwchaos_hw_source", str(hw.get("source", ""))))
            self.user_properties.append(
                ("hwchaos_hw_steps", f"{hw.get('steps_agreeing')}/{hw.get('steps_compared')}")
            )
            self.user_properties.append(("hwchaos_hw_first_step", str(hw.get("first_step"))))
        if verdict == "prevented":
            p = doc.get("prevented") or {}
            self.add_report_section(
                "call",
                "hwchaos",
                f"prevented as predicted at step {p.get('step')} ({p.get('event')}): "
                f"{p.get('reason')}; harness: {p.get('harness_note')}",
            )
            # The logs up to that step matched the model; the scenario's ``expect`` block
            # describes the whole ordering, which this version never lets happen.
            return
        if verdict not in ("match", "model_mismatch"):
            raise HwchaosFailure(f"{where}: {verdict}: {failure}\nrun folder: {folder}")
        predicted, observed = read_replicas(folder)
        lines: list[str] = []
        if verdict == "model_mismatch":
            step = detail.get("first_differing_step")
            lines.append(
                f"{where}: MODEL MISMATCH, "
                + (
                    f"first differing step {step}: {self._step_text(step)}"
                    if step
                    else "first differing step: none in the per-step LEOs (only the records differ)"
                )
            )
            lines += replica_table(predicted, observed, None)
            lines += _diff_rows(detail.get("differences", []))
            lines.append(
                f"lost acknowledged: predicted {detail.get('predicted_lost_acked')} observed "
                f"{detail.get('lost_acked')}; divergent offsets: predicted "
                f"{detail.get('predicted_divergent_offsets')} observed "
                f"{detail.get('divergent_offsets')}"
            )
        problems = expect_problems(
            self.scenario, list(doc["lost_acked"]), list(doc["divergent_offsets"]), observed
        )
        if problems:
            if not lines:
                lines.append(f"{where}: expect: does not hold (the model agrees with the brokers)")
                lines += replica_table(predicted, observed, _expected_logs(self.scenario))
            else:
                lines.append("expect: does not hold either")
            lines += problems
        if lines:
            raise HwchaosFailure("\n".join([*lines, f"run folder: {folder}"]))

    def _step_text(self, step: int | None) -> str:
        if step is None or not 1 <= step <= len(self.scenario.steps):
            return ""
        return self.scenario.steps[step - 1].describe(self.scenario.brokers)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, HwchaosFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"hwchaos: {self.name}"


def _unique(folder: Path) -> Path:
    """Two items of the same scenario and version in one second get distinct folders."""
    candidate, n = folder, 1
    while candidate.exists():
        n += 1
        candidate = folder.with_name(f"{folder.name}-{n}")
    return candidate


def read_replicas(folder: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Predicted and observed final logs (records in offset order) from a run folder."""
    import pyarrow.parquet as pq

    df = pq.read_table(folder / "replicas.parquet").to_pandas().sort_values(["replica", "offset"])
    out: dict[str, dict[str, list[str]]] = {"predicted": {}, "observed": {}}
    for (source, replica), g in df.groupby(["source", "replica"]):
        out[str(source)][str(replica)] = [str(r) for r in g["record"]]
    return out["predicted"], out["observed"]


def _expected_logs(s: Scenario) -> dict[str, list[str]] | None:
    if s.expect is None or s.expect.replicas is None:
        return None
    return {n: list(r) for n, r in s.expect.replicas}


def expect_problems(
    s: Scenario, lost: list[str], divergent: list[int], logs: dict[str, list[str]]
) -> list[str]:
    """One line per part of the scenario's ``expect:`` block that ``logs`` etc. break."""
    e = s.expect
    if e is None:
        return []
    out = []
    if e.lost_acked is not None and sorted(lost) != list(e.lost_acked):
        out.append(f"  lost_acked: expected {list(e.lost_acked)}, got {sorted(lost)}")
    if e.divergent_offsets is not None and sorted(divergent) != list(e.divergent_offsets):
        out.append(
            f"  divergent_offsets: expected {list(e.divergent_offsets)}, got {sorted(divergent)}"
        )
    for name, want in e.replicas or ():
        got = logs.get(name, [])
        if list(want) != got:
            at = _first_difference(list(want), got)
            out.append(
                f"  replicas.{name}: expected {list(want)}, got {got} (first differs at offset "
                f"{at})"
            )
    return out


def _first_difference(a: list[str], b: list[str]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def replica_table(
    predicted: dict[str, list[str]],
    observed: dict[str, list[str]] | None,
    expected: dict[str, list[str]] | None,
) -> list[str]:
    """Per-replica final logs side by side, with the first offset where they part."""
    cols = [("predicted", predicted)]
    if observed is not None:
        cols.append(("observed", observed))
    if expected is not None:
        cols.append(("expected", expected))
    names = sorted({n for _, logs in cols for n in logs})
    width = max([10, *(len(" ".join(log)) for _, c in cols for log in c.values())]) + 2
    head = "  replica  " + "".join(f"{title:<{width}}" for title, _ in cols)
    lines = ["per-replica logs (records in offset order):", head]
    for n in names:
        logs = [c.get(n, []) for _, c in cols]
        cells = "".join(f"{(' '.join(log) or '-'):<{width}}" for log in logs)
        note = ""
        if any(log != logs[0] for log in logs[1:]):
            at = min(_first_difference(logs[0], log) for log in logs[1:] if log != logs[0])
            note = f"<- differs at offset {at}"
        lines.append(f"  {n:<9}{cells}{note}".rstrip())
    return lines


def _diff_rows(differences: list[dict[str, Any]]) -> list[str]:
    if not differences:
        return []
    lines = ["differing positions:"]
    for d in differences[:20]:
        lines.append(
            f"  {d.get('replica')} offset {d.get('offset')}: predicted {d.get('predicted')} "
            f"observed {d.get('observed')} ({d.get('status')})"
        )
    if len(differences) > 20:
        lines.append(f"  ... {len(differences) - 20} more")
    return lines


def _lost_steps(s: Scenario, pj: dict[str, Any]) -> list[str]:
    steps = pj.get("lost_steps", {})
    return [
        f"model: {rec} lost at step {k}: {s.steps[k - 1].describe(s.brokers)}"
        for rec, k in sorted(steps.items())
        if 1 <= k <= len(s.steps)
    ]


# ---------------------------------------------------------------- fixtures


class HwchaosCluster:
    """A running cluster for an application's own test: bootstrap, topics, leaders."""

    def __init__(self, cluster: Cluster, version: KafkaVersion, names: list[str]) -> None:
        self.cluster = cluster
        self.version = version
        self.names = names

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap()

    @property
    def workdir(self) -> Path:
        return self.cluster.workdir

    def create_topic(
        self,
        name: str = TOPIC,
        replicas: list[str] | None = None,
        min_insync: int = 1,
        unclean: bool = False,
        timeout: float = 60.0,
    ) -> str:
        """Create a one-partition topic on ``replicas`` (default: every broker, first leads)
        and wait until it has a leader; returns the leader's name."""
        spec = TopicSpec(replicas or list(self.names), min_insync, unclean, name=name)
        self.cluster.create_topic(spec)
        return self.wait_for_leader(name, timeout=timeout)

    def leader(self, topic: str = TOPIC) -> str | None:
        """The partition's leader as the controller recorded it (None: offline)."""
        view = self._view(topic)
        if view is None or view.leader < 0:
            return None
        return self._name(view.leader)

    def isr(self, topic: str = TOPIC) -> list[str]:
        view = self._view(topic)
        return [] if view is None else [self._name(b) for b in view.isr]

    def _view(self, topic: str) -> PartitionView | None:
        """The controller's record of the partition (ZooKeeper or KRaft metadata)."""
        meta = self.cluster.metadata()
        try:
            return meta.partition(topic, PARTITION)
        finally:
            meta.close()

    def wait_for_leader(
        self, topic: str = TOPIC, not_: str | None = None, timeout: float = 60.0
    ) -> str:
        """Wait (bounded) for a leader other than ``not_``; returns its name."""
        from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

        @retry(
            stop=stop_after_delay(timeout),
            wait=wait_fixed(0.2),
            retry=retry_if_result(lambda who: who is None or who == not_),
            reraise=True,
        )
        def poll() -> str | None:
            return self.leader(topic)

        try:
            who = poll()
        except Exception:
            who = None
        if who is None or who == not_:
            raise TimeoutError(
                f"no leader for {topic}-{PARTITION}"
                + (f" other than {not_}" if not_ else "")
                + f" after {timeout:.0f}s"
            )
        return who

    def _name(self, broker_id: int) -> str:
        for n, spec in self.cluster.brokers.items():
            if spec.broker_id == broker_id:
                return n
        return str(broker_id)


class HwchaosNemesis:
    """Faults on one cluster, by broker name. ``crash`` and ``power_loss`` also make the
    controller notice now (the registration is removed, as session expiry would)."""

    def __init__(self, cluster: HwchaosCluster) -> None:
        self.c = cluster
        self.cluster = cluster.cluster

    def crash(self, name: str, detect: bool = True) -> None:
        """SIGKILL: the page cache survives, so every appended byte stays on disk."""
        from harness.nemesis import faults

        faults.crash(self.cluster, name)
        if detect:
            self._detect(name)

    def power_loss(self, name: str, keep_offset: int | None = None, detect: bool = True) -> int:
        """Crash and lose the unflushed tail: the log is cut at ``keep_offset`` (default: the
        recovery point Kafka checkpointed, i.e. what it had fsynced). Returns bytes lost."""
        from harness.nemesis import faults

        if keep_offset is None:
            keep_offset = self._recovery_point(name)
        lost = faults.power_loss(self.cluster, name, keep_offset)
        if detect:
            self._detect(name)
        return lost

    def pause(self, name: str) -> None:
        """SIGSTOP: alive to the OS, silent to everyone else."""
        self.cluster.signal(name, signal.SIGSTOP)

    def resume(self, name: str) -> None:
        self.cluster.signal(name, signal.SIGCONT)

    def clean_stop(self, name: str) -> None:
        from harness.nemesis import faults

        faults.clean_stop(self.cluster, name)

    def restart(self, name: str) -> None:
        """Start a stopped or crashed broker again (same id, port and data dir)."""
        self.cluster.start_broker(name)

    def partition(
        self, src: str | list[str], dst: str | list[str], direction: str = "both"
    ) -> list[tuple[str, str]]:
        """Cut the links src -> dst (and back unless ``one-way``): every packet dropped.

        Needs ``@pytest.mark.hwchaos(..., network=True)`` (local backend, root): each node
        then runs in its own network namespace. Peers: broker names, ``controller``,
        ``zookeeper``, ``client`` (the test's own clients)."""
        from harness.nemesis import faults

        return faults.partition(self.cluster, src, dst, direction)  # type: ignore[arg-type]

    def isolate(self, name: str) -> list[tuple[str, str]]:
        """Cut ``name`` from every other node; the test's clients still reach it."""
        from harness.nemesis import faults

        return faults.isolate(self.cluster, name)

    def heal(self) -> list[tuple[str, str]]:
        """Restore every cut link."""
        from harness.nemesis import faults

        return faults.heal(self.cluster)

    def _detect(self, name: str) -> None:
        """What the expiry of its session (ZooKeeper) or a fencing (KRaft) does, now."""
        self.cluster.declare_dead(name)

    def _recovery_point(self, name: str, topic: str = TOPIC) -> int:
        from harness.readback.checkpoints import read_offset_checkpoint

        path = self.cluster.log_dir(name) / "recovery-point-offset-checkpoint"
        if not path.exists():
            return 0
        return read_offset_checkpoint(path).get((topic, PARTITION), 0)


Readback = Callable[..., dict[str, list[tuple[int, int, str]]]]


def _marker_args(request: pytest.FixtureRequest) -> tuple[str, int, bool]:
    marker = request.node.get_closest_marker("hwchaos")
    kwargs = dict(marker.kwargs) if marker is not None else {}
    versions = _settings(request.config).versions
    version = str(kwargs.get("version") or (versions[0] if versions else DEFAULT_VERSION))
    brokers = int(kwargs.get("brokers", DEFAULT_BROKERS))
    if not 1 <= brokers <= 5:
        raise pytest.UsageError(f"@pytest.mark.hwchaos: brokers must be 1..5, got {brokers}")
    return version, brokers, bool(kwargs.get("network", False))


@pytest.fixture
def hwchaos_cluster(request: pytest.FixtureRequest) -> Iterator[HwchaosCluster]:
    """A started cluster (ZooKeeper, a controller broker, N replica brokers A, B, C...)."""
    name, size, network = _marker_args(request)
    try:
        version = resolve_version(name)
    except ValueError as exc:
        raise pytest.UsageError(f"@pytest.mark.hwchaos: {exc}") from None
    settings = _settings(request.config)
    reason = unavailable(version, settings.backend)
    if reason is not None:
        pytest.skip(reason)
    if network:
        from harness.nemesis.network import network_available

        why = network_available()
        if settings.backend != "local" or why is not None:
            pytest.skip(f"network partitions: {why or 'the fixture needs the local backend'}")
    from harness.generator.runner import make_cluster

    names = [chr(ord("A") + i) for i in range(size)]
    test = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:80]
    run_id = f"{test}__{version.name}__{time.strftime('%Y%m%dT%H%M%S')}"
    workdir = _unique(settings.out / "fixtures" / run_id)
    request.node.user_properties.append((RUN_FOLDER, str(workdir)))
    if network:
        from harness.db.local import LocalCluster

        cluster: Cluster = LocalCluster(version, names, workdir, network=True)
    else:
        cluster = make_cluster(version, settings.backend, names, workdir, run_id)
    try:
        cluster.start()
        yield HwchaosCluster(cluster, version, names)
    finally:
        cluster.close()


@pytest.fixture
def hwchaos_nemesis(hwchaos_cluster: HwchaosCluster) -> HwchaosNemesis:
    """Faults on the ``hwchaos_cluster``'s brokers, by name."""
    return HwchaosNemesis(hwchaos_cluster)


@pytest.fixture
def hwchaos_readback(hwchaos_cluster: HwchaosCluster) -> Readback:
    """``hwchaos_readback(topic)``: {broker: [(offset, leader epoch, record id)]} read from
    every replica's segment files on disk (record id = key, else value)."""
    from harness.readback.logformat import read_partition_dir

    def read(topic: str = TOPIC) -> dict[str, list[tuple[int, int, str]]]:
        out: dict[str, list[tuple[int, int, str]]] = {}
        for name in hwchaos_cluster.names:
            pdir = hwchaos_cluster.cluster.partition_dir(name, topic)
            out[name] = (
                [(r.offset, r.epoch, r.record_id) for r in read_partition_dir(pdir, verify=False)]
                if pdir.is_dir()
                else []
            )
        return out

    return read
