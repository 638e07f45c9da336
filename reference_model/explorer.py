"""Exhaustive breadth-first search of crash orderings, TLC-style.

Why breadth-first: the first violation found for an invariant is one of the shortest
orderings that break it, i.e. a minimal counterexample a human can read and the harness can
replay. States are deduplicated on their full value (they are hashable tuples), so the search
ends when every reachable state under the bounds has been expanded.

Pure: no I/O, no clock. ``harness.cli.explore`` times it and writes the scenario files.
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from reference_model.events import Event
from reference_model.generations import Generation
from reference_model.scenario import Scenario
from reference_model.state import NO_LEADER, Config, PartitionState, initial_state
from reference_model.transitions import apply
from reference_model.verdict import violations


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


def alphabet(cfg: Config, b: Bounds, st: PartitionState) -> Iterator[Event]:
    """Events worth trying from ``st``: cheap preconditions prune certain no-ops."""
    n = len(st.replicas)
    ctrl = st.controller
    gen = cfg.generation
    produced = len(st.writes)
    if produced < b.records and ctrl.leader != NO_LEADER:
        yield Event("produce", record=f"m{produced + 1}")
    holds: list[frozenset[int]] = [frozenset()]
    if b.delayed_leader_and_isr:
        holds += [frozenset({j}) for j in range(n)]
    for i, r in enumerate(st.replicas):
        if r.alive and not r.paused:
            if r.role == "follower" and r.leader != NO_LEADER:
                if b.split_fetch:
                    if st.inflight[i] is None:
                        yield Event("fetch_request", i)
                else:
                    yield Event("fetch", i)
                if r.needs_truncation and gen.epoch_truncation:
                    yield Event("leader_epoch_request", i)
            if b.split_fetch and st.inflight[i] is not None:
                yield Event("fetch_response", i)
            if b.checkpoints and r.checkpoint_hw != r.hw:
                yield Event("checkpoint", i)
            if b.power_losses and r.flushed != len(r.log):
                yield Event("flush", i)
            if st.crashes < b.crashes:
                yield Event("crash", i)
            if st.power_losses < b.power_losses:
                yield Event("power_loss", i)
            if b.isr_shrink and i != ctrl.leader and i in ctrl.isr and ctrl.leader != NO_LEADER:
                yield Event("isr_shrink", i)
        else:
            if not r.alive:
                for h in holds:
                    if i not in h:
                        yield Event("restart", i, hold=h)
            if i in ctrl.live:
                for h in holds:
                    if i not in h:
                        yield Event("detect", i, hold=h)
        if i in ctrl.held:
            yield Event("leader_and_isr", i)


def explore(
    gen: Generation,
    bounds: Bounds,
    acks: str = "all",
    min_insync: int = 2,
    unclean: bool = False,
    max_counterexamples: int = 5,
    max_states: int = 0,
    progress: Callable[[int, int, int], None] | None = None,
) -> ExploreResult:
    """Search every ordering under ``bounds``; one shortest counterexample per invariant.

    ``progress(states, depth, queued)`` is called every 50,000 states. The cyclic garbage
    collector is paused meanwhile: states are acyclic tuples, and its scans of the
    ever-growing visited set cost a third of the run time.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _explore(
            gen, bounds, acks, min_insync, unclean, max_counterexamples, max_states, progress
        )
    finally:
        if enabled:
            gc.enable()


def _explore(
    gen: Generation,
    bounds: Bounds,
    acks: str,
    min_insync: int,
    unclean: bool,
    max_counterexamples: int,
    max_states: int,
    progress: Callable[[int, int, int], None] | None,
) -> ExploreResult:
    names = tuple(chr(ord("A") + i) for i in range(bounds.replicas))
    cfg = Config(names, gen, acks, min(min_insync, bounds.replicas), unclean)
    start = initial_state(cfg, 0)
    parent: dict[PartitionState, tuple[PartitionState, Event] | None] = {start: None}
    depth_of = {start: 0}
    queue: deque[PartitionState] = deque([start])
    result = ExploreResult()
    found: set[str] = set()
    while queue:
        st = queue.popleft()
        d = depth_of[st]
        if bounds.max_depth and d >= bounds.max_depth:
            result.exhausted = False
            continue
        for ev in alphabet(cfg, bounds, st):
            nxt, _ = apply(cfg, st, ev)
            result.transitions += 1
            if nxt in parent:
                continue
            parent[nxt] = (st, ev)
            depth_of[nxt] = d + 1
            if progress is not None and len(parent) % 50_000 == 0:
                progress(len(parent), d + 1, len(queue))
            if d + 1 > result.depth:
                result.depth = d + 1
            bad = violations(cfg, st, nxt)
            new_bad = [v for v in bad if v not in found]
            if new_bad and len(result.counterexamples) < max_counterexamples:
                path = _path(parent, nxt)
                for v in new_bad:
                    found.add(v)
                    result.counterexamples.append(Counterexample(v, path))
            if bad:
                continue  # do not extend a broken state: its successors repeat the finding
            queue.append(nxt)
        if max_states and len(parent) >= max_states:
            result.exhausted = False
            break
    result.states = len(parent)
    return result


def _path(
    parent: dict[PartitionState, tuple[PartitionState, Event] | None], st: PartitionState
) -> list[Event]:
    out: list[Event] = []
    link = parent[st]
    while link is not None:
        prev, ev = link
        out.append(ev)
        link = parent[prev]
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
