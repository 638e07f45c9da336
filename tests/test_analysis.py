"""The analysis pipeline on a real local SparkSession, checked against pandas."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pandas.testing as pdt
import pytest

from harness import results
from harness.analysis import pandas_job, spark_job
from harness.analysis.cli import main as analyze_main
from harness.analysis.report import write_outputs
from harness.analysis.synthetic import Spec, generate
from harness.matrix import main as matrix_main

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    s = spark_job.session()
    yield s
    s.stop()


def tiny(root: Path) -> None:
    """Two runs with hand-known answers: one divergent offset, one lost write, one mismatch."""
    base = dict(
        scenario="s",
        version="0.10.2.1",
        protocol="hw",
        backend="local",
        acks="1",
        min_insync=1,
        unclean=False,
        rf=2,
        records=1,
    )
    rows = {
        "r1": [
            ("predicted", "A", 0, "m1"),
            ("predicted", "A", 1, "m2"),
            ("predicted", "B", 0, "m1"),
            ("predicted", "B", 1, "m3"),
            ("observed", "A", 0, "m1"),
            ("observed", "A", 1, "m2"),
            ("observed", "B", 0, "m1"),
            ("observed", "B", 1, "m3"),
        ],
        "r2": [
            ("predicted", "A", 0, "m1"),
            ("predicted", "B", 0, "m1"),
            ("observed", "A", 0, "m1"),
            ("observed", "B", 0, "mX"),
        ],
    }
    for run_id, reps in rows.items():
        info = results.RunInfo(run_id=run_id, **base)  # type: ignore[arg-type]
        replicas = [
            {"run_id": run_id, "source": s, "replica": r, "offset": o, "epoch": -1, "record": rec}
            for s, r, o, rec in reps
        ]
        writes = [
            {
                "run_id": run_id,
                "source": src,
                "record": "m2",
                "status": "acked",
                "offset": 1,
                "acked": True,
                "lost": run_id == "r1",
                "lost_step": 9,
                "lost_event": "restart A",
            }
            for src in ("predicted", "observed")
        ]
        results.write_run(root / "cells" / run_id, info, replicas, writes, [])


def test_tiny_set_exact_numbers(tmp_path: Path, spark: Any) -> None:
    tiny(tmp_path)
    got = spark_job.summarise(tmp_path, spark)
    row = got["by_config"].iloc[0]
    assert row["runs"] == 2
    assert row["writes_acked_predicted"] == 2 and row["writes_acked_observed"] == 2
    assert row["acked_lost_predicted"] == 1 and row["acked_lost_observed"] == 1
    assert row["divergent_offsets_predicted"] == 1
    assert row["divergent_offsets_observed"] == 2  # r1 offset 1, r2 offset 0
    assert row["model_mismatches"] == 1  # r2
    assert row["runs_played"] == 2 and row["acked_lost_predicted_played"] == 1
    causes = got["loss_causes"]
    assert causes["lost_writes"].tolist() == [1, 1]
    assert set(causes["lost_event"]) == {"restart A"}
    for name, df in pandas_job.summarise(tmp_path).items():
        pdt.assert_frame_equal(df, got[name])


def test_spark_equals_pandas_on_synthetic(tmp_path: Path, spark: Any) -> None:
    spec = generate(tmp_path, Spec(runs=400, offsets=6, chunk_runs=150))
    s = spark_job.summarise(tmp_path, spark)
    p = pandas_job.summarise(tmp_path)
    for name in p:
        pdt.assert_frame_equal(p[name], s[name])
    assert int(p["by_config"]["runs"].sum()) == spec.runs
    assert int(p["by_config"]["model_mismatches"].sum()) > 0


def test_spark_equals_pandas_on_the_model_matrix(tmp_path: Path, spark: Any) -> None:
    out = tmp_path / "m"
    assert (
        matrix_main(
            [
                "--model-only",
                "--acks",
                "1,all",
                "--min-insync",
                "1",
                "--unclean",
                "true",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    s = spark_job.summarise(out, spark)
    p = pandas_job.summarise(out)
    for name in p:
        pdt.assert_frame_equal(p[name], s[name])
    k = p["by_scenario"].set_index(["scenario", "version"])
    assert k.loc[("kip101-scenario1", "model:hw"), "acked_lost_predicted"] == 2
    assert k.loc[("kip101-scenario1", "model:kip320"), "acked_lost_predicted"] == 0


def test_report_and_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tiny(tmp_path)
    page = write_outputs(pandas_job.summarise(tmp_path), tmp_path / "a", "pandas")
    text = page.read_text()
    assert text.count("data:image/png;base64,") >= 2
    assert "Which step caused each loss" in text and "model_mismatches" in text
    for f in ("by_config.parquet", "by_config.csv", "loss_causes.csv", "loss_by_config.png"):
        assert (tmp_path / "a" / f).is_file()
    assert pd.read_csv(tmp_path / "a" / "by_config.csv")["runs"].sum() == 2
    assert analyze_main([str(tmp_path / "missing")]) == 2
    assert "no such folder" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert analyze_main([str(empty), "--engine", "pandas"]) == 2
    assert "no runs" in capsys.readouterr().err
