"""The compiled reference model: the same source, compiled with mypyc, for the explorer.

Why: the explorer spends all its time in ``reference_model`` (transitions) and ``explorer``
(canonical keys, the search loop). mypyc (it ships inside mypy, a dev dependency) compiles those
very files, type annotations and all, to C extension modules: no second implementation to keep in
step, and mypyc checks the annotations at run time, so a model whose types lie fails loudly instead
of diverging. A build is a copy of the packages ``reference_model`` and ``explorer`` with the
compiled modules beside their sources, kept in a cache outside the repository:

    ${HWCHAOS_CACHE:-~/.cache/hwchaos}/native/<key>/{reference_model,explorer}/

``<key>`` is the sha256 of every model source file, the Python version, the mypy version,
this builder's version and its generator (``harness.native_replace``), so a build can only
ever be used with the sources it was made from: editing any model file changes the key, and
the stale build is simply never found. A build is made in a temporary directory beside its
final place and renamed into it (atomic), so two builders at once cannot leave a half-written
build; a second builder waits for the first (``flock`` on the cache directory) and uses its
build instead of compiling the same sources again; nothing is written inside the repository.

One difference from the repository's text: in the copy, every ``x._replace(k=v)`` of a
compiled module is rewritten into a positional builder generated from the NamedTuple classes
the copy declares (``harness.native_replace``: mypyc's keyword calls cost more than the step
they build). Same meaning for every receiver, checked by ``tests/unit/test_native_replace.py``.

Running the compiled model needs its directory before the repository on ``sys.path`` in a
process that has not imported ``reference_model`` yet (the CLI has), so ``explore`` here runs
the search in a child process and streams its progress and result back as JSON lines; the
child refuses to run unless ``reference_model.transitions`` really is the compiled module.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from harness import locks, native_replace

# Bump when the way a build is made changes (module list, options): old builds go stale.
# 3: the copy's ``_replace`` calls are rewritten positionally (``harness.native_replace``,
# whose ``GENERATOR_VERSION`` and source are in the key too).
BUILDER_VERSION = "3"
# The packages a build holds (the model and the search engine), relative to SOURCE_ROOT.
PACKAGES = ("reference_model", "explorer")
# Model modules left interpreted in a build: not on the explorer's path (scenario files, the
# table of ``hwchaos model``, --explain), so compiling them would only lengthen the build.
INTERPRETED = frozenset(
    {"reference_model/explain.py", "reference_model/run.py", "reference_model/scenario.py"}
)
SOURCE_ROOT = Path(__file__).resolve().parent.parent
MARKER = "BUILD.json"  # written last, inside the temporary dir: a build without it is not one
KEEP_BUILDS = 4  # builds of other sources kept (switching branches back and forth)
EXTENSION_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


class NativeError(RuntimeError):
    """Building or running the compiled model failed; the message is one line."""


@dataclass(frozen=True)
class Build:
    """One complete build: put ``path`` first on ``sys.path`` to import it."""

    key: str
    path: Path
    seconds: float = 0.0  # how long the build took
    built_at: str = ""

    @property
    def short(self) -> str:
        return self.key[:12]


def cache_root() -> Path:
    """``$HWCHAOS_CACHE/native``, else the user cache (``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    env = os.environ.get("HWCHAOS_CACHE")
    if env:
        base = Path(env).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        base = Path(xdg).expanduser() / "hwchaos"
    return base.resolve() / "native"


def mypy_version() -> str | None:
    try:
        return importlib.metadata.version("mypy")
    except importlib.metadata.PackageNotFoundError:
        return None


def sources(src: Path = SOURCE_ROOT) -> list[str]:
    """Every source file of ``PACKAGES`` under ``src``, as a relative POSIX path, in a fixed
    order (subpackages such as ``explorer/_generated`` included)."""
    found = []
    for pkg in PACKAGES:
        for p in (src / pkg).rglob("*.py"):
            if "__pycache__" not in p.parts:
                found.append(p.relative_to(src).as_posix())
    return sorted(found)


def build_key(src: Path = SOURCE_ROOT) -> str:
    """sha256 over every model source (path and bytes), Python, mypy and this builder."""
    h = hashlib.sha256()
    generator = Path(native_replace.__file__).read_bytes()
    for part in (
        BUILDER_VERSION,
        native_replace.GENERATOR_VERSION,
        sys.version,
        sysconfig.get_platform(),
        mypy_version() or "-",
    ):
        h.update(part.encode() + b"\0")
    h.update(generator + b"\0")
    for rel in sources(src):
        h.update(rel.encode() + b"\0" + (src / rel).read_bytes() + b"\0")
    return h.hexdigest()


def cannot_build() -> str | None:
    """Why this machine cannot build the compiled model (one line), or None if it can."""
    if importlib.util.find_spec("mypyc") is None:
        return "mypyc is not installed (pip install mypy)"
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None and shutil.which("cc") is None:
        return f"no C compiler ({cc}) on PATH"
    include = sysconfig.get_paths().get("include", "")
    if not (Path(include) / "Python.h").is_file():
        return f"no Python headers (Python.h) in {include} (install python3-dev)"
    return None


def _load(path: Path) -> Build | None:
    try:
        meta = json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return Build(meta["key"], path, float(meta.get("seconds", 0.0)), meta.get("built_at", ""))


def current(src: Path = SOURCE_ROOT) -> Build | None:
    """The complete build for the current sources, or None."""
    key = build_key(src)
    build = _load(cache_root() / key)
    return build if build is not None and build.key == key else None


def status(src: Path = SOURCE_ROOT) -> tuple[Build | None, str]:
    """The current build and one line about it, or None and why there is none."""
    build = current(src)
    if build is not None:
        return build, (
            f"build {build.short} for the current sources: {build.path} "
            f"(built {build.built_at} in {build.seconds:.1f} s)"
        )
    reason = cannot_build()
    if reason is not None:
        return None, f"no compiled build, and none can be made here: {reason}"
    root = cache_root()
    others = [p for p in root.iterdir() if _load(p) is not None] if root.is_dir() else []
    stale = f" ({len(others)} build(s) of other sources in {root})" if others else ""
    return None, f"no compiled build for the current sources{stale}: `hwchaos native build`"


def build(src: Path = SOURCE_ROOT, say: Callable[[str], None] | None = None) -> Build:
    """Build (or find) the compiled model of ``src``; raises ``NativeError`` (one line)."""
    key = build_key(src)
    root = cache_root()
    final = root / key
    found = _load(final)
    if found is not None:
        return found
    reason = cannot_build()
    if reason is not None:
        raise NativeError(f"cannot compile the model: {reason}")
    root.mkdir(parents=True, exist_ok=True)
    with _builder_lock(root, say):
        found = _load(final)  # made by the builder this one waited for
        if found is not None:
            return found
        return _build_locked(src, key, root, final, say)


@contextlib.contextmanager
def _builder_lock(root: Path, say: Callable[[str], None] | None) -> Iterator[None]:
    """One builder at a time per cache (``flock`` on the cache directory itself).

    Why: two builders at once (two test workers, two terminals) each spent a full mypyc
    compile (a minute or two of both cores) for one build to be kept. The second now waits
    and then finds the first one's build. The lock dies with its process (a killed builder
    frees it), and it leaves no file behind; the atomic rename below still guards a cache
    the lock cannot cover (a file system without ``flock``).
    """

    def waiting() -> None:
        if say is not None:
            say(f"another builder is compiling in {root}: waiting for it ...")

    # best effort: with no flock here builders race, and the rename keeps the cache whole
    with locks.exclusive(root, waiting, best_effort=True):
        yield


def _build_locked(
    src: Path, key: str, root: Path, final: Path, say: Callable[[str], None] | None
) -> Build:
    """The compile itself, under :func:`_builder_lock`."""
    _prune(root, key)
    files = sources(src)
    compiled = [rel for rel in files if rel not in INTERPRETED]
    if say is not None:
        say(
            f"compiling {len(compiled)} modules of {' and '.join(PACKAGES)} with mypyc "
            f"{mypy_version()} (about a minute) ..."
        )
    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key[:12]}-", dir=root))
    try:
        # The copy, not the repository, gets the positional ``_replace`` (see native_replace).
        texts = {rel: (src / rel).read_text() for rel in files}
        texts.update(native_replace.rewrite(texts, set(compiled)))
        for rel, text in texts.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_text(text)
        env = {**os.environ, "MYPYC_OPT_LEVEL": "3"}
        cmd = [sys.executable, "-m", "mypyc", *compiled]
        log = tmp / "build.log"
        with log.open("w") as out:
            rc = subprocess.run(
                cmd, cwd=tmp, env=env, stdout=out, stderr=subprocess.STDOUT
            ).returncode
        if rc != 0:
            tail = [ln for ln in log.read_text().splitlines() if ln.strip()][-1:]
            raise NativeError(f"mypyc failed (exit {rc}): {tail[0] if tail else 'no output'}")
        for junk in ("build", ".mypy_cache", "build.log"):
            p = tmp / junk
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
        _verify(tmp)
        seconds = time.perf_counter() - t0
        meta = {
            "key": key,
            "python": sys.version,
            "mypy": mypy_version(),
            "compiled": compiled,
            "seconds": round(seconds, 1),
            "built_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        }
        (tmp / MARKER).write_text(json.dumps(meta, indent=2) + "\n")
        try:
            os.rename(tmp, final)
        except OSError:
            # Another builder finished first (the target exists and is not empty): use it.
            shutil.rmtree(tmp, ignore_errors=True)
            other = _load(final)
            if other is None:
                raise NativeError(f"cannot move the build into {final}") from None
            return other
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Build(key, final, round(seconds, 1), str(meta["built_at"]))


def _verify(path: Path) -> None:
    """A fresh interpreter with ``path`` first imports the compiled model and search from it."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import explorer.search as s, "
        "reference_model.transitions as t; print(s.__file__); print(t.__file__)"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=path
    )
    where = res.stdout.strip()
    files = where.splitlines()
    if res.returncode != 0 or not files or not all(f.endswith(EXTENSION_SUFFIXES) for f in files):
        last = (res.stderr.strip().splitlines() or [where])[-1]
        raise NativeError(f"the compiled model does not import: {last}")


def _prune(root: Path, keep: str) -> None:
    """Drop temporary dirs of builders dead for a day and all but the newest other builds."""
    now = time.time()
    builds = []
    for p in root.iterdir():
        if p.name.startswith(".tmp-"):
            with contextlib.suppress(OSError):
                if now - p.stat().st_mtime > 86400:
                    shutil.rmtree(p, ignore_errors=True)
        elif p.name != keep and p.is_dir():
            builds.append(p)
    builds.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for p in builds[KEEP_BUILDS:]:
        shutil.rmtree(p, ignore_errors=True)


# ------------------------------------------------------------ which model the CLI runs


@dataclass(frozen=True)
class Choice:
    """The model a command runs: a build, or None for the pure one, and the line saying so."""

    build: Build | None
    line: str

    def to_json(self) -> dict[str, Any]:
        return {
            "compiled": self.build is not None,
            "build": self.build.short if self.build else None,
            "path": str(self.build.path) if self.build else None,
            "line": self.line,
        }


def choose(pure: bool = False) -> Choice:
    """The compiled model when a build for the current sources exists, unless told not to."""
    if pure:
        return Choice(None, "model: pure Python (--pure)")
    if os.environ.get("HWCHAOS_NATIVE", "").strip() == "0":
        return Choice(None, "model: pure Python (HWCHAOS_NATIVE=0)")
    build = current()
    if build is None:
        return Choice(
            None, "model: pure Python (no compiled build for these sources: `hwchaos native build`)"
        )
    return Choice(build, f"model: compiled with mypyc (build {build.short})")


# ------------------------------------------------------------ the search in a child


@dataclass
class ChildRun:
    """A search run in a child process: its result and the child's own timing of it."""

    result: Any  # explorer.search.ExploreResult (of the parent's model)
    cpu_seconds: float
    seconds: float
    model_file: str  # reference_model.transitions.__file__ in the child


_CHILD = (
    "import sys\n"
    "if sys.argv[1]: sys.path.insert(0, sys.argv[1])\n"
    "from harness.native import child_main\n"
    "sys.exit(child_main(bool(sys.argv[1])))\n"
)


def explore(
    protocol: str,
    bounds: Any,
    acks: str = "all",
    min_insync: int = 2,
    unclean: bool = False,
    max_counterexamples: int = 5,
    max_states: int = 0,
    progress: Callable[[int, int, int], object] | None = None,
    reductions: Any = None,
    settled_only: bool = True,
    *,
    build: Build | None,
    cpu_budget: float = 0.0,
) -> ChildRun:
    """``explorer.search.explore`` in a child process running ``build`` (None: pure).

    Same arguments (the profile by name), same result, rebuilt from JSON with the parent's
    classes. ``progress`` is called as in-process (its return value is ignored); the child
    stops by itself once its CPU time passes ``cpu_budget`` (0: no budget), as a benchmark's
    progress callback would. Ctrl-C or an exception here kills the child.
    """
    from explorer.search import ALL_REDUCTIONS, Counterexample, ExploreResult

    request = {
        "protocol": protocol,
        "bounds": asdict(bounds),
        "acks": acks,
        "min_insync": min_insync,
        "unclean": unclean,
        "max_counterexamples": max_counterexamples,
        "max_states": max_states,
        "reductions": (reductions or ALL_REDUCTIONS)._asdict(),
        "settled_only": settled_only,
        "cpu_budget": cpu_budget,
    }
    cmd = [sys.executable, "-c", _CHILD, str(build.path) if build else ""]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    reply: dict[str, Any] | None = None
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(request))
        proc.stdin.close()
        for line in proc.stdout:
            msg = json.loads(line)
            if "progress" in msg:
                if progress is not None:
                    progress(*msg["progress"])
            else:
                reply = msg
        rc = proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if rc != 0 or reply is None:
        raise NativeError(f"the explorer child failed (exit {rc}); rerun with --pure to compare")
    if "error" in reply:
        raise NativeError(str(reply["error"]))
    r = reply["result"]
    result = ExploreResult(
        states=r["states"],
        transitions=r["transitions"],
        depth=r["depth"],
        exhausted=r["exhausted"],
        counterexamples=[
            Counterexample(c["invariant"], [event_from_json(e) for e in c["events"]])
            for c in r["counterexamples"]
        ],
    )
    return ChildRun(result, reply["cpu_seconds"], reply["seconds"], reply["model_file"])


def event_to_json(ev: Any) -> dict[str, Any]:
    """An ``Event`` as JSON: every field, sets as sorted lists (links as [src, dst])."""
    out: dict[str, Any] = {}
    for name, value in ev._asdict().items():
        out[name] = (
            sorted(list(x) if isinstance(x, tuple) else x for x in value)
            if isinstance(value, frozenset)
            else value
        )
    return out


def event_from_json(d: dict[str, Any]) -> Any:
    """The ``Event`` of ``event_to_json`` (sets rebuilt from each field's default)."""
    from reference_model.events import Event

    kw: dict[str, Any] = {}
    for name in Event._fields:
        value = d[name]
        if isinstance(Event._field_defaults.get(name), frozenset):
            value = frozenset(tuple(x) if isinstance(x, list) else x for x in value)
        kw[name] = value
    return Event(**kw)


def child_main(expect_compiled: bool) -> int:
    """The child's side: read the request on stdin, search, write JSON lines on stdout."""
    out = sys.stdout
    try:
        return _child(expect_compiled, out)
    except KeyboardInterrupt:
        return 130  # the parent got the same Ctrl-C and says so


def _child(expect_compiled: bool, out: IO[str]) -> int:
    request = json.loads(sys.stdin.read())
    import reference_model.transitions as transitions
    from explorer.search import Bounds, Reductions
    from explorer.search import explore as search
    from reference_model.profiles import generation

    model_file = str(transitions.__file__)
    if expect_compiled != model_file.endswith(EXTENSION_SUFFIXES):
        what = "compiled" if expect_compiled else "pure"
        out.write(json.dumps({"error": f"expected the {what} model, imported {model_file}"}) + "\n")
        return 0
    parent = os.getppid()
    budget = float(request["cpu_budget"])

    def progress(states: int, depth: int, queued: int) -> bool:
        if os.getppid() != parent:
            os._exit(1)  # the parent is gone (killed): nobody wants the answer
        out.write(json.dumps({"progress": [states, depth, queued]}) + "\n")
        out.flush()
        return bool(budget) and time.process_time() - c0 > budget

    c0 = time.process_time()
    w0 = time.perf_counter()
    res = search(
        generation(request["protocol"]),
        Bounds(**request["bounds"]),
        request["acks"],
        request["min_insync"],
        request["unclean"],
        request["max_counterexamples"],
        request["max_states"],
        progress,
        Reductions(**request["reductions"]),
        request["settled_only"],
    )
    cpu = time.process_time() - c0
    wall = time.perf_counter() - w0
    result = {
        "states": res.states,
        "transitions": res.transitions,
        "depth": res.depth,
        "exhausted": res.exhausted,
        "counterexamples": [
            {"invariant": c.invariant, "events": [event_to_json(e) for e in c.events]}
            for c in res.counterexamples
        ],
    }
    reply = {"result": result, "cpu_seconds": cpu, "seconds": wall, "model_file": model_file}
    out.write(json.dumps(reply) + "\n")
    out.flush()
    return 0
