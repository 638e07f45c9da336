"""The compiled reference model (``harness.native``): built for real with mypyc, then held to
the pure model.

One build per session into a temporary cache (``HWCHAOS_CACHE``), asked of two builders at
once: one compiles, the other waits for it and takes its build (neither corrupts the cache).
Then ``hwchaos explore --json`` must give exactly the same states, transitions, depth and
counterexamples compiled and ``--pure``; a changed source must change the build key (a stale
build is never used); and the model's own unit tests must pass against the compiled modules
(mypyc checks annotations at run time, so this is where a semantic difference would show).
Skipped, with the reason, where nothing can be compiled (no C compiler, no Python headers).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import native, native_replace
from reference_model.events import CLIENT_NODE, Event

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _env(cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HWCHAOS_NATIVE"}
    return {**env, "HWCHAOS_CACHE": str(cache), **extra}


def _hwchaos(
    cache: Path, *args: str, timeout: float = 600, **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(cache, **extra),
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, native.Build]]:
    """A build in a fresh cache, made by two ``hwchaos native build`` at once."""
    reason = native.cannot_build()
    if reason is not None:
        pytest.skip(f"cannot compile the model here: {reason}")
    cache = tmp_path_factory.mktemp("hwchaos-cache")
    cmd = [sys.executable, "-m", "harness.cli", "native", "build"]
    procs = [
        subprocess.Popen(
            cmd, cwd=ROOT, env=_env(cache), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=900) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err.decode()[-2000:]
    # one compiled, the other waited for it and took its build (no second compile)
    said = sorted(
        ("with mypyc" in err.decode(), "waiting for it" in err.decode()) for _o, err in outs
    )
    assert said == [(False, True), (True, False)], [err.decode()[-500:] for _o, err in outs]
    root = cache / "native"
    entries = sorted(p.name for p in root.iterdir())
    key = native.build_key()
    assert entries == [key], f"one build, no temporary dir left: {entries}"
    build = native._load(root / key)
    assert build is not None and build.key == key
    yield cache, build
    shutil.rmtree(cache, ignore_errors=True)


def test_build_is_outside_the_repo_and_status_names_it(built: tuple[Path, native.Build]) -> None:
    cache, build = built
    assert not (ROOT / "build").exists()
    assert not any(p.suffix == ".so" for p in (ROOT / "reference_model").iterdir())
    compiled = list((build.path / "reference_model").glob("transitions.*.so"))
    assert compiled, "transitions compiled"
    # The copy it compiled has the generated positional builders; the repository does not.
    copy = (build.path / "reference_model" / "state.py").read_text()
    assert native_replace.PREFIX in copy
    assert native_replace.PREFIX not in (ROOT / "reference_model" / "state.py").read_text()
    res = _hwchaos(cache, "native", "status")
    assert res.returncode == 0 and build.short in res.stdout and str(build.path) in res.stdout
    again = _hwchaos(cache, "native", "build")
    assert again.returncode == 0 and "up to date" in again.stdout


# Small enough to run pure in seconds; the ISR, power loss and three-replica paths included.
CASES = [
    ["--protocol", "hw"],
    ["--protocol", "kip320"],
    ["--protocol", "kip320", "--power-losses", "1", "--records", "1"],
    ["--protocol", "hw", "--replicas", "3", "--records", "1", "--crashes", "1"],
]


def _explore(cache: Path, out: Path, *args: str, **extra: str) -> dict[str, Any]:
    res = _hwchaos(cache, "explore", *args, "--json", "--out", str(out), **extra)
    assert res.returncode in (0, 1), res.stderr[-2000:]
    return json.loads(res.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a[1:]))
def test_compiled_and_pure_explore_agree(
    built: tuple[Path, native.Build], args: list[str], tmp_path: Path
) -> None:
    cache, build = built
    fast = _explore(cache, tmp_path / "compiled", *args)
    pure = _explore(cache, tmp_path / "pure", *args, "--pure")
    assert fast["model"]["compiled"] and fast["model"]["build"] == build.short
    assert fast["model"]["line"] == f"model: compiled with mypyc (build {build.short})"
    assert not pure["model"]["compiled"] and pure["model"]["line"] == "model: pure Python (--pure)"
    for k in ("states", "transitions", "depth", "exhausted"):
        assert fast[k] == pure[k], k

    def cxs(d: dict[str, Any]) -> list[tuple[str, list[str]]]:
        return [(c["invariant"], c["steps"]) for c in d["counterexamples"]]

    assert cxs(fast) == cxs(pure)
    # The scenario files written to --out are the same, byte for byte.
    files = sorted(p.name for p in (tmp_path / "compiled").glob("*.yaml"))
    assert files == sorted(p.name for p in (tmp_path / "pure").glob("*.yaml"))
    assert len(files) == len(fast["counterexamples"])
    for name in files:
        a = (tmp_path / "compiled" / name).read_text().replace(str(tmp_path / "compiled"), "")
        b = (tmp_path / "pure" / name).read_text().replace(str(tmp_path / "pure"), "")
        assert a == b, name


def test_text_output_says_which_model_ran(built: tuple[Path, native.Build], tmp_path: Path) -> None:
    cache, build = built
    args = ["explore", "--records", "1", "--crashes", "1", "--out", str(tmp_path)]
    fast = _hwchaos(cache, *args)
    assert f"model: compiled with mypyc (build {build.short})" in fast.stdout.splitlines()
    off = _hwchaos(cache, *args, HWCHAOS_NATIVE="0")
    assert "model: pure Python (HWCHAOS_NATIVE=0)" in off.stdout.splitlines()
    # The counts line is the same either way (only its timing differs).
    assert (
        fast.stdout.split(" in ")[0].splitlines()[-1]
        == off.stdout.split(" in ")[0].splitlines()[-1]
    )
    empty = _hwchaos(tmp_path / "empty-cache", *args)
    assert (
        "model: pure Python (no compiled build for these sources: `hwchaos native build`)"
        in empty.stdout.splitlines()
    )


def test_a_changed_source_changes_the_key_and_the_stale_build_is_not_used(
    built: tuple[Path, native.Build], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, build = built
    monkeypatch.setenv("HWCHAOS_CACHE", str(cache))
    copy = tmp_path / "src"
    for pkg in native.PACKAGES:
        shutil.copytree(
            native.SOURCE_ROOT / pkg, copy / pkg, ignore=shutil.ignore_patterns("__pycache__")
        )
    assert native.build_key(copy) == build.key, "same bytes, same key"
    assert native.current(copy) == build
    target = copy / "reference_model" / "transitions.py"
    target.write_text(target.read_text() + "\n# an edit\n")
    assert native.build_key(copy) != build.key
    assert native.current(copy) is None
    stale, line = native.status(copy)
    assert stale is None and "no compiled build for the current sources" in line
    (copy / "explorer" / "new_rule.py").write_text("X = 1\n")  # a new module counts too
    target.write_text(target.read_text().replace("\n# an edit\n", ""))
    assert native.build_key(copy) != build.key


MODEL_TESTS = [
    "tests/unit/test_model.py",
    "tests/unit/test_model_properties.py",
    "tests/unit/test_explorer_reductions.py",
    "tests/unit/test_explorer_settled.py",
    "tests/unit/test_prevention.py",
    "tests/unit/test_cuts.py",
    "tests/unit/test_profiles.py",
]

# Imports the compiled model before pytest (tests/conftest.py puts the repo first on sys.path
# afterwards, too late to matter), runs the tests, then says which module they used.
_RUNNER = """
import sys
sys.path.insert(0, sys.argv[1])
import explorer.search, reference_model.transitions as t
import pytest
rc = pytest.main(["-q", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning",
                  *sys.argv[2:]])
print("TRANSITIONS", sys.modules["reference_model.transitions"].__file__)
sys.exit(rc)
"""


def test_model_unit_tests_pass_on_the_compiled_build(built: tuple[Path, native.Build]) -> None:
    cache, build = built
    res = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(build.path), *MODEL_TESTS],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(cache),
        timeout=1800,
    )
    assert res.returncode == 0, res.stdout[-4000:]
    where = res.stdout.split("TRANSITIONS ")[-1].strip()
    assert where.startswith(str(build.path)) and where.endswith(native.EXTENSION_SUFFIXES), where
    assert " passed" in res.stdout and " failed" not in res.stdout


def test_events_cross_the_process_boundary_unchanged() -> None:
    """The child's counterexamples come back as the very Event values (sets included)."""
    events = [
        Event("produce", record="m1"),
        Event("restart", 1, hold=frozenset({0, 2})),
        Event("partition", 0, links=frozenset({(0, 1), (CLIENT_NODE, 0)})),
        Event("elect", 2, unclean=True),
        Event("stale_checkpoint", 1, value=3),
    ]
    for ev in events:
        wire = json.loads(json.dumps(native.event_to_json(ev)))
        assert native.event_from_json(wire) == ev


def test_the_compiled_replace_methods_are_in_step_with_the_state_classes() -> None:
    """``explorer/_generated/replace.py`` is exactly what ``replace_source()`` generates from
    state.py.

    When a state class gains a field this fails: regenerate the file with the command in
    ``explorer.fast_replace.replace_source``'s docstring. (Until then the search
    falls back to the interpreted ``_replace`` for that class: slower, never wrong.)
    """
    from explorer._generated import replace as generated
    from explorer.fast_replace import _replace_for, replace_source
    from explorer.symmetry import state_classes

    text = (native.SOURCE_ROOT / "explorer" / "_generated" / "replace.py").read_text()
    assert text == replace_source(), "explorer/_generated/replace.py is stale: regenerate it"
    for name, cls in [*state_classes().items(), ("Event", Event)]:
        assert _replace_for(cls) is generated.METHODS[name], name
        sample = cls._make(range(len(cls._fields)))  # type: ignore[attr-defined]
        first = cls._fields[0]  # type: ignore[attr-defined]
        fast = generated.METHODS[name](sample, **{first: "x"})
        assert type(fast) is cls and fast == sample._replace(**{first: "x"})
        with pytest.raises(TypeError):
            generated.METHODS[name](sample, no_such_field=1)
