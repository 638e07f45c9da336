"""Agreement and safety kept apart: the CLI line, the HTML report, the matrix table.

The mutation each test guards against is issue 21's: a run that loses a write exactly as
predicted shown green ("model match") with nothing saying data was lost.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.checker.diff import Verdict
from harness.checker.report import write_report
from harness.checker.results import RunInfo
from harness.checker.verdicts import two_verdicts
from harness.cli.matrix import main as matrix_main
from harness.db.catalogue.versions import resolve_version
from harness.generator.playbook.fences import Observation
from harness.generator.scenarios import load_scenario
from reference_model.run import run_scenario


def _info(verdict: str, lost: list[str], divergent: list[int], backend: str = "local") -> RunInfo:
    return RunInfo(
        run_id="r",
        scenario="s",
        version="0.10.2.1",
        protocol="hw",
        backend=backend,
        acks="1",
        min_insync=1,
        unclean=True,
        rf=2,
        records=1,
        verdict=verdict,
        model_match=verdict in ("match", "prevented"),
        lost_acked=lost,
        divergent_offsets=divergent,
    )


def test_a_predicted_loss_is_a_match_and_a_loss() -> None:
    both = two_verdicts(_info("match", ["m2"], []))
    assert both.agreement == "match" and both.safety == "lost" and both.lost
    assert both.last_line() == (
        "agreement: match (the brokers did what the model predicted) | "
        "safety: acknowledged writes LOST: m2"
    )


def test_no_loss_is_said_only_when_the_run_reached_its_end() -> None:
    assert two_verdicts(_info("match", [], [])).safety == "no loss"
    stopped = two_verdicts(_info("fence_timeout", [], []))
    assert stopped.agreement == "fence timeout" and stopped.safety == "unknown"
    assert "unknown (the run stopped before its end state)" in stopped.last_line()
    mismatch = two_verdicts(_info("model_mismatch", [], [1]))
    assert mismatch.agreement == "mismatch"
    assert mismatch.safety_text() == "replicas DIVERGE at offsets 1"


def test_consumer_anomalies_have_a_slot() -> None:
    info = _info("match", [], [])
    info.extra["consumer_anomalies"] = ["m3 read twice"]
    both = two_verdicts(info)
    assert both.lost and "consumer anomalies: m3 read twice" in both.safety_text()


def test_a_read_then_lost_record_makes_the_run_unsafe() -> None:
    """The consumer oracle's anomalies reach the safety verdict: a consumer that read m2 at
    offset 1 before it vanished, and saw the HW go back, is a loss even if no acknowledged
    write was lost (the oracle writes them under extra["consumer"]["observed"])."""
    info = _info("match", [], [])
    info.extra["consumer"] = {
        "observed": {
            "read_then_lost": [{"step": 5, "replica": "B", "offset": 1, "record": "m2"}],
            "hw_regression": [{"step": 13, "from_step": 12, "before": 2, "after": 1}],
            "uncommitted_read": [],
        }
    }
    both = two_verdicts(info)
    assert both.lost and both.safety == "lost"
    assert both.consumer_anomalies[0] == "read-then-lost m2@1 (step 5)"
    assert both.consumer_anomalies[1] == "hw-regression 2 -> 1 (step 13)"
    info.extra["consumer"] = {"observed": {"read_then_lost": [], "hw_regression": []}}
    assert two_verdicts(info).safety == "no loss"


def _report(tmp_path: Path, verdict: str, lost: list[str], drop_b: bool) -> str:
    """KIP-101 scenario 1 under hw (m2 predicted lost) with observed logs as given."""
    sc = load_scenario("kip101-scenario1")
    version = resolve_version("0.10.2.1")
    pred = run_scenario(sc, version.generation)
    pj = pred.to_json()
    observed = {
        n: [(e["offset"], e["epoch"], e["record"]) for e in log]
        for n, log in pj["replicas"].items()
    }
    if drop_b:
        observed["B"] = []
    observations = [
        Observation(k, s.text, 0.1, "B", 0, ["A", "B"], {"A": 1, "B": 1}, notes)
        for k, (s, notes) in enumerate(
            zip(pred.steps[1:4], [["m1: acked"], [], ["realised: something done"]], strict=True),
            start=1,
        )
    ]
    v = Verdict(verdict, verdict == "match", lost, pj["lost_acked"], [], [])
    path = tmp_path / "report.html"
    info = _info(verdict, lost, [])
    write_report(path, sc, version, pred, observed, observations, info, v)
    return path.read_text()


def test_report_shows_a_predicted_loss_red_beside_a_green_match(tmp_path: Path) -> None:
    page = _report(tmp_path, "match", ["m2"], drop_b=False)
    assert re.search(r"class='verdict ok' id='agreement'>agreement: match", page)
    assert re.search(r"class='verdict loss' id='safety'>safety: lost", page)
    assert "acknowledged writes LOST: m2" in page
    # the loss cause names the step; a loss the model does not predict says why it has none
    assert "<td class='lost'>m2</td><td>observed and predicted</td><td>step 10: restart A" in page


def test_report_without_loss_is_green_on_both(tmp_path: Path) -> None:
    sc = load_scenario("kip101-scenario1")
    page = _report(tmp_path, "match", [], drop_b=False)
    assert "class='verdict ok' id='safety'>safety: no loss" in page
    assert "class='verdict loss'" not in page
    assert sc.name in page


def test_report_cells_empty_logs_and_scroll_boxes(tmp_path: Path) -> None:
    page = _report(tmp_path, "model_mismatch", ["m2", "m1"], drop_b=True)
    assert ">·</td>" not in page  # positions past a log's end are blank, not dots
    assert "<th>B observed</th><td class='emptylog' colspan='2'>empty log</td>" in page
    # every table sits in a box that scrolls sideways
    assert page.count("<table") == page.count("<div class='scroll'><table")
    # a loss the model does not predict has no step, and says why
    assert "no step: the model keeps this write" in page
    # "on the brokers": never empty for a played step; observed notes, realised notes
    # (prefix dropped), else how the playbook plays that kind of step, marked as such
    rows = re.findall(r"<tr[^>]*><td>(\d+)</td><td>[^<]*</td><td>[^<]*</td><td>(.*?)</td>", page)
    got = dict(rows)
    assert got["1"] == "m1: acked"
    assert got["2"].endswith("<span class='muted'>(by design)</span>")
    assert got["3"] == "something done"
    assert "not played (the run stopped earlier)" in got["4"]


def test_matrix_ends_with_both_verdicts_per_cell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenarios = ["scenarios/kip101-scenario1.yaml", "scenarios/acks-all-min-isr2-one-crash.yaml"]
    root = Path(__file__).resolve().parents[2]
    args = ["--model-only", "--protocols", "hw,kip320", "--out", str(tmp_path / "m")]
    assert matrix_main([*args, "--scenarios", *(str(root / s) for s in scenarios)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == [
        "scenario", "target", "settings", "agreement", "safety", "lost", "/", "divergent"
    ]  # fmt: skip
    rows = {(ln.split()[0], ln.split()[1]): ln for ln in out[2:-1]}
    assert "LOST" in rows[("kip101-scenario1", "model:hw")]
    assert "lost m2" in rows[("kip101-scenario1", "model:hw")]
    assert "no loss" in rows[("kip101-scenario1", "model:kip320")]
    assert out[-1].startswith("4 cells: 1 lose data, 3 lose nothing")
    assert (tmp_path / "m" / "verdicts.txt").read_text().splitlines() == out


def test_matrix_fail_on_loss_sets_the_exit_status(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    lossy = str(root / "scenarios/kip101-scenario1.yaml")
    base = ["--model-only", "--scenarios", lossy, "--out"]
    assert matrix_main([*base, str(tmp_path / "a"), "--protocols", "hw"]) == 0
    assert matrix_main([*base, str(tmp_path / "b"), "--protocols", "hw", "--fail-on-loss"]) == 1
    kept = ["--protocols", "kip320", "--fail-on-loss"]
    assert matrix_main([*base, str(tmp_path / "c"), *kept]) == 0
