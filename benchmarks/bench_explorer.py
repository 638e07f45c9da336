"""Explorer throughput and which bounds exhaust within 60 s / 10 min (issue 13).

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_explorer.py [--quick] [--long]``.

Times are CPU seconds of this process (``time.process_time``), i.e. "on one core": the
machine is shared, and wall time mostly measures the other users (the 1-minute load average
at start and end is printed beside the figures). Figures, not assertions. The last lines
are ``BENCH {json}`` lines (``table.bench_line``) for ``make bench``:

- distinct states per CPU second at default bounds (replicas 2, records 2, crashes 2),
  hw and kip320, every reduction on, and the same with none (the pre-issue-13 search);
- ``--replicas 3`` at default records/crashes: exhausted or not, states, CPU and wall s;
- the largest bound case (most states) exhausted within 60 CPU-s, and with ``--long``
  within 600 CPU-s (each case not exhausted in 60 s is run again with 600 s).

Tables:
1. states per CPU second per protocol and reductions, with counterexample lengths (they
   must agree between reductions);
2. bounds against the CPU budgets: exhausted or not, states, depth.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from table import bench_line

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

    print("1. distinct states per CPU second at default bounds (replicas=2 records=2 crashes=2)")
    print(
        f"{'protocol':<8} {'reductions':<10} {'states':>8} {'cpu s':>7} {'wall s':>7} "
        f"{'states/cpu s':>12}  counterexamples (invariant:length)"
    )
    if args.skip_rates:
        protocols: list[str] = []
    elif args.quick:
        protocols = ["hw"]
    else:
        protocols = list(GENERATIONS) if args.all_protocols else ["hw", "kip320"]
    for name in protocols:
        lengths: dict[str, dict[str, int]] = {}
        for label, red in (("none", NO_REDUCTIONS), ("all", ALL_REDUCTIONS)):
            res, cpu, wall = run(name, Bounds(), red, 1e9)
            rate = res.states / cpu
            lengths[label] = {c.invariant: len(c.events) for c in res.counterexamples}
            cx = ",".join(f"{k}:{v}" for k, v in lengths[label].items()) or "-"
            print(
                f"{name:<8} {label:<10} {res.states:>8} {cpu:>7.2f} {wall:>7.2f} "
                f"{rate:>12,.0f}  {cx}",
                flush=True,
            )
            benches.append(
                bench_line(
                    f"explorer {name} default bounds, reductions {label}: distinct states "
                    "per CPU second (one core)",
                    round(rate),
                    "states/cpu-s",
                    ">= 100000",
                    rate >= 100_000,
                )
            )
        if lengths["none"] != lengths["all"]:
            print(f"  !! {name}: reductions changed the minimal counterexamples", flush=True)

    budget = args.budget
    print(f"\n2. {args.protocol}: bounds against a {budget:.0f} CPU-second budget (all reductions)")
    print(f"{'bounds':<34} {'exhausted':>9} {'states':>9} {'depth':>5} {'cpu s':>7} {'wall s':>7}")
    cases = BOUND_CASES[:1] + BOUND_CASES[6:7] if args.quick else BOUND_CASES
    cases = [c for c in cases if args.cases in c[0]]
    within: dict[float, tuple[str, int]] = {}  # budget -> (label, states) of the largest done
    r3_default: tuple[bool, int, float, float, float] | None = None
    for label, bounds in cases:
        for lim in (budget, args.long) if args.long > budget else (budget,):
            res, cpu, wall = run(args.protocol, bounds, ALL_REDUCTIONS, lim)
            print(
                f"{label:<34} {res.exhausted!s:>9} {res.states:>9} {res.depth:>5} "
                f"{cpu:>7.1f} {wall:>7.1f}" + (f"  (budget {lim:.0f} s)" if lim != budget else ""),
                flush=True,
            )
            if res.exhausted:
                for b in (budget, args.long):
                    if b and cpu <= b and res.states > within.get(b, ("", -1))[1]:
                        within[b] = (label, res.states)
            if bounds == Bounds(replicas=3):
                r3_default = (res.exhausted, res.states, cpu, wall, lim)
            if res.exhausted:
                break
    if r3_default is not None:
        done, states, cpu, wall, lim = r3_default
        benches.append(
            bench_line(
                f"explorer {args.protocol} --replicas 3 default bounds: "
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
    for b in (budget, args.long):
        if b and cases:
            label, states = within.get(b, ("none", 0))
            benches.append(
                bench_line(
                    f"explorer {args.protocol}: largest bound case exhausted within "
                    f"{b:.0f} cpu-s: {label}",
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
