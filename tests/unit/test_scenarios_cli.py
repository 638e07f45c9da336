"""Scenario files, their error messages, the ``hwchaos model`` CLI and the explorer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from explorer.search import Bounds, counterexample_scenario, explore
from harness.cli import main
from harness.generator.scenarios import SCENARIO_DIR, catalogue, load_scenario
from reference_model.profiles import GENERATIONS, generation
from reference_model.run import run_scenario
from reference_model.scenario import ScenarioError, parse_scenario, to_document

BASE = {
    "brokers": ["A", "B"],
    "producer": {"acks": 1},
    "steps": [{"produce": "m1"}, {"fetch": "B"}],
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"steps": [{"produce": "m1"}, {"crsh": "B"}]}, "step 2: unknown event 'crsh'"),
        ({"steps": [{"crash": "Z"}]}, "step 1: unknown broker 'Z'"),
        ({"steps": [{"crash": None}]}, "step 1: crash needs a broker"),
        ({"steps": [{"produce": "m1"}, {"produce": "m1"}]}, "record ids must be unique"),
        ({"steps": []}, "'steps' must be a non-empty list"),
        ({"producer": {"acks": 2}}, "producer.acks must be 0, 1 or all"),
        ({"topic": {"min_insync_replicas": 3}}, "min_insync_replicas must be 1..2"),
        ({"topic": {"replication_factor": 3}}, "replication_factor 3 != 2 brokers"),
        ({"colour": "red"}, "unknown key 'colour' (valid: name, description"),
        ({"steps": [{"stale_checkpoint": "A"}]}, "stale_checkpoint needs {broker: X, hw: N}"),
        ({"steps": [{"crash": "A", "restart": "A"}]}, "step 1: a step is a mapping with one key"),
    ],
)
def test_malformed_scenarios_name_file_step_and_problem(change: dict, message: str) -> None:
    doc = {**BASE, **change}
    with pytest.raises(ScenarioError) as err:
        parse_scenario(doc, "bad.yaml")
    text = str(err.value)
    assert text.startswith("bad.yaml: ")
    assert message in text
    assert "\n" not in text


def test_invalid_yaml_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("steps:\n  - produce: m1\n   - crash: [\n")
    assert main(["model", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"hwchaos: {bad}") and "invalid YAML" in err
    assert "\n" not in err


def test_missing_file_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model", "no/such/file.yaml"]) == 2
    assert "no such scenario file" in capsys.readouterr().err


@pytest.mark.parametrize("path", catalogue(), ids=lambda p: p.stem)
def test_every_shipped_scenario_plays_under_every_generation(path: Path) -> None:
    sc = load_scenario(path)
    for gen in GENERATIONS:
        j = run_scenario(sc, gen).to_json()
        assert set(j["replicas"]) == set(sc.brokers)


def test_cli_json_reports_scenario1_loss() -> None:
    """The issue's acceptance command, run as a user would."""
    cmd = [
        sys.executable,
        "-m",
        "harness.cli",
        "model",
        str(SCENARIO_DIR / "kip101-scenario1.yaml"),
        "--json",
    ]
    hw = json.loads(
        subprocess.run(
            [*cmd, "--protocol", "hw"], check=True, capture_output=True, text=True
        ).stdout
    )
    assert "m2" in hw["lost_acked"]
    for key in ("replicas", "hw", "leo", "epochs", "acked", "lost_acked", "divergent_offsets"):
        assert key in hw
    assert all(isinstance(o, int) for o in hw["divergent_offsets"])
    k101 = json.loads(
        subprocess.run(
            [*cmd, "--protocol", "kip101"], check=True, capture_output=True, text=True
        ).stdout
    )
    assert k101["lost_acked"] == []
    assert k101["epochs"]["A"] == [[0, 0]]


def test_overrides_change_the_prediction() -> None:
    sc = load_scenario(SCENARIO_DIR / "kip101-scenario1.yaml")
    # acks=all with min.insync=2: m2 is acknowledged only once A's fetch moved the HW; the
    # loss under hw remains (that is the point of scenario 1).
    j = run_scenario(sc.with_overrides(acks="all", min_insync=2), "hw").to_json()
    assert j["lost_acked"] == ["m2"]
    assert sc.with_overrides(rf=3).rf == 2  # named brokers keep their replication factor
    flexible = load_scenario(SCENARIO_DIR / "acks-all-min-isr2-one-crash.yaml")
    j4 = run_scenario(flexible.with_overrides(rf=4), "kip320").to_json()
    assert set(j4["replicas"]) == {"A", "B", "C", "D"}
    assert all(len(v) == 3 for v in j4["replicas"].values() if v)
    batched = run_scenario(sc.with_overrides(records=3), "hw").to_json()
    assert len(batched["acked"]) == 6
    with pytest.raises(ScenarioError, match="exceeds replication factor 1"):
        flexible.with_overrides(rf=1)


def test_explorer_finds_scenario1_under_hw_and_nothing_under_kip320(tmp_path: Path) -> None:
    hw = explore(generation("hw"), Bounds())
    assert hw.exhausted
    kinds = {cx.invariant for cx in hw.counterexamples}
    assert "acked_lost" in kinds
    cx = next(c for c in hw.counterexamples if c.invariant == "acked_lost")
    # The KIP-101 scenario 1 shape: a follower restarts (truncating to its checkpointed HW)
    # and is then elected when the leader's failure is detected.
    kinds_in_order = [e.kind for e in cx.events]
    assert "restart" in kinds_in_order and kinds_in_order[-1] == "detect"
    sc = counterexample_scenario(cx, generation("hw"), "all", 2, False, 2, "found")
    path = tmp_path / "found.yaml"
    path.write_text(yaml.safe_dump(to_document(sc)))
    replay = run_scenario(load_scenario(path), "hw").to_json()
    assert replay["lost_acked"], "the written counterexample must replay the loss"
    assert run_scenario(load_scenario(path), "kip320").to_json()["lost_acked"] == []
    k320 = explore(generation("kip320"), Bounds())
    assert k320.exhausted and k320.counterexamples == []
    assert k320.states > 10_000


def test_explore_cli_json_and_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["explore", "--protocol", "hw", "--json", "--out", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert out["states"] > 0 and out["states_per_second"] > 0
    assert out["counterexamples"]
    written = Path(out["counterexamples"][0]["file"])
    assert main(["model", str(written), "--protocol", "hw", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["lost_acked"]
    rc = main(["explore", "--protocol", "kip320", "--json", "--out", str(tmp_path / "k")])
    assert rc == 0
    assert json.loads(capsys.readouterr().out)["counterexamples"] == []
