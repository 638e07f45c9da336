"""``hwchaos advise``: do these settings lose acknowledged writes on this release, and how?

For an SRE choosing ``acks``/``min.insync.replicas``/unclean election/replication factor: the
explorer searches, with exactly the asked replication factor and settings on the asked
release's rules, for the shortest orderings that lose an acknowledged write or leave replicas
divergent. The answer starts with one plain sentence, then the shortest losing orderings,
for each the settings and the releases that would prevent it (replayed through the model),
then what the search did not cover. Words are kept apart: "prevented on 4.0.0-elr" (the
release refuses a step of the ordering) is not "no loss" (the ordering plays and loses
nothing), and neither is "safe": a bounded search that finds nothing says so, with its bounds.

``--confirm --kafka V`` plays the shortest losing ordering on real brokers of V (the
``explore --confirm`` machinery) and classifies it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from explorer.search import Bounds, counterexample_scenario, explore
from harness.cli.types import profile_type as protocol_type
from harness.generator.scenarios import catalogue, load_scenario
from reference_model.profiles import LINES, generation
from reference_model.run import run_scenario
from reference_model.scenario import Scenario, ScenarioError

# The newest release line the profiles know, as a release number (4.1.0 today).
DEFAULT_RELEASE = ".".join(map(str, LINES[-1])) + ".0"
# Releases each losing ordering is replayed on to say which would prevent it: one per
# behaviour change of the replication protocol (KIP-101, -279, -320, KRaft, KIP-966).
RELEASES = (
    "0.10.2.1",
    "0.11.0.3",
    "2.0.1",
    "2.1.1",
    "2.8.2",
    "3.3.1",
    "3.3.1-kraft",
    "3.9.0",
    "4.0.0",
    "4.0.0-elr",
    DEFAULT_RELEASE,
)
# Explorer invariants that mean data loss, and how the answer names them.
LOSS = {
    "acked_lost": "an acknowledged write is lost",
    "leader_missing_committed": "a new leader lacks committed writes",
    "replicas_disagree_below_hw": "replicas diverge below the high watermark",
}
DEPTHS = (5, 8, 12, 0)  # iterative deepening: stop at the first level that loses


def _search(
    release: str, acks: str, min_insync: int, unclean: bool, bounds: Bounds, max_states: int
) -> dict[str, Any]:
    """Breadth-first search by increasing depth until a loss or the bounds are exhausted.

    Breadth-first, so the first losing ordering of each invariant is a shortest one; by
    depth, so a loss found at depth 4 does not pay for the millions of states at depth 12.
    """
    gen = generation(release)
    res = None
    for d in DEPTHS:
        b = Bounds(**{**bounds.__dict__, "max_depth": d})
        res = explore(gen, b, acks, min_insync, unclean, len(LOSS), max_states)
        if res.counterexamples or res.exhausted or res.states >= max_states:
            break
    assert res is not None
    return {
        "states": res.states,
        "exhausted": res.exhausted,
        "depth": res.depth,
        "stopped_by": ""
        if res.exhausted
        else (
            "max_states"
            if res.states >= max_states
            else ("found" if res.counterexamples else "depth")
        ),
        "counterexamples": [
            (cx.invariant, cx) for cx in res.counterexamples if cx.invariant in LOSS
        ],
    }


def _replay(sc: Scenario, release: str) -> dict[str, Any]:
    """One ordering under one release: ``loses`` | ``no loss`` | ``prevented`` (+ why)."""
    try:
        res = run_scenario(sc, release)
    except ScenarioError as exc:
        return {"release": release, "outcome": "not playable", "why": str(exc)}
    j = res.to_json()
    if res.prevented is not None:
        k, reason = res.prevented
        return {
            "release": release,
            "outcome": "prevented",
            "why": f"step {k} ({sc.steps[k - 1].describe(sc.brokers)}) refused: {reason}",
        }
    if j["lost_acked"] or j["divergent_offsets"]:
        return {
            "release": release,
            "outcome": "loses",
            "lost_acked": j["lost_acked"],
            "divergent_offsets": j["divergent_offsets"],
        }
    return {"release": release, "outcome": "no loss"}


def _setting_changes(sc: Scenario, release: str) -> list[dict[str, Any]]:
    """Each single settings change (and the documented durable combination) replayed."""
    rf = sc.rf
    isr = min(2, rf)
    changes: list[tuple[str, dict[str, Any]]] = []
    if sc.acks != "all":
        changes.append(("acks=all", {"acks": "all"}))
    if sc.min_insync < rf:
        changes.append(
            (f"min.insync.replicas={sc.min_insync + 1}", {"min_insync": sc.min_insync + 1})
        )
    if sc.unclean:
        changes.append(("unclean.leader.election.enable=false", {"unclean": False}))
    durable = {"acks": "all", "min_insync": max(isr, sc.min_insync), "unclean": False}
    if rf >= 2 and (sc.acks, sc.min_insync, sc.unclean) != tuple(durable.values()):
        changes.append(
            (f"acks=all min.insync.replicas={durable['min_insync']} unclean=false", durable)
        )
    out = []
    for label, kw in changes:
        r = _replay(sc.with_overrides(**kw), release)
        out.append({"change": label, **r})
    return out


def _when(sc: Scenario) -> str:
    """A plain clause for the loss, from the shape of the ordering (else the step count)."""
    kinds = [e.kind for e in sc.steps]
    if "power_loss" in kinds:
        return "a broker loses power before its log is flushed"
    leader = sc.leader
    last_produce = max((i for i, k in enumerate(kinds) if k == "produce"), default=-1)
    crash = next(
        (
            i
            for i, e in enumerate(sc.steps)
            if i > last_produce and e.kind == "crash" and e.replica == leader
        ),
        -1,
    )
    if crash >= 0 and not any(k.startswith("fetch") for k in kinds[last_produce:crash]):
        return "the leader crashes before a follower fetches"
    if "isr_shrink" in kinds and sc.unclean:
        return "a follower that fell out of the ISR is elected uncleanly"
    if "isr_shrink" in kinds:
        return "the leader acknowledges alone after the ISR shrinks, then fails"
    return f"{len(sc.steps)} steps happen in the order below"


def advise(
    acks: str,
    min_insync: int,
    rf: int,
    unclean: bool,
    release: str,
    bounds: Bounds | None,
    max_states: int = 100_000,
) -> dict[str, Any]:
    """The whole answer as data (``--json``); :func:`render` writes it for people."""
    settings = {
        "acks": acks,
        "min_insync": min_insync,
        "rf": rf,
        "unclean": unclean,
        "release": release,
        "mode": generation(release).mode,
        # Releases by number; an era alias (hw, kip320) is named by the releases it covers.
        "kafka": release
        if release[:1].isdigit()
        else f"{generation(release).kafka_versions} (the '{release}' profile)",
    }
    notes = []
    search_acks = acks
    if acks == "0":
        # Nothing is acknowledged, so "an acknowledged write is lost" cannot break; the
        # producer sends blind and loses at least what acks=1 loses, without being told.
        search_acks = "1"
        notes.append(
            "acks=0 acknowledges nothing: no write is ever known to be lost, and the "
            "orderings below (searched as acks=1) lose acks=0 writes the same way, silently"
        )
    if acks != "all" and min_insync > 1:
        notes.append(f"min.insync.replicas={min_insync} has no effect with acks={acks}")
    if rf == 1 and unclean:
        notes.append("unclean election has no effect with one replica")
    found: list[dict[str, Any]] = []
    search: dict[str, Any] = {}
    if bounds is not None:
        b = Bounds(**{**bounds.__dict__, "replicas": rf})
        search = _search(release, search_acks, min_insync, unclean, b, max_states)
        seen: set[tuple[str, ...]] = set()
        for invariant, cx in search.pop("counterexamples"):
            sc = counterexample_scenario(
                cx, generation(release), search_acks, min_insync, unclean, rf, f"advise-{invariant}"
            )
            steps = tuple(e.describe(sc.brokers) for e in sc.steps)
            if steps in seen:
                continue
            seen.add(steps)
            model = run_scenario(sc, release).to_json()
            lost_steps = model["lost_steps"]
            found.append(
                {
                    "invariant": invariant,
                    "what": LOSS[invariant],
                    "ordering": list(steps),
                    "lost_acked": model["lost_acked"],
                    "lost_at": {
                        r: f"step {k}: {steps[k - 1]}"
                        for r, k in lost_steps.items()
                        if 1 <= k <= len(steps)
                    },
                    "divergent_offsets": model["divergent_offsets"],
                    "when": _when(sc),
                    "prevented_by_settings": _setting_changes(sc, release),
                    "releases": [_replay(sc, r) for r in RELEASES],
                    "scenario": sc,
                }
            )
        found.sort(key=lambda f: (len(f["ordering"]), f["invariant"] != "acked_lost"))
        search["bounds"] = {
            "replicas": rf,
            "records": b.records,
            "crashes": b.crashes,
            "power_losses": b.power_losses,
            "isr_shrink": b.isr_shrink,
            "delayed_leader_and_isr": b.delayed_leader_and_isr,
            "split_fetch": b.split_fetch,
            "max_states": max_states,
        }
    rows = _catalogue(acks, min_insync, rf, unclean, release)
    return {
        "settings": settings,
        "sentence": _sentence(settings, found, search),
        "notes": notes,
        "explorer": [{k: v for k, v in f.items() if k != "scenario"} for f in found],
        "search": search,
        "not_checked": _not_checked(search),
        "scenarios": rows,
        "_scenarios": [f["scenario"] for f in found],
    }


def _sentence(s: dict[str, Any], found: list[dict[str, Any]], search: dict[str, Any]) -> str:
    who = (
        f"acks={s['acks']} with min.insync.replicas={s['min_insync']}, replication factor "
        f"{s['rf']}, unclean election {'on' if s['unclean'] else 'off'}, on Kafka "
        f"{s['kafka']}"
    )
    if found:
        first = found[0]
        verb = "loses acknowledged writes" if first["lost_acked"] else "leaves replicas divergent"
        return f"{who} {verb} when {first['when']} ({len(first['ordering'])} steps)."
    if not search:
        return f"{who}: the explorer was not run (--explore 0); see the catalogue below."
    scope = "any ordering" if search["exhausted"] else "the orderings searched"
    return (
        f"{who}: no losing ordering found in {scope} within the bounds below; that is not a "
        "guarantee (see what was not checked)."
    )


def _not_checked(search: dict[str, Any]) -> list[str]:
    if not search:
        return ["the explorer did not run: only the catalogue orderings were replayed"]
    b = search["bounds"]
    out = [
        f"more than {b['records']} records, {b['crashes']} crashes or "
        f"{b['power_losses']} power losses",
        "network partitions (use the catalogue's jepsen-2013-* scenarios)",
        "more than one partition, consumers, transactions",
    ]
    if not b["delayed_leader_and_isr"]:
        out.append("LeaderAndIsr requests delivered late (zombie orderings)")
    if not b["split_fetch"]:
        out.append("fetch request and answer as separate steps")
    if search["stopped_by"] == "found":
        out.append(
            f"orderings longer than {search['depth']} steps: the search stops at the first "
            "depth that loses (the shortest orderings are listed, longer ones exist too)"
        )
    elif not search["exhausted"]:
        how = "the state budget (--max-states)" if search["stopped_by"] == "max_states" else "depth"
        out.append(
            f"orderings longer than {max(search['depth'] - 1, 0)} steps: the search stopped "
            f"at {search['states']} states ({how})"
        )
    return out


def _catalogue(
    acks: str, min_insync: int, rf: int, unclean: bool, release: str
) -> list[dict[str, Any]]:
    """Every catalogue scenario replayed with the asked settings (its own brokers if named)."""
    rows: list[dict[str, Any]] = []
    for path in catalogue():
        sc = load_scenario(path)
        try:
            s = sc.with_overrides(
                acks=acks,
                min_insync=min(min_insync, rf if sc.rf_flexible else sc.rf),
                unclean=unclean,
                rf=rf,
            )
        except ScenarioError as exc:
            rows.append({"scenario": sc.name, "skipped": str(exc)})
            continue
        r = _replay(s, release)
        rows.append(
            {
                "scenario": sc.name,
                "rf": s.rf,
                "min_insync": s.min_insync,
                "outcome": r["outcome"],
                "why": r.get("why", ""),
                "loses_acked": bool(r.get("lost_acked")),
                "lost_acked": r.get("lost_acked", []),
                "divergent_offsets": r.get("divergent_offsets", []),
                "ordering": [e.describe(s.brokers) for e in s.steps],
            }
        )
    return rows


def render(out: dict[str, Any]) -> list[str]:
    """The text answer: the sentence first, then orderings, prevention, gaps, catalogue."""
    lines = [out["sentence"], ""]
    lines += [f"note: {n}" for n in out["notes"]]
    s = out["settings"]
    if out["explorer"]:
        lines.append(f"Shortest losing orderings on Kafka {s['kafka']} ({s['mode']}):")
    for i, f in enumerate(out["explorer"], start=1):
        lines.append(f"  {i}. {f['what']}: {' ; '.join(f['ordering'])}")
        for rec, at in sorted(f["lost_at"].items()):
            lines.append(f"     {rec} lost at {at}")
        if f["divergent_offsets"]:
            lines.append(f"     replicas differ at offsets {f['divergent_offsets']}")
        fixes = [c for c in f["prevented_by_settings"] if c["outcome"] != "loses"]
        keeps = [c for c in f["prevented_by_settings"] if c["outcome"] == "loses"]
        for c in fixes:
            why = f" ({c['why']})" if c.get("why") else ""
            lines.append(f"     setting {c['change']}: {c['outcome']}{why}")
        for c in keeps:
            lines.append(f"     setting {c['change']}: still loses")
        by: dict[str, list[str]] = {}
        for r in f["releases"]:
            by.setdefault(r["outcome"], []).append(r["release"])
        for outcome in ("prevented", "no loss", "loses", "not playable"):
            if outcome in by:
                lines.append(f"     {outcome} on: {', '.join(by[outcome])}")
    if out["search"]:
        sr = out["search"]
        lines.append("")
        lines.append(
            f"Search: {sr['states']} states, "
            + (
                "exhausted"
                if sr["exhausted"]
                else {"found": "stopped at the first losing depth"}.get(
                    sr["stopped_by"], f"stopped by {sr['stopped_by']}"
                )
            )
            + f", replication factor {sr['bounds']['replicas']}"
        )
    lines.append("Not checked:")
    lines += [f"  - {n}" for n in out["not_checked"]]
    losing = [r for r in out["scenarios"] if r.get("outcome") == "loses"]
    lines.append("")
    lines.append(
        f"Catalogue: {len(losing)} of {len(out['scenarios'])} scenarios lose data with these "
        "settings:"
    )
    for r in out["scenarios"]:
        if "skipped" in r:
            lines.append(f"    {r['scenario']}: skipped ({r['skipped']})")
            continue
        what = r["outcome"]
        if r["lost_acked"]:
            what = "loses " + ",".join(r["lost_acked"])
        elif r["divergent_offsets"]:
            what = f"replicas diverge at {r['divergent_offsets']}"
        elif r["why"]:
            what += f" ({r['why']})"
        mark = "!" if r["outcome"] == "loses" else " "
        own = " (its own brokers)" if r["rf"] != out["settings"]["rf"] else ""
        lines.append(f"  {mark} {r['scenario']} (rf {r['rf']}{own}): {what}")
    return lines


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the ``hwchaos`` parser or a parser of its own."""
    p.add_argument("--acks", choices=["0", "1", "all"], default="all")
    p.add_argument("--min-insync", type=int, help="default: 2 for acks=all (1 if rf is 1), else 1")
    p.add_argument("--rf", type=int, default=3, help="replication factor, 1..5")
    p.add_argument("--unclean", action="store_true", help="unclean.leader.election.enable=true")
    p.add_argument(
        "--kafka",
        "--profile",
        "--protocol",
        dest="release",
        type=protocol_type,
        default=DEFAULT_RELEASE,
        help=f"Kafka release whose rules apply, e.g. 2.8.2, 3.3.1-kraft, 4.0.0-elr "
        f"(default: the newest the profiles know, {DEFAULT_RELEASE})",
    )
    p.add_argument("--explore", type=int, default=1, help="0 skips the explorer search")
    p.add_argument("--records", type=int, default=2, help="explorer bound: records produced")
    p.add_argument("--crashes", type=int, default=2, help="explorer bound: process crashes")
    p.add_argument("--power-losses", type=int, default=0, help="explorer bound: power losses")
    p.add_argument("--max-states", type=int, default=100_000, help="explorer state budget")
    p.add_argument(
        "--confirm",
        action="store_true",
        help="play the shortest losing ordering on real brokers of --kafka",
    )
    p.add_argument("--backend", choices=["local", "docker"], default="local")
    p.add_argument(
        "--fresh",
        action="store_true",
        help="confirm on a fresh cluster, not through a warm-cluster pool (as explore --fresh)",
    )
    p.add_argument("--runs", default="runs", help="parent folder of the confirm run")
    p.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    """Answer for parsed arguments (``hwchaos advise`` or the ``hwchaos`` parser)."""
    isr = args.min_insync
    if isr is None:
        isr = min(2, args.rf) if args.acks == "all" else 1
    if not 1 <= args.rf <= 5 or not 1 <= isr <= args.rf:
        print(
            f"hwchaos advise: need 1 <= --min-insync ({isr}) <= --rf ({args.rf}) <= 5",
            file=sys.stderr,
        )
        return 2
    target = None
    if args.confirm:
        from harness.cli.explore import _confirm_target

        ns = argparse.Namespace(confirm=True, kafka=args.release, backend=args.backend)
        target = _confirm_target(ns)
        if isinstance(target, str):
            print(f"hwchaos advise: {target}", file=sys.stderr)
            return 2
    bounds = (
        Bounds(records=args.records, crashes=args.crashes, power_losses=args.power_losses)
        if args.explore
        else None
    )
    out = advise(args.acks, isr, args.rf, args.unclean, args.release, bounds, args.max_states)
    scenarios = out.pop("_scenarios")
    confirmation = None
    if target is not None and not isinstance(target, str):
        confirmation = _confirm_first(
            scenarios, target, args.backend, Path(args.runs).resolve(), fresh=args.fresh
        )
        out["confirm"] = confirmation
    if args.json:
        print(json.dumps(out, indent=2, default=str))
        return 0
    print("\n".join(render(out)))
    if confirmation is not None:
        print("")
        print(
            f"Confirmed on real Kafka {confirmation.get('version')}: "
            f"{confirmation.get('classification')}: {confirmation.get('reason')}"
        )
        print(f"run folder: {confirmation.get('run_folder')}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hwchaos advise", description=__doc__)
    add_arguments(p)
    return run(p.parse_args(argv))


def _confirm_first(
    scenarios: list[Scenario], version: Any, backend: str, runs: Path, fresh: bool = False
) -> dict[str, Any]:
    """Play the shortest losing ordering on real brokers (``explore --confirm``'s code).

    Through a warm-cluster pool as ``explore --confirm`` (unless ``fresh``): the run plays
    on a cluster the pool checks and records (``run.json``'s ``extra.cluster``), and the
    pool stops it and removes its work dir when the confirm ends."""
    import contextlib

    from harness.generator import confirm
    from harness.generator.warm import WarmClusters
    from reference_model.scenario import to_document

    if not scenarios:
        return {"version": version.name, "classification": "nothing to play", "reason": ""}
    import yaml

    sc = scenarios[0]
    runs.mkdir(parents=True, exist_ok=True)
    f = runs / f"advise-{version.name}.yaml"
    f.write_text(yaml.safe_dump(to_document(sc), sort_keys=False))
    cx = confirm.Counterexample(sc.name.removeprefix("advise-"), sc, str(f))
    folder = runs / f"advise-{version.name}"
    with contextlib.ExitStack() as stack:
        warm = None if fresh else stack.enter_context(WarmClusters(runs / "warm"))
        (c,) = confirm.confirm(
            [cx],
            version,
            backend,
            folder,
            lambda m: print(m, file=sys.stderr, flush=True),
            warm=warm,
        )
    with contextlib.suppress(OSError):
        (runs / "warm").rmdir()  # the pool removed its cluster's work dir; nothing left
    return {"version": version.name, **c.to_json()}


if __name__ == "__main__":
    sys.exit(main())
