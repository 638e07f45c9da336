"""The compiled build's positional ``_replace`` (``harness.native_replace``), held to the
readable model without compiling anything.

Three checks, each able to fail: every generated builder gives exactly what the class's own
``_replace`` gives (every field a distinct object, so a field in the wrong place shows), and
a generator that gets one class's field order wrong is caught by that check (the mutation);
the rewritten copy of the model, run interpreted, finds the same states, transitions and
counterexamples as the repository's model on searches that go through both controllers, the
ZooKeeper queue, cuts and failover. ``tests/integration/test_native.py`` repeats the last
against the real mypyc build.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from harness import native
from harness import native_replace as nr
from reference_model import state

ROOT = Path(__file__).resolve().parents[2]


def _model_files() -> dict[str, str]:
    return {rel: (ROOT / rel).read_text() for rel in native.sources()}


def _compiled(files: dict[str, str]) -> set[str]:
    return {rel for rel in files if rel not in native.INTERPRETED}


Generated = dict[str, tuple[str, tuple[str, ...], tuple[nr.TupleClass, ...]]]


def _generated_helpers(
    tuple_classes: Callable[[str, Any], list[nr.TupleClass]] = nr.tuple_classes,
    monkeypatch: pytest.MonkeyPatch | None = None,
) -> Generated:
    """Every builder the rewrite of the real sources generates, by ``module.name``: its
    module, keywords and the classes it builds positionally."""
    files = _model_files()
    if monkeypatch is not None:
        monkeypatch.setattr(nr, "tuple_classes", tuple_classes)
    p = nr.plan(files, _compiled(files))
    return {
        f"{home}.{nr.helper_name(k)}": (home, k, cs)
        for home, helpers in p.helpers.items()
        for k, cs in helpers.items()
    }


def _namespace(home: str, helpers: Generated) -> dict[str, Any]:
    """The builders generated for ``home``, executed (interpreted) beside its real classes
    and the modules they reach through an alias."""
    ns: dict[str, Any] = dict(vars(importlib.import_module(home)))
    for _mod, _k, cs in helpers.values():
        for c in cs:
            ns[nr.alias(c.module)] = importlib.import_module(c.module)
    mine = [nr.helper_source(k, cs, home) for mod, k, cs in helpers.values() if mod == home]
    exec(compile(nr.PREAMBLE + "\n".join(mine), "<generated>", "exec"), ns)
    return ns


def _mismatches(helpers: Generated) -> list[str]:
    """Every (builder, class) whose result differs from the class's own ``_replace``: every
    field of the old tuple and every new value is a distinct object, so any field taken from
    the wrong place shows."""
    bad = []
    for home in sorted({h for h, _k, _c in helpers.values()}):
        ns = _namespace(home, helpers)
        for qual, (mod, keywords, classes) in helpers.items():
            if mod != home:
                continue
            for c in classes:
                cls = getattr(importlib.import_module(c.module), c.name)
                fields: tuple[str, ...] = cls._fields
                old = tuple.__new__(cls, tuple(object() for _ in fields))
                new = {k: object() for k in keywords}
                got = ns[nr.helper_name(keywords)](old, *new.values())
                want = old._replace(**new)
                if type(got) is not cls or tuple(got) != tuple(want):
                    bad.append(f"{qual} on {c.name}")
    return bad


def test_every_generated_builder_equals_the_readable_replace() -> None:
    helpers = _generated_helpers()
    on = {c.name for _m, _k, cs in helpers.values() for c in cs}
    # The hot ones are there: the state builders, the controllers' and the broker's rules.
    assert {"PartitionState", "Controller", "Replica", "Decision"} <= on, on
    # st._replace(controller=...) outside reference_model.state goes to a builder that also
    # knows Decision (the other class with that field) and still builds PartitionState.
    both = helpers["reference_model.controller." + nr.helper_name(("controller",))][2]
    assert {c.name for c in both} == {"Decision", "PartitionState"}
    assert _mismatches(helpers) == []


@pytest.mark.parametrize("victim", ["PartitionState", "Controller", "Replica", "Decision"])
def test_a_wrong_field_order_in_the_generator_is_caught(
    victim: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mutation: the generator reads one class's fields in the wrong order (two swapped)."""

    real = nr.tuple_classes

    def swapped(module: str, tree: Any) -> list[nr.TupleClass]:
        out = real(module, tree)
        return [
            replace(c, fields=(c.fields[1], c.fields[0], *c.fields[2:]))
            if c.name == victim
            else c
            for c in out
        ]

    bad = _mismatches(_generated_helpers(swapped, monkeypatch))
    assert bad and all(b.endswith(f"on {victim}") for b in bad), bad


def test_other_receivers_keep_their_own_replace() -> None:
    """A receiver of any other class (a NamedTuple with the same field names, a subclass)
    goes through its own ``_replace``: the rewrite cannot change what a call means."""

    class Lookalike(NamedTuple):
        controller: int
        replicas: int = 0

    class Sub(state.Controller):
        pass

    helpers = _generated_helpers()
    ns = _namespace("reference_model.controller", helpers)
    assert ns[nr.helper_name(("controller",))](Lookalike(1), 5) == Lookalike(5)
    sub = Sub(0, 0, frozenset(), frozenset())
    isr = _namespace("reference_model.state", helpers)[nr.helper_name(("isr",))]
    got = isr(sub, frozenset({1}))
    assert type(got) is Sub and got.isr == frozenset({1})


def test_the_rewrite_keeps_order_nesting_and_leaves_other_calls() -> None:
    src = (
        '"""A toy model."""\n'
        "from __future__ import annotations\n"
        "from typing import NamedTuple\n"
        "class P(NamedTuple):\n"
        "    a: int\n"
        "    b: int = 0  # a comment\n"
        "    c: int = 0\n"
        "def f(p: P, log: list[int]) -> P:\n"
        "    return p._replace(c=log.append(1) or 10, a=log.append(2) or p._replace(b=7).b)\n"
        "def g(p: P, kw: dict[str, int]) -> P:\n"
        "    return p._replace(**kw)\n"
        "def h(p: P) -> P:\n"
        "    return p._replace(zz=1)  # type: ignore[call-arg]\n"
    )
    other = "from reference_model.m import P\ndef k(p: P) -> P:\n    return p._replace(b=2)\n"
    out = nr.rewrite({"reference_model/m.py": src, "reference_model/n.py": other})
    text = out["reference_model/m.py"]
    assert "p._replace(**kw)" in text and "p._replace(zz=1)" in text  # left as written
    assert "# a comment" in text and "# type: ignore[call-arg]" in text
    assert text.count("._replace(") == 2 + 2  # the two above, a fallback in each helper
    assert "import reference_model.m as _hwc_reference_model_m" in out["reference_model/n.py"]
    ns: dict[str, Any] = {}
    exec(compile(text, "m", "exec"), ns)
    log: list[int] = []
    p = ns["P"](1, 2, 3)
    assert ns["f"](p, log) == ns["P"](7, 2, 10) and log == [1, 2]
    assert ns["g"](p, {"b": 5}) == ns["P"](1, 5, 3)


def test_the_generator_is_in_the_build_key(monkeypatch: pytest.MonkeyPatch) -> None:
    key = native.build_key()
    monkeypatch.setattr(nr, "GENERATOR_VERSION", nr.GENERATOR_VERSION + "x")
    assert native.build_key() != key


# The explorer's run-time swaps (explorer.fast_builders, fast_controller) would replace the
# very functions the rewrite changed; the compiled model cannot be swapped, so neither side
# has them here.
_SEARCH = """
import contextlib, json, sys
sys.path.insert(0, sys.argv[1])
import explorer.search as search
from explorer.search import Bounds, Reductions, explore
search.fast_builders = lambda *a, **k: contextlib.nullcontext()
search.fast_controller = lambda *a, **k: contextlib.nullcontext()
from reference_model.profiles import generation
import reference_model.state as st
assert st.__file__.startswith(sys.argv[1]), st.__file__
assert ("_hwc_replace_" in open(st.__file__).read()) == (sys.argv[1] != sys.argv[2])
out = []
for name, bounds, reductions in json.loads(sys.stdin.read()):
    r = explore(generation(name), Bounds(**bounds), max_states=6000,
                reductions=Reductions(**reductions))
    out.append([r.states, r.transitions, r.depth, r.exhausted,
                [[c.invariant, [repr(e) for e in c.events]] for c in r.counterexamples]])
print(json.dumps(out))
"""

# Both controllers, the ZooKeeper queue, ELR, cuts, failover, power loss, clean shutdown.
SEARCHES: list[tuple[str, dict[str, Any], bool]] = [
    ("hw", {}, True),
    ("kip320", {"power_losses": 1, "records": 1}, False),
    ("2.1.1", {"partitions": 1, "failover": True, "delayed_leader_and_isr": True}, False),
    ("4.0.0-elr", {"replicas": 3, "records": 1, "clean_shutdown": True}, True),
    ("3.3.1-kraft", {"partitions": 1, "one_way": True, "records": 1}, False),
]


def _search(root: Path) -> list[Any]:
    from explorer.search import ALL_REDUCTIONS, NO_REDUCTIONS

    req = [
        (name, bounds, (ALL_REDUCTIONS if every else NO_REDUCTIONS)._asdict())
        for name, bounds, every in SEARCHES
    ]
    res = subprocess.run(
        [sys.executable, "-c", _SEARCH, str(root), str(ROOT)],
        input=json.dumps(req),
        capture_output=True,
        text=True,
        cwd=root,
        check=False,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout)  # type: ignore[no-any-return]


def test_the_rewritten_model_explores_the_same_space(tmp_path: Path) -> None:
    files = _model_files()
    rewritten = {**files, **nr.rewrite(files, _compiled(files))}
    for rel, text in rewritten.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    got = _search(tmp_path)
    want = _search(ROOT)
    assert got == want
    assert any(cx for *_, cx in want), "some search finds a counterexample to compare"
