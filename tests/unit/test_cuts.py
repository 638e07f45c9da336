"""What a cut network link means to the model (issue 9, ``reference_model.cuts``).

Each test plays a short ordering with ``partition``/``heal`` steps and checks the one
meaning it is about against the same ordering without the cut (or before the heal), so a
test fails if the cut were only recorded and not acted on.
"""

from __future__ import annotations

import pytest

from harness.generator.scenarios import parse_text
from reference_model.run import RunResult, run_scenario
from reference_model.scenario import Scenario

ZK_AND_KRAFT = ["0.10.2.1", "2.1.1", "3.3.1", "3.3.1-kraft", "4.0.0"]

REPLICATED = """
  - produce: m1
  - fetch: B
  - fetch: C
  - fetch: B
  - fetch: C                  # m1 on every replica, HW 1
"""


def scenario(steps: str, acks: str = "1", brokers: str = "[A, B, C]") -> Scenario:
    text = f"""
name: cut-test
description: test ordering
fixed_by: config
brokers: {brokers}
leader: A
topic: {{replication_factor: 3, min_insync_replicas: 1, unclean_leader_election: false}}
producer: {{acks: {acks}}}
steps:
{steps}
"""
    return parse_text(text, "cut-test")


def play(steps: str, version: str, acks: str = "1") -> RunResult:
    return run_scenario(scenario(steps, acks), version)


def notes(result: RunResult, step: int) -> str:
    return "; ".join(n for n in result.steps[step].notes if n)


ZOMBIE = (
    REPLICATED
    + """
  - partition: {from: A, to: [B, C, controller, zookeeper]}
  - detect: A                 # A's session expires: B elected, A does not hear of it
  - produce: {record: m2, to: A}   # the zombie leader A acknowledges m2 alone (acks=1)
  - heal: A                   # A registers again, learns B leads, truncates
  - fetch: A
"""
)


@pytest.mark.parametrize("version", ZK_AND_KRAFT)
def test_zombie_leader_acknowledges_a_write_that_is_then_lost(version: str) -> None:
    r = play(ZOMBIE, version)
    assert r.prevented is None
    after_detect = r.steps[7].state
    assert after_detect.controller.leader == 1  # B
    assert after_detect.replicas[0].role == "leader"  # A still believes it leads
    j = r.to_json()
    assert j["acked"] == ["m1", "m2"]
    assert [e["record"] for e in j["replicas"]["A"]] == ["m1"]  # m2 truncated away
    assert j["leader"] == "B" and j["lost_acked"] == ["m2"]
    assert "m2" in [e.record for e in r.steps[8].state.replicas[0].log]  # before the heal
    # Without the partition A's session does not expire: the detect is prevented.
    calm = play(
        ZOMBIE.replace("partition: {from: A, to: [B, C, controller, zookeeper]}", "fetch: B"),
        version,
    )
    assert calm.prevented is not None and calm.prevented[0] == 7
    assert calm.to_json()["lost_acked"] == []


@pytest.mark.parametrize("version", ZK_AND_KRAFT)
def test_leader_and_isr_held_back_from_a_broker_cut_from_the_controller(version: str) -> None:
    steps = (
        REPLICATED
        + """
  - partition: {from: C, to: controller}
  - crash: A
  - detect: A                 # B elected; C does not hear of it
  - leader_and_isr: C         # still cut: nothing arrives
  - heal: C                   # the held LeaderAndIsr reaches C
"""
    )
    r = play(steps, version)
    cut = r.steps[8].state
    assert cut.controller.leader == 1
    assert 2 in cut.controller.held
    assert (cut.replicas[2].leader, cut.replicas[2].epoch) == (0, 0)  # C: still A, epoch 0
    assert r.steps[9].state == cut and "still cut" in notes(r, 9)
    healed = r.steps[10].state
    assert 2 not in healed.controller.held
    assert (healed.replicas[2].leader, healed.replicas[2].epoch) == (1, cut.controller.epoch)


@pytest.mark.parametrize("version", ["0.10.2.1", "3.3.1"])
def test_zookeeper_mode_session_lives_on_zookeeper_not_the_controller(version: str) -> None:
    """Cut from the controller only, a ZooKeeper-mode broker keeps its session: a detect is
    prevented (the model's no-op note, and the prevention rule say so)."""
    steps = REPLICATED + "  - partition: {from: A, to: controller}\n  - detect: A\n"
    r = play(steps, version)
    assert r.prevented is not None and r.prevented[0] == 7
    steps = REPLICATED + "  - partition: {from: A, to: zookeeper}\n  - detect: A\n"
    r = play(steps, version)
    assert r.prevented is None and r.final.controller.leader == 1


@pytest.mark.parametrize("version", ["3.3.1-kraft", "4.0.0"])
def test_kraft_session_lives_on_the_controller(version: str) -> None:
    steps = REPLICATED + "  - partition: {from: A, to: controller}\n  - detect: A\n"
    r = play(steps, version)
    assert r.prevented is None and r.final.controller.leader == 1
    assert "session expired" in notes(r, 7)


@pytest.mark.parametrize("version", ZK_AND_KRAFT)
def test_fetch_across_a_cut_does_nothing_and_a_response_in_flight_waits(version: str) -> None:
    steps = """
  - produce: m1
  - partition: {from: B, to: A}
  - fetch: B
  - heal: B
  - fetch_request: C
  - partition: {from: C, to: A, one_way: true}
  - fetch_response: C
  - heal: all
  - fetch_response: C
"""
    r = play(steps, version)
    assert r.steps[3].state.replicas[1].log == ()
    assert "cut from leader A" in notes(r, 3)
    assert r.steps[7].state.replicas[2].log == ()  # the answer waits for the heal
    assert "waits for the heal" in notes(r, 7)
    assert [e.record for e in r.final.replicas[2].log] == ["m1"]


@pytest.mark.parametrize("version", ZK_AND_KRAFT)
def test_produce_to_a_broker_the_client_is_cut_from_fails(version: str) -> None:
    steps = "  - partition: {from: client, to: A}\n  - produce: m1\n  - heal: A\n  - produce: m2\n"
    j = play(steps, version).to_json()
    assert [(w["record"], w["status"]) for w in j["writes"]] == [("m1", "failed"), ("m2", "acked")]
    assert [e["record"] for e in j["replicas"]["A"]] == ["m2"]


@pytest.mark.parametrize("version", ZK_AND_KRAFT)
def test_produce_to_a_follower_is_refused(version: str) -> None:
    j = play("  - produce: {record: m1, to: B}\n", version).to_json()
    assert j["writes"][0]["status"] == "failed" and j["replicas"]["B"] == []


@pytest.mark.parametrize("version", ZK_AND_KRAFT)
def test_leader_cut_from_its_session_node_cannot_shrink_the_isr(version: str) -> None:
    node = "controller" if "kraft" in version or version.startswith("4") else "zookeeper"
    steps = f"""
  - produce: m1
  - produce: m2
  - fetch: B                  # B at 2, C at 0: C is not caught up (KAFKA-7152 allows it)
  - partition: {{from: A, to: {node}}}
  - isr_shrink: C
  - heal: A
  - isr_shrink: C
"""
    r = play(steps, version)
    assert r.prevented is None
    assert r.steps[5].state.controller.isr == frozenset({0, 1, 2})
    assert "cannot update the ISR" in notes(r, 5)
    assert r.final.controller.isr == frozenset({0, 1})


@pytest.mark.parametrize("version", ZK_AND_KRAFT)
def test_restart_while_cut_registers_at_the_heal(version: str) -> None:
    node = "controller" if "kraft" in version or version.startswith("4") else "zookeeper"
    steps = (
        REPLICATED
        + f"""
  - crash: C
  - detect: C
  - partition: {{from: C, to: {node}}}
  - restart: C
  - heal: C
"""
    )
    r = play(steps, version)
    assert r.prevented is None
    waiting = r.steps[9].state
    assert waiting.replicas[2].alive and 2 not in waiting.controller.live
    assert "registration waits" in notes(r, 9)
    assert 2 in r.final.controller.live and r.final.replicas[2].role == "follower"


def test_zombie_leader_with_acks_all_cannot_complete_the_write() -> None:
    """acks=all: the zombie's ISR still names B and C, who now follow B: m2 stays pending
    and fails when A steps down at the heal (NOT_LEADER; no acknowledged write is lost)."""
    r = play(ZOMBIE, "3.3.1", acks="all")
    assert [w.status for w in r.steps[8].state.writes] == ["acked", "pending"]
    j = r.to_json()
    assert [w["status"] for w in j["writes"]] == ["acked", "failed"] and j["lost_acked"] == []
