"""Real brokers: the KIP-101 orderings played on Kafka and diffed against the model.

Runs when Kafka release trees are configured (``HWCHAOS_KAFKA_DISTS``, default
/opt/kafka-dists) and skips with the reason otherwise. Every test also checks that no JVM of
the run is left behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

from harness.db import BrokerUnavailable
from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.versions import CATALOGUE, resolve_version
from harness.db.runtime.docker import docker_available
from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from harness.trial import trial
from tests.verdicts import trial_realised, why

pytestmark = pytest.mark.broker

VERSIONS = ["0.10.2.1", "2.1.1", "3.3.1"]


_IMAGES: dict[str, str] = {}  # built once per session (and cached across sessions by hash)


def require(version: str, backend: str = "local") -> None:
    """Skip, with the one-line reason, when this backend cannot run this version here."""
    if backend == "docker":
        reason = docker_available()
        if reason is not None:
            pytest.skip(reason)
        if version not in _IMAGES:
            from harness.db.runtime.images import ImageMissing, ensure_image

            try:
                _IMAGES[version] = ensure_image(resolve_version(version), lambda m: None)
            except ImageMissing as exc:
                pytest.skip(str(exc))
        return
    try:
        find_tree(resolve_version(version))
    except BrokerUnavailable as exc:
        pytest.skip(str(exc))


def jvms_under(path: Path) -> list[str]:
    out = subprocess.run(["pgrep", "-af", "java"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(path) in line]


# (scenario, version) -> (lost_acked, divergent_offsets) observed on disk and predicted
EXPECTED = {
    ("kip101-scenario1", "0.10.2.1"): (["m2"], []),
    ("kip101-scenario2", "0.10.2.1"): (["m2"], [1]),
    ("kip101-scenario1", "2.1.1"): ([], []),
    ("kip101-scenario2", "2.1.1"): (["m2"], []),
    ("kip101-scenario1", "3.3.1"): ([], []),
    ("kip101-scenario2", "3.3.1"): (["m2"], []),
    # KRaft: 3.3 ignores unclean.leader.election.enable (scenario 1 ends offline, nothing
    # acknowledged is lost); 4.0 honours it (KAFKA-12670, 3.9) and elects A.
    ("kip101-scenario1", "3.3.1-kraft"): ([], []),
    ("kip101-scenario2", "3.3.1-kraft"): (["m2"], []),
    ("kip101-scenario1", "4.0.0"): ([], []),
    ("kip101-scenario2", "4.0.0"): (["m2"], []),
    # KIP-966: the last replica standing loses m1 without ELR, keeps it with ELR
    ("kip966-last-replica-standing", "4.0.0"): (["m1"], []),
    ("kip966-last-replica-standing", "4.0.0-elr"): ([], []),
}
KRAFT = {"3.3.1-kraft", "4.0.0", "4.0.0-elr"}


# The docker backend plays the same runs in containers: one run per version that crashes,
# restarts and loses a write (kip101-scenario2), and the ELR run; the other pairs are the
# same broker code in a JVM the local backend already runs (CI time, docs/ci.md).
IN_CONTAINERS = {(s, v) for s, v in EXPECTED if s == "kip101-scenario2"} | {
    ("kip966-last-replica-standing", "4.0.0-elr")
}
PLAYED = [(s, v, "local") for s, v in EXPECTED] + [
    (s, v, "docker") for s, v in EXPECTED if (s, v) in IN_CONTAINERS
]


@pytest.mark.parametrize(
    ("scenario", "version", "backend"), PLAYED, ids=[f"{s}-{v}-{b}" for s, v, b in PLAYED]
)
def test_kip101_orderings_on_real_brokers(
    scenario: str, version: str, backend: str, tmp_path: Path
) -> None:
    require(version, backend)
    sc = load_scenario(SCENARIO_DIR / f"{scenario}.yaml")
    (info, prediction, verdict, _record), run = trial_realised(
        lambda folder: trial(
            sc, resolve_version(version), backend, folder, "t", progress=lambda _m: None
        ),
        tmp_path / "run",
        lambda t: t.verdict,
    )
    assert verdict is not None, why(info, verdict, run)
    lost, div = EXPECTED[(scenario, version)]
    assert info.model_match, why(info, verdict, run)
    assert verdict.lost_acked == lost and verdict.divergent_offsets == div
    assert prediction.to_json()["lost_acked"] == lost
    if version in KRAFT:
        # the controller's epoch bookkeeping differs from ZooKeeper mode: the files must
        # still be what the model's epoch cache says, replica by replica
        assert verdict.epoch_checkpoints and verdict.checkpoint_mismatches == [], (
            verdict.epoch_checkpoints
        )
    for name in (
        "run.json",
        "replicas.parquet",
        "writes.parquet",
        "steps.parquet",
        "verdict.json",
        "report.html",
        "model.json",
        "scenario.yaml",
    ):
        assert (run / name).is_file(), name
    assert (run / "logs" / "A" / "server.log").is_file()
    assert jvms_under(tmp_path) == []


def hwchaos_containers(owner: str | None = None) -> list[str]:
    """The hwchaos containers of one harness process (default: this one).

    Never all of them: other test workers and other harnesses on the machine start and
    stop their own meanwhile, and a test that counted theirs failed or passed by timing.
    """
    import docker
    from harness.db.runtime.reaper import OWNER_LABEL, owner_id

    client = docker.from_env()  # type: ignore[attr-defined]
    flt = {"label": f"{OWNER_LABEL}={owner or owner_id()}"}
    found = client.api.containers(all=True, filters=flt)  # the low-level list: no inspect race
    return [c["Names"][0] for c in found]


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_ctrl_c_mid_run_leaves_no_jvm(backend: str, tmp_path: Path) -> None:
    require("0.10.2.1", backend)
    out = tmp_path / "runs"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            str(SCENARIO_DIR / "kip101-scenario2.yaml"),
            "--kafka",
            "0.10.2.1",
            "--out",
            str(out),
            "--backend",
            backend,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )

    from harness.db.runtime.reaper import owner_id

    owner = owner_id(proc.pid)  # the label of the containers the child harness starts

    @retry(stop=stop_after_delay(90), wait=wait_fixed(0.1), retry=retry_if_result(lambda n: n < 3))
    def brokers_running() -> int:
        if backend == "docker":
            return len(hwchaos_containers(owner))
        return len(jvms_under(out))

    try:
        brokers_running()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert jvms_under(out) == []
    if backend == "docker":
        assert hwchaos_containers(owner) == []


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_run_cli_json(backend: str, tmp_path: Path) -> None:
    require("0.10.2.1", backend)
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            str(SCENARIO_DIR / "kip101-scenario2.yaml"),
            "--kafka",
            "0.10.2.1",
            "--out",
            str(tmp_path),
            "--json",
            "--backend",
            backend,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = json.loads(res.stdout)
    assert res.returncode == 0, res.stderr[-2000:]
    assert out["model_match"] is True
    assert out["divergent_offsets"] == [1] and out["lost_acked"] == ["m2"]
    assert [e["record"] for e in out["replicas"]["A"]] == ["m1", "m2"]
    assert [e["record"] for e in out["replicas"]["B"]] == ["m1", "m3"]
    assert Path(out["run_folder"]).is_dir()


def test_unknown_version_is_one_line(tmp_path: Path) -> None:
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            str(SCENARIO_DIR / "kip101-scenario2.yaml"),
            "--kafka",
            "9.9.9",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2
    line = res.stderr.strip()
    assert "\n" not in line
    assert line.startswith("hwchaos run: unknown Kafka version '9.9.9' (known: 0.10.2.1, ")
    assert all(v in line for v in CATALOGUE), line


def test_three_controller_quorum(tmp_path: Path) -> None:
    """KRaft with three dedicated controllers: heartbeats find the active one, same verdict."""
    require("4.0.0")
    sc = load_scenario(SCENARIO_DIR / "kip101-scenario2.yaml")
    info, _p, verdict, _record = trial(
        sc,
        resolve_version("4.0.0"),
        "local",
        tmp_path / "run",
        "t",
        progress=lambda _m: None,
        controllers=3,
    )
    assert verdict is not None, why(info, verdict, tmp_path / "run")
    assert info.model_match and verdict.lost_acked == ["m2"], why(info, verdict, tmp_path / "run")
    for c in ("controller", "controller2", "controller3"):
        assert (tmp_path / "run" / "cluster" / c / "data" / "__cluster_metadata-0").is_dir(), c
    assert jvms_under(tmp_path) == []


def test_controllers_on_a_zookeeper_version_is_one_line(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", str(SCENARIO_DIR / "kip101-scenario2.yaml"),
         "--kafka", "3.3.1", "--controllers", "3", "--out", str(tmp_path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert res.returncode == 2
    assert res.stderr.strip() == "hwchaos run: --controllers 3: 3.3.1 is not a KRaft version"
