"""Halts as observations: which broker exit the model predicted, and the line that says so.

The model side is the real catalogue scenario on real profiles; the log side is text in
the format 0.10.2.1 writes (its FATAL line copied from a real run). Each predicate is also
shown rejecting what it must reject (a version whose model never halts, a line from an
earlier incarnation, a broker the model changes before its halt).
"""

from __future__ import annotations

from harness.generator.playbook.halts import (
    Halt,
    dying_line,
    fatal_line,
    predicted_halt,
)
from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from reference_model.run import run_scenario

FATAL = (
    "[2026-11-27 18:07:49,788] FATAL [ReplicaFetcherThread-0-1], Exiting because log "
    "truncation is not allowed for partition hwchaos-0, Current leader 1's latest offset 0 "
    "is less than replica 3's latest offset 1 (kafka.server.ReplicaFetcherThread)"
)
START = "[2026-11-27 18:07:47,000] INFO KafkaConfig values: \n\tbroker.id = 3\n"
INFO = "[2026-11-27 18:07:48,000] INFO [Kafka Server 3], started (kafka.server.KafkaServer)\n"


def _kip966(version: str) -> tuple[list[str], object]:
    s = load_scenario(SCENARIO_DIR / "kip966-last-replica-standing.yaml")
    steps = [ev.describe(s.brokers) for ev in s.steps]
    return steps, run_scenario(s, version)


def test_predicted_halt_at_the_models_step_or_after_it() -> None:
    steps, pred = _kip966("0.10.2.1")
    c, b, a = 2, 1, 0
    k_fetch_c = steps.index("fetch C", steps.index("restart C")) + 1  # 1-based
    assert predicted_halt(pred, c, k_fetch_c) == k_fetch_c  # type: ignore[arg-type]
    assert predicted_halt(pred, c, len(steps)) == k_fetch_c  # type: ignore[arg-type]
    k_restart_b = steps.index("restart B") + 1
    assert predicted_halt(pred, b, k_restart_b + 1) == k_restart_b + 1  # type: ignore[arg-type]
    assert predicted_halt(pred, a, len(steps)) is None  # type: ignore[arg-type]


def test_an_early_exit_is_predicted_only_from_the_same_model_state() -> None:
    steps, pred = _kip966("0.10.2.1")
    k_restart_c = steps.index("restart C") + 1
    # Seen while C restarts (its fetcher ran before the scripted fetch): same state.
    assert predicted_halt(pred, 2, k_restart_c) == k_restart_c + 1  # type: ignore[arg-type]
    # Seen before C even restarted: C's model state changes first, so not this halt.
    assert predicted_halt(pred, 2, k_restart_c - 1) is None  # type: ignore[arg-type]


def test_no_halt_predicted_where_the_version_truncates() -> None:
    """KAFKA-7414 (2.1): a follower ahead of its leader truncates; an exit is a diff."""
    steps, pred = _kip966("2.1.1")
    for k in range(len(steps) + 1):
        assert predicted_halt(pred, 2, k) is None  # type: ignore[arg-type]


def test_fatal_line_of_the_current_incarnation() -> None:
    old = START + INFO + FATAL.replace("18:07:49", "18:00:00") + "\n"
    assert fatal_line(old + START + INFO + FATAL + "\n", None) == FATAL
    assert fatal_line(old + START + INFO, 1) == "no fatal log line; exit code 1"
    error = "[2026-11-27 18:07:50,000] ERROR Exiting Kafka due to fatal exception (kafka.Kafka$)"
    assert fatal_line(START + error + "\n", 1) == error


def test_dying_line_only_for_a_broker_that_said_it_exits() -> None:
    assert dying_line(START + INFO) is None
    assert dying_line(START + INFO + FATAL + "\n") == FATAL
    # A fatal line from before the last start is the previous incarnation's.
    assert dying_line(START + FATAL + "\n" + START + INFO) is None
    # An ordinary ERROR line is not an exit, even with "halt" in a path (a real false
    # positive: a test folder named test_..._halt_...).
    rebuild = (
        "[2026-11-27 18:13:09,734] ERROR Could not find index file corresponding to log file "
        "/tmp/test_unpredicted_halt_is_a_dif0/run/cluster/A/data/hwchaos-0/0.log, "
        "rebuilding index... (kafka.log.Log)\n"
    )
    assert dying_line(START + rebuild) is None
    assert (
        dying_line(START + "[x] ERROR Error in fetch (kafka.server.ReplicaFetcherThread)\n") is None
    )


def test_halt_describes_step_broker_and_prediction() -> None:
    h = Halt("C", 12, FATAL, None, True, 13)
    assert h.predicted and "step 12: C" in h.describe() and "predicted at step 13" in h.describe()
    assert "KAFKA-4039" in h.describe()
    u = Halt("B", 9, FATAL, 1, False, None)
    assert not u.predicted and "NOT predicted" in u.describe() and u.to_json()["line"] == FATAL
