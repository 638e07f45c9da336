"""The run-level verdict fields the analysis tables sum, and explore --confirm's table.

No Spark here: both engines sum what :mod:`harness.analysis.common` flattens, so the
flattening is checked once, on its own (tests/integration/test_analysis.py checks the sums).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harness.analysis.common import VERDICT_COLUMNS, bulk_verdicts, hunt_frame, verdict_fields
from harness.db.catalogue.versions import resolve_version
from harness.generator import confirm

BASE = {"run_id": "r", "scenario": "s", "version": "2.1.1", "backend": "local"}


def test_older_run_json_counts_zero() -> None:
    """A run folder from before the HW check and the consumer oracle: 0, first step -1."""
    got = verdict_fields({**BASE, "verdict": "match"})
    assert (got["agreement"], got["safety"]) == ("match", "no loss")
    assert got["hw_first_step"] == -1
    assert all(got[c] == 0 for c in VERDICT_COLUMNS[2:] if c != "hw_first_step")
    assert got["hw_runs_differing"] == got["runs_disagree"] == got["runs_unsafe"] == 0


def test_lost_as_predicted_is_agreeing_and_unsafe() -> None:
    doc = {
        **BASE,
        "verdict": "lost_acked",
        "lost_acked": ["m2"],
        "extra": {
            "hw": {"steps_compared": 3, "steps_agreeing": 2, "first_step": 2},
            "consumer": {"observed": {"lost": ["m2"], "hw_regression": [{"step": 2}]}},
        },
    }
    got = verdict_fields(doc)
    assert (got["runs_disagree"], got["runs_unsafe"], got["hw_runs_differing"]) == (0, 1, 1)
    assert (got["hw_steps_agreeing"], got["hw_steps_compared"], got["hw_first_step"]) == (2, 3, 2)
    assert got["consumer_lost_observed"] == 1 and got["consumer_lost_predicted"] == 0
    assert got["consumer_hw_regression_observed"] == 1


@pytest.mark.parametrize(
    ("verdict", "backend", "lost", "agreement", "safety"),
    [
        ("match", "local", [], "match", "no loss"),
        ("lost_acked", "local", ["m1"], "match", "lost"),
        ("model_mismatch", "docker", [], "mismatch", "no loss"),
        ("fence_timeout", "local", [], "fence timeout", "unknown"),
        ("ok", "model", [], "model only", "no loss"),
        ("new_word", "local", [], "new word", "unknown"),
    ],
)
def test_bulk_path_equals_the_per_run_path(
    verdict: str, backend: str, lost: list[str], agreement: str, safety: str
) -> None:
    """runs.parquet is flattened column-wise; it must give what run.json gives row by row."""
    doc: dict[str, Any] = {**BASE, "backend": backend, "verdict": verdict, "lost_acked": lost}
    one = verdict_fields(doc)
    assert (one["agreement"], one["safety"]) == (agreement, safety)
    bulk = bulk_verdicts(pd.DataFrame([doc])).iloc[0]
    for col, value in one.items():
        assert bulk[col] == value, col


def _confirmation(i: int, same: int | None = None) -> confirm.Confirmation:
    return confirm.Confirmation(
        index=i, invariant="acked_durable", steps=["crash B", "elect A"],
        scenario_file="cx.yaml", classification=confirm.PREVENTED, reason="KIP-101",
        run_folder=f"runs/{i:02d}", model_verdict={}, observed={"verdict": "prevented"},
        seconds=2.0, same_run_as=same,
    )  # fmt: skip


def test_confirm_table_is_written_whole(tmp_path: Path) -> None:
    """One row per counterexample played, rewritten after each; no temp file left."""
    version = resolve_version("3.3.1")
    path = confirm.write_table([_confirmation(1)], version, "docker", tmp_path)
    confirm.write_table([_confirmation(1), _confirmation(2, same=1)], version, "docker", tmp_path)
    df = pd.read_parquet(path)
    assert list(df.columns) == confirm.CONFIRM_COLUMNS
    assert df["index"].tolist() == [1, 2] and df["same_run_as"].tolist() == [-1, 1]
    assert set(df["version"]) == {"3.3.1"} and set(df["profile"]) == {version.generation}
    assert df["ordering"].iloc[0] == "crash B, elect A"
    assert sorted(p.name for p in tmp_path.iterdir()) == [confirm.CONFIRM_TABLE]
    # The analysis reads it with the same columns and dtypes, whatever wrote it.
    assert hunt_frame(df).dtypes.to_dict() == hunt_frame(df.iloc[::-1]).dtypes.to_dict()
