"""``hwchaos model SCENARIO``: play a scenario through the reference model (no brokers)."""

from __future__ import annotations

import argparse
import json

from harness.cli.overrides import add_overrides, add_profile, overrides
from harness.cli.types import profile_type

PROFILE_HELP = (
    "era (hw, kip101, kip279, kip320, kraft, kraft-elr) or Kafka release (2.8.2, 4.0.0-elr)"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the ``hwchaos`` parser or a parser of its own."""
    p.add_argument("scenario", help="scenario file (or a name in scenarios/)")
    add_profile(p, "kip320", PROFILE_HELP)
    p.add_argument(
        "--kafka",
        type=profile_type,
        help="Kafka release whose rules to apply (e.g. 2.8.2, 3.3.1-kraft, 4.0.0-elr); "
        "overrides --profile",
    )
    p.add_argument(
        "--explain", action="store_true", help="per step, which rules decided it (with KIP/JIRA)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_overrides(p)


def run(args: argparse.Namespace) -> int:
    from harness.generator.scenarios import load_scenario
    from reference_model.run import format_table, run_scenario

    scenario = load_scenario(args.scenario).with_overrides(**overrides(args))  # type: ignore[arg-type]
    result = run_scenario(scenario, args.kafka or args.protocol)
    if not args.json:
        # What the model was run with, in Kafka's names: a file's setting that was ignored, or
        # an override that changed it, is visible before the first step.
        print(f"settings: {scenario.settings_text()}; rules of {args.kafka or args.protocol}")
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
