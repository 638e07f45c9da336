"""``explore --confirm``: the classification of counterexamples, on real model outputs.

The counterexamples are the explorer's own (small bounds, found in a second); the model
verdicts are each version's profile played over them. What a broker run ended with is the
``RunOutcome`` the runner's RunInfo gives; the broker tests (test_confirm_brokers.py) play
them for real.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.search import Bounds, counterexample_scenario, explore
from harness.generator.confirm import (
    CLASSIFICATIONS,
    CONFIRMED,
    MISMATCH,
    NOT_VIOLATED,
    PREVENTED,
    Confirmation,
    ModelVerdict,
    RunOutcome,
    classify,
    counts,
    model_verdict,
    summary_table,
)
from reference_model.profiles import generation
from reference_model.scenario import Scenario

ROOT = Path(__file__).resolve().parents[2]


def found(protocol: str, bounds: Bounds) -> dict[str, Scenario]:
    """The explorer's counterexamples under ``protocol`` as scenarios, by invariant."""
    gen = generation(protocol)
    res = explore(gen, bounds)
    return {
        cx.invariant: counterexample_scenario(cx, gen, "all", 2, False, 2, f"t-{cx.invariant}")
        for cx in res.counterexamples
    }


@pytest.fixture(scope="module")
def hw_found() -> dict[str, Scenario]:
    return found("hw", Bounds(records=1, crashes=2))


def test_the_hw_counterexample_is_predicted_lost_on_0_10_and_kept_from_2_1(
    hw_found: dict[str, Scenario],
) -> None:
    sc = hw_found["acked_lost"]
    steps = [e.describe(sc.brokers) for e in sc.steps]
    # B restarts before the controller noticed it died: a controller failover on 0.10
    assert "restart B" in steps and "detect B" not in steps and steps[-1] == "detect A"
    old = model_verdict(sc, "0.10.2.1")
    assert old.violated and old.lost_acked == ["m1"] and "acked_lost" in old.violations
    new = model_verdict(sc, "3.3.1")
    assert not new.violated and new.lost_acked == [] and new.violations == []


def test_match_of_a_predicted_loss_is_confirmed(hw_found: dict[str, Scenario]) -> None:
    model = model_verdict(hw_found["acked_lost"], "0.10.2.1")
    label, reason = classify(model, RunOutcome("match", ["m1"], []), "0.10.2.1")
    assert label == CONFIRMED
    assert "acknowledged m1 lost" in reason and "acked_lost" in reason


def test_match_of_a_predicted_survival_is_not_violated(hw_found: dict[str, Scenario]) -> None:
    model = model_verdict(hw_found["acked_lost"], "2.1.1")
    label, reason = classify(model, RunOutcome("match", [], []), "2.1.1")
    assert label == NOT_VIOLATED and "predicts no violation" in reason


@pytest.mark.parametrize(
    ("run", "says"),
    [
        (RunOutcome("model_mismatch", [], [], differences=1), "logs differ"),
        (RunOutcome("step_prevented", failure="step 6: restart B ..."), "could not play"),
        (RunOutcome("fence_timeout", failure="timed out after 45s"), "fence_timeout"),
        (RunOutcome("error", failure="broker A did not start"), "error"),
        (RunOutcome("prevented", harness_note="stopped"), "predicts none"),
    ],
)
def test_anything_else_is_a_mismatch_with_its_reason(
    hw_found: dict[str, Scenario], run: RunOutcome, says: str
) -> None:
    model = model_verdict(hw_found["acked_lost"], "0.10.2.1")
    label, reason = classify(model, run, "0.10.2.1")
    assert label == MISMATCH and says in reason
    assert run.failure in reason


def test_same_logs_and_violation_with_an_earlier_ack_is_confirmed_and_says_so() -> None:
    """kip320 on 3.3.1: a single fetch B then the leader's power loss; the model never
    acknowledges m1 (the HW moves on B's next fetch), the broker did (its fetcher asked
    again before the harness paused it): same logs, same divergence, m1 acknowledged and
    lost only on the broker. The predicted violation is there: confirmed, with the reason."""
    cxs = found("kip320", Bounds(records=2, crashes=0, power_losses=1))
    sc = cxs["replicas_disagree_below_hw"]
    assert [e.describe(sc.brokers) for e in sc.steps][:3] == [
        "produce m1",
        "fetch B",
        "power_loss A",
    ]
    model = model_verdict(sc, "3.3.1")
    assert model.lost_acked == [] and model.divergent_offsets == [0]
    run = RunOutcome("model_mismatch", ["m1"], [0], differences=0)
    label, reason = classify(model, run, "3.3.1")
    assert label == CONFIRMED and "also acknowledged m1" in reason
    # Other logs, or a different divergence, stay mismatches that say what differs.
    label, reason = classify(
        model, RunOutcome("model_mismatch", ["m1"], [], differences=0), "3.3.1"
    )
    assert label == MISMATCH and "per-replica logs are as the 3.3.1 profile predicts" in reason
    label, _ = classify(model, RunOutcome("model_mismatch", ["m1"], [0], differences=1), "3.3.1")
    assert label == MISMATCH


def test_a_mismatch_names_both_outcomes(hw_found: dict[str, Scenario]) -> None:
    """Observed logs that keep m1 where the model loses it: both sides in the reason."""
    model = model_verdict(hw_found["acked_lost"], "0.10.2.1")
    run = RunOutcome("model_mismatch", [], [], first_differing_step=6, differences=2)
    label, reason = classify(model, run, "0.10.2.1")
    assert label == MISMATCH
    assert "predicted acknowledged m1 lost" in reason
    assert "observed no loss, no divergence" in reason and "first differing step 6" in reason


def test_prevention_predicted_and_reached_is_prevented(hw_found: dict[str, Scenario]) -> None:
    """On KRaft the restart before the controller fenced B is refused: the model says so."""
    model = model_verdict(hw_found["acked_lost"], "4.0.0")
    assert model.prevented is not None and model.prevented["event"] == "restart B"
    assert "DuplicateBrokerRegistrationException" in model.prevented["reason"]
    k = model.prevented["step"]
    run = RunOutcome("prevented", harness_note="not played")
    label, reason = classify(model, run, "4.0.0")
    assert label == PREVENTED and f"step {k} (restart B) prevented on 4.0.0" in reason
    assert "DuplicateBrokerRegistrationException" in reason and "harness: not played" in reason
    # The model predicts the prevention but the run went elsewhere: a mismatch.
    for other in ("match", "step_prevented", "model_mismatch", "fence_timeout"):
        label, reason = classify(model, RunOutcome(other), "4.0.0")
        assert label == MISMATCH and f"ended {other}" in reason


def test_kip320_power_loss_counterexamples_are_predicted_losses_on_every_zk_version() -> None:
    """The kip320 counterexamples with one power loss: every catalogue ZooKeeper version
    loses m1 in the model (the brokers are asked in test_confirm_brokers)."""
    cxs = found("kip320", Bounds(records=1, crashes=1, power_losses=1))
    assert set(cxs) >= {"acked_lost"}
    for sc in cxs.values():
        for profile in ("0.10.2.1", "2.1.1", "3.3.1"):
            mv = model_verdict(sc, profile)
            assert mv.prevented is not None or mv.lost_acked == ["m1"], (profile, mv)


def test_counts_and_table_cover_every_class() -> None:
    mv = dataclasses.asdict(ModelVerdict("0.10.2.1", ["m1"], [], ["acked_lost"], [], None))
    rows = [
        Confirmation(1, "acked_lost", ["produce m1"], "f.yaml", CONFIRMED, "why", "r1", mv, {}, 3),
        Confirmation(2, "x", ["produce m1"], "g.yaml", CONFIRMED, "why", "r1", mv, {}, 0, 1),
        Confirmation(3, "y", ["crash A"], "h.yaml", MISMATCH, "because", "r3", mv, {}, 5),
    ]
    n = counts(rows)
    assert list(n) == list(CLASSIFICATIONS)
    assert n == {CONFIRMED: 2, PREVENTED: 0, NOT_VIOLATED: 0, MISMATCH: 1}
    table = summary_table(rows)
    assert "2 confirmed, 0 prevented, 0 not_violated, 1 mismatch" in table
    assert "   =1  produce m1" in table  # the shared run is pointed at, not timed twice
    assert json.loads(json.dumps(rows[0].to_json()))["model_verdict"]["lost_acked"] == ["m1"]


def _explore(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", "explore", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--confirm"], "hwchaos explore: --confirm needs --kafka VERSION"),
        (["--kafka", "0.10.2.1"], "hwchaos explore: --kafka needs --confirm"),
        (["--confirm", "--kafka", "9.9"], "hwchaos explore: unknown Kafka version '9.9'"),
    ],
)
def test_bad_confirm_options_are_one_line_errors(args: list[str], line: str) -> None:
    res = _explore("--records", "1", *args)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[0].startswith(line), res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_missing_tree_is_reported_before_the_search(tmp_path: Path) -> None:
    import os

    env = {
        **os.environ,
        "HWCHAOS_KAFKA_DISTS": str(tmp_path / "dists"),
        "HWCHAOS_KAFKA_CACHE": str(tmp_path / "cache"),
    }
    (tmp_path / "dists").mkdir()
    res = _explore("--confirm", "--kafka", "0.10.2.1", "--out", str(tmp_path), env=env)
    assert res.returncode == 2
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hwchaos explore: cannot confirm on Kafka 0.10.2.1")
    assert not list(tmp_path.glob("*.yaml")), "no search, no counterexample files"
