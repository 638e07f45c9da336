"""``hwchaos run SCENARIO --kafka VERSION``: play a scenario on real brokers."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from harness.checker.verdicts import two_verdicts
from harness.cli.overrides import add_overrides, overrides
from harness.db import BrokerUnavailable
from harness.db.catalogue.versions import CATALOGUE, resolve_version
from harness.generator.scenarios import load_scenario
from harness.trial import Trial, once_more_if_missed, trial, trial_missed


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the ``hwchaos`` parser or a parser of its own."""
    p.add_argument("scenario")
    p.add_argument("--kafka", required=True, help=f"version: {', '.join(CATALOGUE)}")
    p.add_argument("--backend", choices=["local", "docker"], default="local")
    p.add_argument("--out", default="runs", help="parent folder of run folders")
    p.add_argument("--json", action="store_true", help="print the verdict object")
    p.add_argument(
        "--fail-on-loss",
        action="store_true",
        help="exit 1 when the run loses an acknowledged write or leaves replicas divergent, "
        "even as predicted (default: the exit status is the model agreement)",
    )
    add_overrides(p)
    p.add_argument(
        "--controllers",
        type=int,
        choices=[1, 3],
        default=1,
        help="KRaft versions: dedicated controllers in the quorum (default 1)",
    )


def run(args: argparse.Namespace) -> int:
    # Resolved once, here: brokers and ZooKeeper run with their own dir as cwd, so a relative
    # run folder would name a different place in their config files.
    out_dir = Path(args.out).resolve()
    try:
        version = resolve_version(args.kafka)
    except ValueError as exc:
        print(f"hwchaos run: {exc}", file=sys.stderr)
        return 2
    scenario = load_scenario(args.scenario).with_overrides(**overrides(args))  # type: ignore[arg-type]
    # Before the first step, in Kafka's names; with --json stdout is the JSON document alone.
    print(
        f"settings: {scenario.settings_text()}; Kafka {version.name}",
        file=sys.stderr if args.json else sys.stdout,
        flush=True,
    )
    if args.backend == "local":
        from harness.db.runtime.local import kill_leftovers

        # A harness that was itself killed leaves its JVMs; their pids are in pids.json.
        stale = sum(kill_leftovers(p.parent) for p in out_dir.glob("*/cluster/pids.json"))
        if stale:
            print(f"hwchaos run: killed {stale} JVMs left by an earlier run", file=sys.stderr)
    run_id = f"{scenario.name}__{version.name}__{time.strftime('%Y%m%dT%H%M%S')}"
    folder = out_dir / run_id

    def say(m: str) -> None:
        print(m, file=sys.stderr, flush=True)

    def one(where: Path) -> Trial:
        return trial(
            scenario, version, args.backend, where, run_id, say, controllers=args.controllers
        )

    try:
        # A run the harness did not play as scripted is no evidence: played once more.
        judged, folder, first = once_more_if_missed(one, folder, trial_missed, say)
        info, _pred, verdict, _record = judged
    except (BrokerUnavailable, ValueError) as exc:
        print(f"hwchaos run: {exc}", file=sys.stderr)
        return 2
    both = two_verdicts(info)
    if args.json:
        out = {
            **both.to_json(),
            "verdict": info.verdict,
            "model_match": info.model_match,
            "replicas": _replicas(folder),
            "lost_acked": info.lost_acked,
            "divergent_offsets": info.divergent_offsets,
            "outcomes": info.outcomes,
            "prevented": info.prevented,
            "failure": info.extra.get("failure", ""),
            "run_folder": str(folder),
            "played_again": str(first) if first else None,
        }
        print(json.dumps(out, indent=2))
    else:
        print(verdict.summary() if verdict else f"{info.verdict}: {info.extra.get('failure')}")
        print(f"run folder: {folder} (report.html)")
        from harness.timing import summary

        timings = info.extra.get("timings")
        if timings:
            print(summary(timings, float(info.extra.get("seconds", 0.0))), file=sys.stderr)
        print(both.last_line())
    if args.fail_on_loss and both.lost:
        return 1
    return 0 if info.model_match else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hwchaos run", description=__doc__)
    add_arguments(p)
    return run(p.parse_args(argv))


def _replicas(folder: Path) -> dict[str, list[dict[str, object]]]:
    import pyarrow.parquet as pq

    df = pq.read_table(folder / "replicas.parquet").to_pandas()
    obs = df[df.source == "observed"].sort_values(["replica", "offset"])
    return {
        str(n): [
            {"offset": int(r.offset), "epoch": int(r.epoch), "record": str(r.record)}
            for r in g.itertuples()
        ]
        for n, g in obs.groupby("replica")
    }
