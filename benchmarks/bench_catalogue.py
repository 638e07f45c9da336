"""Run time of the whole scenario catalogue on real brokers, per Kafka version.

Why: CI plays the catalogue on every version for every commit; the figure users feel is the
time of one scenario run, cluster start included, and of the whole catalogue on every
profile. Per version this plays every ``scenarios/*.yaml`` once on the local backend and
reports the median and the max run time (``run.json``'s ``extra.seconds``: cluster start,
steps, read-back, stop), the CPU the run cost (harness and brokers) and where the median
run's time went (``extra.timings``: cluster start against steps).

*Warm*: each version's runs play on warm clusters (harness.generator.warm), as ``matrix``
does: the scenarios ordered by cluster configuration, each run on the running cluster the
last run of that configuration left (checked clean, reset after), a fresh one where the
configuration changes; the reset after a run counts in its time. The median is over every
run but the cold one; the median of the reused runs alone and how many were reused are
printed beside it. ``--fresh`` plays every run on a fresh cluster instead (the figures
before warm clusters).

*Cold*: each version's runs use a cache of their own (``HWCHAOS_CACHE`` in a temp dir),
empty at the first run (no class-data archive, no KRaft format template), as on a fresh
machine; the later runs find what the first one left, as every later run does. The cold run
is reported apart and left out of the median. ``--no-cold`` keeps the user's cache.

*Side by side* (``--jobs N``): the whole catalogue on every version as a CI job plays it,
``hwchaos matrix --jobs N`` (N harness processes, each with its own ports, networks and warm
clusters; ``docs/speed.md``): the whole catalogue's figure is then the matrix's wall time,
and each version's median is of runs that shared the machine with N-1 others. The serial
figures (without ``--jobs``) are each run's time on an otherwise idle machine.

Run: .venv/bin/python benchmarks/bench_catalogue.py [--versions 0.10.2.1,4.0.0]
[--scenarios kip101-scenario1,...] [--no-cold] [--fresh] [--backend docker] [--jobs 3]
Needs Kafka release trees (HWCHAOS_KAFKA_DISTS, default /opt/kafka-dists); a version without
one is reported as skipped. ``--backend docker`` plays in containers of the hwchaos images
(a Docker daemon; the image is built on first use). Network-partition scenarios need root
(network namespaces).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fence_table import table_of
from table import bench_line

from harness.checker.results import RunInfo
from harness.db import BrokerUnavailable
from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.versions import resolve_version
from harness.generator.record import RunRecord
from harness.generator.runner import prestart_next
from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from harness.generator.warm import (
    Slot,
    WarmClusters,
    play_order,
    slot_of,
    warm_key,
)
from harness.trial import trial
from reference_model.run import run_scenario

PROFILES = ["0.10.2.1", "2.1.1", "3.3.1", "3.3.1-kraft", "4.0.0", "4.0.0-elr"]
TARGET_ZK, TARGET_KRAFT, TARGET_ALL = 4.0, 6.0, 480.0
PASSING = ("match", "prevented")


@dataclass
class Run:
    """One scenario run: wall seconds, where they went, CPU, verdict."""

    scenario: str
    seconds: float
    start: float  # cluster start
    steps: float  # all steps together
    cpu: float  # harness + brokers
    verdict: str
    reused: bool = False  # played on a cluster an earlier run left running
    prestarted: bool = False  # a fresh cluster started while the run before played


def play(
    scenario: str,
    version: str,
    folder: Path,
    warm: WarmClusters | None = None,
    backend: str = "local",
) -> tuple[RunInfo, RunRecord]:
    """One catalogue scenario on ``backend`` into ``folder`` (bench_runs uses it too)."""
    sc = load_scenario(SCENARIO_DIR / f"{scenario}.yaml")
    info, _prediction, _verdict, record = trial(
        sc,
        resolve_version(version),
        backend,
        folder,
        folder.name,
        progress=lambda _m: None,
        warm=warm,
    )
    return info, record


def one(scenario: str, version: str, root: Path, warm: WarmClusters | None, backend: str) -> Run:
    info, record = play(scenario, version, root / f"{scenario}__{version}", warm, backend)
    reused = bool(record.cluster is not None and record.cluster.reused)
    run = run_of(scenario, info.extra, info.verdict, reused)
    run.prestarted = bool(record.cluster is not None and record.cluster.prestarted)
    return run


def run_of(scenario: str, extra: dict[str, Any], verdict: str, reused: bool) -> Run:
    """A :class:`Run` from a run's ``extra`` (``run.json``): wall seconds and timings."""
    timings = extra.get("timings", {})
    phases = {p["name"]: float(p["seconds"]) for p in timings.get("phases", [])}
    cpu = timings.get("cpu_seconds", {})
    return Run(
        scenario,
        float(extra.get("seconds", 0.0)),
        phases.get("cluster_start", 0.0),
        sum(s for n, s in phases.items() if n.startswith("step ")),
        float(cpu.get("harness", 0.0)) + float(cpu.get("jvms", 0.0)),
        verdict,
        reused,
    )


def prestart_if_fresh(
    warm: WarmClusters, now: tuple[str, str], nxt: tuple[str, str], backend: str, root: Path
) -> None:
    """``now`` (scenario, version) is about to play: when ``nxt`` needs a cluster ``now``'s
    will not be (another configuration or version, or a fresh one), start it in the
    background meanwhile (as ``matrix`` does: harness.generator.warm)."""
    keys = []
    for name, version in (now, nxt):
        v = resolve_version(version)
        sc = load_scenario(SCENARIO_DIR / f"{name}.yaml")
        keys.append(warm_key(sc, run_scenario(sc, v.generation), v.name, backend, 1))
    if keys[1] is None or keys[1] != keys[0]:
        v = resolve_version(nxt[1])
        sc = load_scenario(SCENARIO_DIR / f"{nxt[0]}.yaml")
        prestart_next(warm, sc, v, backend, f"{nxt[0]}__{nxt[1]}")


def warm_order(scenarios: list[str], version: str, backend: str) -> list[str]:
    """The scenarios in the order ``matrix`` plays them on warm clusters (``play_order``)."""
    v = resolve_version(version)

    def slot(name: str) -> Slot:
        sc = load_scenario(SCENARIO_DIR / f"{name}.yaml")
        return slot_of(0, sc, run_scenario(sc, v.generation), v.name, backend)

    return play_order(scenarios, slot)


@contextlib.contextmanager
def own_cache(on: bool) -> Iterator[None]:
    """With ``on``: a new, empty ``HWCHAOS_CACHE`` for the block (a fresh machine's cache)."""
    if not on:
        yield
        return
    saved = os.environ.get("HWCHAOS_CACHE")
    os.environ["HWCHAOS_CACHE"] = tempfile.mkdtemp(prefix="hwchaos-bench-cache-")
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("HWCHAOS_CACHE", None)
        else:
            os.environ["HWCHAOS_CACHE"] = saved


def report(version: str, target: float, runs: list[Run], cold: Run | None, backend: str) -> None:
    """The BENCH lines of one version."""
    secs = [r.seconds for r in runs]
    med = statistics.median(secs)
    mid = sorted(runs, key=lambda r: r.seconds)[len(runs) // 2]
    every = [*runs, *([cold] if cold else [])]
    ok = sum(r.verdict in PASSING for r in every)
    how = ("warm" if any(r.reused for r in every) else "fresh clusters") + (
        "" if backend == "local" else f", {backend}"
    )
    if any(r.prestarted for r in every):
        how += "; fresh ones started in the background"
    print(bench_line(f"{version}: catalogue run, median ({how})", med, "s",
                     f"<= {target:.0f} s", med <= target))  # fmt: skip
    print(bench_line(f"{version}: catalogue run, max ({how})", max(secs), "s", None, None))
    reused = [r.seconds for r in every if r.reused]
    if reused:
        print(bench_line(f"{version}: runs on a reused cluster, median",
                         statistics.median(reused), "s", None, None))  # fmt: skip
        print(bench_line(f"{version}: runs on a reused cluster", f"{len(reused)}/{len(every)}",
                         "", None, None))  # fmt: skip
    pre = [r.seconds for r in every if r.prestarted]
    if pre:
        print(bench_line(f"{version}: runs on a cluster started in the background",
                         f"{len(pre)}/{len(every)}", "", None, None))  # fmt: skip
    if cold is not None:
        print(bench_line(f"{version}: first run, cold cache ({cold.scenario})", cold.seconds,
                         "s", None, None))  # fmt: skip
    print(bench_line(f"{version}: median run's cluster start / steps",
                     f"{mid.start:.1f} / {mid.steps:.1f}", "s", None, None))  # fmt: skip
    cpu = statistics.median(r.cpu for r in runs)
    print(bench_line(f"{version}: CPU per run, median", cpu, "s", None, None))
    print(bench_line(f"{version}: runs passing (match/prevented)", f"{ok}/{len(every)}", "",
                     None, None))  # fmt: skip


def from_folder(run_json: Path) -> tuple[str, Run]:
    """(version, the run) from a run folder's ``run.json`` (what :func:`one` returns)."""
    info = RunInfo.from_json(run_json.read_text())
    reused = bool((info.extra.get("cluster") or {}).get("reused"))
    return info.version, run_of(info.scenario, info.extra, info.verdict, reused)


def side_by_side(
    versions: list[str], scenarios: list[str], jobs: int, backend: str, root: Path
) -> float | None:
    """``hwchaos matrix --jobs N`` over ``scenarios`` x ``versions`` into ``root``; its wall
    seconds (None: the matrix did not finish every cell), then the per-version lines."""
    cmd = [
        sys.executable, "-m", "harness.cli", "matrix", "--out", str(root),
        "--versions", ",".join(versions), "--jobs", str(jobs), "--backend", backend,
        "--scenarios", *[str(SCENARIO_DIR / f"{s}.yaml") for s in scenarios],
    ]  # fmt: skip
    t0 = time.monotonic()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False)
    wall = time.monotonic() - t0
    per: dict[str, list[Run]] = {}
    # each cell's run: cells/<cell>/run.json. A first run the harness flagged as not played
    # as scripted is kept in played-again/<cell>/ and the cell played once more (its verdict
    # is the second run's): counted apart, not as a cell.
    again = sorted(p.name for p in (root / "played-again").glob("*") if p.is_dir())
    for run_json in sorted((root / "cells").glob("*/run.json")):
        version, r = from_folder(run_json)
        per.setdefault(version, []).append(r)
        print(f"{version:<12} {r.scenario:<34} {r.seconds:6.1f}s cpu {r.cpu:5.1f}s {r.verdict}"
              + (" (reused)" if r.reused else ""), file=sys.stderr)  # fmt: skip
    for version in versions:
        runs = per.get(version, [])
        if runs:
            target = TARGET_KRAFT if resolve_version(version).mode == "kraft" else TARGET_ZK
            report(f"{version} (matrix --jobs {jobs})", target, runs, None, backend)
    print(bench_line("cells played again (the harness's own miss, then a second run)",
                     len(again), "", None, None))  # fmt: skip
    for name in again:
        print(f"played again: {name}", file=sys.stderr)
    played = sum(len(r) for r in per.values())
    complete = done.returncode == 0 and played == len(versions) * len(scenarios)
    return wall if complete else None


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--versions", default=",".join(PROFILES))
    names = sorted(f.stem for f in SCENARIO_DIR.glob("*.yaml"))
    p.add_argument("--scenarios", default=",".join(names))
    p.add_argument("--no-cold", action="store_true", help="keep the cache: no cold run")
    p.add_argument("--fresh", action="store_true", help="a fresh cluster for every run")
    p.add_argument("--backend", default="local", choices=("local", "docker"),
                   help="JVMs on this host, or containers of the hwchaos images")  # fmt: skip
    p.add_argument("--jobs", type=int, default=0,
                   help="every version side by side: matrix --jobs N (wall time)")  # fmt: skip
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="hwchaos-catalogue-"))
    scenarios = args.scenarios.split(",")
    if args.jobs > 0:
        print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
        versions = args.versions.split(",")
        wall = side_by_side(versions, scenarios, args.jobs, args.backend, root)
        print(bench_line(f"whole catalogue, every version above, matrix --jobs {args.jobs} "
                         "(wall)", "-" if wall is None else wall, "s", f"<= {TARGET_ALL:.0f} s",
                         None if wall is None else wall <= TARGET_ALL))  # fmt: skip
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        print(bench_line("load average (1, 5, 15 min) at the end", load, "", None, None))
        print(f"run folders: {root}", file=sys.stderr)
        print("\n".join(table_of([root]).lines()), file=sys.stderr)
        return
    total = 0.0
    complete = True
    print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
    plan: list[tuple[str, list[str]]] = []
    for version in args.versions.split(","):
        try:
            if args.backend == "local":
                find_tree(resolve_version(version))
        except BrokerUnavailable as exc:
            complete = False
            print(bench_line(f"{version}: skipped ({exc})", "-", "", None, None))
            continue
        order = scenarios if args.fresh else warm_order(scenarios, version, args.backend)
        plan.append((version, order))
    flat = [(name, version) for version, order in plan for name in order]
    # One pool for every version, as ``matrix`` plays them, unless each version's first run
    # is the cold one (an empty cache each: a pool per version, nothing started ahead).
    shared = WarmClusters() if not args.fresh and args.no_cold else None
    t_all = time.perf_counter()
    n = 0
    with contextlib.ExitStack() as outer:
        if shared is not None:
            outer.enter_context(shared)
        for version, order in plan:
            v = resolve_version(version)
            target = TARGET_KRAFT if v.mode == "kraft" else TARGET_ZK
            runs: list[Run] = []
            cold: Run | None = None
            with own_cache(not args.no_cold), contextlib.ExitStack() as stack:
                warm = shared
                if warm is None and not args.fresh:
                    warm = stack.enter_context(WarmClusters())
                for k, scenario in enumerate(order):
                    n += 1
                    if shared is not None and n < len(flat):
                        prestart_if_fresh(shared, flat[n - 1], flat[n], args.backend, root)
                    elif warm is not None and k + 1 < len(order):
                        prestart_if_fresh(
                            warm, (scenario, version), (order[k + 1], version), args.backend, root
                        )
                    r = one(scenario, version, root, warm, args.backend)
                    print(
                        f"{version:<12} {scenario:<34} {r.seconds:6.1f}s start {r.start:5.1f}s "
                        f"steps {r.steps:5.1f}s cpu {r.cpu:5.1f}s {r.verdict}"
                        + (" (reused)" if r.reused else "")
                        + (" (started in the background)" if r.prestarted else ""),
                        file=sys.stderr,
                    )
                    if k == 0 and not args.no_cold:
                        cold = r
                    else:
                        runs.append(r)
            if runs:
                report(version, target, runs, cold, args.backend)
    # wall time, not the runs' sum: a start made in the background while the run before
    # played is in no run's seconds, and must be in this figure
    total = time.perf_counter() - t_all
    met = (total <= TARGET_ALL) if complete else None
    print(bench_line("whole catalogue, every version above", total, "s",
                     f"<= {TARGET_ALL:.0f} s", met))  # fmt: skip
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(bench_line("load average (1, 5, 15 min) at the end", load, "", None, None))
    # Where the time went, every version's runs together (benchmarks/fence_table.py).
    print(f"run folders: {root}", file=sys.stderr)
    print("\n".join(table_of([root]).lines()), file=sys.stderr)


if __name__ == "__main__":
    main()
