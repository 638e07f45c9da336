"""The ZooKeeper controller's per-broker queue (rule ``controller_queue``) in the model.

What real brokers did (0.10.2.1, 2.1.1, 3.3.1; tests/system/test_controller_queue_brokers):
a follower cut from the controller through two leader changes processes both held
LeaderAndIsr in order at the heal; only a controller failover makes it miss one; KRaft
brokers act on the final metadata only. Each assertion here also runs with the rule off
(the mutation), which must change the outcome.
"""

from __future__ import annotations

from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from reference_model.events import ZOOKEEPER_NODE, Event
from reference_model.profiles import generation, with_rule
from reference_model.rules import RULES
from reference_model.run import run_scenario
from reference_model.scenario import Scenario
from reference_model.transitions import apply

QUEUE = "controller-queue-two-leader-changes"
FAILOVER = "controller-failover-missed-change"


def cat(name: str) -> Scenario:
    return load_scenario(SCENARIO_DIR / f"{name}.yaml")


def lost(s: Scenario, profile: object) -> list[str]:
    return list(run_scenario(s, profile).to_json()["lost_acked"])  # type: ignore[arg-type]


def test_queued_requests_are_processed_in_order_before_0_11() -> None:
    """0.10: C first follows B and truncates to its HW 1 (m2 gone), then leads."""
    s = cat(QUEUE)
    assert lost(s, "0.10.2.1") == ["m2"]
    run = run_scenario(s, "0.10.2.1")
    heal = next(x for x in run.steps if x.text == "leader_and_isr C")
    c = heal.state.replicas[2]
    assert [e.record for e in c.log] == ["m1"] and c.role == "leader"
    off = with_rule(generation("0.10.2.1"), "controller_queue", False)
    assert lost(s, off) == []  # latest only: C leads with m2


def test_from_0_11_the_intermediate_follower_keeps_its_log() -> None:
    """KIP-101: truncation is the fetcher's, and B (paused) answers nothing."""
    s = cat(QUEUE)
    for v in ("2.1.1", "3.3.1"):
        assert lost(s, v) == [], v


def test_failover_drops_the_queue_and_the_change_is_missed() -> None:
    s = cat(FAILOVER)
    for v in ("0.10.2.1", "2.1.1", "3.3.1"):
        assert lost(s, v) == [], v
    fo = next(x for x in run_scenario(s, "0.10.2.1").steps if x.text == "controller_failover C")
    assert any("missed 2 queued" in n for n in fo.notes), fo.notes
    c = fo.state.replicas[2]
    assert c.role == "leader" and [e.record for e in c.log] == ["m1", "m2"]
    # C heard the current state at once; the paused B has it queued from the new controller
    assert [q.broker for q in fo.state.controller.queued] == [1]
    assert fo.state.cuts == frozenset()


def test_kraft_has_no_queue() -> None:
    """A KRaft broker applies the final registration of what it caught up on."""
    for v in ("3.3.1-kraft", "4.0.0", "4.0.0-elr"):
        g = generation(v)
        assert not g.controller_queue, v
        assert lost(cat(QUEUE), v) == [], v
    assert RULES["controller_queue"].mode == "zk"


def test_the_queue_holds_each_decision_once_in_order_and_expiry_drops_it() -> None:
    """Two elections while C is cut queue epochs 1 and 2 for C; C's session expiring
    (removeBroker) drops them, so C hears only what the controller sends at registration."""
    s = cat(QUEUE)
    run = run_scenario(s, "0.10.2.1")
    elect_c = next(x for x in run.steps if x.text == "elect C")
    ctrl = elect_c.state.controller
    assert [(q.broker, q.leader, q.epoch) for q in ctrl.queued] == [(2, 1, 1), (2, 2, 2)]
    cfg = run.config
    cut = Event("partition", replica=2, links=frozenset({(2, ZOOKEEPER_NODE), (ZOOKEEPER_NODE, 2)}))
    st, _ = apply(cfg, elect_c.state, cut)
    st, note = apply(cfg, st, Event("detect", replica=2))
    assert "session expired" in note and st.controller.queued == ()
    # the mutation: without the rule nothing was ever queued
    off = run_scenario(s, with_rule(generation("0.10.2.1"), "controller_queue", False))
    assert all(x.state.controller.queued == () for x in off.steps)
