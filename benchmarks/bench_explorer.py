"""Explorer throughput: distinct states per second, and which bounds exhaust within 60 s.

Prints one line per (generation, bounds). Run: .venv/bin/python benchmarks/bench_explorer.py
[--quick]. Figures, not assertions: the target is >= 20,000 distinct states/s on one core.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reference_model.explorer import Bounds, explore
from reference_model.generations import GENERATIONS, generation

CASES = [
    ("default", Bounds()),
    ("records=3", Bounds(records=3)),
    ("crashes=3", Bounds(crashes=3)),
    ("split-fetch", Bounds(split_fetch=True)),
    ("delayed-leader-and-isr", Bounds(delayed_leader_and_isr=True)),
]


def main() -> None:
    quick = "--quick" in sys.argv
    cases = CASES[:1] if quick else CASES
    print(
        f"{'generation':<8} {'bounds':<24} {'states':>9} {'seconds':>8} {'states/s':>9} "
        f"{'exhausted':>9} counterexamples"
    )
    for name in GENERATIONS:
        for label, bounds in cases:
            t0 = time.perf_counter()
            res = explore(generation(name), bounds, max_states=3_000_000)
            dt = time.perf_counter() - t0
            kinds = ",".join(c.invariant for c in res.counterexamples) or "-"
            print(
                f"{name:<8} {label:<24} {res.states:>9} {dt:>8.2f} {res.states / dt:>9.0f} "
                f"{res.exhausted!s:>9} {kinds}",
                flush=True,
            )


if __name__ == "__main__":
    main()
