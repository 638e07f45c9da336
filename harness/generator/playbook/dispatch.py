"""How a scenario step reaches the method that plays it: ``@plays("crash")`` on ``do_crash``.

Each step family (``crash``, ``fetch``, ``partition``...) marks the methods that play a step
kind with :func:`plays`, next to the code; :func:`steps_of` collects the marks of the
composed ``Playbook`` once into ``Playbook.STEPS``, a plain dict. So a reader (or a static
trace: search ``@plays("kind")``) goes from a kind's declaration in
``reference_model.kinds`` to the method that plays it, and the collection refuses a mark
for an undeclared or model-only kind, two marks for one kind, and a played kind without one.
A kind declared model-only (``StepKind.played=False``) is refused by :func:`check_played`
before a cluster starts (and by the playbook, with :func:`model_only`, if it gets that far).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from reference_model.events import Event
from reference_model.kinds import KINDS

StepMethod = Callable[[Any, int, Event, str], str]
M = TypeVar("M", bound=StepMethod)
_MARK = "__plays__"


def plays(kind: str) -> Callable[[M], M]:
    """Mark the decorated ``do_<kind>(self, k, ev, name) -> note`` as the player of ``kind``."""
    declared = KINDS.get(kind)
    if declared is None:
        raise ValueError(f"@plays({kind!r}): no such step kind in reference_model.kinds")
    if not declared.played:
        raise ValueError(f"@plays({kind!r}): the kind is declared model-only (played=False)")

    def mark(fn: M) -> M:
        setattr(fn, _MARK, kind)
        return fn

    return mark


def steps_of(cls: type) -> dict[str, StepMethod]:
    """Kind -> the method of ``cls`` (or its step families) marked ``@plays(kind)``, in
    declaration order; raises naming a played kind without a method or with two."""
    found: dict[str, StepMethod] = {}
    for klass in reversed(cls.__mro__):
        for attr, fn in vars(klass).items():
            kind = getattr(fn, _MARK, None)
            if kind is None:
                continue
            other = found.get(kind)
            if other is not None and other is not fn:
                raise TypeError(f"step kind {kind!r} played twice: {other.__qualname__}, {attr}")
            found[kind] = fn
    missing = [k.name for k in KINDS.values() if k.played and k.name not in found]
    if missing:
        raise TypeError(f"{cls.__name__}: played step kinds without @plays: {', '.join(missing)}")
    return {k: found[k] for k in KINDS if k in found}


def model_only(k: int, kind: str) -> str:
    """The one-line refusal of a step the harness cannot play (unknown or model-only kind)."""
    declared = KINDS.get(kind)
    if declared is None:
        return f"step {k}: '{kind}' is not a step kind (reference_model.kinds)"
    return (
        f"step {k}: '{kind}' is model-only ({declared.meaning}): it cannot be scripted on "
        "real brokers"
    )


def check_played(steps: Iterable[Event]) -> None:
    """ValueError (one line, naming the step and kind) for the first step no real broker can
    be made to take alone. Called before a cluster starts, so nothing is left behind; this is
    the harness's limit, not the release's, so it is no ``prevented`` verdict."""
    for k, ev in enumerate(steps, start=1):
        declared = KINDS.get(ev.kind)
        if declared is None or not declared.played:
            raise ValueError(model_only(k, ev.kind))
