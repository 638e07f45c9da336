"""The consumer oracle's anomalies (Jepsen's queue vocabulary), from reads as recorded."""

from __future__ import annotations

from pathlib import Path

from harness.checker.consumer import anomalies, consumer_verdict, predicted_reads
from harness.checker.realised import realised_states
from harness.generator.scenarios import load_scenario
from reference_model.run import run_scenario
from reference_model.state import PartitionState

ROOT = Path(__file__).resolve().parents[2]


def _read(step: int, replica: str, role: str, hw: int, recs: list[str]) -> dict[str, object]:
    return {
        "step": step,
        "replica": replica,
        "role": role,
        "hw": hw,
        "records": [[o, r] for o, r in enumerate(recs)],
        "error": "",
    }


def test_read_then_lost_and_hw_regression() -> None:
    reads = [
        _read(1, "B", "leader", 1, ["m1"]),
        _read(2, "B", "leader", 2, ["m1", "m2"]),
        _read(3, "A", "leader", 1, ["m1"]),
    ]
    a = anomalies(reads, {0: "m1"}, {1: 1, 2: 2, 3: 1}, ["m2"])
    assert a["read_then_lost"] == [{"step": 2, "replica": "B", "offset": 1, "record": "m2"}]
    assert a["hw_regression"] == [{"step": 3, "from_step": 2, "before": 2, "after": 1}]
    assert a["lost"] == ["m2"] and a["uncommitted_read"] == [] and a["divergent_offsets"] == []


def test_uncommitted_read_from_a_follower_and_divergent_offsets() -> None:
    reads = [
        _read(1, "A", "follower", 2, ["m1", "x2"]),  # served offset 1 while leader's HW is 1
        _read(2, "B", "leader", 2, ["m1", "m2"]),
    ]
    a = anomalies(reads, {0: "m1", 1: "m2"}, {1: 1, 2: 2}, [])
    assert a["uncommitted_read"] == [
        {"step": 1, "replica": "A", "offset": 1, "record": "x2", "leader_hw": 1}
    ]
    assert a["divergent_offsets"] == [1]
    assert [x["record"] for x in a["read_then_lost"]] == ["x2"]


def test_errors_are_not_reads() -> None:
    bad = {**_read(1, "B", "leader", -1, []), "error": "connection refused"}
    a = anomalies([bad], {}, {}, [])
    assert all(v == [] for v in a.values())


def test_kip101_on_0_10_the_model_predicts_m2_read_then_lost() -> None:
    """kip101-scenario1 before 0.11: a consumer of B reads m2 once B's HW covers it (the
    step after A's fetch of m2, as played), and m2 is gone from A, the final leader."""
    sc = load_scenario(ROOT / "scenarios" / "kip101-scenario1.yaml")
    pred = run_scenario(sc, "0.10.2.1")
    states = realised_states(pred)
    names = list(sc.brokers)
    reads = [_read(k, "B", "leader", -1, []) for k in range(1, 8)]
    want = predicted_reads(names, states, reads)
    first_m2 = next(r["step"] for r in want if [x for _o, x in r["records"][1:]] == ["m2"])
    assert first_m2 == 5  # played: A's next Fetch after copying m2 moves B's HW to 2
    final = {o: e.record for o, e in enumerate(pred.steps[-1].state.replicas[0].log)}
    v = consumer_verdict(names, states, want, final, final, {}, ["m2"], ["m2"])
    lost = v["observed"]["read_then_lost"]
    assert [(x["offset"], x["record"]) for x in lost] == [(1, "m2")]
    assert v["anomalies_as_predicted"] and v["reads_agreeing"] == v["reads_compared"] == 7


def test_a_read_the_model_does_not_predict_is_named() -> None:
    """Mutation: one observed read differs from the model: named, and counts drop."""
    sc = load_scenario(ROOT / "scenarios" / "kip101-scenario1.yaml")
    pred = run_scenario(sc, "0.10.2.1")
    states = realised_states(pred)
    names = list(sc.brokers)
    reads = predicted_reads(names, states, [_read(k, "B", "leader", -1, []) for k in range(1, 8)])
    reads[2] = {**reads[2], "records": [[0, "m1"], [1, "m2"]]}  # step 3: m2 not yet there
    final = {0: "m1"}
    v = consumer_verdict(names, states, reads, final, final, {}, [], [])
    assert v["reads_agreeing"] == 6
    assert v["reads_differing"] == [
        {"step": 3, "replica": "B", "observed": ["m1", "m2"], "predicted": ["m1"]}
    ]


def _kip101_reads_of_a_ci_run() -> tuple[
    list[str], list[PartitionState], dict[int, str], list[dict[str, object]]
]:
    """kip101-scenario1 on 0.10.2.1 as a CI run read it (reads.json, 6 Dec 2026): B leads
    with HW 2 up to step 9; at step 13 (``detect B``) A, just elected, refused the read
    (error code 6, NOT_LEADER_FOR_PARTITION: its fence had passed before the controller
    logged the LeaderAndIsr it was sending)."""
    sc = load_scenario(ROOT / "scenarios" / "kip101-scenario1.yaml")
    pred = run_scenario(sc, "0.10.2.1")
    states = realised_states(pred)
    names = list(sc.brokers)
    m1, both = ["m1"], ["m1", "m2"]
    reads = [
        _read(2, "B", "leader", 1, m1),
        _read(5, "B", "leader", 2, both),
        _read(9, "B", "leader", 2, both),
        _read(10, "A", "follower", 1, m1),
        {**_read(13, "A", "leader", -1, []), "error": "error code 6"},
    ]
    final = {o: e.record for o, e in enumerate(pred.steps[-1].state.replicas[0].log)}
    return names, states, final, reads


def test_a_read_the_broker_refused_is_compared_on_neither_side() -> None:
    """The model's HW regression at step 13 (B's 2, then A's 1) shows only in the read A
    refused: that is no evidence either way, not an anomaly "NOT as the model predicts"."""
    names, states, final, reads = _kip101_reads_of_a_ci_run()
    want = predicted_reads(names, states, reads)
    assert want[-1]["error"] == "error code 6" and want[-1]["hw"] == 1  # the model's answer
    v = consumer_verdict(names, states, reads, final, final, {}, ["m2"], ["m2"])
    assert v["observed"]["hw_regression"] == v["predicted"]["hw_regression"] == []
    assert v["anomalies_as_predicted"], v["summary"]
    assert v["reads_compared"] == 4 and v["reads_agreeing"] == 4
    assert "(1 refused by the broker, compared on neither side)" in v["summary"]


def test_the_regression_a_read_shows_is_still_judged() -> None:
    """Mutation: A answers the step-13 read, without the regression the model predicts (HW 2
    where the model says 1): the anomalies are NOT as predicted, and the read differs."""
    names, states, final, reads = _kip101_reads_of_a_ci_run()
    reads[-1] = _read(13, "A", "leader", 2, ["m1", "m2"])
    v = consumer_verdict(names, states, reads, final, final, {}, ["m2"], ["m2"])
    regression = {"step": 13, "from_step": 9, "before": 2, "after": 1}
    assert v["predicted"]["hw_regression"] == [regression]
    assert v["observed"]["hw_regression"] == []
    assert not v["anomalies_as_predicted"], v["summary"]
    assert v["reads_agreeing"] == 4 and v["reads_compared"] == 5
