"""The checker's per-replica, per-offset diff and verdict."""

from __future__ import annotations

import pandas as pd

from harness.checker.diff import check, diff_logs, divergent_offsets, first_differing_step


def frame(rows: list[tuple[str, int, int, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["replica", "offset", "epoch", "record"])


PRED = frame([("A", 0, 0, "m1"), ("A", 1, 0, "m2"), ("B", 0, 0, "m1"), ("B", 1, 1, "m3")])


def test_identical_logs_match() -> None:
    v, d = check(PRED, PRED.copy(), ["m2"], ["m2"], [1], compare_epochs=True)
    assert v.model_match and v.verdict == "match"
    assert set(d["status"]) == {"match"}
    assert v.divergent_offsets == [1]


def test_each_kind_of_difference_is_named() -> None:
    obs = frame(
        [
            ("A", 0, 0, "m1"),
            ("A", 1, 0, "m3"),
            ("B", 0, 0, "m1"),
            ("B", 1, 1, "m3"),
            ("B", 2, 1, "m4"),
        ]
    )
    d = diff_logs(PRED, obs)
    status = {(r.replica, r.offset): r.status for r in d.itertuples()}
    assert status[("A", 1)] == "different"
    assert status[("B", 2)] == "extra"
    missing = diff_logs(PRED, obs[obs.offset < 1])
    assert set(missing[missing.status == "missing"].offset) == {1}


def test_mismatch_reports_first_differing_step() -> None:
    obs = frame([("A", 0, 0, "m1"), ("B", 0, 0, "m1"), ("B", 1, 1, "m3")])
    v, _ = check(
        PRED,
        obs,
        [],
        ["m2"],
        [1],
        compare_epochs=False,
        predicted_leo=[{"A": 1, "B": 1}, {"A": 2, "B": 2}],
        observed_leo=[{"A": 1, "B": 1}, {"A": 1, "B": 2}],
    )
    assert not v.model_match and v.verdict == "model_mismatch"
    assert v.first_differing_step == 2
    assert "MODEL MISMATCH" in v.summary()


def test_lost_write_disagreement_is_a_mismatch_even_with_equal_logs() -> None:
    v, _ = check(PRED, PRED.copy(), [], ["m2"], [1], compare_epochs=False)
    assert not v.model_match


def test_epochs_reported_apart_from_records() -> None:
    obs = PRED.copy()
    obs.loc[3, "epoch"] = 2
    v, _ = check(PRED, obs, [], [], [1], compare_epochs=True)
    assert v.model_match
    assert v.epoch_mismatches == [
        {"replica": "B", "offset": 1, "epoch_predicted": 1, "epoch_observed": 2}
    ]


def test_divergent_offsets_and_first_step_helpers() -> None:
    assert divergent_offsets(PRED) == [1]
    assert divergent_offsets(PRED.iloc[0:0]) == []
    assert first_differing_step([{"A": 1}], [{"A": -1}]) is None
