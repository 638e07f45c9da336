"""Real brokers: the HW observed per step, the consumer oracle, and the mutation proof.

The mutation test is the proof that the per-step HW check is not circular: a real run's
observations (HWs the brokers checkpointed themselves) are judged again against a copy of
the model's output with one HW changed, and the run must fail at exactly that step.
Skips with the one-line reason when no Kafka release tree is configured.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.checker.diff import Verdict
from harness.checker.hw import judge_hw
from harness.checker.realised import realised_hws
from harness.checker.verdicts import two_verdicts
from harness.db.catalogue.versions import resolve_version
from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from harness.trial import trial
from tests.system.test_brokers import require
from tests.verdicts import trial_realised, why

pytest_plugins = ("pytester",)

pytestmark = pytest.mark.broker


@pytest.mark.parametrize("version", ["0.10.2.1", "4.0.0"])
def test_kip101_scenario1_hw_per_step_and_mutation(version: str, tmp_path: Path) -> None:
    require(version)
    sc = load_scenario(SCENARIO_DIR / "kip101-scenario1.yaml")
    (info, prediction, verdict, _record), folder = trial_realised(
        lambda where: trial(sc, resolve_version(version), "local", where, "hw", lambda _m: None),
        tmp_path / "run",
        lambda t: t.verdict,
    )
    assert verdict is not None, why(info, verdict, folder)
    observations = [
        SimpleNamespace(**o) for o in json.loads((folder / "observations.json").read_text())
    ]
    # every step has every replica's HW as its broker checkpointed it
    assert len(observations) == len(sc.steps)
    assert all(set(o.hw) == set(sc.brokers) for o in observations)
    hw = verdict.hw
    assert hw["source"] == "replication-offset-checkpoint"
    assert hw["steps_compared"] == len(sc.steps)
    # the writes into the brokers: none from the model (this scenario makes none at all)
    assert json.loads((folder / "writes.json").read_text()) == []
    # the consumer oracle: before 0.11 a consumer of B read m2, which A's election then lost
    cons = verdict.consumer
    read_lost = [x["record"] for x in cons["observed"]["read_then_lost"]]
    assert read_lost == (["m2"] if version == "0.10.2.1" else []), cons["summary"]
    assert cons["anomalies_as_predicted"], cons["summary"]

    names = list(sc.brokers)
    good = realised_hws(prediction)
    for step in (2, 5, len(good)):
        wrong = [list(row) for row in good]
        wrong[step - 1][0] += 1  # A's HW after ``step``, one more than the model says
        v = Verdict("match", True, [], [], [], [])
        res = judge_hw(v, names, wrong, observations)
        assert v.verdict == "model_mismatch" and not v.model_match
        assert any(m.step == step and m.replica == "A" for m in res.mismatches)
        if hw["steps_agreeing"] == hw["steps_compared"]:
            # the run agreed everywhere: the planted step is the first and only mismatch
            assert res.first is not None and res.first.step == step, v.reason
            assert [m.step for m in res.mismatches] == [step]
            assert f"step {step} (" in v.reason


def test_a_pause_past_the_fetch_window_is_named_by_the_harness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loaded machine, made on purpose: the fence of step 5 (``fetch A``: A copies m2, its
    HW stays 1) notices the round 1.3 s late. A's next Fetch, parked at the leader since A
    appended m2, is answered meanwhile and A applies HW 2: a real mismatch at step 5, which
    the step itself must name ("harness: A (or its leader) paused ... after its fetch
    round"), measured from A's own append (its segment file), not from when the fence saw
    the round (then it would read as on time). That note is what lets the catalogue's tests
    play such a run once more (tests/verdicts.py, ``flagged_by_harness``)."""
    import time as _time

    from harness.generator.playbook.fetch import FetchSteps
    from tests.verdicts import flagged_by_harness

    require("2.1.1")
    original = FetchSteps._caught_up

    def late(self: FetchSteps, name: str, truncations_before: int, k: int) -> None:
        original(self, name, truncations_before, k)
        if k == 5:
            _time.sleep(1.3)  # the harness busy elsewhere, after the round was complete

    monkeypatch.setattr(FetchSteps, "_caught_up", late)
    sc = load_scenario(SCENARIO_DIR / "kip101-scenario1.yaml")
    info, _p, verdict, _r = trial(
        sc, resolve_version("2.1.1"), "local", tmp_path / "run", "late", progress=lambda m: None
    )
    assert verdict is not None and verdict.verdict == "model_mismatch", why(info, verdict)
    first = verdict.hw["mismatches"][0]
    assert (first["step"], first["replica"], first["predicted"]) == (5, "A", 1), first
    assert "harness: A (or its leader) paused 1." in first["hint"], first
    assert flagged_by_harness(verdict)
    # The verdict says it apart from a mismatch that is evidence, on every surface.
    assert verdict.harness_missed.startswith("step 5 (fetch A): A's HW is 2"), verdict
    assert info.extra["harness_missed"] == verdict.harness_missed
    last = json.loads((tmp_path / "run" / "verdict.json").read_text())
    assert last["agreement"] == "mismatch" and last["harness_missed"] == verdict.harness_missed
    assert "not played as scripted" in two_verdicts(info).last_line()


def test_the_plugin_plays_a_run_the_harness_flagged_once_more(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same late fence in the plugin's first run only: the item plays the scenario once
    more, judges the second run (a match: the item passes), and says so in a warning and
    the JUnit properties, with the first run's folder kept."""
    import time as _time

    from harness.generator.playbook.fetch import FetchSteps

    require("2.1.1")
    original = FetchSteps._caught_up
    late_once: list[int] = []

    def late(self: FetchSteps, name: str, truncations_before: int, k: int) -> None:
        original(self, name, truncations_before, k)
        if k == 5 and not late_once:
            late_once.append(k)
            _time.sleep(1.3)

    monkeypatch.setattr(FetchSteps, "_caught_up", late)
    pytester.makefile(
        ".yaml", **{"kip101-scenario1": (SCENARIO_DIR / "kip101-scenario1.yaml").read_text()}
    )
    junit = pytester.path / "junit.xml"
    res = pytester.runpytest("--hwchaos-kafka", "2.1.1", f"--junitxml={junit}", "-q", "-rw")
    res.assert_outcomes(passed=1, warnings=1)
    res.stdout.fnmatch_lines(["*played again: the harness did not play a step as scripted*"])
    props = {
        p.get("name"): p.get("value") for p in ET.parse(junit).getroot().iter("property")
    }
    first = Path(props["hwchaos_played_again"])
    assert first.name.startswith("kip101-scenario1__2.1.1__"), props
    assert Path(props["hwchaos_run_folder"]).name == first.name + "-again", props
    assert json.loads((first / "verdict.json").read_text())["harness_missed"]
    assert json.loads((Path(props["hwchaos_run_folder"]) / "verdict.json").read_text())[
        "agreement"
    ] == "match"
