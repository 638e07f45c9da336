"""The analysis pipeline on a real local SparkSession, checked against pandas and by hand.

One SparkSession for the module (starting a JVM costs seconds); every Spark test shares it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pandas.testing as pdt
import pytest

from harness.analysis import pandas_job, spark_job
from harness.analysis.cli import main as analyze_main
from harness.analysis.common import MEASURES, META_MEASURES, TABLE_NAMES, locate
from harness.analysis.report import write_report
from harness.analysis.synthetic import Spec, generate
from harness.checker import results
from harness.cli.matrix import main as matrix_main
from harness.db.catalogue.versions import resolve_version
from harness.generator import confirm

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    # No class archive: the tests leave nothing in the user's cache (test_spark_cds.py
    # covers the archive, in a temp cache).
    s = spark_job.session(cds=False)
    yield s
    s.stop()


def assert_same(
    spark_tables: dict[str, pd.DataFrame], pandas_tables: dict[str, pd.DataFrame]
) -> None:
    """Spark's tables equal pandas' exactly (same columns, dtypes, rows and order)."""
    assert set(spark_tables) == set(pandas_tables) >= set(TABLE_NAMES)
    for name in spark_tables:
        pdt.assert_frame_equal(spark_tables[name], pandas_tables[name], check_exact=True)


Row = tuple[str, str, int, str, int]  # source, replica, offset, record, epoch
Write = tuple[str, str, bool, int, str]  # source, record, lost, lost_step, lost_event


def _run(
    root: Path,
    run_id: str,
    version: str,
    protocol: str,
    reps: list[Row],
    ws: list[Write],
    steps: Sequence[tuple[int, str, str, int, int]] = (),
    **fields: Any,
) -> None:
    info = results.RunInfo(
        run_id=run_id,
        scenario="s",
        version=version,
        protocol=protocol,
        backend="model" if version.startswith("model") else "local",
        acks="1",
        min_insync=1,
        unclean=False,
        rf=2,
        records=1,
        **fields,
    )
    replicas = [
        {"run_id": run_id, "source": s, "replica": r, "offset": o, "epoch": e, "record": rec}
        for s, r, o, rec, e in reps
    ]
    writes = [
        {
            "run_id": run_id,
            "source": s,
            "record": rec,
            "status": "acked",
            "offset": 1,
            "acked": True,
            "lost": lost,
            "lost_step": step,
            "lost_event": event,
        }
        for s, rec, lost, step, event in ws
    ]
    step_rows = [
        {"run_id": run_id, "step": k, "event": ev, "replica": r, "alive": True, "role": "",
         "leo": 0, "hw": m, "checkpoint_hw": 0, "flushed": 0, "epochs": "", "log": "",
         "leader": "A", "leader_epoch": 0, "isr": "A", "seconds": None, "observed_hw": o,
         "realised_hw": m}
        for k, ev, r, o, m in steps
    ]  # fmt: skip
    results.write_run(root / "cells" / run_id, info, replicas, writes, step_rows)


def tiny(root: Path) -> None:
    """Four runs whose every count is known by hand.

    r1 (2.1.1, played): replicas disagree at offset 1 on both sides; m2 acked and lost.
    r2 (2.1.1, played): B holds mX on disk where the model said m1 (mismatch, divergence).
    r3 (2.1.1, played): the right record under another epoch (epoch mismatch only).
    r4 (model:hw, model-only): divergent at offset 1, m2 lost at step 3.
    r1 and r2 carry the per-step HW check and the consumer oracle (run.json ``extra``); r1
    lost m2 as predicted (agreement match, safety lost); r2 is a model mismatch; r3 is an
    older folder without either (counts 0).
    An interrupted folder (no run.json, corrupt Parquet) must be ignored.
    """
    p, o = "predicted", "observed"
    _run(
        root,
        "r1",
        "2.1.1",
        "kip320",
        [(s, r, off, rec, 0) for s in (p, o) for r, off, rec in
         [("A", 0, "m1"), ("A", 1, "m2"), ("B", 0, "m1"), ("B", 1, "m3")]],
        [(p, "m2", True, 9, "restart A"), (o, "m2", True, -1, "")],
        steps=[(1, "crash A", "A", 2, 2), (1, "crash A", "B", -1, 2)],
        verdict="lost_acked",
        lost_acked=["m2"],
        extra={
            "hw": {"steps_compared": 5, "steps_agreeing": 5, "first_step": None},
            "consumer": {
                "observed": {"lost": ["m2"], "read_then_lost": [{"record": "m2", "offset": 1}],
                             "hw_regression": [], "uncommitted_read": [],
                             "divergent_offsets": [1]},
                "predicted": {"lost": ["m2"], "read_then_lost": [], "hw_regression": [],
                              "uncommitted_read": [], "divergent_offsets": [1]},
                "anomalies_as_predicted": False,
            },
        },
    )  # fmt: skip
    _run(
        root,
        "r2",
        "2.1.1",
        "kip320",
        [(p, "A", 0, "m1", 0), (p, "B", 0, "m1", 0), (o, "A", 0, "m1", 0), (o, "B", 0, "mX", 0)],
        [(p, "m1", False, -1, ""), (o, "m1", False, -1, "")],
        steps=[(1, "crash A", "A", 2, 2), (1, "crash A", "B", 1, 2), (2, "restart A", "A", 3, 2),
               (2, "restart A", "B", -1, 2)],
        verdict="model_mismatch",
        model_match=False,
        extra={
            "hw": {"steps_compared": 4, "steps_agreeing": 2, "first_step": 3},
            "consumer": {"observed": {"hw_regression": [{"step": 3}, {"step": 4}]},
                         "predicted": {}},
        },
    )  # fmt: skip
    _run(root, "r3", "2.1.1", "kip320", [(p, "A", 0, "m1", 0), (o, "A", 0, "m1", 1)], [])
    # r3's steps.parquet predates the per-step HW columns.
    pd.DataFrame({"run_id": ["r3"], "step": [1], "event": ["crash A"], "hw": [1]}).to_parquet(
        root / "cells" / "r3" / "steps.parquet"
    )
    _run(
        root,
        "r4",
        "model:hw",
        "hw",
        [(p, "A", 0, "m1", 0), (p, "A", 1, "m2", 0), (p, "B", 0, "m1", 0), (p, "B", 1, "m9", 1)],
        [(p, "m2", True, 3, "crash B")],
    )
    broken = root / "cells" / "r5"
    broken.mkdir(parents=True)
    (broken / "replicas.parquet").write_bytes(b"not parquet")


TINY_BY_CONFIG = {
    "2.1.1": dict(
        runs=3,
        runs_played=3,
        writes_acked=2,
        acked_lost=1,
        divergent_offsets=2,
        model_mismatches=1,
        epoch_mismatches=1,
        writes_acked_predicted=2,
        writes_acked_observed=2,
        acked_lost_predicted=1,
        acked_lost_observed=1,
        acked_lost_predicted_played=1,
        divergent_offsets_predicted=1,
        divergent_offsets_observed=2,
        hw_steps_compared=9,
        hw_steps_agreeing=7,
        hw_runs_differing=1,
        consumer_lost_predicted=1,
        consumer_lost_observed=1,
        consumer_read_then_lost_predicted=0,
        consumer_read_then_lost_observed=1,
        consumer_hw_regression_predicted=0,
        consumer_hw_regression_observed=2,
        consumer_uncommitted_read_predicted=0,
        consumer_uncommitted_read_observed=0,
        consumer_divergent_offsets_predicted=1,
        consumer_divergent_offsets_observed=1,
        runs_disagree=1,
        runs_unsafe=2,  # r1 lost m2; r2's consumer saw the HW go back twice
    ),
    "model:hw": dict(
        runs=1,
        runs_played=0,
        writes_acked=1,
        acked_lost=1,
        divergent_offsets=1,
        model_mismatches=0,
        epoch_mismatches=0,
        writes_acked_predicted=1,
        writes_acked_observed=0,
        acked_lost_predicted=1,
        acked_lost_observed=0,
        acked_lost_predicted_played=0,
        divergent_offsets_predicted=1,
        divergent_offsets_observed=0,
        **{m: 0 for m in META_MEASURES},
    ),
}


# Both read paths: the driver reads small inputs into Arrow itself (a threshold above every
# test set), executors read the Parquet files (0: never the small path).
ARROW = 10**9
READ_PATHS = pytest.mark.parametrize("small_rows", [ARROW, 0], ids=["driver-arrow", "files"])


@READ_PATHS
def test_tiny_set_exact_numbers(tmp_path: Path, spark: Any, small_rows: int | None) -> None:
    tiny(tmp_path)
    got = spark_job.summarise(tmp_path, spark, small_rows)
    by_config = got["by_config"].set_index("version")
    assert list(by_config.index) == ["2.1.1", "model:hw"]
    for version, expected in TINY_BY_CONFIG.items():
        assert by_config.loc[version, MEASURES].to_dict() == expected, version
    causes = got["loss_causes"]
    assert causes[["version", "source", "lost_step", "lost_event", "lost_writes"]].to_dict(
        "records"
    ) == [
        {"version": "2.1.1", "source": "observed", "lost_step": -1, "lost_event": "",
         "lost_writes": 1},
        {"version": "2.1.1", "source": "predicted", "lost_step": 9, "lost_event": "restart A",
         "lost_writes": 1},
        {"version": "model:hw", "source": "predicted", "lost_step": 3, "lost_event": "crash B",
         "lost_writes": 1},
    ]  # fmt: skip
    scen = got["by_scenario_version"]
    assert scen[["scenario", "version", "acked_lost"]].values.tolist() == [
        ["s", "2.1.1", 1],
        ["s", "model:hw", 1],
    ]
    assert_same(got, pandas_job.summarise(tmp_path))


def test_single_run_folder(tmp_path: Path, spark: Any) -> None:
    tiny(tmp_path)
    got = spark_job.summarise(tmp_path / "cells" / "r2", spark)
    row = got["by_config"].iloc[0]
    assert (row["runs"], row["model_mismatches"], row["divergent_offsets_observed"]) == (1, 1, 1)
    assert_same(got, pandas_job.summarise(tmp_path / "cells" / "r2"))


@READ_PATHS
def test_spark_equals_pandas_on_synthetic(
    tmp_path: Path, spark: Any, small_rows: int | None
) -> None:
    gen = generate(tmp_path, Spec(runs=600, offsets=6, chunk_runs=250, mismatch_rate=0.05))
    s = spark_job.summarise(tmp_path, spark, small_rows)
    assert_same(s, pandas_job.summarise(tmp_path))
    totals = s["by_config"][MEASURES].sum()
    assert totals["runs"] == gen.spec.runs and totals["runs_played"] == gen.runs_played
    for m in (
        "divergent_offsets_predicted",
        "divergent_offsets_observed",
        "acked_lost_predicted",
        "acked_lost_observed",
        "model_mismatches",
        "epoch_mismatches",
    ):
        assert totals[m] == getattr(gen, m), m
    assert gen.model_mismatches > 0 and gen.epoch_mismatches > 0 and gen.runs_played > 0
    lost = s["loss_causes"]["lost_writes"].sum()
    assert lost == gen.acked_lost_predicted + gen.acked_lost_observed


def test_rows_of_runs_without_metadata_are_ignored(tmp_path: Path, spark: Any) -> None:
    """A bulk set whose runs.parquet lacks some runs: their rows count nowhere, both engines."""
    gen = generate(tmp_path, Spec(runs=300, offsets=5, chunk_runs=100, loss_rate=0.3))
    runs = pd.read_parquet(tmp_path / "runs.parquet")
    kept = runs[runs.index % 3 != 0]
    kept.to_parquet(tmp_path / "runs.parquet", index=False)
    for small_rows in (ARROW, 0):
        s = spark_job.summarise(tmp_path, spark, small_rows)
        assert_same(s, pandas_job.summarise(tmp_path))
        assert s["by_config"]["runs"].sum() == len(kept) < gen.spec.runs


@READ_PATHS
def test_pairing_by_replica_equals_slots(
    tmp_path: Path, spark: Any, small_rows: int | None
) -> None:
    """The fallback for inputs with many replica names gives the same tables as the slots."""
    tiny(tmp_path / "tiny")
    generate(tmp_path / "set", Spec(runs=400, replicas=4, offsets=5, chunk_runs=150,
                                    mismatch_rate=0.1, epoch_mismatch_rate=0.1))  # fmt: skip
    for root in (tmp_path / "tiny", tmp_path / "set"):
        slots = spark_job.summarise(root, spark, small_rows)
        pairs = spark_job.summarise(root, spark, small_rows, slots=False)
        assert_same(slots, pairs)
        assert_same(pairs, pandas_job.summarise(root))


@READ_PATHS
def test_replica_names_that_sql_would_misread(
    tmp_path: Path, spark: Any, small_rows: int | None
) -> None:
    """Replica names are bound into the job's SQL statement as literals: quotes, backslashes
    and braces in them must reach Spark as the names, so the slots pair the same rows."""
    p, o = "predicted", "observed"
    odd = ["it's", "back\\slash", "{r0}", '"q"', "B"]
    reps: list[Row] = [(s, r, 0, "m1", 0) for s in (p, o) for r in odd]
    reps += [(p, odd[0], 1, "m2", 0), (o, odd[0], 1, "m2", 1), (p, odd[1], 1, "m3", 0)]
    _run(tmp_path, "q1", "2.1.1", "kip320", reps, [(p, "m1", False, -1, "")])
    _run(tmp_path, "q2", "2.1.1", "kip320", [(p, odd[2], 0, "m1", 0)], [])
    slots = spark_job.summarise(tmp_path, spark, small_rows)
    assert_same(slots, spark_job.summarise(tmp_path, spark, small_rows, slots=False))
    assert_same(slots, pandas_job.summarise(tmp_path))
    row = slots["by_config"].iloc[0]
    # q1: offset 1 diverges on the predicted side (m2 vs m3), back\slash has no observed m3
    # there (a mismatch), and it's holds m2 under another epoch; q2 is model-only.
    assert (row["divergent_offsets_predicted"], row["model_mismatches"]) == (1, 1)
    assert row["epoch_mismatches"] == 1


def test_replica_names_from_parquet_dictionaries(tmp_path: Path) -> None:
    generate(tmp_path, Spec(runs=60, replicas=4, offsets=3, chunk_runs=25))
    _, files = locate(tmp_path)
    assert spark_job.replica_names(files["replicas"]) == ["A", "B", "C", "D"]
    assert spark_job.replica_names(files["replicas"], limit=3) is None


def test_plan_sizes_the_shuffle_to_the_input(tmp_path: Path) -> None:
    generate(tmp_path, Spec(runs=100, offsets=5, chunk_runs=40))
    _, files = locate(tmp_path)
    small = spark_job.plan(files, parallelism=2)
    assert small.small and small.partitions == 1 and small.rows > 0
    big = spark_job.plan(files, parallelism=2, small_rows=0)
    assert not big.small and big.partitions == 2  # at least one per core
    assert big.split_bytes >= 1 << 20
    many = spark_job.plan(files, parallelism=2, small_rows=0, rows_per_partition=100)
    assert many.partitions == -(-many.rows // 100)


def test_spark_equals_pandas_on_the_model_matrix(tmp_path: Path, spark: Any) -> None:
    out = tmp_path / "m"
    argv = ["--model-only", "--acks", "1,all", "--min-insync", "1", "--unclean", "true"]
    assert matrix_main([*argv, "--out", str(out)]) == 0
    s = spark_job.summarise(out, spark)
    assert_same(s, pandas_job.summarise(out))
    k = s["by_scenario_version"].set_index(["scenario", "version"])
    assert k.loc[("kip101-scenario1", "model:hw"), "acked_lost_predicted"] == 2
    assert k.loc[("kip101-scenario1", "model:kip320"), "acked_lost_predicted"] == 0
    assert int(s["by_config"]["model_mismatches"].sum()) == 0  # model-only: nothing observed


def test_cli_on_spark_writes_tables_and_report(
    tmp_path: Path, spark: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tiny(tmp_path)
    # The CLI stops its session when done; lend it the module's and keep that one alive.
    monkeypatch.setattr(spark_job, "session", lambda master="local[2]", **_kw: spark)
    monkeypatch.setattr(spark, "stop", lambda: None)
    out = tmp_path / "a"
    assert analyze_main([str(tmp_path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert str(out / "report.html") in printed and str(out / "by_config.parquet") in printed
    for name in TABLE_NAMES:
        assert (out / f"{name}.parquet").is_file() and (out / f"{name}.csv").is_file()
    assert pd.read_csv(out / "by_config.csv")["runs"].sum() == 4
    pdt.assert_frame_equal(
        pd.read_parquet(out / "by_config.parquet"), pandas_job.summarise(tmp_path)["by_config"]
    )


def test_report_renders(tmp_path: Path) -> None:
    tiny(tmp_path)
    page = write_report(pandas_job.summarise(tmp_path), tmp_path / "a", "pandas", "tiny")
    text = page.read_text()
    assert text.count("<img alt=") == 2 and text.count("data:image/png;base64,iVBOR") == 2
    for header in ("Loss causes", "Model mismatches", "By config", "scenario x version"):
        assert header in text
    for column in ("acked_lost_observed", "lost_event", "model_mismatches"):
        assert f"<th>{column}</th>" in text
    for png in ("loss_by_config.png", "heatmap_scenario_version.png"):
        assert (tmp_path / "a" / png).read_bytes().startswith(b"\x89PNG")


def test_cli_errors_on_missing_or_empty_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert analyze_main([str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert "no such folder" in err and err.count("\n") == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    assert analyze_main([str(empty)]) == 2  # before any JVM is started
    err = capsys.readouterr().err
    assert "no runs" in err and err.count("\n") == 1


def test_cli_pandas_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    generate(tmp_path, Spec(runs=50, offsets=4))
    assert analyze_main([str(tmp_path), "--engine", "pandas"]) == 0
    assert (tmp_path / "analysis" / "report.html").is_file()
    assert "loss_causes.parquet" in capsys.readouterr().out


def _confirm_folder(root: Path) -> None:
    """A synthetic ``explore --confirm`` folder: two played runs and a shared ordering."""
    tiny(root)
    version = resolve_version("2.1.1")

    def one(i: int, label: str, folder: str, same: int | None = None) -> confirm.Confirmation:
        return confirm.Confirmation(
            index=i, invariant="acked_durable", steps=["crash A", "restart A"],
            scenario_file=f"cx{i}.yaml", classification=label, reason=f"why {i}",
            run_folder=str(root / "cells" / folder), model_verdict={},
            observed={"verdict": "lost_acked"}, seconds=1.5 * i, same_run_as=same,
        )  # fmt: skip

    played = [one(2, confirm.CONFIRMED, "r1"), one(1, confirm.MISMATCH, "r2")]
    confirm.write_table([*played, one(3, confirm.CONFIRMED, "r1", same=2)], version, "local", root)


@READ_PATHS
def test_hunt_confirm_table(tmp_path: Path, spark: Any, small_rows: int | None) -> None:
    """analyze on a confirm folder lists its classifications, equal from both engines."""
    _confirm_folder(tmp_path)
    got = spark_job.summarise(tmp_path, spark, small_rows)
    assert_same(got, pandas_job.summarise(tmp_path))
    hunt = got["hunt_confirm"]
    assert hunt["index"].tolist() == [1, 2, 3]
    assert hunt["classification"].tolist() == ["mismatch", "confirmed", "confirmed"]
    assert set(hunt["version"]) == {"2.1.1"} and set(hunt["backend"]) == {"local"}
    assert hunt["same_run_as"].tolist() == [-1, -1, 2]
    assert hunt["ordering"].iloc[0] == "crash A, restart A"
    page = write_report(got, tmp_path / "a", "spark", "hunt").read_text()
    assert "Hunt: counterexamples played on brokers" in page and "why 2" in page
    # Without the table (any other folder), no hunt_confirm and no section.
    assert "hunt_confirm" not in pandas_job.summarise(tmp_path / "cells" / "r1")


def test_run_verdicts_keep_agreement_and_safety_apart(tmp_path: Path, spark: Any) -> None:
    """r1 lost m2 as predicted: agreeing *and* unsafe; r2 disagrees and its consumer saw an
    HW regression (unsafe); r3 predates the checks."""
    tiny(tmp_path)
    runs = spark_job.summarise(tmp_path, spark)["run_verdicts"].set_index("run_id")
    assert runs.loc["r1", ["agreement", "safety"]].tolist() == ["match", "lost"]
    # r2's consumer saw the HW go back: a consumer anomaly makes the run unsafe too
    assert runs.loc["r2", ["agreement", "safety"]].tolist() == ["mismatch", "lost"]
    assert runs.loc["r3", ["agreement", "safety"]].tolist() == ["match", "no loss"]
    assert runs.loc["r4", "agreement"] == "model only"
    assert runs.loc["r2", ["hw_steps_agreeing", "hw_steps_compared", "hw_first_step"]].tolist() == [
        2, 4, 3
    ]  # fmt: skip
    assert runs.loc["r3", ["hw_steps_compared", "hw_first_step"]].tolist() == [0, -1]
    assert runs.loc["r1", "consumer_read_then_lost_observed"] == 1
    assert runs.loc["r1", "consumer_read_then_lost_predicted"] == 0
    steps = spark_job.summarise(tmp_path, spark)["hw_by_step"]
    cols = ["step", "event", "runs", "hw_compared", "hw_agreeing", "hw_below_model",
            "hw_above_model"]  # fmt: skip
    assert steps[cols].values.tolist() == [
        [1, "crash A", 2, 3, 2, 1, 0],
        [2, "restart A", 1, 1, 0, 0, 1],
    ]
    assert set(steps["version"]) == {"2.1.1"}
    page = write_report(pandas_job.summarise(tmp_path), tmp_path / "a", "pandas", "t")
    text = page.read_text()
    assert "Verdicts, high watermark and consumer" in text
    assert "7/9 steps agree" in text and "<th>runs_unsafe</th>" in text
    # r1 lost m2 as predicted: agreeing and unsafe; r2 disagrees; r4 is only a prediction.
    assert "Of 3 runs played on brokers: 1 disagree with the model (agreement); 2 lost" in text
    assert "Model-only runs predicting a loss: 0." in text


def test_hunt_tables_of_a_runs_folder(tmp_path: Path, spark: Any) -> None:
    """analyze on ``runs/`` gathers every hunt's table, older ones (no ``hunt``) included."""
    _confirm_folder(tmp_path / "h1")
    old = pd.read_parquet(tmp_path / "h1" / confirm.CONFIRM_TABLE).drop(columns=["hunt"])
    (tmp_path / "h0").mkdir()
    old.head(1).to_parquet(tmp_path / "h0" / confirm.CONFIRM_TABLE, index=False)
    got = spark_job.summarise(tmp_path, spark)
    assert_same(got, pandas_job.summarise(tmp_path))
    hunt = got["hunt_confirm"]
    assert hunt["hunt"].tolist() == ["", "h1", "h1", "h1"]
    assert hunt["index"].tolist() == [2, 1, 2, 3]
