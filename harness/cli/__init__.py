"""``hwchaos``: the command line, one parser with a subcommand per module.

Every command module exposes ``add_arguments(parser)`` and ``run(args)`` (and ``main(argv)``
to run on its own). The parser imports only the module of the command being run, so
``hwchaos model`` starts in milliseconds and needs neither Kafka, Spark nor a Docker client;
``hwchaos --help`` imports none.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from reference_model.scenario import ScenarioError

# name -> (module, one-line help), in the order ``hwchaos --help`` lists them.
COMMANDS = {
    "model": ("harness.cli.model", "play a scenario through the reference model"),
    "explore": ("harness.cli.explore", "exhaustively search crash orderings for violations"),
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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``hwchaos`` parser; ``only``: the one command whose module is imported (None: all)."""
    parser = argparse.ArgumentParser(
        prog="hwchaos",
        description="Chaos-test Kafka's HW / leader-epoch replication against a reference model.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module_name, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        if only is None or only == name:
            module = importlib.import_module(module_name)
            p.description = (module.__doc__ or help_).strip().splitlines()[0]
            module.add_arguments(p)
            p.set_defaults(func=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = argv[0] if argv and argv[0] in COMMANDS else ""
    args = build_parser(only=chosen).parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.func
    return _guarded(lambda: int(run(args)))


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
