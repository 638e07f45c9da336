"""The compiled build's positional ``_replace``: generated from the readable model at build time.

Why: the model rebuilds its states readably, ``st._replace(controller=ctrl)`` (the builders of
``reference_model.state``, the controllers' rules, the broker's). In the compiled model (mypyc)
each such call goes through Python's keyword-argument protocol to a method of the state class,
whose keyword parsing costs more than the rest of the step (callgrind, 28 Nov 2026: the three
builders of ``reference_model.state`` 430M instructions against 289M for the positional
builders the model had before it was made readable). The brief keeps speed code out of the
model, so the build rewrites its *copy* of the sources instead, mechanically:

- every NamedTuple class of ``reference_model`` is read from the copied source (its fields in
  declaration order, which is the tuple's order);
- for every call ``x._replace(k1=v1, k2=v2)`` (keywords only) in a compiled module, a function
  ``_hwc_replace_k1__k2(x, v1, v2)`` is generated into a module that defines a class having
  those fields (``plan`` says which: one the call's module can import without a cycle), and
  the call is rewritten to it. The function checks the exact type of ``x`` against each class
  having those fields that its module can see and builds the new tuple positionally
  (``tuple.__new__`` over ``x[0], v1, x[2], ...``); any other type falls back to
  ``x._replace(k1=v1, k2=v2)``. So a rewritten call means what it meant before for every
  receiver, whatever its static type;
- the arguments keep their order, so they are evaluated in the same order.

Nothing generated is checked in: it exists only in the build directory, derived afresh from
whatever the sources say; ``GENERATOR_VERSION`` and this file's text are part of the build
key (``harness.native.build_key``). ``tests/unit/test_native_replace.py`` checks every
generated builder against the class's own ``_replace``, that a wrong field order is caught,
and that the rewritten model, run interpreted, explores the same space as the readable one.
Why not the explorer's run-time swaps (``explorer.fast_builders``, ``fast_controller``): the
compiled model calls its own functions natively, so nothing installed at run time reaches
them; the build is the one place left.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field

# Bump when the generated code changes: harness.native puts it in the build key.
GENERATOR_VERSION = "1"
# Only classes of the model are rewritten for (the explorer's own NamedTuples are not hot).
CLASS_PACKAGE = "reference_model"
PREFIX = "_hwc_replace_"


@dataclass(frozen=True)
class TupleClass:
    """A NamedTuple class as its source declares it."""

    module: str
    name: str
    fields: tuple[str, ...]


@dataclass
class _Site:
    """One rewritable call in a module: its span (byte offsets) and what replaces it."""

    node: ast.Call
    start: int
    end: int
    home: str  # module the helper lives in
    helper: str
    classes: tuple[TupleClass, ...]
    keywords: tuple[str, ...]


def module_name(rel: str) -> str:
    """``reference_model/controller/__init__.py`` -> ``reference_model.controller``."""
    parts = rel[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def tuple_classes(module: str, tree: ast.Module) -> list[TupleClass]:
    """The module-level ``class X(NamedTuple)`` of ``tree``, fields in declaration order."""
    out = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
        if "NamedTuple" not in bases:
            continue
        fields = tuple(
            s.target.id
            for s in node.body
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
        )
        out.append(TupleClass(module, node.name, fields))
    return out


def _imports(module: str, tree: ast.Module, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``module`` imports (anywhere in its body)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for n in names:
            while n:  # importing a.b.c imports a.b and a too
                if n in known:
                    found.add(n)
                n = n.rpartition(".")[0]
    found.discard(module)
    return found


def _closure(graph: Mapping[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for m in graph.get(todo.pop(), set()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def helper_name(keywords: tuple[str, ...]) -> str:
    """``_hwc_replace_isr__epoch`` for ``("isr", "epoch")`` (``plan`` refuses a clash)."""
    return PREFIX + "__".join(keywords)


def alias(module: str) -> str:
    """The name a generated ``import module as ...`` binds (one per module, no clash)."""
    return "_hwc_" + module.replace(".", "_")


def helper_source(keywords: tuple[str, ...], classes: tuple[TupleClass, ...], home: str) -> str:
    """The positional ``_replace`` for ``keywords``, specialised to each of ``classes``
    (a class of another module than ``home`` is reached through that module's ``alias``)."""
    params = ", ".join(f"{k}: _HwcAny" for k in keywords)
    lines = [f"def {helper_name(keywords)}(_o: _HwcT, {params}) -> _HwcT:"]
    lines.append("    _t = type(_o)")
    for n, c in enumerate(classes):
        name = c.name if c.module == home else f"{alias(c.module)}.{c.name}"
        values = ", ".join(f if f in keywords else f"_s{n}[{i}]" for i, f in enumerate(c.fields))
        lines += [
            f"    if _t is {name}:",
            f"        _s{n} = _hwc_cast({name}, _o)",
            f"        return _hwc_cast(_HwcT, _hwc_new({name}, ({values},)))",
        ]
    kw = ", ".join(f"{k}={k}" for k in keywords)
    lines.append(f"    return _hwc_cast(_HwcT, _hwc_cast(_HwcAny, _o)._replace({kw}))")
    return "\n".join(lines) + "\n"


PREAMBLE = (
    "\n\n# ---- generated by harness.native_replace for the compiled build: do not edit\n"
    "from typing import Any as _HwcAny, Final as _HwcFinal, TypeVar as _HwcTypeVar\n"
    "from typing import cast as _hwc_cast\n"
    "_HwcT = _HwcTypeVar('_HwcT')\n"
    "_hwc_new: _HwcFinal = tuple.__new__\n"
)

Helpers = dict[tuple[str, ...], tuple[TupleClass, ...]]


@dataclass
class Plan:
    """What the rewrite does: the classes it read, the builders it generates per module
    (keywords -> the classes each one builds positionally) and the calls it rewrites."""

    modules: dict[str, str]  # relative path -> module
    classes: list[TupleClass]
    helpers: dict[str, Helpers] = field(default_factory=dict)
    sites: dict[str, list[_Site]] = field(default_factory=dict)


def plan(files: Mapping[str, str], compiled: set[str] | None = None) -> Plan:
    """Which ``_replace`` calls of the ``compiled`` modules (default: all) become which
    generated builder, and where each builder lives.

    A call ``x._replace(k=...)`` goes to a builder in a module ``M`` that defines a class
    having the fields ``k`` and does not import the call's module (so the ``import M``
    added to the call's module makes no cycle); the builder handles every such class of
    ``M`` or of the modules ``M`` imports. Among several such ``M``, the one handling most
    classes, then by name."""
    trees = {rel: ast.parse(text, rel) for rel, text in files.items()}
    mods = {rel: module_name(rel) for rel in files}
    known = set(mods.values())
    graph = {mods[rel]: _imports(mods[rel], t, known) for rel, t in trees.items()}
    below = {m: _closure(graph, m) for m in known}
    classes: list[TupleClass] = []
    for rel in sorted(files):
        if mods[rel] == CLASS_PACKAGE or mods[rel].startswith(CLASS_PACKAGE + "."):
            classes += tuple_classes(mods[rel], trees[rel])
    out = Plan(mods, classes)
    for rel in sorted(files):
        if compiled is not None and rel not in compiled:
            continue
        here = mods[rel]
        starts = _offsets(files[rel].encode())
        found = []
        for node in ast.walk(trees[rel]):
            keywords = _replace_keywords(node)
            if keywords is None:
                continue
            assert isinstance(node, ast.Call)
            fits = [c for c in classes if set(keywords) <= set(c.fields)]
            choices = []
            for m in sorted({c.module for c in fits}):
                if m != here and here in below[m]:
                    continue  # the builder's module imports this one
                reach = tuple(c for c in fits if c.module == m or c.module in below[m])
                choices.append((-len(reach), m, reach))
            if not choices:
                continue
            _, home, mine = min(choices)
            assert node.end_lineno is not None and node.end_col_offset is not None
            found.append(
                _Site(
                    node,
                    starts[node.lineno - 1] + node.col_offset,
                    starts[node.end_lineno - 1] + node.end_col_offset,
                    home,
                    helper_name(keywords),
                    mine,
                    keywords,
                )
            )
            # one builder per keyword set and module: the same classes whichever call made it
            if out.helpers.setdefault(home, {}).setdefault(keywords, mine) != mine:
                raise ValueError(f"{helper_name(keywords)} of {home} would build two class sets")
            names = {helper_name(k): k for k in out.helpers[home]}
            if len(names) != len(out.helpers[home]):
                raise ValueError(f"two builders of {home} named alike: {sorted(names)}")
        out.sites[rel] = found
    return out


def rewrite(files: Mapping[str, str], compiled: set[str] | None = None) -> dict[str, str]:
    """The sources of ``files`` (relative path -> text) with every ``_replace`` call of the
    ``compiled`` modules (default: all) rewritten, and the builders they call appended to
    their modules; only changed files are returned."""
    p = plan(files, compiled)
    out: dict[str, str] = {}
    for rel in sorted(files):
        here = p.modules[rel]
        found = p.sites.get(rel, [])
        helpers = p.helpers.get(here, {})
        text = files[rel]
        imports = {s.home for s in found if s.home != here}
        imports |= {c.module for cs in helpers.values() for c in cs if c.module != here}
        if found:
            text = _render_all(text.encode(), found, here)
        text = _add_imports(text, sorted(imports))
        if helpers:
            gen = [helper_source(k, cs, here) for k, cs in sorted(helpers.items())]
            text = text.rstrip("\n") + "\n" + PREAMBLE + "\n\n" + "\n\n".join(gen)
        if text != files[rel]:
            ast.parse(text, rel)  # a generator fault shows here, not as a C compile error
            out[rel] = text
    return out


def _offsets(src: bytes) -> list[int]:
    starts = [0]
    for i, b in enumerate(src):
        if b == 0x0A:
            starts.append(i + 1)
    return starts


def _replace_keywords(node: ast.AST) -> tuple[str, ...] | None:
    """The keywords of ``x._replace(k=v, ...)`` (keywords only, no ``**``), else None."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "_replace"
        and not node.args
        and node.keywords
    ):
        return None
    names = tuple(k.arg for k in node.keywords)
    if any(n is None for n in names):
        return None
    return tuple(n for n in names if n is not None)


def _render_all(raw: bytes, found: list[_Site], here: str) -> str:
    """``raw`` with each outermost site replaced (inner ones inside their arguments)."""
    found = sorted(found, key=lambda s: (s.start, -s.end))
    return _render(raw, _offsets(raw), 0, len(raw), found, here).decode()


def _render(
    raw: bytes, starts: list[int], a: int, b: int, found: list[_Site], here: str
) -> bytes:
    """Bytes ``raw[a:b]`` with every site inside it rewritten."""
    out = []
    pos = a
    for s in found:
        if s.start < pos or s.end > b or s.start < a:
            continue  # nested in one already rendered, or outside this span
        out.append(raw[pos : s.start])
        out.append(_call(raw, starts, s, found, here))
        pos = s.end
    out.append(raw[pos:b])
    return b"".join(out)


def _span(starts: list[int], node: ast.expr) -> tuple[int, int]:
    assert node.end_lineno is not None and node.end_col_offset is not None
    start = starts[node.lineno - 1] + node.col_offset
    return start, starts[node.end_lineno - 1] + node.end_col_offset


def _call(raw: bytes, starts: list[int], s: _Site, found: list[_Site], here: str) -> bytes:
    func = s.node.func
    assert isinstance(func, ast.Attribute)
    parts = [func.value, *(k.value for k in s.node.keywords)]
    args = []
    for p in parts:
        a, b = _span(starts, p)
        args.append(b"(" + _render(raw, starts, a, b, found, here) + b")")
    name = s.helper if s.home == here else f"{alias(s.home)}.{s.helper}"
    return name.encode() + b"(" + b", ".join(args) + b")"


def _add_imports(text: str, modules: list[str]) -> str:
    """``import m as alias`` for each helper module, after the docstring and the
    ``from __future__`` line (which must stay first)."""
    if not modules:
        return text
    tree = ast.parse(text)
    after = 0
    for node in tree.body:
        is_doc = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        is_future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if (is_doc and after == 0) or is_future:
            assert node.end_lineno is not None
            after = node.end_lineno
        else:
            break
    lines = text.splitlines(keepends=True)
    new = [f"import {m} as {alias(m)}\n" for m in modules]
    return "".join(lines[:after] + new + lines[after:])
