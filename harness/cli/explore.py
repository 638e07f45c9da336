"""``hwchaos explore``: time the explorer, write counterexamples as scenario files.

The model is the compiled one (``harness.native``, run in a child process) when a build for
the current sources exists, else the pure one in this process; ``--pure`` or
``HWCHAOS_NATIVE=0`` forces the pure one. Both give the same states and counterexamples.

With ``--confirm --kafka VERSION`` every counterexample is then played on real brokers of
that version and classified (``harness.generator.confirm``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from explorer.search import Bounds, Reductions, counterexample_scenario, explore
from harness import native
from harness.cli.model import PROFILE_HELP
from harness.cli.overrides import add_overrides, add_profile
from harness.db.catalogue.versions import KafkaVersion, resolve_version
from harness.generator import confirm
from harness.generator.warm import WarmClusters
from reference_model.profiles import generation
from reference_model.scenario import to_document


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the ``hwchaos`` parser."""
    add_profile(p, "hw", PROFILE_HELP)
    p.add_argument("--crashes", type=int, default=2, help="process crashes allowed")
    p.add_argument("--power-losses", type=int, default=0)
    p.add_argument("--max-depth", type=int, default=0, help="0 = run to exhaustion")
    p.add_argument(
        "--delayed-leader-and-isr",
        action="store_true",
        help="held controller requests: let LeaderAndIsr reach brokers late (zombie "
        "orderings; ZooKeeper mode queues them, controller_queue)",
    )
    p.add_argument(
        "--partitions",
        type=int,
        default=0,
        help="network partitions: up to N links cut at once (a broker to the controller, "
        "ZooKeeper or another broker; both ways), each healed on its own (default 0)",
    )
    p.add_argument(
        "--one-way", action="store_true", help="with --partitions: also cut one direction only"
    )
    p.add_argument(
        "--failover",
        action="store_true",
        help="controller failover (ZooKeeper mode) while a LeaderAndIsr is queued or held: "
        "the broker misses it",
    )
    p.add_argument(
        "--clean-shutdown",
        action="store_true",
        help="controlled shutdowns (counted against --crashes)",
    )
    p.add_argument(
        "--no-checkpoint", action="store_true", help="leave HW checkpoints out of the alphabet"
    )
    p.add_argument(
        "--split-fetch",
        action="store_true",
        help="split fetch: request sent, response delivered later (possibly after the "
        "follower's leader epoch changed)",
    )
    p.add_argument(
        "--no-symmetry", action="store_true", help="no reduction over interchangeable replicas"
    )
    p.add_argument(
        "--no-record-renaming", action="store_true", help="no reduction over record-id renaming"
    )
    p.add_argument("--no-por", action="store_true", help="no partial-order (sleep-set) reduction")
    p.add_argument(
        "--no-fast-replace", action="store_true", help="use the stock NamedTuple _replace"
    )
    p.add_argument(
        "--no-compact-keys",
        action="store_true",
        help="visited set of canonical states instead of interned int tuples",
    )
    p.add_argument(
        "--judge-every-state",
        action="store_true",
        help="judge invariants on every state, not only settled ones (pre-issue-9 behaviour)",
    )
    p.add_argument("--out", default="scenarios/found", help="where counterexamples are written")
    p.add_argument("--max-counterexamples", type=int, default=5)
    p.add_argument("--max-states", type=int, default=0, help="stop after N states (0 = none)")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--pure",
        action="store_true",
        help="run the pure-Python model even when a compiled build exists (HWCHAOS_NATIVE=0)",
    )
    add_overrides(
        p, defaults={"acks": "all", "min_insync": 2, "unclean": False, "rf": 2, "records": 2}
    )
    add_confirm_arguments(p)


def add_confirm_arguments(p: argparse.ArgumentParser) -> None:
    """``--confirm`` and its options on the ``explore`` parser."""
    g = p.add_argument_group("confirm on real brokers")
    g.add_argument(
        "--confirm",
        action="store_true",
        help="play every counterexample on real brokers of --kafka and classify it "
        "(confirmed, prevented, not_violated, mismatch); exit 1 on any mismatch",
    )
    g.add_argument("--kafka", help="catalogue version to confirm on (e.g. 0.10.2.1, 3.3.1)")
    g.add_argument("--backend", choices=["local", "docker"], default="local")
    g.add_argument(
        "--fresh",
        action="store_true",
        help="a fresh cluster for every counterexample (default: counterexamples of one "
        "cluster configuration reuse one running cluster, checked clean and reset between)",
    )
    g.add_argument(
        "--runs",
        default="runs",
        help="parent folder of the confirm runs (default runs/): one folder per "
        "exploration, one run folder per counterexample in it",
    )


def _confirm_target(args: argparse.Namespace) -> KafkaVersion | str | None:
    """The version to confirm on, None without --confirm, or a one-line error."""
    if not args.confirm:
        return "--kafka needs --confirm" if args.kafka else None
    if not args.kafka:
        return "--confirm needs --kafka VERSION"
    try:
        version = resolve_version(args.kafka)
    except ValueError as exc:
        return str(exc)
    reason = confirm.unavailable(version, args.backend)
    if reason is not None:
        return f"cannot confirm on Kafka {version.name} ({args.backend}): {reason}"
    return version


def run(args: argparse.Namespace) -> int:
    gen = generation(args.protocol)
    if not 2 <= args.rf <= 5:
        print("hwchaos explore: --replicas must be 2..5", file=sys.stderr)
        return 2
    # Checked before the search, which can take minutes: no brokers, no point exploring.
    target = _confirm_target(args)
    if isinstance(target, str):
        print(f"hwchaos explore: {target}", file=sys.stderr)
        return 2
    bounds = Bounds(
        replicas=args.rf,
        records=args.records,
        crashes=args.crashes,
        power_losses=args.power_losses,
        max_depth=args.max_depth,
        checkpoints=not args.no_checkpoint,
        split_fetch=args.split_fetch,
        delayed_leader_and_isr=args.delayed_leader_and_isr,
        partitions=args.partitions,
        one_way=args.one_way,
        failover=args.failover,
        clean_shutdown=args.clean_shutdown,
    )
    reductions = Reductions(
        symmetry=not args.no_symmetry,
        record_renaming=not args.no_record_renaming,
        por=not args.no_por,
        fast_replace=not args.no_fast_replace,
        compact_keys=not args.no_compact_keys,
    )
    settled_only = not args.judge_every_state
    model = native.choose(pure=args.pure)
    if not args.json:
        print(f"exploring {gen.name} with {bounds} {reductions} ...", file=sys.stderr)
    t0 = time.perf_counter()
    c0 = time.process_time()

    def progress(states: int, depth: int, queued: int) -> None:
        rate = states / max(time.perf_counter() - t0, 1e-9)
        print(
            f"  {states:>10,} states  depth {depth:>3}  queue {queued:>9,}  {rate:,.0f}/s",
            file=sys.stderr,
            flush=True,
        )

    # The same search either way: here on the pure model, or in a child on the compiled one.
    search = (
        bounds,
        args.acks,
        args.min_insync,
        args.unclean,
        args.max_counterexamples,
        args.max_states,
        progress,
        reductions,
        settled_only,
    )
    if model.build is None:
        res = explore(gen, *search)
        elapsed = time.perf_counter() - t0
        cpu = time.process_time() - c0
    else:
        # The compiled model runs in a child (this process imported the pure one); the
        # figures are the child's own timing of the search, like the pure branch's.
        try:
            child = native.explore(args.protocol, *search, build=model.build)
        except native.NativeError as exc:
            print(f"hwchaos explore: {exc}", file=sys.stderr)
            return 2
        res, elapsed, cpu = child.result, child.seconds, child.cpu_seconds
    out_dir = Path(args.out)
    files: list[dict[str, Any]] = []
    found: list[confirm.Counterexample] = []
    for cx in res.counterexamples:
        name = f"found-{gen.name}-{cx.invariant.replace('_', '-')}"
        sc = counterexample_scenario(
            cx, gen, args.acks, args.min_insync, args.unclean, args.rf, name
        )
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"{name}.yaml"
        header = f"# {sc.description}\n# Replay: hwchaos model {path} --protocol {gen.name}\n"
        path.write_text(header + yaml.safe_dump(to_document(sc), sort_keys=False))
        found.append(confirm.Counterexample(cx.invariant, sc, str(path)))
        files.append(
            {
                "invariant": cx.invariant,
                "length": len(cx.events),
                "file": str(path),
                "steps": [e.describe(sc.brokers) for e in cx.events],
            }
        )
    summary = {
        "protocol": gen.name,
        "bounds": dataclasses.asdict(bounds),
        "reductions": reductions._asdict(),
        "settled_only": settled_only,
        "states": res.states,
        "transitions": res.transitions,
        "depth": res.depth,
        "exhausted": res.exhausted,
        "seconds": round(elapsed, 3),
        "cpu_seconds": round(cpu, 3),
        "states_per_second": round(res.states / elapsed) if elapsed > 0 else res.states,
        "states_per_cpu_second": round(res.states / cpu) if cpu > 0 else res.states,
        "counterexamples": files,
        "model": model.to_json(),
    }
    if target is not None:
        return _confirm(args, target, found, files, summary)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(model.line)
        print(
            f"{res.states} distinct states, {res.transitions} transitions, depth {res.depth}, "
            f"{'exhausted' if res.exhausted else 'bounded'} in {elapsed:.2f}s "
            f"({summary['states_per_second']} states/s)"
        )
        for f in files:
            print(f"counterexample ({f['invariant']}, {f['length']} steps) -> {f['file']}")
            for s in f["steps"]:
                print(f"    {s}")
        if not files:
            print("no invariant violated")
    return 1 if files else 0


def _confirm(
    args: argparse.Namespace,
    version: KafkaVersion,
    found: list[confirm.Counterexample],
    files: list[dict[str, Any]],
    summary: dict[str, Any],
) -> int:
    """Play the counterexamples on ``version``; exit 1 if any is a mismatch."""
    # Absolute: brokers and ZooKeeper run with their own dir as cwd.
    runs = Path(args.runs).resolve() / (
        f"explore-confirm__{summary['protocol']}__{version.name}__{time.strftime('%Y%m%dT%H%M%S')}"
    )

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if args.backend == "local":
        from harness.db.runtime.local import kill_leftovers

        # A confirm that was itself killed leaves its JVMs; their pids are in pids.json.
        stale = sum(kill_leftovers(p.parent) for p in runs.parent.glob("*/*/cluster/pids.json"))
        if stale:
            say(f"hwchaos explore: killed {stale} JVMs left by an earlier run")
    say(
        f"confirming {len(found)} counterexample(s) of {summary['protocol']} on Kafka "
        f"{version.name} ({version.generation}, {args.backend}) -> {runs}"
    )
    t0 = time.perf_counter()
    with contextlib.ExitStack() as stack:
        warm = None if args.fresh else stack.enter_context(WarmClusters(runs / "warm"))
        results = confirm.confirm(found, version, args.backend, runs, say, warm=warm)
    elapsed = time.perf_counter() - t0
    for entry, r in zip(files, results, strict=True):
        entry.update(
            {
                "classification": r.classification,
                "reason": r.reason,
                "run_folder": r.run_folder,
                "model_verdict": r.model_verdict,
                "observed": r.observed,
                "seconds": r.seconds,
                "same_run_as": r.same_run_as,
            }
        )
    n = confirm.counts(results)
    summary["confirm"] = {
        "kafka": version.name,
        "profile": version.generation,
        "backend": args.backend,
        "runs": str(runs),
        "seconds": round(elapsed, 2),
        "runs_played": sum(1 for r in results if r.same_run_as is None),
        "counts": n,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(summary["model"]["line"])
        print(
            f"explored {summary['protocol']}: {summary['states']} states in "
            f"{summary['seconds']:.1f}s; {len(results)} counterexample(s) played on Kafka "
            f"{version.name} in {elapsed:.0f}s"
        )
        if results:
            print(confirm.summary_table(results))
        else:
            print("no counterexample to confirm")
    return 1 if n[confirm.MISMATCH] else 0
