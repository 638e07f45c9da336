"""Issue 9: the explorer judges state invariants on settled states only.

A leader that is merely down (not yet replaced) is not a loss: the false positive
``produce m1, fetch B, fetch B, power_loss A`` under kip320 must go, while the real
counterexamples (KIP-101 scenario 1 under ``hw``) stay.
"""

from __future__ import annotations

from explorer.invariants import judged_violations, settled
from explorer.search import Bounds, explore
from reference_model import verdict
from reference_model.events import Event
from reference_model.profiles import generation
from reference_model.state import Config, PartitionState, initial_state
from reference_model.transitions import apply

FALSE_POSITIVE = [
    Event("produce", record="m1"),
    Event("fetch", 1),
    Event("fetch", 1),
    Event("power_loss", 0),
]


def _play(protocol: str, events: list[Event]) -> tuple[Config, PartitionState, PartitionState]:
    cfg = Config(("A", "B"), generation(protocol), "all", 2, False)
    st = initial_state(cfg, 0)
    prev = st
    for ev in events:
        prev, st = st, apply(cfg, st, ev)[0]
    return cfg, prev, st


def test_leader_merely_down_is_not_a_loss() -> None:
    cfg, prev, st = _play("kip320", FALSE_POSITIVE)
    # The old judgement read a loss off this state ...
    assert "acked_lost" in verdict.violations(cfg, prev, st)
    # ... but the controller still names A, which is down, and B holds m1: not settled.
    assert not settled(st)
    assert st.replicas[1].log[0].record == "m1"
    assert judged_violations(cfg, prev, st) == []
    assert "acked_lost" in judged_violations(cfg, prev, st, settled_only=False)
    # Once the controller notices, B is elected with m1: nothing was lost.
    cfg, prev, st = _play("kip320", [*FALSE_POSITIVE, Event("detect", 0)])
    assert settled(st)
    assert judged_violations(cfg, prev, st) == []


def test_explorer_no_longer_reports_the_false_positive() -> None:
    b = Bounds(records=1, power_losses=1, crashes=1)
    old = explore(generation("kip320"), b, settled_only=False)
    old_steps = {c.invariant: c.events for c in old.counterexamples}
    assert old_steps.get("acked_lost") == FALSE_POSITIVE, "the pre-issue-9 judgement finds it"
    res = explore(generation("kip320"), b)
    for cx in res.counterexamples:
        assert cx.events != FALSE_POSITIVE
        _, _, st = _play("kip320", cx.events)
        if cx.invariant != "leader_missing_committed":
            assert settled(st), f"{cx.invariant} judged on an unsettled state: {cx.events}"
        if cx.invariant == "acked_lost":
            assert verdict.lost_acked(st), "the reported loss is what a consumer would read"


def test_settled_needs_every_live_replica_to_follow_the_leader() -> None:
    cfg = Config(("A", "B", "C"), generation("kip320"), "all", 2, False)
    st = initial_state(cfg, 0)
    assert settled(st)
    st = apply(cfg, st, Event("crash", 0))[0]
    assert not settled(st), "the controller's leader is down"
    st = apply(cfg, st, Event("detect", 0))[0]
    # B is elected; C has not yet truncated through OffsetsForLeaderEpoch.
    assert st.replicas[2].needs_truncation and not settled(st)
    st = apply(cfg, st, Event("leader_epoch_request", 2))[0]
    assert settled(st)


def test_hw_still_finds_kip101_scenario1_shape() -> None:
    res = explore(generation("hw"), Bounds())
    cx = next(c for c in res.counterexamples if c.invariant == "acked_lost")
    kinds = [e.kind for e in cx.events]
    assert "restart" in kinds and kinds[-1] == "detect"
    _, _, st = _play("hw", cx.events)
    assert settled(st) and verdict.lost_acked(st)
