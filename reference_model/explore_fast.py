"""A faster ``_replace`` for the state NamedTuples, switched on only while the explorer runs.

Why: profiling ``hwchaos explore`` showed a third of the time in ``collections``' generic
``_replace`` (it builds a dict, maps ``kwds.pop`` over the fields and checks for leftovers).
The transition rules call it several times per event. The replacement is generated per class
from ``_fields`` (so fields added later are covered), has the same meaning (keyword-only,
unknown names raise ``TypeError``), and is installed for the duration of a search and removed
afterwards, so the model's own modules stay untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from reference_model.events import Event
from reference_model.explore_symmetry import state_classes


def make_replace(cls: type) -> Any:
    """``_replace`` for ``cls`` as straight-line code over its fields."""
    fields: tuple[str, ...] = cls._fields  # type: ignore[attr-defined]
    params = ", ".join(f"{f}=_M" for f in fields)
    body = ", ".join(f"self[{i}] if {f} is _M else {f}" for i, f in enumerate(fields))
    src = f"def _replace(self, *, {params}):\n    return _new(_cls, ({body},))\n"
    ns: dict[str, Any] = {"_M": object(), "_new": tuple.__new__, "_cls": cls}
    exec(src, ns)
    fn = ns["_replace"]
    fn.__doc__ = f"Fast ``{cls.__name__}._replace`` installed by reference_model.explore_fast."
    return fn


@contextmanager
def fast_replace(enabled: bool = True) -> Iterator[None]:
    """Install the generated ``_replace`` on every state class (and Event), then restore."""
    if not enabled:
        yield
        return
    classes = [*state_classes().values(), Event]
    saved = [(c, c.__dict__.get("_replace")) for c in classes]
    try:
        for c in classes:
            c._replace = make_replace(c)  # type: ignore[attr-defined]
        yield
    finally:
        for c, old in saved:
            if old is None:
                delattr(c, "_replace")
            else:
                c._replace = old  # type: ignore[attr-defined]
