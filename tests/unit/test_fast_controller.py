"""The controller's rules recompiled by the explorer mean what the readable ones mean."""

from __future__ import annotations

import ast
import inspect

import pytest

from explorer import fast_controller as fc
from explorer.fast_builders import fast_builders
from explorer.search import NO_REDUCTIONS, Bounds, alphabet, explore
from reference_model import transitions
from reference_model.controller import kraft, zk
from reference_model.events import Event
from reference_model.profiles import generation
from reference_model.state import Config, Controller, PartitionState, initial_state

# Every controller-facing step: elections, fencing, registration, cuts and heals, delayed
# LeaderAndIsr, queued LeaderAndIsr and failover (ZooKeeper), controlled shutdown.
BOUNDS = Bounds(
    replicas=3,
    records=1,
    crashes=2,
    partitions=1,
    delayed_leader_and_isr=True,
    failover=True,
    clean_shutdown=True,
)
PROFILES = ["hw", "kip320", "3.3.1-kraft", "4.0.0-elr"]


def _steps(profile: str, limit: int) -> tuple[Config, list[tuple[PartitionState, Event]]]:
    """(state, event) pairs of a breadth-first walk of the readable model, plus an operator's
    election of every broker (clean and unclean) from each state."""
    cfg = Config(("A", "B", "C"), generation(profile), min_insync=2)
    start = initial_state(cfg)
    seen = {start}
    frontier = [start]
    pairs: list[tuple[PartitionState, Event]] = []
    while frontier and len(seen) < limit:
        nxt = []
        for st in frontier:
            evs = list(alphabet(cfg, BOUNDS, st))
            evs += [Event("elect", i, unclean=u) for i in range(3) for u in (False, True)]
            for ev in evs:
                pairs.append((st, ev))
                out = transitions.apply(cfg, st, ev)[0]
                if out not in seen:
                    seen.add(out)
                    nxt.append(out)
        frontier = nxt
    return cfg, pairs


@pytest.mark.parametrize("profile", PROFILES)
def test_every_step_gives_the_same_outcome_with_the_recompiled_rules(profile: str) -> None:
    cfg, pairs = _steps(profile, 2500)
    readable = [transitions.apply(cfg, st, ev) for st, ev in pairs]
    with fast_builders(), fc.fast_controller():
        assert transitions.record is not fc.recompile(transitions, ("record",))["record"]
        fast = [transitions.apply(cfg, st, ev) for st, ev in pairs]
    decided = 0
    for (st, ev), (a, note_a), (b, note_b) in zip(pairs, readable, fast, strict=True):
        assert (b, note_b) == (a, note_a), (ev, st)
        assert (b is st) == (a is st)
        decided += a.controller != st.controller
    assert decided > 100  # the walk really exercised the controller


def test_the_swap_covers_both_controllers_and_is_undone() -> None:
    before = (transitions.record, transitions.deliver, zk.CONTROLLER, kraft.CONTROLLER)
    with fc.fast_controller():
        assert transitions.record is not before[0] and transitions.deliver is not before[1]
        for table, old in ((zk.CONTROLLER, before[2]), (kraft.CONTROLLER, before[3])):
            assert table.broker_failed is not old.broker_failed
            assert table.broker_failed.__code__.co_filename.startswith("<explorer.fast_controller")
            assert table.elect is old.elect or table.elect.__code__ is not old.elect.__code__
    assert (transitions.record, transitions.deliver, zk.CONTROLLER, kraft.CONTROLLER) == before
    with pytest.raises(RuntimeError), fc.fast_controller():
        raise RuntimeError("a search that fails")
    assert zk.CONTROLLER is before[2] and transitions.record is before[0]


def _rewritten(mod: object, name: str) -> str:
    tree = ast.parse(inspect.getsource(mod))  # type: ignore[arg-type]
    fdef = next(d for d in tree.body if isinstance(d, ast.FunctionDef) and d.name == name)
    fc.rewrite(fdef)
    return ast.unparse(fdef)


def test_only_controller_rebuilds_are_rewritten() -> None:
    # every rebuild of the ZooKeeper controller's view, and the delivery's
    for name in ("on_broker_failure", "elect_offline", "on_broker_startup"):
        assert "._replace(" not in _rewritten(zk, name)
    assert "._replace(" not in _rewritten(transitions, "deliver")
    # a Decision's ``_replace`` (kraft) and a state's (transitions) stay as written
    assert "change._replace(note=" in _rewritten(kraft, "handle_broker_unfenced")
    assert "_controller_replace(ctrl" in _rewritten(kraft, "handle_broker_unfenced")
    assert "st._replace(cuts=" in _rewritten(transitions, "_heal")


def test_a_wrong_rebuild_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: a generated ``_replace`` that swaps two fields of the controller's view
    makes the comparison above fail."""
    fields = list(Controller._fields)
    i, j = fields.index("pending"), fields.index("held")

    real = fc.make_replace

    def swapped(cls: type) -> object:
        inner = real(cls)

        def wrong(self: Controller, **kw: object) -> Controller:
            out = list(inner(self, **kw))
            out[i], out[j] = out[j], out[i]
            return Controller(*out)

        return wrong

    monkeypatch.setattr(fc, "make_replace", swapped)
    cfg, pairs = _steps("kip320", 300)
    readable = [transitions.apply(cfg, st, ev) for st, ev in pairs]
    with fc.fast_controller():
        fast = [transitions.apply(cfg, st, ev) for st, ev in pairs]
    assert readable != fast


@pytest.mark.parametrize("profile", ["hw", "4.0.0-elr"])
def test_searches_are_the_same_without_the_recompiled_rules(
    profile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """States, transitions, depth and counterexample paths equal with the swap off."""
    bounds = Bounds(replicas=2, records=2, crashes=2, delayed_leader_and_isr=True)
    gen = generation(profile)
    on = explore(gen, bounds, reductions=NO_REDUCTIONS)
    monkeypatch.setattr(fc, "TARGETS", ())
    off = explore(gen, bounds, reductions=NO_REDUCTIONS)
    assert (on.states, on.transitions, on.depth, on.exhausted) == (
        off.states,
        off.transitions,
        off.depth,
        off.exhausted,
    )
    assert on.counterexamples or profile != "hw"
    assert [(c.invariant, c.events) for c in on.counterexamples] == [
        (c.invariant, c.events) for c in off.counterexamples
    ]
