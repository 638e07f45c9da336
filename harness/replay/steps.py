"""The scenario replay builds while the reference model plays it, and its outcome.

Each step replay emits carries why it is there (the fact it plays, cited as file:line), and
the builder replays the model after each change so the next decision sees the model's state.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from harness.replay.parse import Fact
from harness.replay.versions import VersionInfo
from reference_model.events import Event
from reference_model.run import RunResult, run_scenario
from reference_model.scenario import Scenario


@dataclass(frozen=True)
class Acked:
    """One producer outcome: the record, the offset it was acknowledged at, its status."""

    record: str
    offset: int
    status: str = "acked"


@dataclass
class Reconstruction:
    scenario: Scenario
    result: RunResult
    version: VersionInfo
    facts: list[Fact]
    names: dict[int, str]  # broker id -> folder name
    ambiguities: list[str] = field(default_factory=list)
    step_facts: list[str] = field(default_factory=list)  # why each step is there
    alternatives: list[Reconstruction] = field(default_factory=list)  # other fitting orderings
    producer: dict[str, str] | None = None  # record -> status as the producer saw it

    @property
    def lost_acked(self) -> list[str]:
        """Lost writes the producer saw acknowledged (the model acks every acks=1 append,
        including one whose answer never reached the producer)."""
        lost = self.result.lost_acked
        if self.producer is None:
            return lost
        return [r for r in lost if self.producer.get(r, "acked") == "acked"]


MAX_SYNTH = 200
"""Records the model plays at most per term; incidents' offsets run to millions, and then
the logged numbers (LEOs, HWs, the halt line's offsets) carry the verdict alone."""


class StepBuilder:
    """Emits steps while the model plays them, so each decision sees the model's state."""

    def __init__(
        self,
        replicas: list[str],
        leader: str,
        gen: str,
        acks: str,
        min_insync: int,
        unclean: bool,
        name: str,
    ) -> None:
        self.replicas = replicas
        self.idx = {n: i for i, n in enumerate(replicas)}
        self.gen = gen
        self.base = Scenario(
            name=name,
            source=name,
            description="",
            fixed_by="",
            brokers=tuple(replicas),
            leader=self.idx[leader],
            acks=acks,
            min_insync=min_insync,
            unclean=unclean,
            steps=(Event("produce", record="_"),),
        )
        self.steps: list[Event] = []
        self.why: list[str] = []
        self.cite = ""  # file:line of the fact being played: each step cites it
        self._result: RunResult | None = None

    def scenario(self, steps: Sequence[Event] | None = None) -> Scenario:
        return replace(self.base, steps=tuple(self.steps if steps is None else steps))

    def result(self) -> RunResult:
        if self._result is None:
            self._result = run_scenario(self.scenario(), self.gen)
        return self._result

    def emit(self, ev: Event, why: str) -> None:
        self.steps.append(ev)
        self.why.append(f"{why} [{self.cite}]" if self.cite else why)
        self._result = None

    def insert(self, at: int, ev: Event, why: str) -> None:
        self.steps.insert(at, ev)
        self.why.insert(at, why)
        self._result = None

    def state(self) -> Any:
        return self.result().final

    def ev(self, kind: str, name: str, **kw: Any) -> Event:
        return Event(kind, replica=self.idx[name], **kw)


_COPIES = re.compile(r"^(\S+) copies offset (\d+)$")


def uncopy(b: StepBuilder, x: str, offset: int) -> bool:
    """Drop the fetch steps by which ``x`` copied offsets >= ``offset``; True if any."""
    keep = [
        k
        for k, why in enumerate(b.why)
        if not ((m := _COPIES.match(why)) and m.group(1) == x and int(m.group(2)) >= offset)
    ]
    if len(keep) == len(b.steps):
        return False
    b.steps = [b.steps[k] for k in keep]
    b.why = [b.why[k] for k in keep]
    b._result = None
    return True


def place_flush(b: StepBuilder, x: str, leo: int, amb: list[str]) -> None:
    """Insert ``flush x`` after the last step at which ``x`` held exactly ``leo`` records."""
    res = b.result()
    i = b.idx[x]
    at = None
    for s in res.steps:
        r = s.state.replicas[i]
        if r.alive and len(r.log) == leo:
            at = s.index
    if at is None:
        amb.append(f"{x} recovered to LEO {leo}, a length its log never had in the reconstruction")
        return
    b.insert(at, b.ev("flush", x), f"{x}'s log was durable up to offset {leo}")


def before_shrink(
    pending: list[Acked], leader_leo: int, shrink_leo: int
) -> tuple[list[Acked], dict[str, str]]:
    """The records a leader wrote before its ISR-shrink line, which states its LEO
    ``shrink_leo`` (the model's leader holds ``leader_leo``): those acknowledged below it and,
    when the model's leader falls short, the records the producer saw fail, in the producer's
    order, at the offsets left over (appended before the producer gave up: found by
    kip320-zombie-follower on 3.3.1, where m3 timed out but B's shrink line says LEO 2 and A
    later leads from offset 2). Returns them (placed ones with their offset) and the placed
    records' producer status."""
    before = [a for a in pending if 0 <= a.offset < shrink_leo]
    gap = shrink_leo - leader_leo - len(before)
    if gap <= 0:
        return before, {}
    out: list[Acked] = []
    placed: dict[str, str] = {}
    nxt = leader_leo
    for a in pending:
        if 0 <= a.offset < shrink_leo:
            out.append(a)
            nxt = a.offset + 1
        elif a.status != "acked" and a.offset < 0 and gap > 0 and nxt < shrink_leo:
            placed[a.record] = a.status
            out.append(Acked(a.record, nxt, "acked"))
            nxt += 1
            gap -= 1
        else:
            break
    return out, placed
