"""``hwchaos explore --confirm`` on real brokers: every counterexample played and classified.

Small bounds (one record) so each exploration finishes in seconds and yields two
counterexamples; the confirm plays them on 0.10.2.1 (``hw``) and 3.3.1 (``kip320`` with a
power loss), the two versions the issue names. Skipped with the one-line reason when the
release tree (or, for the docker twin, a daemon) is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.db.catalogue.versions import resolve_version
from harness.db.runtime.process import jvms_under
from harness.generator.confirm import (
    CLASSIFICATIONS,
    CONFIRMED,
    MISMATCH,
    NOT_VIOLATED,
    PREVENTED,
    unavailable,
)

pytest_plugins = ("pytester",)
pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]

CASES = {
    "hw-0.10.2.1": ("0.10.2.1", ["--protocol", "hw", "--records", "1", "--crashes", "2"]),
    "kip320-3.3.1": (
        "3.3.1",
        ["--protocol", "kip320", "--records", "1", "--crashes", "1", "--power-losses", "1"],
    ),
    # KRaft refuses the restart before the controller fenced B: prevented, as the model says
    "hw-4.0.0": ("4.0.0", ["--protocol", "hw", "--records", "1", "--crashes", "2"]),
}
ENTRY_KEYS = {
    "invariant",
    "steps",
    "file",
    "classification",
    "reason",
    "run_folder",
    "model_verdict",
    "observed",
    "seconds",
    "same_run_as",
}


def confirm_json(version: str, args: list[str], backend: str, tmp: Path) -> tuple[int, Any]:
    reason = unavailable(resolve_version(version), backend)
    if reason is not None:
        pytest.skip(reason)
    cmd = ["nice", "-n", "10", sys.executable, "-m", "harness.cli", "explore", *args]
    cmd += ["--confirm", "--kafka", version, "--backend", backend, "--json"]
    cmd += ["--out", str(tmp / "found"), "--runs", str(tmp / "runs")]
    res = subprocess.run(
        cmd, capture_output=True, text=True, cwd=ROOT, timeout=900, env=dict(os.environ)
    )
    assert res.returncode in (0, 1), res.stderr[-3000:]
    return res.returncode, json.loads(res.stdout)


# the docker twin of one case: same classification code, the containers' failover
RUNS = [(case, "local") for case in CASES] + [("hw-0.10.2.1", "docker")]


@pytest.mark.parametrize(("case", "backend"), RUNS)
def test_every_counterexample_is_played_and_classified(
    case: str, backend: str, tmp_path: Path
) -> None:
    version, args = CASES[case]
    rc, doc = confirm_json(version, args, backend, tmp_path)
    found = doc["counterexamples"]
    assert found, "the bounds are chosen to find counterexamples"
    confirm = doc["confirm"]
    assert confirm["kafka"] == version and confirm["backend"] == backend
    assert sum(confirm["counts"].values()) == len(found)
    assert list(confirm["counts"]) == list(CLASSIFICATIONS)
    folders = set()
    for i, cx in enumerate(found, start=1):
        assert set(cx) >= ENTRY_KEYS, set(cx) ^ ENTRY_KEYS
        assert cx["classification"] in CLASSIFICATIONS and cx["reason"], cx
        assert set(cx["observed"]) == {"verdict", "lost_acked", "divergent_offsets"}
        assert cx["model_verdict"]["profile"] == resolve_version(version).generation
        run = Path(cx["run_folder"])
        if cx["same_run_as"] is None:
            folders.add(run)
            verdict = json.loads((run / "verdict.json").read_text())
            assert verdict["verdict"] == cx["observed"]["verdict"]
            assert (run / "report.html").is_file() and (run / "scenario.yaml").is_file()
            if cx["classification"] == PREVENTED:
                # the model's reason and the harness's note, in the verdict and the report
                p = verdict["prevented"]
                assert p["reached"] and p["step"] == cx["model_verdict"]["prevented"]["step"]
                assert p["reason"] == cx["model_verdict"]["prevented"]["reason"]
                assert p["harness_note"] and verdict["model_match"]
                assert "<h2>Prevented</h2>" in (run / "report.html").read_text()
        else:
            first = found[cx["same_run_as"] - 1]
            assert cx["same_run_as"] < i and first["steps"] == cx["steps"]
            assert cx["classification"] == first["classification"]
    assert confirm["runs_played"] == len(folders)
    # every run after the first played on a kept cluster or on one started while the run
    # before it played (harness.generator.confirm._prestart_following; local runtime only)
    played = [c for c in found if c["same_run_as"] is None and not c.get("played_again")]
    for cx in played[1:] if backend == "local" else []:
        cluster = json.loads((Path(cx["run_folder"]) / "run.json").read_text())["extra"]["cluster"]
        assert cluster.get("reused") or cluster.get("prestarted"), (cx["run_folder"], cluster)
    assert rc == (1 if confirm["counts"][MISMATCH] else 0)
    # Every counterexample here is playable (controller failover for the unnoticed restarts)
    # and the model is right about each: prevented on KRaft; on ZooKeeper confirmed, or (hw on
    # 0.10.2.1) not violated as played: Kafka checkpoints the HW itself before the crash, and
    # the harness writes no model value into a broker, so the ordering as played keeps m1.
    assert confirm["counts"][MISMATCH] == 0, [c["reason"] for c in found]
    want = {PREVENTED} if case == "hw-4.0.0" else {CONFIRMED}
    if case == "hw-0.10.2.1":
        want = {CONFIRMED, NOT_VIOLATED}
    assert sum(confirm["counts"][w] for w in want) == len(found), [c["reason"] for c in found]
    assert jvms_under(tmp_path) == []


PREVENTED_ON_KRAFT = """\
name: restart-before-fence
brokers: [A, B]
leader: A
topic: {replication_factor: 2, min_insync_replicas: 2, unclean_leader_election: false}
producer: {acks: all}
steps:
  - produce: m1
  - fetch: B
  - fetch: B
  - crash: B
  - restart: B
  - crash: A
  - detect: A
"""


def test_run_of_a_predicted_prevention_passes_in_run_and_plugin(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """``hwchaos run`` exits 0 with verdict ``prevented``; a plugin item passes and says why."""
    reason = unavailable(resolve_version("4.0.0"), "local")
    if reason is not None:
        pytest.skip(reason)
    path = tmp_path / "restart-before-fence.yaml"
    path.write_text(PREVENTED_ON_KRAFT)
    cmd = ["nice", "-n", "10", sys.executable, "-m", "harness.cli", "run", str(path)]
    cmd += ["--kafka", "4.0.0", "--json", "--out", str(tmp_path / "runs")]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    doc = json.loads(res.stdout)
    assert doc["verdict"] == "prevented" and doc["model_match"]
    assert doc["prevented"]["step"] == 5 and doc["prevented"]["event"] == "restart B"
    assert "DuplicateBrokerRegistrationException" in doc["prevented"]["reason"]
    # played up to the prevented step: B holds m1 on disk, as the model says
    assert [r["record"] for r in doc["replicas"]["B"]] == ["m1"]

    pytester.makefile(".yaml", restart_before_fence=PREVENTED_ON_KRAFT)
    out = pytester.runpytest_subprocess(
        "-p", "hwchaos", "--hwchaos-kafka", "4.0.0", "-q", "-rA", "--hwchaos-out", "runs"
    )
    out.assert_outcomes(passed=1)
    assert "prevented as predicted at step 5 (restart B)" in out.stdout.str()
    assert jvms_under(tmp_path) == [] and jvms_under(pytester.path) == []
