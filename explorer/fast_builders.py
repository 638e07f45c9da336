"""Straight-line state builders, swapped in for the model's readable ones during a search.

Why: the rules rebuild a state through three readable helpers of ``reference_model.state``
(``with_replica``, ``with_inflight``, ``with_controller``), about six times per explored
state. Each goes through ``PartitionState._replace``, whose generic version (``collections``)
costs three times a positional tuple: in the pure model without reductions that was most of
the 20% the split of the model (issue 24) cost against the old hand-written builders, which
built the tuple positionally inside the rules. The speed code lives here instead, generated
from ``PartitionState._fields`` (a field added later is covered; a field the builders touch
that moves or goes away fails loudly at generation), with the readable helpers' meaning,
identity included (``st`` itself when nothing changes). ``tests/unit/test_fast_builders.py``
checks each generated builder against its readable original on the states of searches.

The swap replaces the helper in every ``reference_model`` module that holds it (the rules
import them by name) and puts the readable ones back on any exit, like
``explorer.fast_replace``; it is not a reduction (the states are the same objects' values),
so it is on in every search. The compiled model (mypyc) calls its own compiled helpers
directly, so they cannot be swapped; what they call is ``PartitionState._replace``, so there
the swap installs the generated ``_replace`` of ``explorer.fast_replace`` on that class
alone (also under ``--no-fast-replace``, which then still covers every other class).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from explorer.fast_replace import fast_replace
from reference_model import state
from reference_model.state import PartitionState

NAMES = ("with_replica", "with_inflight", "with_controller")


def _tuple(fields: tuple[str, ...], **changed: str) -> str:
    """The new state's fields as a tuple display: ``st[k]`` unless ``changed`` names it."""
    return "(" + ", ".join(changed.get(f, f"st[{k}]") for k, f in enumerate(fields)) + ",)"


def builders_source(fields: tuple[str, ...] = PartitionState._fields) -> str:
    """The three builders as source, for ``PartitionState`` with ``fields``."""
    r, c, f = (fields.index(name) for name in ("replicas", "controller", "inflight"))
    return f"""
def with_replica(st, i, rep):
    replicas = st[{r}]
    if replicas[i] is rep:
        return st
    reps = list(replicas)
    reps[i] = rep
    return _new(_PS, {_tuple(fields, replicas="tuple(reps)")})


def with_inflight(st, i, rep, f, resp):
    replicas = st[{r}]
    if rep is not None:
        reps = list(replicas)
        reps[i] = rep
        replicas = tuple(reps)
    inflight = st[{f}]
    if inflight[f] is resp:
        if rep is None:
            return st
    else:
        fl = list(inflight)
        fl[f] = resp
        inflight = tuple(fl)
    return _new(_PS, {_tuple(fields, replicas="replicas", inflight="inflight")})


def with_controller(st, ctrl):
    if st[{c}] is ctrl:
        return st
    return _new(_PS, {_tuple(fields, controller="ctrl")})
"""


def make_builders() -> dict[str, Callable[..., PartitionState]]:
    """The generated builders by name, each documented as its readable original."""
    ns: dict[str, Any] = {"_new": tuple.__new__, "_PS": PartitionState}
    exec(builders_source(), ns)
    out: dict[str, Callable[..., PartitionState]] = {}
    for name in NAMES:
        fn = ns[name]
        fn.__doc__ = f"Generated ``reference_model.state.{name}`` (explorer.fast_builders)."
        out[name] = fn
    return out


def swappable(functions: Iterable[object]) -> bool:
    """Whether the helpers are Python functions (the pure model) that a swap reaches."""
    return all(isinstance(fn, types.FunctionType) for fn in functions)


@contextmanager
def fast_builders() -> Iterator[None]:
    """Swap the generated builders into every model module that holds a readable one."""
    readable = {name: getattr(state, name) for name in NAMES}
    if not swappable(readable.values()):
        # The compiled model: its modules call the compiled helpers directly.
        with fast_replace(only=(PartitionState,)):
            yield
        return
    fast = make_builders()
    swapped: list[tuple[types.ModuleType, str]] = []
    try:
        for modname, mod in list(sys.modules.items()):
            if mod is None or not modname.startswith("reference_model"):
                continue
            for name, fn in readable.items():
                if getattr(mod, name, None) is fn:
                    setattr(mod, name, fast[name])
                    swapped.append((mod, name))
        yield
    finally:
        for mod, name in swapped:
            setattr(mod, name, readable[name])
