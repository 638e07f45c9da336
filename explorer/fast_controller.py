"""The controller's decisions with positional ``Controller`` rebuilds, swapped in for a search.

Why: since the model was split (issue 24) the controllers (``reference_model.controller.zk``,
``.kraft``) return :class:`~reference_model.controller.Decision` values and
``transitions.record``/``deliver`` apply them, each step rebuilding the controller's view
through ``Controller._replace`` a few times more than the old hand-written transitions did.
The generic ``_replace`` (``collections``) costs about four times a positional tuple; in the
pure model without reductions that was what the split still cost per controller step.

The rules stay as written. This module recompiles those functions from their own source
(``inspect.getsource``) with one change: ``x._replace(f=v, ...)`` becomes
``_controller_replace(x, f=v, ...)`` (the generated straight-line ``_replace`` of
``explorer.fast_replace.make_replace(Controller)``) wherever ``x`` is known to be a
``Controller``: a parameter annotated ``Controller``, an attribute ``.controller`` (of a state
or a decision), or a local name every assignment of which is one of those or such a rebuild.
Any other ``_replace`` (a ``Decision``, a ``PartitionState``, an ``elect_offline`` result that
may be None) is left alone. The generated ``_replace`` indexes ``x`` positionally, so a wrong
guess fails loudly rather than building a wrong state; ``tests/unit/test_fast_controller.py``
checks every step's outcome (state and note) equal with and without the swap on the states of
searches under every controller.

Like ``explorer.fast_builders`` it is not a reduction (the same values are built), so it is on
in every search; the readable functions are put back on any exit. The compiled model's
functions are native and cannot be recompiled: there nothing is swapped.
"""

from __future__ import annotations
import __future__

import ast
import inspect
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from explorer.fast_replace import make_replace
from reference_model import transitions
from reference_model.controller import kraft, zk
from reference_model.state import Controller

# (module, the names of the functions to recompile: None = every function defined there)
TARGETS: tuple[tuple[types.ModuleType, tuple[str, ...] | None], ...] = (
    (transitions, ("record", "deliver")),
    (zk, None),
    (kraft, None),
)
FAST = "_controller_replace"


def _is_replace(node: ast.AST) -> bool:
    """``x._replace(f=v, ...)`` (keywords only, as the rules write it)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "_replace"
        and not node.args
    )


def _is_controller(names: set[str], node: ast.expr) -> bool:
    """``node`` evaluates to a Controller: a name in ``names``, an attribute ``.controller``
    (of a state or a decision), or a ``_replace`` of one (already rewritten or not)."""
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Attribute):
        return node.attr == "controller"
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name):
            return node.func.id == FAST
        if _is_replace(node):
            assert isinstance(node.func, ast.Attribute)
            return _is_controller(names, node.func.value)
    return False


def _controller_names(fn: ast.FunctionDef) -> set[str]:
    """Names that hold a Controller wherever ``fn`` binds them: its parameters annotated
    ``Controller``, and locals whose every binding is a plain ``name = <a Controller>``.
    Any other binding (a loop or tuple target, ``with ... as``, a parameter of another
    type) disqualifies a name. A greatest fixpoint, since ``out = out._replace(...)``
    refers to itself: every plainly bound name is assumed, then those a binding refutes
    are dropped."""
    params = (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)
    names = {
        a.arg
        for a in params
        if isinstance(a.annotation, ast.Name) and a.annotation.id == "Controller"
    }
    bindings: dict[str, list[ast.expr | None]] = {
        a.arg: [None] for a in params if a.arg not in names
    }
    plain: set[int] = set()
    stores: list[ast.Name] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            t = node.targets[0]
            if isinstance(t, ast.Name):
                bindings.setdefault(t.id, []).append(node.value)
                plain.add(id(t))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores.append(node)
    for node in stores:
        if id(node) not in plain:
            bindings.setdefault(node.id, []).append(None)
    names |= {n for n, values in bindings.items() if all(v is not None for v in values)}
    changed = True
    while changed:
        changed = False
        for name, values in bindings.items():
            if name in names and not all(v and _is_controller(names, v) for v in values):
                names.discard(name)
                changed = True
    return names


def rewrite(fn: ast.FunctionDef) -> int:
    """Rewrite ``fn``'s Controller rebuilds in place; how many were rewritten."""
    calls = [c for c in ast.walk(fn) if _is_replace(c)]
    if not calls:
        return 0
    names = _controller_names(fn)
    hits = [c for c in calls if _is_controller(names, c.func.value)]  # type: ignore[attr-defined]
    for c in hits:  # decided before any is rewritten: ``x._replace(..)._replace(..)``
        assert isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
        c.args = [c.func.value]
        c.func = ast.copy_location(ast.Name(FAST, ast.Load()), c.func)
    return len(hits)


def recompile(
    mod: types.ModuleType, names: tuple[str, ...] | None
) -> dict[str, Callable[..., Any]]:
    """The functions ``names`` of ``mod`` (None: every top-level function) that rebuild a
    Controller, recompiled with positional rebuilds into one namespace (a copy of the
    module's globals), so that they call each other's new versions.

    The module's source is parsed once (``inspect.getsource`` per function costs ten times
    more: explore's start-up is part of every search's CPU figure).
    """
    tree = ast.parse(inspect.getsource(mod))
    kept: list[ast.stmt] = []
    for d in tree.body:
        if isinstance(d, ast.FunctionDef) and (names is None or d.name in names) and rewrite(d):
            d.decorator_list = []
            kept.append(d)
    if not kept:
        return {}
    ns: dict[str, Any] = dict(vars(mod))
    ns[FAST] = make_replace(Controller)
    where = f"<explorer.fast_controller: {mod.__name__}>"
    flags = __future__.annotations.compiler_flag
    module = ast.Module(body=kept, type_ignores=[])
    code = compile(module, where, "exec", flags=flags, dont_inherit=True)
    exec(code, ns)
    out: dict[str, Callable[..., Any]] = {}
    for d in kept:
        assert isinstance(d, ast.FunctionDef)
        fn = ns[d.name]
        fn.__doc__ = getattr(mod, d.name).__doc__
        out[d.name] = fn
    return out


@contextmanager
def fast_controller(enabled: bool = True) -> Iterator[None]:
    """Swap the recompiled functions (and each controller's ``CONTROLLER`` table) into the
    model's modules for the duration of a search; put the readable ones back on any exit.
    Enter it after ``fast_builders``: the copies see the builders of that moment."""
    if not enabled:
        yield
        return
    swapped: list[tuple[types.ModuleType, str, object]] = []
    try:
        for mod, names in TARGETS:
            readable = {
                k: v
                for k, v in vars(mod).items()
                if isinstance(v, types.FunctionType) and v.__module__ == mod.__name__
            }
            if not readable:
                continue  # the compiled model: native functions, nothing to recompile
            new = recompile(mod, names)
            for name, fn in new.items():
                swapped.append((mod, name, readable[name]))
                setattr(mod, name, fn)
            table = getattr(mod, "CONTROLLER", None)
            if table is not None:
                fields = {
                    k: new[v.__name__]
                    for k, v in table._asdict().items()
                    if getattr(v, "__name__", None) in new and v is readable[v.__name__]
                }
                swapped.append((mod, "CONTROLLER", table))
                mod.CONTROLLER = table._replace(**fields)  # type: ignore[attr-defined]
        yield
    finally:
        for mod, name, old in reversed(swapped):
            setattr(mod, name, old)
