"""The verdict in words an on-call engineer can paste into a ticket, and as JSON.

The facts come from the model playing the reconstructed scenario (``run_scenario``): which
offsets each replica truncated and at which step, which acknowledged writes the final
leader no longer holds and the step that lost each, which offsets hold different records on
different replicas and the step after which they started to differ. The JSON keys
``replicas``, ``lost_acked`` and ``divergent_offsets`` are those of ``hwchaos run --json``.
"""

from __future__ import annotations

import re
from typing import Any

from harness.replay.patterns import PATTERNS, Finding, findings
from harness.replay.reconstruct import Reconstruction
from reference_model.run import RunResult


def truncations(res: RunResult) -> dict[str, list[dict[str, Any]]]:
    """Per replica: every step after which its log was shorter (or rewritten below its end)."""
    names = res.config.brokers
    out: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for prev, step in zip(res.steps, res.steps[1:], strict=False):
        for n, a, b in zip(names, prev.state.replicas, step.state.replicas, strict=True):
            keep = 0
            while keep < min(len(a.log), len(b.log)) and a.log[keep] == b.log[keep]:
                keep += 1
            if keep < len(a.log):
                out[n].append(
                    {
                        "step": step.index,
                        "event": step.text,
                        "from_leo": len(a.log),
                        "to_offset": keep,
                        "removed": [e.record for e in a.log[keep:]],
                    }
                )
    return out


def divergence_steps(res: RunResult) -> dict[int, int]:
    """For each finally divergent offset, the step after which it has differed ever since."""
    out: dict[int, int] = {}
    for off in res.divergent_offsets:
        since = 0
        for s in res.steps:
            recs = {r.log[off].record for r in s.state.replicas if off < len(r.log)}
            since = (since or s.index) if len(recs) > 1 else 0
        out[off] = since
    return out


def to_json(rec: Reconstruction, timeline: str, scenario_path: str) -> dict[str, Any]:
    res = rec.result
    names = res.config.brokers
    j = res.to_json()
    return {
        "replicas": {
            n: [{"offset": o, "epoch": e["epoch"], "record": e["record"]} for o, e in enumerate(lg)]
            for n, lg in j["replicas"].items()
        },
        "lost_acked": rec.lost_acked,
        "divergent_offsets": res.divergent_offsets,
        "lost_steps": {r: res.steps[k].text for r, k in res.lost_steps().items()},
        "divergence_steps": {
            str(o): res.steps[k].text if k else "" for o, k in divergence_steps(res).items()
        },
        "truncations": truncations(res),
        "outcomes": j["outcomes"],
        "final_leader": j["leader"],
        "protocol": res.config.generation.name,
        "scenario": scenario_path,
        "version": rec.version.name,
        "timeline": timeline,
        "ambiguities": rec.ambiguities,
        "version_how": rec.version.how,
        **_evidence_json(rec),
        "brokers": {str(i): n for i, n in sorted(rec.names.items()) if n in names},
        "alternatives": [
            {
                "replicas": {
                    n: [e.record for e in r.log]
                    for n, r in zip(a.result.config.brokers, a.result.final.replicas, strict=True)
                },
                "lost_acked": a.lost_acked,
                "divergent_offsets": a.result.divergent_offsets,
                "steps": [e.describe(a.result.config.brokers) for e in a.scenario.steps],
            }
            for a in rec.alternatives
        ],
    }


def _model_patterns(rec: Reconstruction) -> list[str]:
    """The catalogue patterns the reconstructed loss or divergence fits."""
    res = rec.result
    if not (rec.lost_acked or res.divergent_offsets):
        return []
    kinds = [e.kind for e in rec.scenario.steps]
    gen = res.config.generation
    out = []
    if "power_loss" in kinds and res.config.acks == "all":
        out.append("kip966")
    if not gen.epoch_truncation:
        out.append("kip101-s1" if rec.lost_acked and not res.divergent_offsets else "kip101-s2")
    elif rec.version.release.startswith(("0.11", "1.")) and res.divergent_offsets:
        out.append("kip279")
    if any(f.kind == "unclean_election" for f in rec.facts):
        out.append("unclean-election")
    return out


def evidence(rec: Reconstruction) -> dict[str, Any]:
    """Loss and divergence as the logs support them, with the findings behind each.

    ``lost``: ``yes`` (the replay loses acknowledged writes the producer reported),
    ``possible`` (records the logs account for are gone, or a logged number shows it, but
    whether they were acknowledged is not known), ``no`` (the producer's outcomes are known
    and every replica's log is accounted for by its own lines) or ``unknown``."""
    res = rec.result
    found = findings(rec.facts, rec.names, rec.version.release)
    peers = [b for b in rec.scenario.brokers if b not in {f.broker for f in rec.facts}]
    too_big = any("too many to play" in a for a in rec.ambiguities)
    unplaced = any("fits no leader" in a for a in rec.ambiguities)
    lost_steps = res.lost_steps()
    model_cites = sorted(
        {c for k in lost_steps.values() for c in re.findall(r"\[([^\]]+:\d+)\]", _why(rec, k))}
    )
    pats = _model_patterns(rec)
    pat = pats[0] if pats else ""
    if rec.lost_acked and not too_big:
        how = "acknowledged" if rec.producer is not None else "written (acknowledged: unknown)"
        found.append(
            Finding(
                f"replayed: {', '.join(sorted(rec.lost_acked))} {how} and no longer on the "
                "final leader",
                model_cites,
                how="inferred",
                pattern=pat,
                loss="yes" if rec.producer is not None else "possible",
            )
        )
    if res.divergent_offsets and not too_big:
        found.append(
            Finding(
                f"replayed: offsets {res.divergent_offsets} hold different records on "
                "different replicas",
                model_cites,
                how="inferred",
                pattern=pat,
                divergence="yes",
            )
        )
    losses = [f.loss for f in found if f.loss]
    if any(a.lost_acked for a in rec.alternatives) and not rec.lost_acked:
        # Another ordering the logs allow loses acknowledged writes: not "no".
        losses.append("possible")
    if "yes" in losses:
        lost = "yes"
    elif "possible" in losses:
        lost = "possible"
    elif rec.producer is not None and not peers and not too_big and not unplaced:
        lost = "no"
    else:
        lost = "unknown"
    why_unknown = []
    if rec.producer is None:
        why_unknown.append("no --acked file: which records were acknowledged is not known")
    if peers:
        why_unknown.append(f"no logs of {', '.join(peers)} (only named by other brokers' lines)")
    if too_big:
        why_unknown.append("offsets too large to replay record by record")
    # A follower whose LeaderAndIsr was inferred held back logs nothing about what it holds.
    zombies = any(e.hold for e in rec.scenario.steps)
    if zombies:
        why_unknown.append("a follower logs nothing after a leader change: its log is not known")
    if any(a.result.divergent_offsets for a in rec.alternatives) and not res.divergent_offsets:
        diverged = "possible"
    elif any(f.divergence for f in found):
        diverged = "yes"
    elif not peers and not too_big and not zombies:
        diverged = "no"
    else:
        diverged = "unknown"
    if lost == "no" and zombies:
        lost = "unknown"
    return {
        "lost": lost,
        "diverged": diverged,
        "why_unknown": why_unknown,
        "findings": found,
        "patterns": sorted({f.pattern for f in found if f.pattern} | set(pats)),
    }


def _why(rec: Reconstruction, step: int) -> str:
    k = step - 1  # steps are 1-based in the result, step_facts 0-based
    return rec.step_facts[k] if 0 <= k < len(rec.step_facts) else ""


def words(rec: Reconstruction) -> str:
    """The verdict as sentences, one fact per line, each with the lines it rests on."""
    res = rec.result
    ev = evidence(rec)
    v = rec.version
    lines = [
        f"Kafka {v.name} ({v.how or 'from the logs'}; model generation "
        f"{res.config.generation.name}); replicas {', '.join(res.config.brokers)}; "
        f"acks={res.config.acks}, min.insync.replicas={res.config.min_insync}, "
        f"unclean.leader.election.enable={str(res.config.unclean).lower()}.",
        f"Acknowledged writes lost: {ev['lost']}"
        + (
            f" ({'; '.join(ev['why_unknown'])})"
            if ev["lost"] in ("unknown", "possible") and ev["why_unknown"]
            else ""
        )
        + ".",
        f"Replicas diverge: {ev['diverged']}.",
    ]
    for f in ev["findings"]:
        cites = ", ".join(f.cites) if f.cites else "no line"
        lines.append(f"[{f.how}] {f.claim} [{cites}]")
    for pid in ev["patterns"]:
        pat = PATTERNS[pid]
        lines.append(
            f"Pattern: {pat.name} ({', '.join(pat.references)}); would have been prevented "
            f"by: {pat.prevented_by}."
        )
    j = res.to_json()
    lines.append(
        f"Final leader (replayed): {j['leader'] or 'none (partition offline)'}; ISR {j['isr']}."
    )
    for n, ts in truncations(res).items():
        for t in ts:
            lines.append(
                f"[inferred] {n} truncated from LEO {t['from_leo']} to offset {t['to_offset']} at "
                f"step {t['step']} ({t['event']}), removing {', '.join(t['removed'])}."
            )
    lost = res.lost_steps()
    writes = {w.record: w for w in res.final.writes}
    for r in rec.lost_acked:
        k = lost.get(r)
        where = f" since step {k} ({res.steps[k].text}; {_why(rec, k)})" if k else ""
        lines.append(f"[inferred] {r} (offset {writes[r].offset}) can no longer be read{where}.")
    div = divergence_steps(res)
    for off in res.divergent_offsets:
        held = ", ".join(
            f"{n}={r.log[off].record}"
            for n, r in zip(res.config.brokers, res.final.replicas, strict=True)
            if off < len(r.log)
        )
        k = div[off]
        cause = f" since step {k} ({res.steps[k].text}; {_why(rec, k)})" if k else ""
        lines.append(f"[inferred] Offset {off} diverges: {held}{cause}.")
    ids = {n: i for i, n in rec.names.items()}
    by_epoch = res.config.generation.epoch_truncation
    unsaid = (
        "reason not logged; this version truncates by OffsetsForLeaderEpoch"
        if by_epoch
        else "reason not logged; this version truncates to the HW"
    )
    last: dict[str, Any] = {}
    for f in rec.facts:
        if f.kind == "truncate" and "no effect" not in f.detail:
            prev = last.get(f.broker)
            last[f.broker] = f
            if (
                prev is not None
                and prev.offset == f.offset
                and (f.ts - prev.ts).total_seconds() < 1
            ):
                continue  # the fetcher's decision and the log's own line for one truncation
            bid = f" (broker {ids[f.broker]})" if f.broker in ids else ""
            when = f" at {f.ts:%Y-%m-%d %H:%M:%S}" if f.timed else ""
            lines.append(
                f"[logged] {f.broker}{bid} truncated to offset {f.offset}{when} "
                f"({f.detail or unsaid}) [{f.cite}]"
            )
    for a in rec.ambiguities:
        lines.append(f"Ambiguity: {a}")
    return "\n".join(lines)


def _evidence_json(rec: Reconstruction) -> dict[str, Any]:
    ev = evidence(rec)
    return {
        "lost": ev["lost"],
        "diverged": ev["diverged"],
        "why_unknown": ev["why_unknown"],
        "patterns": ev["patterns"],
        "findings": [
            {"claim": f.claim, "cites": f.cites, "how": f.how, "pattern": f.pattern}
            for f in ev["findings"]
        ],
    }
