"""``hwchaos``: the command line.

Subcommands import their modules lazily so ``hwchaos model`` starts in milliseconds and does
not need Kafka, Spark or a Docker client to be installed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

from reference_model.profiles import generation
from reference_model.scenario import ScenarioError


def protocol_type(name: str) -> str:
    """argparse type of ``--protocol``/``--kafka``: an era alias or any release profile."""
    try:
        generation(name)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return name


def _add_overrides(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("scenario overrides")
    g.add_argument("--acks", choices=["0", "1", "all"], help="producer acks")
    g.add_argument("--min-insync", type=int, help="min.insync.replicas")
    g.add_argument(
        "--unclean",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="unclean.leader.election.enable",
    )
    g.add_argument("--rf", type=int, help="replication factor")
    g.add_argument("--records", type=int, help="records per produce step")


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    return {
        "acks": args.acks,
        "min_insync": args.min_insync,
        "unclean": args.unclean,
        "rf": args.rf,
        "records": args.records,
    }


def cmd_model(args: argparse.Namespace) -> int:
    from harness.generator.scenarios import load_scenario
    from reference_model.run import format_table, run_scenario

    scenario = load_scenario(args.scenario).with_overrides(**_overrides(args))  # type: ignore[arg-type]
    result = run_scenario(scenario, args.kafka or args.protocol)
    if args.explain:
        from reference_model.explain import explain_json, format_explain
        from reference_model.profiles import describe_rules

        if args.json:
            rules = describe_rules(result.config.generation)
            out = {**result.to_json(), "profile": rules, "explain": explain_json(result)}
            print(json.dumps(out, indent=2))
        else:
            print(format_table(result))
            print()
            print(format_explain(result))
        return 0
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(format_table(result))
    return 0


def cmd_explore(args: argparse.Namespace) -> int:
    from harness.cli.explore import main as explore_main

    return explore_main(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hwchaos",
        description="Chaos-test Kafka's HW / leader-epoch replication against a reference model.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    proto_help = (
        "era (hw, kip101, kip279, kip320, kraft, kraft-elr) or Kafka release (2.8.2, 4.0.0-elr)"
    )

    p = sub.add_parser("model", help="play a scenario through the reference model")
    p.add_argument("scenario", help="scenario file (or a name in scenarios/)")
    p.add_argument("--protocol", type=protocol_type, default="kip320", help=proto_help)
    p.add_argument(
        "--kafka",
        type=protocol_type,
        help="Kafka release whose rules to apply (e.g. 2.8.2, 3.3.1-kraft, 4.0.0-elr); "
        "overrides --protocol",
    )
    p.add_argument(
        "--explain", action="store_true", help="per step, which rules decided it (with KIP/JIRA)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_overrides(p)
    p.set_defaults(func=cmd_model)

    p = sub.add_parser("explore", help="exhaustively search crash orderings for violations")
    p.add_argument("--protocol", type=protocol_type, default="hw", help=proto_help)
    p.add_argument("--replicas", type=int, default=2)
    p.add_argument("--records", type=int, default=2)
    p.add_argument("--crashes", type=int, default=2, help="process crashes allowed")
    p.add_argument("--power-losses", type=int, default=0)
    p.add_argument("--max-depth", type=int, default=0, help="0 = run to exhaustion")
    p.add_argument("--acks", choices=["0", "1", "all"], default="all")
    p.add_argument("--min-insync", type=int, default=2)
    p.add_argument("--unclean", action="store_true")
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
    from harness.cli.explore import add_confirm_arguments  # --confirm --kafka --backend

    add_confirm_arguments(p)
    p.set_defaults(func=cmd_explore)

    for name, (_, help_) in PASSTHROUGH.items():
        sub.add_parser(name, help=help_, add_help=False)
    return parser


# Subcommands with their own argument parser (``hwchaos NAME --help`` shows it).
PASSTHROUGH = {
    "run": ("harness.cli.run", "play a scenario on real brokers and diff against the model"),
    "dump": ("harness.readback.dump", "print a partition dir like Kafka's DumpLogSegments"),
    "analyze": ("harness.analysis.cli", "PySpark analysis of a results folder"),
    "matrix": ("harness.cli.matrix", "scenarios x versions x configs, resumable"),
    "advise": ("harness.cli.advise", "which failure orderings lose acked writes under settings"),
    "replay": ("harness.cli.replay", "explain an incident from broker logs (timeline, scenario)"),
    "kafka": ("harness.cli.kafka", "install Kafka release trees (download, verify) or list them"),
    "doctor": ("harness.cli.doctor", "what this machine can run, and what to do when it cannot"),
    "image": ("harness.cli.image", "build/list the docker backend's images (no registry needed)"),
    "docker": ("harness.cli.docker", "start a Docker daemon; reap what killed runs left"),
    "native": ("harness.cli.native", "compile the reference model with mypyc (faster explore)"),
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PASSTHROUGH:
        import importlib

        module = importlib.import_module(PASSTHROUGH[argv[0]][0])
        return _guarded(lambda: int(module.main(argv[1:])))
    args = build_parser().parse_args(argv)
    return _guarded(lambda: int(args.func(args)))


def _guarded(run: Callable[[], int]) -> int:
    """Bad input and Ctrl-C end as one line on stderr, never as a traceback."""
    try:
        return run()
    except ScenarioError as exc:
        print(f"hwchaos: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hwchaos: interrupted", file=sys.stderr)
        return 130
