"""The explorer's speed against an older commit, interleaved (issue 24: within 10% of before).

Run: ``nice -n 0 .venv/bin/python benchmarks/bench_explorer_compare.py [--ref 1438bfe]
[--repeat 5] [--configs pure-none,pure-all,...] [--no-compiled]``.

The reference commit is checked out into a temporary git worktree outside the repository
(removed afterwards, also on Ctrl-C). Each search runs in a child process of its own tree
through that tree's ``harness.native.child_main`` (the request on stdin, the reply on
stdout: the same protocol at both ends since issue 13), so each side runs its own model,
search and reductions, pure or compiled (each tree's ``harness.native.build``, cached by
source hash as ``hwchaos native build`` does). Runs alternate A B A B ... per configuration
so both sides see the same machine load; the figure is the median of the child's own
``time.process_time`` over the search (CPU seconds of one core), the ratio is
current / reference of CPU seconds per distinct state (the explorer's figure is states per
CPU second; 1.10 is 10% slower now). Each side must find the same space on every run; the
two sides' spaces may differ where the model changed since the reference (both are printed).
Figures, not assertions; the last lines are ``BENCH {json}`` lines for ``make bench``-style
tables. The machine is shared: the 1-minute load average is printed at start and end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from table import bench_line

REPO = Path(__file__).resolve().parent.parent

# Each tree's child: its own harness.native.child_main with the build (if any) first on the
# path; the tree itself is the working directory, so ``-c`` puts it on the path next.
CHILD = (
    "import sys\n"
    "if sys.argv[1]: sys.path.insert(0, sys.argv[1])\n"
    "from harness.native import child_main\n"
    "sys.exit(child_main(bool(sys.argv[1])))\n"
)

# The reduction switches, as both trees' ``Reductions`` NamedTuple spell them.
ALL = {"symmetry": True, "record_renaming": True, "por": True, "fast_replace": True,
       "compact_keys": True}  # fmt: skip
NONE = {k: False for k in ALL}


@dataclass(frozen=True)
class Config:
    """One search configuration, run the same way on both trees."""

    label: str
    protocol: str
    bounds: dict[str, object]
    reductions: dict[str, bool]
    compiled: bool


CONFIGS = [
    Config("pure-none hw", "hw", {}, NONE, False),
    Config("pure-none kip320", "kip320", {}, NONE, False),
    Config("pure-none kip320 records=3", "kip320", {"records": 3}, NONE, False),
    Config("pure-all hw", "hw", {}, ALL, False),
    Config("pure-all kip320", "kip320", {}, ALL, False),
    Config("compiled-all hw", "hw", {}, ALL, True),
    Config("compiled-all kip320 records=3", "kip320", {"records": 3}, ALL, True),
    Config("compiled-none kip320", "kip320", {}, NONE, True),
]


@dataclass
class Tree:
    """A source tree (the reference worktree or this repository) and its compiled build."""

    name: str
    path: Path
    build: str = ""  # the build's directory, "" when none (pure only)


def build_of(tree: Path) -> str:
    """The compiled model of ``tree`` (built by that tree's own builder), or "" with why."""
    code = "from harness.native import build; print(build(say=print).path)"
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, check=False
    )
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  no compiled build of {tree}: {last}", flush=True)
        return ""
    return res.stdout.strip().splitlines()[-1]


def run_one(tree: Tree, cfg: Config) -> dict[str, object]:
    """One search in a child of ``tree``; the reply (result, cpu_seconds, model_file)."""
    request = {
        "protocol": cfg.protocol,
        "bounds": cfg.bounds,
        "acks": "all",
        "min_insync": 2,
        "unclean": False,
        "max_counterexamples": 5,
        "max_states": 0,
        "reductions": cfg.reductions,
        "settled_only": True,
        "cpu_budget": 0.0,
    }
    if cfg.compiled and not Path(tree.build).is_dir():
        # The build cache is shared and keeps a few builds: another user may have pruned it.
        tree.build = build_of(tree.path)
    build = tree.build if cfg.compiled else ""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, build],
        cwd=tree.path,
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.strip()]
    replies = [m for m in lines if "progress" not in m]
    if proc.returncode != 0 or not replies or "error" in replies[-1]:
        why = replies[-1].get("error") if replies else proc.stderr.strip()[-300:]
        raise SystemExit(f"{tree.name} {cfg.label}: the child failed: {why}")
    reply: dict[str, object] = replies[-1]
    return reply


def shape(reply: dict[str, object]) -> tuple[object, ...]:
    """What must be equal on both sides: states, transitions, depth, counterexample lengths."""
    r = reply["result"]
    assert isinstance(r, dict)
    cx = tuple((c["invariant"], len(c["events"])) for c in r["counterexamples"])
    return (r["states"], r["transitions"], r["depth"], r["exhausted"], cx)


def worktree(ref: str) -> Path:
    """A detached worktree of ``ref`` in a temporary directory outside the repository."""
    where = Path(tempfile.mkdtemp(prefix="hwchaos-bench-ref-"))
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(where), ref],
        check=True,
        capture_output=True,
    )
    return where


def drop_worktree(where: Path) -> None:
    """Remove the temporary worktree and its git bookkeeping."""
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)],
        check=False,
        capture_output=True,
    )
    shutil.rmtree(where, ignore_errors=True)
    subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], check=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--ref", default="1438bfe", help="the reference commit (default 1438bfe)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per side and configuration")
    ap.add_argument("--configs", default="", help="comma-separated label substrings to run")
    ap.add_argument("--no-compiled", action="store_true", help="pure-model configurations only")
    args = ap.parse_args()
    wanted = [w.strip() for w in args.configs.split(",") if w.strip()]
    configs = [c for c in CONFIGS if not wanted or any(w in c.label for w in wanted)]
    if args.no_compiled:
        configs = [c for c in configs if not c.compiled]
    load0 = os.getloadavg()[0]
    print(f"load average (1 min) at start: {load0:.2f} on {os.cpu_count()} cores", flush=True)
    ref_path = worktree(args.ref)
    try:
        ref = Tree(f"ref {args.ref}", ref_path)
        cur = Tree("current", REPO)
        if any(c.compiled for c in configs):
            for t in (ref, cur):
                t.build = build_of(t.path)
                print(f"{t.name}: compiled build {t.build or 'none'}", flush=True)
        benches: list[str] = []
        print(
            f"{'config':<32} {'ref cpu s':>9} {'cur cpu s':>9} {'ref us/st':>9} "
            f"{'cur us/st':>9} {'ratio':>6}  states ref/cur"
        )
        for cfg in configs:
            if cfg.compiled and not (ref.build and cur.build):
                print(f"{cfg.label:<32} skipped: no compiled build on both sides")
                continue
            times: dict[str, list[float]] = {"ref": [], "cur": []}
            shapes: dict[str, set[tuple[object, ...]]] = {"ref": set(), "cur": set()}
            for _ in range(args.repeat):
                for key, tree in (("ref", ref), ("cur", cur)):
                    reply = run_one(tree, cfg)
                    cpu = reply["cpu_seconds"]
                    assert isinstance(cpu, float)
                    times[key].append(cpu)
                    shapes[key].add(shape(reply))
            if any(len(s) != 1 for s in shapes.values()):
                raise SystemExit(f"{cfg.label}: one side searched different spaces: {shapes}")
            (sa,), (sb,) = shapes["ref"], shapes["cur"]
            n_a, n_b = sa[0], sb[0]
            assert isinstance(n_a, int) and isinstance(n_b, int)
            a, b = statistics.median(times["ref"]), statistics.median(times["cur"])
            # The explorer's figure is distinct states per CPU second: compare CPU per state,
            # since the model's space itself changed a little since the reference.
            ua, ub = a / n_a * 1e6, b / n_b * 1e6
            ratio = ub / ua
            note = "" if sa == sb else f"  (spaces differ: ref {sa[1:]}, cur {sb[1:]})"
            print(
                f"{cfg.label:<32} {a:>9.2f} {b:>9.2f} {ua:>9.2f} {ub:>9.2f} {ratio:>6.3f}  "
                f"{n_a}/{n_b}{note}",
                flush=True,
            )
            print(
                "    ref " + " ".join(f"{t:.2f}" for t in times["ref"])
                + " | cur " + " ".join(f"{t:.2f}" for t in times["cur"]),
                flush=True,
            )  # fmt: skip
            benches.append(
                bench_line(
                    f"explorer {cfg.label}: CPU-s per state, median now / at {args.ref}",
                    round(ratio, 3),
                    "ratio",
                    "<= 1.10",
                    ratio <= 1.10,
                )
            )
    finally:
        drop_worktree(ref_path)
    load1 = os.getloadavg()[0]
    print(f"load average (1 min) at end: {load1:.2f}")
    for line in benches:
        print(line)


if __name__ == "__main__":
    main()
