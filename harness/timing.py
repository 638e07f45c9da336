"""Where a run's wall time goes: cluster start, every step, every fence, the read-back.

Why a module of its own: the time is spent in places that do not know about each other (a
mode's start-up waits in ``harness.db.mode``, a step's fences in the playbook, the read-back
in the runner), and the run folder must say which of them was slow without threading a
recorder through every call. A :class:`Timings` is made current for the run with
:func:`recording`; :func:`fence` (called by every bounded wait) and :func:`phase` add to
whichever is current, and do nothing when none is (the model-only paths, unit tests).

The figures are wall seconds from ``time.perf_counter`` plus, for the whole run, the CPU
seconds of the harness and of its finished child JVMs (``os.times``), so a slow run on a
loaded machine can be told from a slow broker.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

_CURRENT: ContextVar[Timings | None] = ContextVar("hwchaos_timings", default=None)


@dataclass
class FenceTime:
    """One bounded wait: what it waited for and how long it took (``ok``: reached)."""

    what: str
    seconds: float
    ok: bool = True


@dataclass
class PhaseTime:
    """One phase of a run (``cluster_start``, ``setup``, ``step 3``, ``readback``...)."""

    name: str
    seconds: float = 0.0
    fences: list[FenceTime] = field(default_factory=list)

    def fence_seconds(self) -> float:
        return sum(f.seconds for f in self.fences)


@dataclass
class Timings:
    """Every phase of one run in order, each with the fences waited on inside it."""

    phases: list[PhaseTime] = field(default_factory=list)
    _open: list[PhaseTime] = field(default_factory=list)

    def seconds(self, name: str) -> float:
        """Wall seconds of the phase called ``name`` (0.0 if the run never got there)."""
        return sum(p.seconds for p in self.phases if p.name == name)

    def to_json(self) -> dict[str, Any]:
        """``run.json``'s ``extra.timings``: phases with their fences, rounded to ms."""
        return {
            "phases": [
                {
                    "name": p.name,
                    "seconds": round(p.seconds, 3),
                    "fence_seconds": round(p.fence_seconds(), 3),
                    "fences": [
                        {"what": f.what, "seconds": round(f.seconds, 3), "ok": f.ok}
                        for f in p.fences
                    ],
                }
                for p in self.phases
            ]
        }


@contextlib.contextmanager
def recording(timings: Timings) -> Iterator[Timings]:
    """Make ``timings`` the one :func:`phase` and :func:`fence` add to, for this context."""
    token = _CURRENT.set(timings)
    try:
        yield timings
    finally:
        _CURRENT.reset(token)


@contextlib.contextmanager
def phase(name: str) -> Iterator[PhaseTime | None]:
    """Time the block as phase ``name`` of the current run (its fences go into it)."""
    t = _CURRENT.get()
    if t is None:
        yield None
        return
    p = PhaseTime(name)
    t.phases.append(p)
    t._open.append(p)
    t0 = time.perf_counter()
    try:
        yield p
    finally:
        p.seconds = time.perf_counter() - t0
        t._open.remove(p)


def fence(what: str, seconds: float, ok: bool = True) -> None:
    """Record one bounded wait in the innermost open phase (no-op outside a run)."""
    t = _CURRENT.get()
    if t is None or not t._open:
        return
    t._open[-1].fences.append(FenceTime(what, seconds, ok))


@contextlib.contextmanager
def timed_fence(what: str) -> Iterator[None]:
    """Time the block as a fence named ``what`` (recorded as not reached if it raises)."""
    t0 = time.perf_counter()
    ok = False
    try:
        yield
        ok = True
    finally:
        fence(what, time.perf_counter() - t0, ok)


def summary(doc: dict[str, Any], total: float) -> str:
    """One line for a run's output: cluster start, steps, stop, and the slowest fence."""
    phases = doc.get("phases", [])

    def total_of(prefix: str) -> float:
        return sum(float(p["seconds"]) for p in phases if str(p["name"]).startswith(prefix))

    slow = max(
        ((p["name"], f) for p in phases for f in p.get("fences", [])),
        key=lambda pf: float(pf[1]["seconds"]),
        default=None,
    )
    line = (
        f"took {total:.1f}s: cluster start {total_of('cluster_start'):.1f}s, "
        f"steps {total_of('step '):.1f}s, stop {total_of('cluster_stop'):.1f}s"
    )
    if slow is not None:
        line += f"; slowest fence: {slow[0]}: {slow[1]['what']} ({float(slow[1]['seconds']):.1f}s)"
    return line


def cpu_seconds() -> tuple[float, float]:
    """(this process's CPU seconds, its reaped children's CPU seconds) so far.

    Children count once reaped: a run's JVMs are, by the time its cluster is closed.
    """
    t = os.times()
    return t.user + t.system, t.children_user + t.children_system
