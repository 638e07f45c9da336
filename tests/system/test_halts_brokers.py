"""Real 0.10.2.1: a predicted halt is an accepted outcome; an unpredicted one is a diff.

``kip966-last-replica-standing`` brings C and then B back ahead of an empty leader with
unclean election off: before KAFKA-7414 (2.1) each logs ``FATAL ... Exiting because log
truncation is not allowed`` and (KAFKA-4039, before 0.11) hangs in its shutdown hook. The
model predicts both halts, so the run must end ``match`` with the halts recorded; played
against a model that truncates instead (the 2.1.1 profile: the mutation), the same exits
must make it a ``model_mismatch`` naming the step and the FATAL line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import trial as trial_module
from harness.db.catalogue.versions import resolve_version
from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from harness.trial import trial
from reference_model.run import run_scenario
from tests.system.test_brokers import jvms_under, require
from tests.verdicts import trial_realised, why

pytestmark = pytest.mark.broker

FATAL = "Exiting because log truncation is not allowed"


def test_predicted_halts_match_on_0_10_2_1(tmp_path: Path) -> None:
    require("0.10.2.1")
    sc = load_scenario(SCENARIO_DIR / "kip966-last-replica-standing.yaml")
    (info, _pred, verdict, _record), run = trial_realised(
        lambda where: trial(sc, resolve_version("0.10.2.1"), "local", where, "t", lambda _m: None),
        tmp_path / "run",
        lambda t: t.verdict,
    )
    assert verdict is not None, why(info, verdict, run)
    assert verdict.verdict == "match", why(info, verdict, run)
    assert sorted(verdict.outcomes) == ["broker_halted:B", "broker_halted:C"]
    assert verdict.lost_acked == ["m1"]
    halted = {h["broker"]: h for h in verdict.halts}
    assert set(halted) == {"B", "C"}
    for h in halted.values():
        assert h["predicted"] and FATAL in h["line"], h
        assert h["step"] >= h["predicted_step"] - 1, h  # at most one step early
    assert jvms_under(tmp_path) == []


def test_unpredicted_halt_is_a_diff_naming_step_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mutation: the harness judges the exits against a model that never halts."""
    require("0.10.2.1")
    monkeypatch.setattr(trial_module, "run_scenario", lambda s, _g: run_scenario(s, "2.1.1"))
    sc = load_scenario(SCENARIO_DIR / "kip966-last-replica-standing.yaml")
    info, _pred, verdict, _record = trial(
        sc, resolve_version("0.10.2.1"), "local", tmp_path / "run", "t", progress=lambda _m: None
    )
    assert verdict is not None, why(info, verdict, tmp_path / "run")
    assert verdict.verdict == "model_mismatch" and not verdict.model_match
    assert verdict.halts and not any(h["predicted"] for h in verdict.halts)
    first = verdict.halts[0]
    assert f"step {first['step']}: {first['broker']} exited, not predicted" in verdict.reason
    assert FATAL in verdict.reason
    assert jvms_under(tmp_path) == []
