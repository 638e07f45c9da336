"""The slowest fences summed over the run folders under a root (what a catalogue's time went to).

Why: a run's median says how slow the catalogue is, not where the time went. Every run.json
holds each phase's fences (``extra.timings``, harness.timing); summed over the catalogue, with
broker names and numbers folded (``A to register`` and ``B to register`` are one kind), they
name what to make faster. ``bench_catalogue.py`` prints this after its figures; it also runs
alone on the folders a benchmark left: ``python benchmarks/fences.py ROOT [ROOT...]``.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

# Not a fence but a phase of its own: cluster start/stop, the warm reset, the read-back.
PHASES = ("cluster_start", "cluster_reset", "readback", "cluster_stop")


def kind(what: str) -> str:
    """A fence's name with broker names and numbers folded."""
    return re.sub(r"\d+(\.\d+)?", "N", re.sub(r"\b[A-Z]\b", "X", what))


def fence_table(roots: list[Path], top: int = 15) -> list[str]:
    """Lines: seconds, count and kind of the ``top`` slowest fence kinds, then the phases."""
    seconds: dict[str, float] = defaultdict(float)
    count: Counter[str] = Counter()
    phases: dict[str, float] = defaultdict(float)
    runs = 0
    for root in roots:
        for f in sorted(root.glob("*/run.json")):
            runs += 1
            timings = json.loads(f.read_text()).get("extra", {}).get("timings", {})
            for p in timings.get("phases", []):
                if p["name"] in PHASES:
                    phases[p["name"]] += float(p["seconds"])
                for fence in p.get("fences", []):
                    seconds[kind(fence["what"])] += float(fence["seconds"])
                    count[kind(fence["what"])] += 1
    lines = [f"slowest fences over {runs} runs:  seconds  count  fence"]
    for what, s in sorted(seconds.items(), key=lambda x: -x[1])[:top]:
        lines.append(f"{s:10.1f} {count[what]:6d}  {what}")
    lines.append("phases: " + ", ".join(f"{n} {s:.1f} s" for n, s in sorted(phases.items())))
    return lines


if __name__ == "__main__":
    print("\n".join(fence_table([Path(a) for a in sys.argv[1:]])))
