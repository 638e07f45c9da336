"""The verdict in words an on-call engineer can paste into a ticket, and as JSON.

The facts come from the model playing the reconstructed scenario (``run_scenario``): which
offsets each replica truncated and at which step, which acknowledged writes the final
leader no longer holds and the step that lost each, which offsets hold different records on
different replicas and the step after which they started to differ. The JSON keys
``replicas``, ``lost_acked`` and ``divergent_offsets`` are those of ``hwchaos run --json``.
"""

from __future__ import annotations

from typing import Any

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


def words(rec: Reconstruction) -> str:
    """The verdict as sentences, one fact per line."""
    res = rec.result
    lines = [
        f"Kafka {rec.version.name} (model generation {res.config.generation.name}); "
        f"replicas {', '.join(res.config.brokers)}; acks={res.config.acks}, "
        f"min.insync.replicas={res.config.min_insync}, "
        f"unclean.leader.election.enable={str(res.config.unclean).lower()}."
    ]
    j = res.to_json()
    lines.append(f"Final leader: {j['leader'] or 'none (partition offline)'}; ISR {j['isr']}.")
    for n, ts in truncations(res).items():
        for t in ts:
            lines.append(
                f"{n} truncated from LEO {t['from_leo']} to offset {t['to_offset']} at step "
                f"{t['step']} ({t['event']}), removing {', '.join(t['removed'])}."
            )
    lost = res.lost_steps()
    writes = {w.record: w for w in res.final.writes}
    if rec.lost_acked:
        for r in rec.lost_acked:
            k = lost.get(r)
            where = f" since step {k} ({res.steps[k].text})" if k else ""
            lines.append(
                f"Acknowledged {r} (offset {writes[r].offset}) can no longer be read{where}."
            )
    else:
        lines.append("No acknowledged write is lost.")
    div = divergence_steps(res)
    if res.divergent_offsets:
        for off in res.divergent_offsets:
            held = ", ".join(
                f"{n}={r.log[off].record}"
                for n, r in zip(res.config.brokers, res.final.replicas, strict=True)
                if off < len(r.log)
            )
            k = div[off]
            cause = f" since step {k} ({res.steps[k].text})" if k else ""
            lines.append(f"Offset {off} diverges: {held}{cause}.")
    else:
        lines.append("The replicas agree on every offset they share.")
    ids = {n: i for i, n in rec.names.items()}
    by_epoch = res.config.generation.epoch_truncation
    unsaid = (
        "reason not logged; this version truncates by OffsetsForLeaderEpoch"
        if by_epoch
        else "reason not logged; this version truncates to the HW"
    )
    last: dict[str, Any] = {}
    for f in rec.facts:
        if f.kind == "truncate" and f.broker in ids and "no effect" not in f.detail:
            prev = last.get(f.broker)
            last[f.broker] = f
            if (
                prev is not None
                and prev.offset == f.offset
                and (f.ts - prev.ts).total_seconds() < 1
            ):
                continue  # the fetcher's decision and the log's own line for one truncation
            lines.append(
                f"Logged: {f.broker} (broker {ids[f.broker]}) truncated to offset {f.offset} at "
                f"{f.ts:%Y-%m-%d %H:%M:%S} ({f.detail or unsaid})."
            )
        elif f.kind == "fatal_truncation":
            lines.append(
                f"Logged: {f.broker} halted at {f.ts:%Y-%m-%d %H:%M:%S}: truncation below its "
                "HW is not allowed (unclean election took a shorter log)."
            )
    for a in rec.ambiguities:
        lines.append(f"Ambiguity: {a}")
    return "\n".join(lines)
