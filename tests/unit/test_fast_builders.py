"""The explorer's generated state builders mean what the model's readable ones mean."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from explorer import fast_builders as fb
from explorer.search import ALL_REDUCTIONS, Bounds, explore
from reference_model import broker, state, transitions
from reference_model.events import Event
from reference_model.profiles import generation
from reference_model.state import Config, FetchResponse, LogEntry, PartitionState, initial_state


def _states(profile: str, limit: int = 1500) -> list[PartitionState]:
    """Distinct states a breadth-first walk of the readable model reaches (split fetch,
    crashes, restarts: replicas, in-flight fetches and the controller all vary)."""
    cfg = Config(("A", "B", "C"), generation(profile), min_insync=2)
    kinds = ("produce", "fetch_request", "fetch_response", "crash", "restart", "detect")
    start = initial_state(cfg)
    seen = {start}
    frontier = [start]
    while frontier and len(seen) < limit:
        nxt = []
        for st in frontier:
            for kind in kinds:
                for i in range(3):
                    ev = Event(kind, i, f"m{len(st.writes) + 1}" if kind == "produce" else "")
                    out = transitions.apply(cfg, st, ev)[0]
                    if out not in seen:
                        seen.add(out)
                        nxt.append(out)
        frontier = nxt
    return list(seen)


def _same(a: PartitionState, b: PartitionState, st: PartitionState) -> None:
    assert type(a) is type(b) is PartitionState
    assert a == b
    assert (a is st) == (b is st)  # "st itself when nothing changes", on both sides


@pytest.mark.parametrize("profile", ["kip320", "4.0.0-elr"])
def test_generated_builders_equal_the_readable_ones(profile: str) -> None:
    fast = fb.make_builders()
    resp = FetchResponse(0, 1, 0, (LogEntry(1, "m1"),), 1)
    for st in _states(profile):
        for i, rep in enumerate(st.replicas):
            for new in (rep, rep._replace(hw=rep.hw + 1)):
                _same(fast["with_replica"](st, i, new), state.with_replica(st, i, new), st)
                for f in range(len(st.replicas)):
                    for r in (None, new):
                        for fr in (None, resp, st.inflight[f]):
                            _same(
                                fast["with_inflight"](st, i, r, f, fr),
                                state.with_inflight(st, i, r, f, fr),
                                st,
                            )
        ctrl = st.controller
        for new_ctrl in (ctrl, ctrl._replace(epoch=ctrl.epoch + 1)):
            _same(fast["with_controller"](st, new_ctrl), state.with_controller(st, new_ctrl), st)


def test_a_builder_generated_for_other_fields_is_caught() -> None:
    """The comparison above fails a builder that puts a field in the wrong place."""
    fields = list(PartitionState._fields)
    c, f = fields.index("controller"), fields.index("inflight")
    fields[c], fields[f] = fields[f], fields[c]
    ns: dict[str, Any] = {"_new": tuple.__new__, "_PS": PartitionState}
    exec(fb.builders_source(tuple(fields)), ns)
    wrong: Callable[..., PartitionState] = ns["with_controller"]
    st = _states("kip320", 50)[-1]
    ctrl = st.controller._replace(epoch=st.controller.epoch + 1)
    with pytest.raises(AssertionError):
        _same(wrong(st, ctrl), state.with_controller(st, ctrl), st)


def test_the_swap_is_scoped_to_the_search_and_counts_do_not_change() -> None:
    readable = {name: getattr(state, name) for name in fb.NAMES}
    holders = [transitions, broker, state]
    with fb.fast_builders():
        assert transitions.with_replica is not readable["with_replica"]
        assert broker.with_inflight is not readable["with_inflight"]
        assert state.with_controller is not readable["with_controller"]
    for mod in holders:
        for name, fn in readable.items():
            if hasattr(mod, name):
                assert getattr(mod, name) is fn
    res = explore(generation("kip320"), Bounds(records=1), reductions=ALL_REDUCTIONS)
    assert transitions.with_replica is readable["with_replica"]
    assert res.exhausted and res.states > 0


def test_compiled_helpers_get_the_generated_replace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the helpers cannot be swapped (the compiled model), the ``_replace`` they call
    is the generated one during the search, even with ``fast_replace`` off, and restored."""
    monkeypatch.setattr(fb, "swappable", lambda functions: False)
    before = PartitionState.__dict__.get("_replace")
    readable = transitions.with_replica
    with fb.fast_builders():
        assert transitions.with_replica is readable
        assert PartitionState.__dict__.get("_replace") is not before
        st = _states("kip320", 20)[-1]
        assert st._replace(crashes=7) == tuple.__new__(PartitionState, (*st[:4], 7, *st[5:]))
    assert PartitionState.__dict__.get("_replace") is before
