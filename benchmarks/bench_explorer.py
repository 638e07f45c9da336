"""Explorer throughput and which bounds exhaust within 60 s / 10 min (issue 13).

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_explorer.py [--quick] [--budget S]``.

Times are CPU seconds of this process (``time.process_time``), i.e. "on one core": the
machine is shared, and wall time mostly measures the other users. Wall seconds are printed
beside them. Figures, not assertions. The last lines are one JSON object each,
``BENCH {"figure": ..., "value": ..., "unit": ..., "target": ...}``, for ``make bench``.

Tables:
1. distinct states per CPU second at default bounds, per protocol: with no reduction (the
   pre-issue-13 search), with only the fast ``_replace``, with every reduction; and the
   counterexample lengths of each (they must agree);
2. bounds against a CPU budget (default 60 s): exhausted or not, states, depth.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reference_model.explorer import (
    ALL_REDUCTIONS,
    NO_REDUCTIONS,
    Bounds,
    ExploreResult,
    Reductions,
    explore,
)
from reference_model.generations import GENERATIONS, generation

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
    protocol: str, bounds: Bounds, red: Reductions, budget: float
) -> tuple[ExploreResult, float, float]:
    """One search under a CPU budget; returns (result, cpu seconds, wall seconds)."""
    c0, w0 = time.process_time(), time.perf_counter()

    def stop(states: int, depth: int, queued: int) -> bool:
        return time.process_time() - c0 > budget

    res = explore(generation(protocol), bounds, reductions=red, progress=stop)
    return res, time.process_time() - c0, time.perf_counter() - w0


def bench(figure: str, value: float, unit: str, target: str) -> str:
    return "BENCH " + json.dumps({"figure": figure, "value": value, "unit": unit, "target": target})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="hw only, small bound table")
    ap.add_argument("--budget", type=float, default=60.0, help="CPU seconds per bound case")
    ap.add_argument("--protocol", default="kip320", help="protocol of the bound table")
    ap.add_argument("--cases", default="", help="only bound cases whose label contains this")
    ap.add_argument("--skip-rates", action="store_true", help="skip table 1")
    args = ap.parse_args()
    benches: list[str] = []

    print("1. distinct states per CPU second at default bounds (replicas=2 records=2 crashes=2)")
    print(
        f"{'protocol':<8} {'reductions':<10} {'states':>8} {'cpu s':>7} {'wall s':>7} "
        f"{'states/cpu s':>12}  counterexamples (invariant:length)"
    )
    protocols = [] if args.skip_rates else ["hw"] if args.quick else list(GENERATIONS)
    fast_only = NO_REDUCTIONS._replace(fast_replace=True)
    rates: dict[str, list[float]] = {"none": [], "fast": [], "all": []}
    for name in protocols:
        lengths: dict[str, dict[str, int]] = {}
        for label, red in (("none", NO_REDUCTIONS), ("fast", fast_only), ("all", ALL_REDUCTIONS)):
            res, cpu, wall = run(name, Bounds(), red, 1e9)
            rate = res.states / cpu
            rates[label].append(rate)
            lengths[label] = {c.invariant: len(c.events) for c in res.counterexamples}
            cx = ",".join(f"{k}:{v}" for k, v in lengths[label].items()) or "-"
            print(
                f"{name:<8} {label:<10} {res.states:>8} {cpu:>7.2f} {wall:>7.2f} "
                f"{rate:>12,.0f}  {cx}",
                flush=True,
            )
        if lengths["none"] != lengths["all"]:
            print(f"  !! {name}: reductions changed the minimal counterexamples", flush=True)
    for label in ("none", "fast", "all") if protocols else ():
        worst = min(rates[label])
        benches.append(
            bench(
                f"explorer distinct states/s, one core, default bounds, reductions {label} "
                "(slowest protocol)",
                round(worst),
                "states/cpu-s",
                ">= 100000",
            )
        )

    budget = args.budget
    print(f"\n2. {args.protocol}: bounds against a {budget:.0f} CPU-second budget (all reductions)")
    print(f"{'bounds':<34} {'exhausted':>9} {'states':>9} {'depth':>5} {'cpu s':>7} {'wall s':>7}")
    cases = BOUND_CASES[:1] + BOUND_CASES[6:7] if args.quick else BOUND_CASES
    cases = [c for c in cases if args.cases in c[0]]
    r3_default: tuple[bool, float, int] | None = None
    for label, bounds in cases:
        res, cpu, wall = run(args.protocol, bounds, ALL_REDUCTIONS, budget)
        print(
            f"{label:<34} {res.exhausted!s:>9} {res.states:>9} {res.depth:>5} "
            f"{cpu:>7.1f} {wall:>7.1f}",
            flush=True,
        )
        if bounds == Bounds(replicas=3):
            r3_default = (res.exhausted, cpu, res.states)
    if r3_default is not None:
        done, cpu, states = r3_default
        benches.append(
            bench(
                f"explorer --replicas 3 default bounds, {args.protocol}: "
                + ("CPU seconds to exhaust" if done else f"not exhausted in {budget:.0f} s"),
                round(cpu, 1) if done else states,
                "cpu-s" if done else "states reached",
                "exhausted <= 60 cpu-s",
            )
        )
    print()
    for line in benches:
        print(line)


if __name__ == "__main__":
    main()
