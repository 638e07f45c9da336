"""No import cycle in the project's own packages: read from the source, not from a running import.

Why: a cycle is how a seam leaks (``harness/db`` and ``harness/metadata`` once imported each
other through six files, and about 95 imports hid inside functions to dodge it). The graph is
built from the AST of every module, *function-local imports included*: an import moved into a
function to dodge a cycle is still an edge here, so it cannot hide one. Imports under
``if TYPE_CHECKING:`` are left out: they never run, so they cannot make a cycle at import time.
A package's ``__init__`` is not implied by importing one of its submodules (that is Python's
doing, not a dependency the code states), so a submodule may name its parent's leaf modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "reference_model", "explorer")
KNOWN_MODEL_CYCLES: frozenset[frozenset[str]] = frozenset()  # none: keep it so


def module_name(path: Path) -> str:
    """``harness/db/mode/__init__.py`` -> ``harness.db.mode``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    """Every module of the project's packages that exist in this checkout."""
    found: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")) if (ROOT / pkg).is_dir() else []:
            found[module_name(path)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(module: str, path: Path, known: set[str], types: bool = False) -> set[str]:
    """The project modules ``module`` imports at run time, anywhere in its body (``types``:
    those named only for the type checker too)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if not types and isinstance(node, ast.If) and _is_type_checking(node):
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, path, node)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in known:  # `from pkg import submodule`
                    out.add(sub)
                elif target in known:
                    out.add(target)
    out.discard(module)
    return out


def import_graph(types: bool = False) -> dict[str, set[str]]:
    mods = project_modules()
    known = set(mods)
    return {m: imports_of(m, p, known, types) for m, p in mods.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path ``[a, b, ..., a]``, or None (iterative DFS, three colours)."""
    colour: dict[str, int] = dict.fromkeys(graph, 0)
    for start in sorted(graph):
        if colour[start]:
            continue
        stack: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        path = [start]
        colour[start] = 1
        while stack:
            node, todo = stack[-1]
            if not todo:
                colour[node] = 2
                stack.pop()
                path.pop()
                continue
            nxt = todo.pop()
            if colour.get(nxt, 2) == 1:
                return [*path[path.index(nxt) :], nxt]
            if colour.get(nxt) == 0:
                colour[nxt] = 1
                path.append(nxt)
                stack.append((nxt, sorted(graph[nxt])))
    return None


def without_known_cycles(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph minus the edges of :data:`KNOWN_MODEL_CYCLES` (and only those)."""
    out = {m: set(deps) for m, deps in graph.items()}
    for pair in KNOWN_MODEL_CYCLES:
        for m in pair:
            if m in out:
                out[m] -= pair
    return out


def test_no_import_cycle_in_the_project() -> None:
    graph = import_graph()
    assert len(graph) > 50, "the graph found too few modules to mean anything"
    cycle = find_cycle(without_known_cycles(graph))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_cycle_even_through_type_only_imports() -> None:
    """Two modules that name each other's types are one unit in disguise: the cluster holds
    a mode and the modes drive a cluster, so the modes type against the leaf
    ``harness.db.specs.Runtime`` protocol instead of importing the Cluster ABC."""
    cycle = find_cycle(import_graph(types=True))
    assert cycle is None, "import cycle through type-only imports: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle_and_a_function_local_edge(tmp_path: Path) -> None:
    """Mutation check: a cycle closed only by a function-local import is still found."""
    a = tmp_path / "a.py"
    b = tmp_path / "b.py"
    a.write_text("import b\n")
    b.write_text("def f() -> None:\n    from a import x\n")
    c = tmp_path / "c.py"
    c.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\n")
    known = {"a", "b", "c"}
    graph = {
        "a": imports_of("a", a, known),
        "b": imports_of("b", b, known),
        "c": imports_of("c", c, known),
    }
    assert graph == {"a": {"b"}, "b": {"a"}, "c": set()}
    assert find_cycle(graph) in (["a", "b", "a"], ["b", "a", "b"])
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_cycle_at_all_in_the_harness() -> None:
    """The harness has no allowance: db, mode views, protocol, playbook, checker, cli."""
    graph = import_graph()
    harness = {
        m: {d for d in deps if d.startswith("harness.")}
        for m, deps in graph.items()
        if m.startswith("harness.")
    }
    cycle = find_cycle(harness)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_shared_names_module_is_a_leaf() -> None:
    """``harness.db.names`` opens the old db <-> metadata cycle only while it imports nothing."""
    assert import_graph()["harness.db.names"] == set()
