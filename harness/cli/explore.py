"""``hwchaos explore``: time the pure explorer, write counterexamples as scenario files."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from reference_model.explorer import Bounds, Reductions, counterexample_scenario, explore
from reference_model.generations import generation
from reference_model.scenario import to_document


def main(args: argparse.Namespace) -> int:
    gen = generation(args.protocol)
    if not 2 <= args.replicas <= 5:
        print("hwchaos explore: --replicas must be 2..5", file=sys.stderr)
        return 2
    bounds = Bounds(
        replicas=args.replicas,
        records=args.records,
        crashes=args.crashes,
        power_losses=args.power_losses,
        max_depth=args.max_depth,
        checkpoints=not args.no_checkpoint,
        split_fetch=args.split_fetch,
        delayed_leader_and_isr=args.delayed_leader_and_isr,
    )
    reductions = Reductions(
        symmetry=not args.no_symmetry,
        record_renaming=not args.no_record_renaming,
        por=not args.no_por,
        fast_replace=not args.no_fast_replace,
        compact_keys=not args.no_compact_keys,
    )
    settled_only = not args.judge_every_state
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

    res = explore(
        gen,
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
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - c0
    out_dir = Path(args.out)
    files: list[dict[str, Any]] = []
    for cx in res.counterexamples:
        name = f"found-{gen.name}-{cx.invariant.replace('_', '-')}"
        sc = counterexample_scenario(
            cx, gen, args.acks, args.min_insync, args.unclean, args.replicas, name
        )
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"{name}.yaml"
        header = f"# {sc.description}\n# Replay: hwchaos model {path} --protocol {gen.name}\n"
        path.write_text(header + yaml.safe_dump(to_document(sc), sort_keys=False))
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
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
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
