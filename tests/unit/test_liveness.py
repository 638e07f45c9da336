"""The controller's liveness after every step is judged against the model's.

Written by hand as a controller could have left it: the model's live sets are read from the
model, the observed ones are what a broker run would record. A judge that ignored liveness
would pass the first test and fail the others.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from harness.checker.hw import missed_window
from harness.checker.judge import judge
from harness.checker.liveness import LivenessMismatch, liveness_check, predicted_live
from harness.checker.realised import realised_run
from harness.generator.playbook.fences import Observation
from tests.unit.test_judge import _prediction, _record


def test_kip101_scenario1_live_sets_as_the_model_counts_them() -> None:
    live = predicted_live(realised_run(_prediction()))
    # B leads; A crashes at step 8 and is detected at 9, restarts at 10; B crashes at 12
    # and is detected at 13
    assert live[7] == ["A", "B"] and live[8] == ["B"] and live[9] == ["A", "B"]
    assert live[-1] == ["A"]


def test_a_broker_the_controller_fenced_behind_the_script_is_a_difference() -> None:
    obs = [Observation(1, "produce m1", 0, "B", 0, ["A", "B"], {}, live=["A", "B"])]
    assert liveness_check([["A", "B"]], obs) == []
    obs = [Observation(3, "restart A", 0, "B", 0, ["B"], {}, live=["B"])]
    found = liveness_check([[], [], ["A", "B"]], obs)
    assert found == [LivenessMismatch(3, "restart A", ["B"], ["A", "B"])]
    assert found[0].describe() == (
        "step 3 (restart A): A not live to the controller (the controller counts ['B'] "
        "live, the model ['A', 'B'])"
    )
    # a broker whose session may run out by itself at that step is not held to the model
    obs[0].live_free = ["A"]
    assert liveness_check([[], [], ["A", "B"]], obs) == []
    # nor is a run that did not observe liveness (older run folders)
    assert liveness_check([["A"]], [Observation(1, "x", 0, "A", 0, ["A"], {})]) == []


def test_the_judge_fails_a_run_whose_controller_went_its_own_way(tmp_path: Path) -> None:
    prediction = _prediction()
    live = predicted_live(realised_run(prediction))
    record = _record(prediction, tmp_path)
    record.observations = [
        replace(o, live=live[o.step - 1]) for o in record.observations
    ]
    v = judge(prediction, record)
    assert v is not None and (v.verdict, v.liveness) == ("match", [])
    # step 11: A restarted at 10 was fenced again while it was held (a session not kept)
    record.observations[10] = replace(
        record.observations[10], live=["B"], notes=["harness: anything"]
    )
    v = judge(prediction, record)
    assert v is not None and (v.verdict, v.model_match) == ("model_mismatch", False)
    assert v.first_differing_step == 11, v
    assert "step 11 (" in v.reason and "A not live to the controller" in v.reason
    assert v.liveness[0]["observed"] == ["B"]
    assert missed_window(v) == ""  # evidence, never played again
