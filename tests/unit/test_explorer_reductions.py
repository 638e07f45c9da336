"""The explorer's reductions: each finds the same minimal counterexamples as the plain search.

For several protocols and bounds, the search runs with no reduction and with each reduction
alone and all together; per invariant the shortest counterexample must have the same length,
and every counterexample must replay through ``hwchaos model`` to the violation it names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from explorer import symmetry
from explorer.canonical import Canonicaliser
from explorer.invariants import judged_violations
from explorer.search import (
    NO_REDUCTIONS,
    Bounds,
    ExploreResult,
    Reductions,
    alphabet,
    counterexample_scenario,
    explore,
)
from explorer.symmetry import _build_transforms
from explorer.symmetry_runtime import _Same
from harness.cli import main
from reference_model.events import Event
from reference_model.profiles import generation
from reference_model.scenario import to_document
from reference_model.state import Config, PartitionState, initial_state
from reference_model.transitions import apply

ONLY = {
    "symmetry": NO_REDUCTIONS._replace(symmetry=True),
    "record_renaming": NO_REDUCTIONS._replace(record_renaming=True),
    "por": NO_REDUCTIONS._replace(por=True),
    "fast_replace": NO_REDUCTIONS._replace(fast_replace=True),
    "compact_keys": NO_REDUCTIONS._replace(compact_keys=True),
    "all": Reductions(),
}

CASES = [
    ("hw", Bounds()),
    ("kip320", Bounds(records=1, power_losses=1, crashes=1)),
    ("hw", Bounds(replicas=3, records=1, crashes=1)),
    ("kip279", Bounds(records=1, split_fetch=True)),
    ("kip101", Bounds(records=1, crashes=1, delayed_leader_and_isr=True)),
    # the harness's other steps (issue 22): cuts (their links renamed by the symmetry),
    # held requests with the controller failing over, controlled shutdowns
    ("hw", Bounds(records=1, crashes=1, partitions=1)),
    ("kip320", Bounds(records=1, crashes=1, partitions=1, one_way=True)),
    ("kip101", Bounds(records=2, crashes=1, delayed_leader_and_isr=True, failover=True)),
    ("hw", Bounds(records=2, crashes=1, clean_shutdown=True)),
]


def _lengths(res: ExploreResult) -> dict[str, int]:
    return {cx.invariant: len(cx.events) for cx in res.counterexamples}


def _replay(
    protocol: str,
    bounds: Bounds,
    res: ExploreResult,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every counterexample, written as a scenario, replays through ``hwchaos model``."""
    gen = generation(protocol)
    for cx in res.counterexamples:
        sc = counterexample_scenario(cx, gen, "all", 2, False, bounds.replicas, "found")
        path = tmp_path / f"{protocol}-{cx.invariant}.yaml"
        path.write_text(yaml.safe_dump(to_document(sc), sort_keys=False))
        main(["model", str(path), "--protocol", protocol, "--json"])
        out = json.loads(capsys.readouterr().out)
        if cx.invariant == "acked_lost":
            assert out["lost_acked"], f"{protocol} {cx.events}: replay lost nothing"
        # The model's own verdict on the replayed final step names the same invariant.
        names = tuple(chr(ord("A") + i) for i in range(bounds.replicas))
        cfg = Config(names, gen, "all", min(2, bounds.replicas), False)
        st = initial_state(cfg, 0)
        prev = st
        for ev in cx.events:
            prev, st = st, apply(cfg, st, ev)[0]
        assert cx.invariant in judged_violations(cfg, prev, st), (protocol, cx.events)


@pytest.mark.parametrize(("protocol", "bounds"), CASES)
def test_each_reduction_finds_the_same_minimal_counterexamples(
    protocol: str, bounds: Bounds, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = explore(generation(protocol), bounds, reductions=NO_REDUCTIONS)
    assert plain.exhausted
    expected = _lengths(plain)
    for label, red in ONLY.items():
        res = explore(generation(protocol), bounds, reductions=red)
        assert res.exhausted, label
        assert _lengths(res) == expected, f"{label} under {protocol} {bounds}"
        assert res.depth <= plain.depth, label
        if red.symmetry or red.record_renaming:
            assert res.states <= plain.states, label
        else:
            # POR and the fast _replace skip transitions, never states.
            assert (res.states, res.depth) == (plain.states, plain.depth), label
            assert res.transitions <= plain.transitions, label
        _replay(protocol, bounds, res, tmp_path, capsys)


def test_symmetry_and_renaming_merge_states_at_three_replicas() -> None:
    """Not a no-op: with interchangeable followers the reduced search is clearly smaller."""
    b = Bounds(replicas=3, records=1, crashes=1)
    plain = explore(generation("kip320"), b, reductions=NO_REDUCTIONS)
    sym = explore(generation("kip320"), b, reductions=ONLY["symmetry"])
    assert sym.states < 0.75 * plain.states


def _sample_states(
    protocol: str, bounds: Bounds, limit: int, levels: int | None = None
) -> list[PartitionState]:
    """Reachable states by a plain breadth-first walk (no explorer involved), up to ``limit``
    states or ``levels`` levels."""
    names = tuple(chr(ord("A") + i) for i in range(bounds.replicas))
    cfg = Config(names, generation(protocol), "all", 2, False)
    seen = {initial_state(cfg, 0)}
    frontier = list(seen)
    while frontier and len(seen) < limit and (levels is None or levels > 0):
        levels = None if levels is None else levels - 1
        nxt = []
        for st in frontier:
            for ev in alphabet(cfg, bounds, st):
                s2 = apply(cfg, st, ev)[0]
                if s2 not in seen:
                    seen.add(s2)
                    nxt.append(s2)
        frontier = nxt
    return list(seen)[:limit]


def test_canonical_key_is_invariant_under_replica_permutation_and_record_renaming() -> None:
    states = _sample_states("kip320", Bounds(replicas=3, records=2, crashes=1), 3000)
    # cut links (broker ends renamed) and controller queues (brokers renamed)
    cut = _sample_states("hw", Bounds(replicas=3, records=1, crashes=0, partitions=1), 2000)
    held = Bounds(replicas=3, records=1, crashes=1, delayed_leader_and_isr=True)
    queued = [s for s in _sample_states("hw", held, 3000) if s.controller.queued]
    assert any(s.cuts for s in cut) and queued
    states += [s for s in cut if s.cuts] + queued
    canon = Canonicaliser(3, symmetry=True, record_renaming=True)
    tr = _build_transforms()["PartitionState"]
    perms = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]
    swap = {"m1": "m2", "m2": "m1"}
    for st in states:
        k = canon.key(st)
        assert canon.key(k) == k, "the key of a key is itself"
        for inv in perms:
            pm = tuple(inv.index(i) for i in range(3))
            moved = tr(st, pm, inv, _Same())
            assert canon.key(moved) == k
            if len(st.writes) == 2:
                renamed = tr(st, pm, inv, swap)
                assert canon.key(renamed) == k


def test_canonical_key_separates_states_that_are_not_renamings() -> None:
    """Distinct keys for states whose replica contents differ as multisets."""
    states = _sample_states("hw", Bounds(replicas=3, records=1, crashes=1), 3000)
    canon = Canonicaliser(3, symmetry=True, record_renaming=True)
    by_key: dict[object, PartitionState] = {}
    for st in states:
        k = canon.key(st)
        other = by_key.setdefault(k, st)
        logs = sorted((len(r.log), r.hw, r.alive, r.role) for r in st.replicas)
        logs2 = sorted((len(r.log), r.hw, r.alive, r.role) for r in other.replicas)
        assert logs == logs2
        assert (st.crashes, st.controller.epoch) == (other.crashes, other.controller.epoch)


def test_every_state_field_is_classified() -> None:
    """Fails naming the field when a state NamedTuple gains one the symmetry does not know.

    A field holding replica indices that is copied as plain would make two states that differ
    in who is who look equal (or unequal) and silently break the reduction: classify every new
    field in explorer/symmetry.py FIELDS (plain, replica, replica_set, ...).
    """
    assert symmetry.unclassified() == []


def test_unclassified_field_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    fields = {k: dict(v) for k, v in symmetry.FIELDS.items()}
    del fields["Replica"]["isr"]
    del fields["Write"]
    monkeypatch.setattr(symmetry, "FIELDS", fields)
    with pytest.raises(ValueError, match=r"Replica\.isr.*Write \(whole class\)"):
        explore(generation("hw"), Bounds())


def test_fast_replace_is_removed_after_the_search() -> None:
    from reference_model.state import Replica

    before = Replica._replace
    explore(generation("hw"), Bounds(records=1, crashes=1))
    assert Replica._replace is before
    assert Replica()._replace(hw=3).hw == 3
    with pytest.raises((TypeError, ValueError)):
        Event("crash", 1)._replace(nope=1)


def test_cli_flags_switch_reductions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["explore", "--protocol", "hw", "--records", "1", "--json", "--out", str(tmp_path)]
    main(args)
    on = json.loads(capsys.readouterr().out)
    main(
        [
            *args,
            "--no-symmetry",
            "--no-record-renaming",
            "--no-por",
            "--no-fast-replace",
            "--no-compact-keys",
        ]
    )
    off = json.loads(capsys.readouterr().out)
    assert on["reductions"] == {
        "symmetry": True,
        "record_renaming": True,
        "por": True,
        "fast_replace": True,
        "compact_keys": True,
    }
    assert not any(off["reductions"].values())
    assert on["states"] <= off["states"]
    lengths_on = {c["invariant"]: c["length"] for c in on["counterexamples"]}
    lengths_off = {c["invariant"]: c["length"] for c in off["counterexamples"]}
    assert lengths_on == lengths_off


@pytest.mark.parametrize(("symmetry", "renaming"), [(True, True), (True, False), (False, True)])
def test_compact_key_partitions_states_exactly_like_the_canonical_state(
    symmetry: bool, renaming: bool
) -> None:
    """compact(a) == compact(b) iff key(a) == key(b): the int tuples lose nothing, merge nothing."""
    samples = [
        (3, _sample_states("kip320", Bounds(replicas=3, records=2, crashes=1), 4000)),
        (2, _sample_states("kip279", Bounds(records=2, split_fetch=True), 2000)),
        # every state of the first six levels (a set's order must not pick the sample)
        (3, _sample_states("hw", Bounds(replicas=3, records=2, partitions=1), 10**5, levels=6)),
    ]
    for n, states in samples:
        canon = Canonicaliser(n, symmetry=symmetry, record_renaming=renaming)
        compact_of: dict[object, set[object]] = {}
        for st in states:
            compact_of.setdefault(canon.key(st), set()).add(canon.compact(st))
        assert all(len(cs) == 1 for cs in compact_of.values()), "one key, two compact keys"
        compacts = [c for cs in compact_of.values() for c in cs]
        assert len(set(compacts)) == len(compacts), "two keys, one compact key"
        assert len(compact_of) < len(states) or not (symmetry or renaming)


def test_compact_keys_change_no_search_result() -> None:
    """Speed only: the same states, transitions, depth and the very same counterexamples."""
    for protocol, bounds in [("hw", Bounds()), ("kip101", Bounds(replicas=3, records=1))]:
        on = explore(generation(protocol), bounds)
        off = explore(generation(protocol), bounds, reductions=Reductions(compact_keys=False))
        assert (on.states, on.transitions, on.depth) == (off.states, off.transitions, off.depth)
        assert [(c.invariant, c.events) for c in on.counterexamples] == [
            (c.invariant, c.events) for c in off.counterexamples
        ]


def test_quick_record_labels_agree_with_the_general_labelling() -> None:
    """The fast path of record renaming labels records exactly as the general one."""
    states = _sample_states("kip320", Bounds(replicas=3, records=3, crashes=1), 3000)
    canon = Canonicaliser(3, symmetry=True, record_renaming=True)
    used = 0
    for st in states:
        for inv in canon._orders(st):
            quick = canon._quick_labels(st, inv)
            if quick is None:
                continue
            used += 1
            pm = tuple(inv.index(j) for j in range(3))
            assert list(quick.items()) == list(canon._labels(st, inv, pm).items()), st
    assert used > len(states) // 2


def test_the_compiled_canonical_key_functions_are_in_step_with_the_fields() -> None:
    """``explorer/_generated/canon.py`` is exactly what ``canon_source()`` generates from ``FIELDS``
    and state.py, and the search uses it (compiled by ``hwchaos native build``; interpreted these
    functions took a fifth of the compiled search). When a field changes this fails: regenerate it
    with the command in ``canon_source``'s docstring. (Until then the search ``exec``s the same
    functions: slower, never wrong, since ``SIGNATURE`` differs.)
    """
    from pathlib import Path

    from explorer._generated import canon
    from explorer.symmetry import _namespace, canon_source, signature

    path = Path(canon.__file__).with_name("canon.py")
    assert path.read_text() == canon_source(), "explorer/_generated/canon.py is stale"
    assert signature() == canon.SIGNATURE
    ns = _namespace()
    assert ns["tr_Replica"] is canon.tr_Replica
    assert ns["enc_PartitionState"] is canon.enc_PartitionState
