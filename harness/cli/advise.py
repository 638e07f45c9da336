"""``hwchaos advise``: which failure orderings lose acknowledged writes under given settings.

For an SRE choosing ``acks``/``min.insync.replicas``/unclean election: every catalogue
scenario is replayed with those settings, and the explorer searches for the shortest
ordering that loses an acknowledged write, so the answer is a list of concrete orderings
rather than a rule of thumb.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from explorer.search import Bounds, explore
from harness.cli.types import profile_type as protocol_type
from harness.generator.scenarios import catalogue, load_scenario
from reference_model.profiles import generation
from reference_model.run import run_scenario
from reference_model.scenario import ScenarioError


def advise(
    acks: str, min_insync: int, rf: int, unclean: bool, protocol: str, explore_bounds: Bounds | None
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for path in catalogue():
        sc = load_scenario(path)
        try:
            s = sc.with_overrides(
                acks=acks,
                min_insync=min(min_insync, rf) if sc.rf_flexible else min(min_insync, sc.rf),
                unclean=unclean,
                rf=rf,
            )
        except ScenarioError as exc:
            rows.append({"scenario": sc.name, "skipped": str(exc)})
            continue
        j = run_scenario(s, protocol).to_json()
        rows.append(
            {
                "scenario": sc.name,
                "rf": s.rf,
                "min_insync": s.min_insync,
                "loses_acked": bool(j["lost_acked"]),
                "lost_acked": j["lost_acked"],
                "lost_at_steps": j["lost_steps"],
                "divergent_offsets": j["divergent_offsets"],
                "outcomes": j["outcomes"],
                "ordering": [st["event"] for st in j["steps"]],
            }
        )
    found: list[dict[str, Any]] = []
    if explore_bounds is not None:
        res = explore(generation(protocol), explore_bounds, acks, min_insync, unclean, 5)
        names = tuple(chr(ord("A") + i) for i in range(explore_bounds.replicas))
        for cx in res.counterexamples:
            found.append(
                {"invariant": cx.invariant, "ordering": [e.describe(names) for e in cx.events]}
            )
    return {
        "settings": {
            "acks": acks,
            "min_insync": min_insync,
            "rf": rf,
            "unclean": unclean,
            "protocol": protocol,
        },
        "scenarios": rows,
        "explorer": found,
    }


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the ``hwchaos`` parser or a parser of its own."""
    p.add_argument("--acks", choices=["0", "1", "all"], default="all")
    p.add_argument("--min-insync", type=int, default=2)
    p.add_argument("--rf", type=int, default=3)
    p.add_argument("--unclean", action="store_true")
    p.add_argument(
        "--profile",
        "--protocol",
        dest="protocol",
        type=protocol_type,
        default="kip320",
        help="era or Kafka release",
    )
    p.add_argument(
        "--explore-replicas",
        type=int,
        default=2,
        help="replicas for the explorer search (0 skips it)",
    )
    p.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.rf <= 5 or not 1 <= args.min_insync <= args.rf:
        print("hwchaos advise: need 1 <= --min-insync <= --rf <= 5", file=sys.stderr)
        return 2
    bounds = None
    if args.explore_replicas:
        bounds = Bounds(replicas=min(args.explore_replicas, args.rf))
    out = advise(args.acks, args.min_insync, args.rf, args.unclean, args.protocol, bounds)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    s = out["settings"]
    print(
        f"acks={s['acks']} min.insync.replicas={s['min_insync']} rf={s['rf']} "
        f"unclean={str(s['unclean']).lower()} protocol={s['protocol']}"
    )
    losing = [r for r in out["scenarios"] if r.get("loses_acked")]
    print(
        f"\n{len(losing)} of {len(out['scenarios'])} catalogue orderings lose acknowledged writes:"
    )
    for r in out["scenarios"]:
        if "skipped" in r:
            print(f"  - {r['scenario']}: skipped ({r['skipped']})")
            continue
        mark = "LOSES " + ",".join(r["lost_acked"]) if r["loses_acked"] else "safe"
        extra = f" (rf {r['rf']}, min.insync {r['min_insync']})"
        print(f"  {'!' if r['loses_acked'] else ' '} {r['scenario']}: {mark}{extra}")
        if r["loses_acked"]:
            print(f"      ordering: {' ; '.join(r['ordering'])}")
    if bounds is not None:
        if out["explorer"]:
            print("\nexplorer: minimal orderings that break an invariant:")
            for f in out["explorer"]:
                print(f"  {f['invariant']}: {' ; '.join(f['ordering'])}")
        else:
            print(
                f"\nexplorer: no ordering of up to {bounds.crashes} crashes on "
                f"{bounds.replicas} replicas loses an acknowledged write"
            )
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hwchaos advise", description=__doc__)
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
