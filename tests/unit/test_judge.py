"""``judge(prediction, record)`` is a pure function of a record, and the store writes what it says.

The records here are built by hand as a broker could have left them (logs, deliveries, the
controller's final word), not from the model's own verdict: a judge that echoed the model would
pass the first test and fail the mutations.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.checker import store
from harness.checker.judge import judge, lost_acked
from harness.db.catalogue.versions import resolve_version
from harness.generator.playbook.fences import Observation
from harness.generator.record import RunRecord
from harness.generator.scenarios import load_scenario
from reference_model.run import RunResult, run_scenario

ROOT = Path(__file__).resolve().parents[2]
VERSION = resolve_version("0.10.2.1")


def _prediction() -> RunResult:
    return run_scenario(load_scenario(str(ROOT / "scenarios/kip101-scenario1.yaml")), "hw")


def _record(prediction: RunResult, folder: Path) -> RunRecord:
    """What 0.10.2.1 brokers leave after KIP-101 scenario 1 (A leads; B's m2 truncated)."""
    return RunRecord(
        run_id="r1",
        scenario=prediction.scenario,
        version=VERSION,
        backend="local",
        folder=folder,
        logs={"A": [(0, -1, "m1")], "B": [(0, -1, "m1"), (1, -1, "m2")]},
        deliveries={
            "m1": {"status": "acked", "offset": 0},
            "m2": {"status": "acked", "offset": 1},
        },
        final={"leader": "A", "leader_epoch": 2, "isr": ["A"], "halted": []},
        observations=[
            Observation(k, "", 0.0, "A", 0, ["A"], leo)
            for k, leo in enumerate(_leos(prediction), start=1)
        ],
    )


def _leos(prediction: RunResult) -> list[dict[str, int]]:
    """Per step, the on-disk LEO a broker run would observe where it agrees with the model."""
    names = prediction.scenario.brokers
    return [
        {n: r.leo for n, r in zip(names, s.state.replicas, strict=True)}
        for s in prediction.steps[1:]
    ]


def test_a_record_as_predicted_matches_and_names_the_loss(tmp_path: Path) -> None:
    prediction = _prediction()
    v = judge(prediction, _record(prediction, tmp_path))
    assert v is not None
    assert (v.verdict, v.model_match, v.lost_acked) == ("match", True, ["m2"])


def test_a_write_the_leader_kept_is_not_lost(tmp_path: Path) -> None:
    """Mutation: the leader's disk holds m2 at offset 1, so m2 is not lost, which the model
    did not predict: the verdict must say mismatch, never match."""
    prediction = _prediction()
    rec = _record(prediction, tmp_path)
    rec.logs["A"] = [(0, -1, "m1"), (1, -1, "m2")]
    assert lost_acked(rec) == []
    v = judge(prediction, rec)
    assert v is not None
    assert (v.verdict, v.model_match, v.lost_acked) == ("model_mismatch", False, [])


def test_an_offline_partition_is_judged_on_its_first_eligible_leader_replica(
    tmp_path: Path,
) -> None:
    """KIP-966 (kip320-zombie-follower on 4.0.0-elr): the partition ends offline with an empty
    ISR and ELR [A, B], both holding m1 and m3; the replica a clean election picks (A) keeps
    every acknowledged write, as the model's ``effective_leader`` says. Mutation: without the
    ELR the same disks read as m1 and m3 lost; with an ELR member lacking m3, m3 is lost."""
    prediction = _prediction()
    rec = _record(prediction, tmp_path)
    rec.logs = {
        "A": [(0, 0, "m1"), (1, 1, "m3")],
        "B": [(0, 0, "m1"), (1, 1, "m3")],
    }
    rec.deliveries = {
        "m1": {"status": "acked", "offset": 0},
        "m2": {"status": "failed", "offset": -1},
        "m3": {"status": "acked", "offset": 1},
    }
    rec.final = {"leader": None, "leader_epoch": 3, "isr": [], "elr": ["A", "B"], "halted": []}
    assert lost_acked(rec) == []
    rec.final["elr"] = []
    assert lost_acked(rec) == ["m1", "m3"]
    rec.logs["A"] = [(0, 0, "m1"), (1, 0, "m2")]
    rec.final["elr"] = ["A", "B"]
    assert lost_acked(rec) == ["m3"]


def test_an_outcome_the_model_did_not_predict_is_a_mismatch(tmp_path: Path) -> None:
    prediction = _prediction()
    rec = _record(prediction, tmp_path)
    rec.final["halted"] = ["B"]
    v = judge(prediction, rec)
    assert v is not None and v.verdict == "model_mismatch"
    assert v.outcomes == ["broker_halted:B"]


@pytest.mark.parametrize("status", ["fence_timeout", "error", "step_prevented"])
def test_a_run_that_did_not_reach_its_end_is_not_judged(tmp_path: Path, status: str) -> None:
    prediction = _prediction()
    rec = _record(prediction, tmp_path)
    rec.status, rec.failure = status, "boom"
    assert judge(prediction, rec) is None


def test_judging_twice_gives_the_same_verdict_and_leaves_the_record_alone(tmp_path: Path) -> None:
    prediction = _prediction()
    rec = _record(prediction, tmp_path)
    before = repr(rec)
    assert judge(prediction, rec) == judge(prediction, rec)
    assert repr(rec) == before


def test_the_store_writes_the_verdict_the_judge_gave(tmp_path: Path) -> None:
    prediction = _prediction()
    rec = _record(prediction, tmp_path / "run")
    store.write_inputs(rec.folder, rec.scenario, prediction)
    v = judge(prediction, rec)
    info = store.write_outcome(prediction, rec, v)
    doc = json.loads((rec.folder / "verdict.json").read_text())
    assert doc["verdict"] == info.verdict == "match"
    assert doc["lost_acked"] == ["m2"]
    run = json.loads((rec.folder / "run.json").read_text())
    assert run["extra"]["final"]["leader"] == "A"
    for name in ("scenario.yaml", "model.json", "diff.parquet", "report.html"):
        assert (rec.folder / name).is_file(), name
