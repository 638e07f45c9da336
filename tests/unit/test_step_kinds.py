"""The step-kind registry (``reference_model.kinds``) and every table derived from it.

One declaration per kind; the model's rule (``@handles``), the harness's player (``@plays``),
partial-order reduction, prevention, the run network and the docs' table all follow from it.
These tests check that every declared kind is complete (a rule; a player or declared
model-only, refused by name; a docs row; an explorer bound that exists), that the registry's
guards refuse what they should (mutations: an undeclared kind, a second rule, a played kind
without a player), and that the derived tables equal the hand-written ones they replaced, so
the registry changed no behaviour.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer import por, search
from explorer.search import Bounds, explore
from harness.db.catalogue.versions import resolve_version
from harness.generator import realise
from harness.generator.playbook import Playbook
from harness.generator.playbook.crash import CrashSteps
from harness.generator.playbook.detect import DetectSteps
from harness.generator.playbook.dispatch import StepMethod, check_played, plays, steps_of
from harness.generator.playbook.elect import ElectSteps
from harness.generator.playbook.fences import StepPrevented
from harness.generator.playbook.fetch import FetchSteps
from harness.generator.playbook.held import HeldSteps
from harness.generator.playbook.isr import IsrSteps
from harness.generator.playbook.partition import PartitionSteps
from harness.generator.playbook.produce import ProduceSteps
from harness.generator.scenarios import load_scenario
from harness.trial import trial
from reference_model import broker, disk, kinds, transitions
from reference_model.events import Event
from reference_model.kinds import KINDS, handles
from reference_model.prevention import PREVENTABLE
from reference_model.profiles import GENERATIONS
from reference_model.state import Config, PartitionState

ROOT = Path(__file__).resolve().parents[2]

# The hand-written tables the registry replaced (main, 27 Nov 2026), kept here as the proof
# that what is derived now is what was written then.
OLD_LOCAL = {"checkpoint", "flush"}
OLD_FETCHES = {"fetch", "fetch_request"}
OLD_FOLLOWER_ONLY = {"fetch_response", "leader_epoch_request"}
OLD_PREVENTABLE = {"detect", "restart", "isr_shrink", "elect"}
OLD_NETWORK_KINDS = {"partition", "heal", "isr_shrink", "leader_and_isr"}
OLD_HANDLERS = {
    "produce": broker.produce,
    "fetch": transitions._fetch,
    "fetch_request": transitions._fetch_request,
    "fetch_response": broker.fetch_response,
    "leader_epoch_request": transitions._leader_epoch_request,
    "checkpoint": broker.checkpoint,
    "flush": broker.flush,
    "crash": broker.crash,
    "power_loss": broker.power_loss,
    "clean_shutdown": transitions._clean_shutdown,
    "restart": transitions._restart,
    "pause": broker.pause,
    "resume": transitions._resume,
    "detect": transitions._detect,
    "elect": transitions._elect,
    "isr_shrink": transitions._isr_shrink,
    "leader_and_isr": transitions._leader_and_isr,
    "controller_failover": transitions._controller_failover,
    "stale_checkpoint": disk.stale_checkpoint,
    "partition": transitions._partition,
    "heal": transitions._heal,
}
OLD_STEPS: dict[str, StepMethod] = {
    "produce": ProduceSteps.do_produce,
    "fetch": FetchSteps.do_fetch,
    "fetch_request": FetchSteps.do_fetch_request,
    "leader_epoch_request": FetchSteps.do_leader_epoch_request,
    "checkpoint": CrashSteps.do_checkpoint,
    "stale_checkpoint": CrashSteps.do_stale_checkpoint,
    "flush": CrashSteps.do_flush,
    "crash": CrashSteps.do_crash,
    "power_loss": CrashSteps.do_power_loss,
    "clean_shutdown": CrashSteps.do_clean_shutdown,
    "pause": CrashSteps.do_pause,
    "resume": CrashSteps.do_resume,
    "restart": CrashSteps.do_restart,
    "partition": PartitionSteps.do_partition,
    "heal": PartitionSteps.do_heal,
    "leader_and_isr": HeldSteps.do_leader_and_isr,
    "controller_failover": HeldSteps.do_controller_failover,
    "detect": DetectSteps.do_detect,
    "elect": ElectSteps.do_elect,
    "isr_shrink": IsrSteps.do_isr_shrink,
}
# Kinds added through the registry since (each with its own tests): not in the old tables.
ADDED: set[str] = {"torn_write"}


def test_every_kind_has_a_model_rule_registered_where_it_lives() -> None:
    assert list(transitions.HANDLERS) == list(KINDS)
    for kind, rule in transitions.HANDLERS.items():
        assert rule.__module__ in {
            "reference_model.broker",
            "reference_model.transitions",
            "reference_model.disk",
        }, kind


def test_every_kind_is_played_by_a_marked_method_or_declared_model_only() -> None:
    played = {k.name for k in KINDS.values() if k.played}
    assert set(Playbook.STEPS) == played
    for kind, method in Playbook.STEPS.items():
        assert method.__name__ == f"do_{kind}"
        assert vars(method)["__plays__"] == kind
    # every do_ method of the composed class is a marked player
    assert {n[3:] for n in dir(Playbook) if n.startswith("do_")} == played


@pytest.mark.parametrize("kind", sorted(k.name for k in KINDS.values() if not k.played))
def test_a_model_only_kind_is_refused_by_name(kind: str) -> None:
    pb = object.__new__(Playbook)  # _apply reads the names only before refusing
    pb.names = ["A", "B"]
    with pytest.raises(StepPrevented) as err:
        pb._apply(3, Event(kind, replica=1))
    text = str(err.value)
    assert "\n" not in text
    assert f"step 3: '{kind}' is model-only" in text


@pytest.mark.parametrize("kind", sorted(k.name for k in KINDS.values() if not k.played))
def test_a_run_with_a_model_only_kind_is_refused_before_a_cluster_starts(
    kind: str, tmp_path: Path
) -> None:
    sc = load_scenario(ROOT / "scenarios" / "kip101-scenario1.yaml")
    sc = dataclasses.replace(sc, steps=(*sc.steps[:2], Event(kind, replica=1), *sc.steps[2:]))
    folder = tmp_path / "run"
    with pytest.raises(ValueError) as err:
        trial(sc, resolve_version("3.3.1"), "local", folder, "t", lambda _m: None)
    assert str(err.value).startswith(f"step 3: '{kind}' is model-only")
    assert "\n" not in str(err.value)
    assert not folder.exists()
    check_played(load_scenario(ROOT / "scenarios" / "kip101-scenario1.yaml").steps)  # played


def test_every_kind_has_a_docs_row() -> None:
    page = (ROOT / "docs" / "scenarios.md").read_text()
    for kind in KINDS:
        assert f"| `{kind}` |" in page, f"docs/scenarios.md has no row for {kind} (make docs)"


def test_derived_tables_equal_the_hand_written_ones() -> None:
    assert por.LOCAL == OLD_LOCAL
    assert por.FETCHES == OLD_FETCHES
    assert por.FOLLOWER_ONLY == OLD_FOLLOWER_ONLY
    assert PREVENTABLE == OLD_PREVENTABLE
    assert set(realise.NETWORK_KINDS) - ADDED == OLD_NETWORK_KINDS
    assert {k: v for k, v in transitions.HANDLERS.items() if k not in ADDED} == OLD_HANDLERS
    assert {k: v for k, v in Playbook.STEPS.items() if k not in ADDED} == OLD_STEPS
    assert set(KINDS) == set(OLD_HANDLERS) | ADDED


def test_explore_bounds_name_fields_of_bounds() -> None:
    fields = {f.name for f in dataclasses.fields(Bounds)}
    for k in KINDS.values():
        assert k.explore in (None, "") or k.explore.lstrip("!") in fields, k.name


def _allowed(b: Bounds) -> set[str]:
    out = set()
    for k in KINDS.values():
        if k.explore is None:
            continue
        on = k.explore == "" or bool(getattr(b, k.explore.lstrip("!")))
        if on != k.explore.startswith("!"):
            out.add(k.name)
    return out


EVERY_BOUND = Bounds(
    records=1,
    crashes=1,
    power_losses=1,
    split_fetch=True,
    delayed_leader_and_isr=True,
    partitions=1,
    failover=True,
    clean_shutdown=True,
)


@pytest.mark.parametrize(
    ("bounds", "exact"),
    [
        (Bounds(records=1, crashes=1), False),
        (EVERY_BOUND, True),
        (dataclasses.replace(EVERY_BOUND, split_fetch=False), True),
    ],
    ids=["defaults", "every-bound", "every-bound-whole-fetch"],
)
def test_the_alphabet_tries_only_the_kinds_its_bounds_turn_on(
    monkeypatch: pytest.MonkeyPatch, bounds: Bounds, exact: bool
) -> None:
    seen: set[str] = set()
    real = search.alphabet

    def recording(cfg: Config, b: Bounds, st: PartitionState) -> Iterator[Event]:
        for ev in real(cfg, b, st):
            seen.add(ev.kind)
            yield ev

    monkeypatch.setattr(search, "alphabet", recording)
    explore(GENERATIONS["kip320"], bounds, max_states=40_000)
    assert seen <= _allowed(bounds)
    if exact:
        assert seen == _allowed(bounds)


def test_handles_refuses_an_undeclared_kind_and_a_second_rule() -> None:
    with pytest.raises(ValueError, match="no such step kind"):
        handles("nope")
    with pytest.raises(ValueError, match="already handles it"):
        handles("crash")(broker.crash)


def test_plays_refuses_a_model_only_kind_and_steps_of_a_missing_player() -> None:
    with pytest.raises(ValueError, match="model-only"):
        plays("fetch_response")
    with pytest.raises(ValueError, match="no such step kind"):
        plays("nope")

    class Partial(CrashSteps):  # no producer, fetcher, ...: played kinds without a player
        pass

    with pytest.raises(TypeError, match="without @plays: produce, fetch"):
        steps_of(Partial)


def test_model_rules_refuses_a_kind_without_a_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    extra = kinds.StepKind("unruled", True, False, False, "a kind nobody wrote a rule for")
    monkeypatch.setitem(KINDS, "unruled", extra)
    with pytest.raises(LookupError, match=r"without a model rule \(@handles\): unruled"):
        kinds.model_rules()
