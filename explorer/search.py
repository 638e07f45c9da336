"""Exhaustive breadth-first search of crash orderings, TLC-style.

Why breadth-first: the first violation found for an invariant is one of the shortest
orderings that break it, i.e. a minimal counterexample a human can read and the harness can
replay. The search runs level by level and ends when every reachable state under the bounds
has been expanded.

Reductions (issue 13), each switchable (``Reductions``, ``hwchaos explore --no-...``):

- *symmetry*: states equal up to a permutation of replica indices are deduplicated as one
  (``explorer.symmetry``; every field holding indices is classified there);
- *record renaming*: likewise for record ids (they are only ever compared for equality);
- *partial-order reduction*: sleep sets skip the second order of commuting steps
  (``explorer.por``); it skips transitions, never states;
- *fast _replace*: a generated ``_replace`` for the state NamedTuples during the search;
- *compact keys*: the visited set maps interned int tuples (``Canonicaliser.compact``) to
  state ids, parent links are a list indexed by id, and a cache of recently met concrete
  states spares duplicates their canonical form. Speed and memory only: same equality.

The frontier keeps the first *concrete* state met for each canonical key, and parent links
record the concrete event applied, so every counterexample is a real path from the initial
state and replays as printed. Soundness: record renaming and the sleep sets are exact. Replica
symmetry is exact for every rule but one: the controller picks among eligible replicas in
assignment order (``OfflinePartitionLeaderSelector``: first live ISR member), so two
followers that swapped contents may later see different elections. The tests compare the
minimal counterexamples with and without each reduction under several protocols and bounds;
``--no-symmetry`` gives the plain search when in doubt.

Invariants are judged on settled states only (issue 9, ``explorer.invariants``), and a
transition the explored profile makes impossible (``reference_model.prevention``) is never
taken.

Pure: no I/O, no clock. ``harness.cli.explore`` times it and writes the scenario files.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from explorer.canonical import Canonicaliser
from explorer.fast_builders import fast_builders
from explorer.fast_controller import fast_controller
from explorer.fast_replace import fast_replace
from explorer.invariants import TRANSITION_INVARIANTS, judged_violations
from explorer.por import COMMUTING, independent
from explorer.symmetry_runtime import clear_cache
from reference_model.events import CONTROLLER_NODE, ZOOKEEPER_NODE, Event
from reference_model.kinds import KINDS
from reference_model.prevention import PREVENTABLE, prevented
from reference_model.profiles import Generation
from reference_model.scenario import Scenario
from reference_model.state import NO_LEADER, Config, PartitionState, initial_state
from reference_model.transitions import HANDLERS


@dataclass(frozen=True)
class Bounds:
    """The event alphabet and its limits. Defaults run to exhaustion in seconds."""

    replicas: int = 2
    records: int = 2
    crashes: int = 2
    power_losses: int = 0
    max_depth: int = 0  # 0: no depth limit (the other bounds make the space finite)
    checkpoints: bool = True
    split_fetch: bool = False
    delayed_leader_and_isr: bool = False
    isr_shrink: bool = True
    # The harness's other steps (issue 22), all off by default:
    partitions: int = 0  # links cut at once: broker to controller, ZooKeeper, other broker
    one_way: bool = False  # also cut one direction only (else both ways)
    failover: bool = False  # controller_failover while something is queued or held back
    clean_shutdown: bool = False  # controlled shutdown (counts against ``crashes``)


@dataclass
class Counterexample:
    invariant: str
    events: list[Event]


@dataclass
class ExploreResult:
    states: int = 0
    transitions: int = 0
    depth: int = 0
    exhausted: bool = True
    counterexamples: list[Counterexample] = field(default_factory=list)


class Reductions(NamedTuple):
    """Which reductions the search uses; each can be switched off to compare (``--no-...``).

    ``symmetry``: states equal up to a permutation of replica indices are one state.
    ``record_renaming``: states equal up to a renaming of record ids are one state.
    ``por``: sleep-set partial-order reduction over commuting steps (``explorer.por``).
    ``fast_replace``: the generated NamedTuple ``_replace`` (``explorer.fast_replace``), speed only.
    ``compact_keys``: the visited set holds interned int tuples (``Canonicaliser.compact``)
    instead of canonical states, speed and memory only (same equality).
    """

    symmetry: bool = True
    record_renaming: bool = True
    por: bool = True
    fast_replace: bool = True
    compact_keys: bool = True


ALL_REDUCTIONS = Reductions()
NO_REDUCTIONS = Reductions(
    symmetry=False, record_renaming=False, por=False, fast_replace=False, compact_keys=False
)


def alphabet(cfg: Config, b: Bounds, st: PartitionState) -> Iterator[Event]:
    """Events worth trying from ``st``: cheap preconditions prune certain no-ops.

    The explorer's one place that generates candidate events (every search calls it).
    """
    n = len(st.replicas)
    one = _by_replica(n)  # one["fetch"][i] is _event("fetch", i)
    ctrl = st.controller
    gen = cfg.generation
    produced = len(st.writes)
    if produced < b.records and ctrl.leader != NO_LEADER:
        yield _event("produce", record=f"m{produced + 1}")
    holds: list[frozenset[int]] = [frozenset()]
    if b.delayed_leader_and_isr:
        holds += [frozenset({j}) for j in range(n)]
    for i, r in enumerate(st.replicas):
        if r.alive and not r.paused:
            if r.role == "follower" and r.leader != NO_LEADER:
                if b.split_fetch:
                    if st.inflight[i] is None:
                        yield one["fetch_request"][i]
                else:
                    yield one["fetch"][i]
                if r.needs_truncation and gen.epoch_truncation:
                    yield one["leader_epoch_request"][i]
            if b.split_fetch and st.inflight[i] is not None:
                yield one["fetch_response"][i]
            if b.checkpoints and r.checkpoint_hw != r.hw:
                yield one["checkpoint"][i]
            if b.power_losses and r.flushed != len(r.log):
                yield one["flush"][i]
            if st.crashes < b.crashes:
                yield one["crash"][i]
            if st.power_losses < b.power_losses:
                yield one["power_loss"][i]
            if b.isr_shrink and i != ctrl.leader and i in ctrl.isr and ctrl.leader != NO_LEADER:
                yield one["isr_shrink"][i]
        else:
            if not r.alive:
                for h in holds:
                    if i not in h:
                        yield _event("restart", i, hold=h)
            if i in ctrl.live:
                for h in holds:
                    if i not in h:
                        yield _event("detect", i, hold=h)
        if i in ctrl.held:
            yield one["leader_and_isr"][i]
        if b.clean_shutdown and r.alive and not r.paused and st.crashes < b.crashes:
            yield one["clean_shutdown"][i]
    if b.partitions:
        yield from _network_events(b, st, n)
    if b.failover and not gen.kraft and (ctrl.queued or ctrl.held):
        # controller_failover names the broker that misses what was queued for it
        missing = sorted({q.broker for q in ctrl.queued} | ctrl.held)
        yield _event("controller_failover", missing[0])


def _network_events(b: Bounds, st: PartitionState, n: int) -> Iterator[Event]:
    """partition/heal: each broker's link to the controller, ZooKeeper and every other
    broker, cut both ways (and one way with ``one_way``) while fewer than
    ``b.partitions`` node pairs are cut; each cut link healed on its own."""
    cut_pairs = {frozenset(link) for link in st.cuts}
    for link in sorted(st.cuts):
        yield _event("heal", link[0] if link[0] >= 0 else link[1], links=frozenset({link}))
    if len(cut_pairs) >= b.partitions:
        return
    for i in range(n):
        if not st.replicas[i].alive:
            continue
        for node in (CONTROLLER_NODE, ZOOKEEPER_NODE, *range(i + 1, n)):
            if frozenset({i, node}) in cut_pairs:
                continue
            yield _event("partition", i, links=frozenset({(i, node), (node, i)}))
            if b.one_way:
                yield _event("partition", i, links=frozenset({(i, node)}))
                yield _event("partition", i, links=frozenset({(node, i)}))


_EVENTS: Final[dict[tuple[str, int, str, frozenset[int], frozenset[tuple[int, int]]], Event]] = {}


_BY_REPLICA: Final[dict[int, dict[str, tuple[Event, ...]]]] = {}


def _by_replica(n: int) -> dict[str, tuple[Event, ...]]:
    """Kind -> ``_event(kind, i)`` for each replica index ``i`` (no hold, no links): the
    alphabet's common events without building and hashing a key each time."""
    table = _BY_REPLICA.get(n)
    if table is None:
        table = _BY_REPLICA[n] = {k: tuple(_event(k, i) for i in range(n)) for k in KINDS}
    return table


def _event(
    kind: str,
    replica: int = -1,
    record: str = "",
    hold: frozenset[int] = frozenset(),
    links: frozenset[tuple[int, int]] = frozenset(),
) -> Event:
    """Interned events: the alphabet is tiny and rebuilt for every state."""
    k = (kind, replica, record, hold, links)
    ev = _EVENTS.get(k)
    if ev is None:
        ev = _EVENTS[k] = Event(kind, replica, record, hold=hold, links=links)
    return ev


def explore(
    gen: Generation,
    bounds: Bounds,
    acks: str = "all",
    min_insync: int = 2,
    unclean: bool = False,
    max_counterexamples: int = 5,
    max_states: int = 0,
    progress: Callable[[int, int, int], bool | None] | None = None,
    reductions: Reductions = ALL_REDUCTIONS,
    settled_only: bool = True,
) -> ExploreResult:
    """Search every ordering under ``bounds``; one shortest counterexample per invariant.

    ``progress(states, depth, queued)`` is called every 50,000 states; when it returns True
    the search stops there (not exhausted): callers with a time budget keep the clock. The
    cyclic garbage collector is paused meanwhile: states are acyclic tuples, and its scans of
    the ever-growing visited set cost a third of the run time. ``settled_only`` judges state
    invariants on settled states only (``explorer.invariants``).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        # With fast_replace every ``Controller._replace`` is the generated one already:
        # recompiling the controller's rules would only add its start-up.
        fast_ctrl = fast_controller(enabled=not reductions.fast_replace)
        with fast_builders(), fast_ctrl, fast_replace(reductions.fast_replace):
            return _explore(
                gen,
                bounds,
                acks,
                min_insync,
                unclean,
                max_counterexamples,
                max_states,
                progress,
                reductions,
                settled_only,
            )
    finally:
        clear_cache()
        if enabled:
            gc.enable()


Key = Hashable
_EMPTY: Final[frozenset[Event]] = frozenset()


def _explore(
    gen: Generation,
    bounds: Bounds,
    acks: str,
    min_insync: int,
    unclean: bool,
    max_counterexamples: int,
    max_states: int,
    progress: Callable[[int, int, int], bool | None] | None,
    red: Reductions,
    settled_only: bool,
) -> ExploreResult:
    """Level-by-level breadth-first search over canonical keys.

    The frontier holds concrete states (the first met for each key), so every path is a real
    sequence of events from the initial state: a counterexample replays as printed. Parent
    links go key -> (parent key, event), which is all a path needs.
    """
    names = tuple(chr(ord("A") + i) for i in range(bounds.replicas))
    cfg = Config(names, gen, acks, min(min_insync, bounds.replicas), unclean)
    start = initial_state(cfg, 0)
    canon = Canonicaliser(bounds.replicas, red.symmetry, red.record_renaming)
    key: Callable[[PartitionState], Key] = canon.compact if red.compact_keys else canon.key
    # Without symmetry, renaming or compact keys a state is its own key: the cache of recent
    # concrete states below would only hash every successor a second time.
    plain_keys = not (red.symmetry or red.record_renaming or red.compact_keys)
    # Every distinct canonical key gets an int id; links[id] = (parent id, event) or None.
    seen: dict[Key, int] = {key(start): 0}
    links: list[tuple[int, Event] | None] = [None]
    broken: set[int] = set()
    # concrete state -> id of its key, for the states met recently: a duplicate successor
    # (most successors are) costs one hash instead of a canonical form. Bounded: it only
    # saves time, and the concrete states it holds would otherwise be garbage.
    recent: dict[PartitionState, int] = {start: 0}
    empty: frozenset[Event] = frozenset()
    frontier: list[tuple[PartitionState, int, frozenset[Event]]] = [(start, 0, empty)]
    result = ExploreResult()
    found: set[str] = set()
    por = red.por
    depth = 0
    next_mark = 50_000
    stopped = False
    transitions = 0
    rules = HANDLERS

    def report(bad: list[str], path: list[Event]) -> None:
        new_bad = [v for v in bad if v not in found]
        for v in new_bad:
            if len(result.counterexamples) < max_counterexamples:
                found.add(v)
                result.counterexamples.append(Counterexample(v, path))

    while frontier:
        if bounds.max_depth and depth >= bounds.max_depth:
            result.exhausted = False
            break
        # id -> index in nxt_frontier; same-level duplicates intersect their sleep sets
        level: dict[int, int] = {}
        nxt_frontier: list[tuple[PartitionState, int, frozenset[Event]]] = []
        new_here = False
        for st, k, sleep in frontier:
            done: list[Event] = []  # explored here, in order, results not broken
            for ev in alphabet(cfg, bounds, st):
                if por and ev in sleep:
                    continue
                if ev.kind in PREVENTABLE and prevented(cfg, st, ev) is not None:
                    continue  # the version makes this step impossible (issue 9)
                nxt = rules[ev.kind](cfg, st, ev)[0]  # transitions.apply, one call less
                transitions += 1
                if nxt is st:
                    if por and ev.kind in COMMUTING:
                        done.append(ev)
                    continue
                # ``setdefault`` with the next free id hashes the (nested) state once: a
                # value equal to ``fresh`` means it was not there and now provisionally is.
                fresh = len(links)
                if plain_keys:
                    nid = seen.setdefault(nxt, fresh)
                else:
                    # Cheap exit first: a concrete state met recently needs no canonical form.
                    if len(recent) >= _RECENT_MAX:
                        recent.clear()
                    nid = recent.setdefault(nxt, fresh)
                    if nid == fresh:
                        nid = seen.setdefault(key(nxt), fresh)
                        if nid != fresh:
                            recent[nxt] = nid  # a known key: the concrete state maps to its id
                if nid == fresh:
                    new_here = True
                    links.append((k, ev))
                    bad = judged_violations(cfg, st, nxt, settled_only)
                    if bad:
                        report(bad, _path(links, nid))
                        broken.add(nid)
                        continue  # a broken state is not extended: its successors repeat it
                    z = _child_sleep(st, ev, sleep, done) if por else empty
                    if por:
                        level[nid] = len(nxt_frontier)
                        if ev.kind in COMMUTING:
                            done.append(ev)
                    nxt_frontier.append((nxt, nid, z))
                    if progress is not None and len(links) >= next_mark:
                        next_mark += 50_000
                        if progress(len(links), depth + 1, len(nxt_frontier)):
                            stopped = True
                    continue
                # A state met before.
                if nid in broken:
                    continue
                if nxt.controller.leader != st.controller.leader and any(
                    v not in found for v in TRANSITION_INVARIANTS
                ):
                    # A transition invariant can break on an edge into a known state.
                    bad = [
                        v
                        for v in judged_violations(cfg, st, nxt, settled_only)
                        if v in TRANSITION_INVARIANTS
                    ]
                    if bad and any(v not in found for v in bad):
                        report(bad, [*_path(links, k), ev])
                if por:
                    idx = level.get(nid)
                    if idx is not None:
                        s2, k2, z2 = nxt_frontier[idx]
                        if s2 == nxt:
                            z = _child_sleep(st, ev, sleep, done)
                            nxt_frontier[idx] = (s2, k2, z2 & z)
                        elif z2:
                            nxt_frontier[idx] = (s2, k2, empty)
                    if ev.kind in COMMUTING:
                        done.append(ev)
            if stopped or (max_states and len(links) >= max_states):
                result.exhausted = False
                break
        if new_here:
            result.depth = depth + 1
        if not result.exhausted:
            break
        frontier = nxt_frontier
        depth += 1
    result.states = len(links)
    result.transitions = transitions
    return result


_RECENT_MAX: Final = 1_000_000


def _child_sleep(
    st: PartitionState, ev: Event, sleep: frozenset[Event], done: list[Event]
) -> frozenset[Event]:
    """Sleep set of ``st.ev``: earlier siblings and inherited sleepers that commute with ev."""
    if (not sleep and not done) or ev.kind not in COMMUTING:
        return _EMPTY
    return frozenset(b for b in (*sleep, *done) if independent(st, b, ev))


def _path(links: list[tuple[int, Event] | None], k: int) -> list[Event]:
    """The events from the initial state to state id ``k``."""
    out: list[Event] = []
    link = links[k]
    while link is not None:
        prev, ev = link
        out.append(ev)
        link = links[prev]
    out.reverse()
    return out


def counterexample_scenario(
    cx: Counterexample,
    gen: Generation,
    acks: str,
    min_insync: int,
    unclean: bool,
    replicas: int,
    name: str,
) -> Scenario:
    """A counterexample as a scenario that ``hwchaos model`` and ``hwchaos run`` accept."""
    names = tuple(chr(ord("A") + i) for i in range(replicas))
    return Scenario(
        name=name,
        source=name,
        description=(
            f"Found by hwchaos explore under {gen.name}: shortest ordering that breaks "
            f"'{cx.invariant}' with acks={acks}, min.insync.replicas={min_insync}, "
            f"unclean={str(unclean).lower()}."
        ),
        fixed_by="",
        brokers=names,
        leader=0,
        acks=acks,
        min_insync=min(min_insync, replicas),
        unclean=unclean,
        steps=tuple(cx.events),
    )
