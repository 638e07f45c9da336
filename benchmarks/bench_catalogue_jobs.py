"""The whole catalogue on the six profiles as a CI job plays it: side by side.

Why apart from ``bench_catalogue.py``: that script times each run on an otherwise idle
machine (per-version medians); a CI job plays the catalogue on every version at once with
``hwchaos matrix --jobs N``, where most of a run is spent waiting on Kafka's own timers
(``replica.fetch.wait.max.ms``, ``replica.lag.time.max.ms``; docs/performance.md) and N
runs overlap their waits. This prints the matrix's wall time against the catalogue target,
and each version's median of runs that shared the machine.

Run: .venv/bin/python benchmarks/bench_catalogue_jobs.py [--jobs N] (default 3) and any
option of ``bench_catalogue.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_catalogue import main

JOBS = "3"
"""Three harness processes on this 2-core machine: the runs wait more than they compute
(CPU ~3-7 s of a 6-11 s run, harness and brokers together)."""

if __name__ == "__main__":
    if "--jobs" not in sys.argv:
        sys.argv += ["--jobs", JOBS]
    main()
