"""The reference model pinned against the outcomes docs/background.md and KIP-101 describe."""

from __future__ import annotations

import pytest

from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from reference_model.events import Event
from reference_model.profiles import GENERATIONS, generation
from reference_model.run import run_scenario
from reference_model.state import Config, initial_state
from reference_model.transitions import apply

ALL_GENS = list(GENERATIONS)
EPOCH_GENS = ["kip101", "kip279", "kip320"]


def records(result_json: dict, name: str) -> list[str]:
    return [e["record"] for e in result_json["replicas"][name]]


@pytest.mark.parametrize("gen", ALL_GENS)
def test_kip101_scenario1(gen: str) -> None:
    j = run_scenario(load_scenario(SCENARIO_DIR / "kip101-scenario1.yaml"), gen).to_json()
    assert j["acked"] == ["m1", "m2"]
    assert j["leader"] == "A"
    if gen == "hw":
        assert j["lost_acked"] == ["m2"]
        assert records(j, "A") == ["m1"]
        assert j["lost_steps"] == {"m2": 10}  # the restart that truncated A to its HW
    else:
        assert j["lost_acked"] == []
        assert records(j, "A") == ["m1", "m2"]
    assert j["divergent_offsets"] == []


@pytest.mark.parametrize("gen", ALL_GENS)
def test_kip101_scenario1_as_the_kip_tells_it(gen: str) -> None:
    """A is still in the ISR when B dies: a clean election, and the same outcome."""
    sc = load_scenario(SCENARIO_DIR / "kip101-scenario1-kip-text.yaml")
    res = run_scenario(sc, gen)
    assert not sc.unclean
    assert res.to_json()["lost_acked"] == (["m2"] if gen == "hw" else [])
    assert "unclean" not in res.steps[-1].notes[0]


@pytest.mark.parametrize("gen", ALL_GENS)
def test_kip101_scenario2(gen: str) -> None:
    j = run_scenario(load_scenario(SCENARIO_DIR / "kip101-scenario2.yaml"), gen).to_json()
    assert j["leader"] == "B"
    assert records(j, "B") == ["m1", "m3"]
    # m2 was acknowledged (acks=1) and is gone under every generation: both replicas failed.
    assert j["lost_acked"] == ["m2"]
    if gen == "hw":
        assert j["divergent_offsets"] == [1]
        assert records(j, "A") == ["m1", "m2"]
    else:
        assert j["divergent_offsets"] == []
        assert records(j, "A") == ["m1", "m3"]


@pytest.mark.parametrize("gen", EPOCH_GENS)
def test_leader_epoch_basic_workflow(gen: str) -> None:
    """Write, bounce follower, write, bounce leader, write: epochs (0,0),(1,1),(2,2).

    The same workflow as Kafka's EpochDrivenReplicationProtocolAcceptanceTest.
    """
    cfg = Config(("A", "B"), generation(gen), acks="1", min_insync=1)
    st = initial_state(cfg, 0)
    a, b = 0, 1

    def run(*events: Event) -> None:
        nonlocal st
        for ev in events:
            st, _ = apply(cfg, st, ev)

    def bounce(i: int) -> None:
        run(Event("crash", i), Event("detect", i), Event("restart", i))

    run(Event("produce", record="m1"), Event("fetch", b), Event("fetch", b))
    bounce(b)
    run(Event("fetch", b), Event("produce", record="m2"), Event("fetch", b), Event("fetch", b))
    bounce(a)
    assert st.controller.leader == b
    run(Event("produce", record="m3"), Event("fetch", a), Event("fetch", a))
    for rep in st.replicas:
        assert rep.epochs == ((0, 0), (1, 1), (2, 2))
        assert [e.record for e in rep.log] == ["m1", "m2", "m3"]
        assert [e.epoch for e in rep.log] == [0, 1, 2]


def test_hw_generation_writes_no_epochs() -> None:
    j = run_scenario(load_scenario(SCENARIO_DIR / "kip101-scenario2.yaml"), "hw").to_json()
    assert all(e["epoch"] == -1 for e in j["replicas"]["A"])
    assert j["epochs"] == {"A": [], "B": []}


def test_acks_all_refused_below_min_insync() -> None:
    cfg = Config(("A", "B"), generation("kip320"), acks="all", min_insync=2)
    st = initial_state(cfg, 0)
    st, _ = apply(cfg, st, Event("crash", 1))
    st, _ = apply(cfg, st, Event("detect", 1))
    st, note = apply(cfg, st, Event("produce", record="m1"))
    assert st.writes[-1].status == "refused"
    assert "NOT_ENOUGH_REPLICAS" in note
    assert st.replicas[0].log == ()


def test_acks_all_acknowledged_only_when_hw_passes() -> None:
    cfg = Config(("A", "B"), generation("kip320"), acks="all", min_insync=2)
    st = initial_state(cfg, 0)
    st, _ = apply(cfg, st, Event("produce", record="m1"))
    assert st.writes[-1].status == "pending"
    st, _ = apply(cfg, st, Event("fetch", 1))  # B copies m1, leader HW still 0
    assert st.writes[-1].status == "pending"
    st, _ = apply(cfg, st, Event("fetch", 1))  # B's fetch offset 1 moves the HW
    assert st.writes[-1].status == "acked"


@pytest.mark.parametrize("version", ["0.10.2.1", "3.3.1", "3.3.1-kraft", "4.0.0"])
def test_pending_write_completes_when_the_leader_keeps_leading_in_a_new_epoch(
    version: str,
) -> None:
    """The controller drops a dead follower from the ISR (a new leader epoch in ZooKeeper
    mode and KRaft before 3.6): the leader stays leader, its HW passes m1 and the delayed
    produce completes (Partition.makeLeader -> tryCompleteDelayedRequests)."""
    cfg = Config(("A", "B"), generation(version), acks="all", min_insync=1)
    st = initial_state(cfg, 0)
    st, _ = apply(cfg, st, Event("produce", record="m1"))
    st, _ = apply(cfg, st, Event("crash", 1))
    assert st.writes[-1].status == "pending"
    st, _ = apply(cfg, st, Event("detect", 1))
    assert st.controller.isr == {0} and st.replicas[0].hw == 1
    assert st.writes[-1].status == "acked"


def test_unclean_election_loses_acked_write() -> None:
    cfg = Config(("A", "B"), generation("kip320"), acks="1", min_insync=1, unclean=True)
    st = initial_state(cfg, 0)
    for ev in (
        Event("isr_shrink", 1),
        Event("produce", record="m1"),
        Event("crash", 0),
        Event("detect", 0),
    ):
        st, _ = apply(cfg, st, ev)
    assert st.controller.leader == 1
    assert st.controller.isr == frozenset({1})
    from reference_model.verdict import lost_acked

    assert lost_acked(st) == ["m1"]


@pytest.mark.parametrize("unclean", [False, True])
def test_follower_ahead_of_leader(unclean: bool) -> None:
    """OffsetOutOfRange with the follower ahead: 0.10 halts unless unclean election is on."""
    cfg = Config(("A", "B"), generation("hw"), acks="1", min_insync=1, unclean=unclean)
    st = initial_state(cfg, 0)
    for ev in (
        Event("produce", record="m1"),
        Event("fetch", 1),
        Event("fetch", 1),
        Event("flush", 0),
        Event("produce", record="m2"),
        Event("fetch", 1),
        Event("fetch", 1),
        Event("power_loss", 0),  # A loses its unflushed m2
        Event("restart", 0),  # the controller never noticed: A leads again with [m1]
    ):
        st, _ = apply(cfg, st, ev)
    st, note = apply(cfg, st, Event("fetch", 1))  # B fetches at 2 > leader LEO 1
    if unclean:
        assert st.replicas[1].leo == 1 and st.replicas[1].alive
    else:
        assert st.replicas[1].halted and not st.replicas[1].alive
        assert "halted" in note


def test_state_builders_equal_replace_on_explored_states() -> None:
    """``state.with_replica``/``with_inflight``/``with_controller`` each equal the
    ``_replace`` they stand for, on states of a real search (and ``with_inflight`` returns the
    very state when nothing changes: the explorer relies on that to spot no-op steps)."""
    from explorer.search import Bounds
    from reference_model.state import (
        FetchResponse,
        LogEntry,
        PartitionState,
        with_controller,
        with_inflight,
        with_replica,
    )
    from tests.unit.test_explorer_reductions import _sample_states

    # five levels of a breadth-first search, in-flight fetches included
    seen = _sample_states("kip320", Bounds(replicas=3, split_fetch=True), 10**9, levels=5)
    resp = FetchResponse(0, 1, 0, (LogEntry(1, "m9"),), 0)
    checked = 0
    for st in seen:
        for i in range(3):
            other = st.replicas[(i + 1) % 3]
            reps = (*st.replicas[:i], other, *st.replicas[i + 1 :])
            assert with_replica(st, i, other) == st._replace(replicas=reps)
            assert type(with_replica(st, i, other)) is PartitionState
            for f in range(3):
                for r in (None, resp):
                    inf = (*st.inflight[:f], r, *st.inflight[f + 1 :])
                    want = st._replace(replicas=reps, inflight=inf)
                    assert with_inflight(st, i, other, f, r) == want
                    assert with_inflight(st, f, None, f, r) == st._replace(inflight=inf)
                    if st.inflight[f] is r:
                        assert with_inflight(st, f, None, f, r) is st  # no change: same object
            checked += 1
        ctrl = st.controller._replace(epoch=st.controller.epoch + 1)
        assert with_controller(st, ctrl) == st._replace(controller=ctrl)
    assert checked > 1000
    assert any(any(x is not None for x in st.inflight) for st in seen)
