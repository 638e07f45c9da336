"""Explorer throughput and which bounds exhaust within 60 s / 10 min (issue 13).

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_explorer.py [--quick] [--long]``.

Two models, the same source: the compiled one (``harness.native``: mypyc; the script builds
it first, or reuses the build for the current sources) and the pure one. Every search runs
in a child process of its own (``harness.native.explore``), compiled and pure alike, so the
two are timed the same way.

Times are CPU seconds of this process (``time.process_time``), i.e. "on one core": the
machine is shared, and wall time mostly measures the other users (the 1-minute load average
at start and end is printed beside the figures). Figures, not assertions. The last lines
are ``BENCH {json}`` lines (``table.bench_line``) for ``make bench``:

- distinct states per CPU second at default bounds (replicas 2, records 2, crashes 2),
  hw and kip320: compiled and pure with every reduction on, and pure with none (the
  pre-issue-13 search);
- ``--replicas 3`` at default records/crashes, compiled and pure: exhausted or not,
  states, CPU and wall s;
- the largest bound case (most states) exhausted within 60 CPU-s, and with ``--long``
  within 600 CPU-s (each case not exhausted in 60 s is run again with 600 s), with the
  compiled model when there is one.

Tables:
1. states per CPU second per protocol, model and reductions, with counterexample lengths
   (they must agree between models and reductions);
2. bounds against the CPU budgets: exhausted or not, states, depth.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from table import bench_line

from explorer.search import (
    ALL_REDUCTIONS,
    NO_REDUCTIONS,
    Bounds,
    ExploreResult,
    Reductions,
)
from harness import native
from reference_model.profiles import GENERATIONS

BOUND_CASES: list[tuple[str, Bounds]] = [
    ("r2 default", Bounds()),
    ("r2 records=3", Bounds(records=3)),
    ("r2 crashes=3", Bounds(crashes=3)),
    ("r2 power-losses=1", Bounds(power_losses=1)),
    ("r2 split-fetch", Bounds(split_fetch=True)),
    ("r2 delayed-leader-and-isr", Bounds(delayed_leader_and_isr=True)),
    ("r3 records=1 crashes=1", Bounds(replicas=3, records=1, crashes=1)),
    ("r3 records=2 crashes=1", Bounds(replicas=3, records=2, crashes=1)),
    ("r3 records=1 crashes=2", Bounds(replicas=3, records=1, crashes=2)),
    ("r3 default (records=2 crashes=2)", Bounds(replicas=3)),
]


def run(
    protocol: str,
    bounds: Bounds,
    red: Reductions,
    budget: float,
    build: native.Build | None,
) -> tuple[ExploreResult, float, float]:
    """One search in a child under a CPU budget (``build`` None: the pure model).

    Returns (result, cpu seconds, wall seconds) as the child timed the search.
    """
    child = native.explore(protocol, bounds, reductions=red, build=build, cpu_budget=budget)
    return child.result, child.cpu_seconds, child.seconds


def compiled_model() -> native.Build | None:
    """Build (or reuse) the compiled model; None, with the reason printed, if it cannot be."""
    try:
        build = native.build(say=lambda line: print(f"native: {line}", flush=True))
    except native.NativeError as exc:
        print(f"native: {exc}: pure model only", flush=True)
        return None
    print(f"native: build {build.short} ({build.path})", flush=True)
    return build


def load() -> float:
    """The 1-minute load average: how busy the shared machine was (2 cores here)."""
    return os.getloadavg()[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="hw only, small bound table")
    ap.add_argument("--budget", type=float, default=60.0, help="CPU seconds per bound case")
    ap.add_argument(
        "--long", type=float, nargs="?", const=600.0, default=0.0,
        help="re-run cases not exhausted within --budget with this budget (default 600)",
    )  # fmt: skip
    ap.add_argument("--protocol", default="kip320", help="protocol of the bound table")
    ap.add_argument("--cases", default="", help="only bound cases whose label contains this")
    ap.add_argument("--skip-rates", action="store_true", help="skip table 1")
    ap.add_argument(
        "--all-protocols", action="store_true", help="table 1 over every era, not hw and kip320"
    )
    args = ap.parse_args()
    benches: list[str] = []
    load0 = load()
    print(f"load average (1 min) at start: {load0:.2f} on {os.cpu_count()} cores")
    build = compiled_model()
    # (label, build, reductions): the compiled model first, the pure one for comparison.
    runs: list[tuple[str, native.Build | None, Reductions]] = []
    if build is not None:
        runs.append(("compiled", build, ALL_REDUCTIONS))
    runs += [("pure", None, ALL_REDUCTIONS), ("pure", None, NO_REDUCTIONS)]

    print("1. distinct states per CPU second at default bounds (replicas=2 records=2 crashes=2)")
    print(
        f"{'protocol':<8} {'model':<9} {'reductions':<10} {'states':>8} {'cpu s':>7} "
        f"{'wall s':>7} {'states/cpu s':>12}  counterexamples (invariant:length)"
    )
    if args.skip_rates:
        protocols: list[str] = []
    elif args.quick:
        protocols = ["hw"]
    else:
        protocols = list(GENERATIONS) if args.all_protocols else ["hw", "kip320"]
    for name in protocols:
        lengths: dict[str, dict[str, int]] = {}
        for model, b, red in runs:
            label = "all" if red == ALL_REDUCTIONS else "none"
            res, cpu, wall = run(name, Bounds(), red, 1e9, b)
            rate = res.states / cpu
            lengths[f"{model} {label}"] = {c.invariant: len(c.events) for c in res.counterexamples}
            cx = ",".join(f"{k}:{v}" for k, v in lengths[f"{model} {label}"].items()) or "-"
            print(
                f"{name:<8} {model:<9} {label:<10} {res.states:>8} {cpu:>7.2f} {wall:>7.2f} "
                f"{rate:>12,.0f}  {cx}",
                flush=True,
            )
            benches.append(
                bench_line(
                    f"explorer {name} default bounds, {model} model, reductions {label}: "
                    "distinct states per CPU second (one core)",
                    round(rate),
                    "states/cpu-s",
                    ">= 100000",
                    rate >= 100_000,
                )
            )
        if len({tuple(v.items()) for v in lengths.values()}) > 1:
            print(f"  !! {name}: models or reductions changed the minimal counterexamples")

    budget = args.budget
    main_build = build  # the bound table runs the compiled model when there is one
    which = "compiled" if main_build is not None else "pure"
    print(
        f"\n2. {args.protocol}: bounds against a {budget:.0f} CPU-second budget "
        f"(all reductions, {which} model; r3 default with both models)"
    )
    print(
        f"{'bounds':<34} {'model':<9} {'exhausted':>9} {'states':>9} {'depth':>5} "
        f"{'cpu s':>7} {'wall s':>7}"
    )
    cases = BOUND_CASES[:1] + BOUND_CASES[6:7] if args.quick else BOUND_CASES
    cases = [c for c in cases if args.cases in c[0]]
    within: dict[float, tuple[str, int]] = {}  # budget -> (label, states) of the largest done
    r3_default: list[tuple[str, bool, int, float, float, float]] = []
    for label, bounds in cases:
        models = [(which, main_build)]
        if bounds == Bounds(replicas=3) and main_build is not None:
            models.append(("pure", None))
        for model, b in models:
            for lim in (budget, args.long) if args.long > budget else (budget,):
                res, cpu, wall = run(args.protocol, bounds, ALL_REDUCTIONS, lim, b)
                print(
                    f"{label:<34} {model:<9} {res.exhausted!s:>9} {res.states:>9} "
                    f"{res.depth:>5} {cpu:>7.1f} {wall:>7.1f}"
                    + (f"  (budget {lim:.0f} s)" if lim != budget else ""),
                    flush=True,
                )
                if res.exhausted and model == which:
                    for bb in (budget, args.long):
                        if bb and cpu <= bb and res.states > within.get(bb, ("", -1))[1]:
                            within[bb] = (label, res.states)
                if bounds == Bounds(replicas=3):
                    r3_default.append((model, res.exhausted, res.states, cpu, wall, lim))
                if res.exhausted:
                    break
    for model, done, states, cpu, wall, lim in r3_default:
        benches.append(
            bench_line(
                f"explorer {args.protocol} --replicas 3 default bounds, {model} model: "
                + (
                    f"exhausted, {states:,} states, wall {wall:.0f} s"
                    if done
                    else f"NOT exhausted in {lim:.0f} cpu-s ({states:,} states reached)"
                ),
                round(cpu, 1),
                "cpu-s",
                "exhausted <= 60 cpu-s",
                done and cpu <= 60,
            )
        )
    for bb in (budget, args.long):
        if bb and cases:
            label, states = within.get(bb, ("none", 0))
            benches.append(
                bench_line(
                    f"explorer {args.protocol} ({which} model): largest bound case exhausted "
                    f"within {bb:.0f} cpu-s: {label}",
                    states,
                    "states",
                    None,
                    None,
                )
            )
    load1 = load()
    print(f"\nload average (1 min) at end: {load1:.2f}")
    benches.append(
        bench_line(
            f"load average (1 min) during the explorer bench, start/end, {os.cpu_count()} cores",
            f"{load0:.1f}/{load1:.1f}",
            "",
            None,
            None,
        )
    )
    print()
    for line in benches:
        print(line)


if __name__ == "__main__":
    main()
