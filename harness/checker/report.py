"""A run's HTML report: per-replica log pictures, predicted against observed, step by step.

One self-contained file (inline CSS, no scripts) so it opens from a CI artifact folder. On
top, the two verdicts side by side: agreement with the model, and safety (loss is red even
when the model predicted it). Each replica's log is a row of cells, one per offset, coloured
by record; a red border marks an offset where the observed record differs from the
prediction; an empty log is one cell saying so. Wide tables scroll inside their own box.
"""

from __future__ import annotations

import hashlib
import html
from pathlib import Path
from typing import Any

from harness.checker import report_hw
from harness.checker.diff import Verdict
from harness.checker.realised import realised_hws
from harness.checker.results import RunInfo
from harness.checker.verdicts import TwoVerdicts, two_verdicts
from harness.db.catalogue.versions import KafkaVersion
from reference_model.run import RunResult
from reference_model.scenario import Scenario

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:100em}
h1{font-size:1.4em} h2{font-size:1.1em;margin-top:1.6em}
.verdicts{display:flex;gap:.8em;flex-wrap:wrap}
.verdict{padding:.6em 1em;border-radius:6px;display:inline-block;font-weight:600}
.verdict .what{font-weight:400;font-size:.8em;display:block;color:#444}
.ok{background:#d9f2d9}.bad{background:#f8d4d4}.warn{background:#fff1c2}
.loss{background:#d00;color:#fff}.loss .what{color:#fee}
.scroll{overflow-x:auto;max-width:100%;border:1px solid #eee}
table{border-collapse:collapse;margin:.4em 0}
td,th{border:1px solid #ccc;padding:2px 6px;font-size:.85em;text-align:left}
.log td.rec{width:3.2em;min-width:3.2em;text-align:center;font-family:monospace}
.log td.diff{outline:3px solid #d00;outline-offset:-3px}
.log td.none{background:#fff;border-color:#eee}
.log td.emptylog{color:#777;font-style:italic;background:#fafafa}
.log th{background:#f4f4f4;white-space:nowrap}
.muted{color:#777}
.lost{color:#b00;font-weight:600}
.steps td:nth-child(2){white-space:nowrap}
.steps td:nth-child(3),.steps td:nth-child(4){min-width:14em}
"""

# How the playbook makes each step kind happen when it leaves no ``realised:`` note
# (harness.generator.playbook's module docstring): shown marked "by design", so a reader
# knows which cells were observed and which describe the mechanism.
HOW = {
    "produce": "producer sends to the leader it knows",
    "fetch": "follower resumed until its log has the leader's LEO and the HW moved, paused",
    "fetch_request": "follower resumed for one Fetch the leader processes; answer unread",
    "fetch_response": "follower processes its outstanding fetch answer",
    "leader_epoch_request": "follower resumed for OffsetsForLeaderEpoch and truncation",
    "checkpoint": "replication-offset-checkpoint contents fixed for the next restart",
    "flush": "log flushed: recovery point = LEO for the next power loss",
    "crash": "SIGKILL of the broker's JVM (page cache kept)",
    "power_loss": "SIGKILL, then the log cut to its flushed prefix",
    "clean_shutdown": "controlled shutdown (SIGTERM)",
    "restart": "JVM started again (same id, port, data dir) with the leader held",
    "pause": "SIGSTOP",
    "resume": "SIGCONT",
    "detect": "registration deleted, as session expiry does; controller's decision awaited",
    "elect": "election requested from the controller",
    "isr_shrink": "follower held until the leader drops it from the ISR",
    "leader_and_isr": "held-back LeaderAndIsr delivered",
    "stale_checkpoint": "replication-offset-checkpoint overwritten with the given HW",
    "partition": "iptables DROP between the nodes",
    "heal": "iptables rules removed",
}


def _colour(record: str) -> str:
    h = int(hashlib.sha1(record.encode()).hexdigest()[:6], 16)
    return f"hsl({h % 360},65%,80%)"


def _log_row(label: str, entries: dict[int, str], width: int, other: dict[int, str]) -> str:
    """One replica's log: a cell per offset; an empty log is one cell saying so."""
    cells = [f"<th>{html.escape(label)}</th>"]
    if not entries:
        cells.append(f"<td class='emptylog' colspan='{width}'>empty log</td>")
        return "<tr>" + "".join(cells) + "</tr>"
    for off in range(width):
        rec = entries.get(off)
        if rec is None:
            cells.append("<td class='none'></td>")  # past the log end: nothing there
            continue
        cls = "rec diff" if other.get(off) != rec else "rec"
        cells.append(f"<td class='{cls}' style='background:{_colour(rec)}'>{html.escape(rec)}</td>")
    return "<tr>" + "".join(cells) + "</tr>"


def _get(o: Any, key: str, default: Any = None) -> Any:
    """An observation field, whether an Observation or its JSON (observations.json)."""
    return o.get(key, default) if isinstance(o, dict) else getattr(o, key, default)


def write_report(
    path: Path,
    scenario: Scenario,
    version: KafkaVersion,
    prediction: RunResult,
    observed: dict[str, list[tuple[int, int, str]]],
    observations: list[Any],
    info: RunInfo,
    verdict: Verdict | None,
) -> None:
    """Write ``report.html``: both verdicts on top, then logs, loss causes and steps."""
    pj = prediction.to_json()
    predicted = {n: {e["offset"]: e["record"] for e in v} for n, v in pj["replicas"].items()}
    seen = {n: {o: r for o, _e, r in observed.get(n, [])} for n in scenario.brokers}
    width = max([len(v) for v in predicted.values()] + [len(v) for v in seen.values()] + [1])
    both = two_verdicts(info)
    prevented = info.prevented
    parts = [
        "<!doctype html><meta charset='utf-8'>",
        f"<title>hwchaos {html.escape(scenario.name)} on Kafka {version.name}</title>",
        f"<style>{CSS}</style>",
        f"<h1>{html.escape(scenario.name)} on Kafka {version.name} "
        f"<span class='muted'>({version.generation}, {info.backend})</span></h1>",
        _verdict_boxes(both, verdict, info),
        f"<p>{html.escape(scenario.description)}</p>",
        f"<p>acks={info.acks}, min.insync.replicas={info.min_insync}, "
        f"unclean.leader.election.enable={str(info.unclean).lower()}, "
        f"replication.factor={info.rf}; run took {info.extra.get('seconds', '?')}s</p>",
        "<h2>Replica logs at the end (top: predicted, bottom: observed on disk)</h2>",
        "<div class='scroll'><table class='log'><tr><th>offset</th>"
        + "".join(f"<th>{o}</th>" for o in range(width))
        + "</tr>",
    ]
    for n in scenario.brokers:
        parts.append(_log_row(f"{n} predicted", predicted.get(n, {}), width, seen.get(n, {})))
        parts.append(_log_row(f"{n} observed", seen.get(n, {}), width, predicted.get(n, {})))
    parts.append("</table></div>")
    parts.append(
        f"<p>acknowledged: {', '.join(pj['acked']) or 'none'} · lost (predicted): "
        f"{_list(pj['lost_acked'])} · lost (observed): {_list(info.lost_acked)} · divergent "
        f"offsets (predicted): {_list(pj['divergent_offsets'])} · (observed): "
        f"{_list(info.divergent_offsets)}</p>"
    )
    parts += _loss_causes(scenario, pj, info, both.safety_known)
    parts.append(
        "<h2>Steps</h2><div class='scroll'><table class='steps'><tr><th>#</th><th>step</th>"
        "<th>model note</th><th>on the brokers</th><th>leader/epoch</th>"
        "<th>observed LEO per replica</th><th>predicted LEO</th>"
        + report_hw.HEADER
        + "<th>s</th></tr>"
    )
    by_step = {_get(o, "step"): o for o in observations}
    realised = realised_hws(prediction)
    for s in prediction.steps[1:]:
        o = by_step.get(s.index)
        pleo = {n: r.leo for n, r in zip(scenario.brokers, s.state.replicas, strict=True)}
        oleo = _get(o, "leo", {}) if o is not None else {}
        mismatch = o is not None and any(v >= 0 and pleo.get(k) != v for k, v in oleo.items())
        style = " style='background:#f8d4d4'" if mismatch else ""
        lead = f"{_get(o, 'leader') or '-'}/{_get(o, 'leader_epoch')}" if o is not None else ""
        note = "; ".join(n for n in s.notes if n) or "-"
        parts.append(
            f"<tr{style}><td>{s.index}</td><td>{html.escape(s.text)}</td>"
            f"<td>{html.escape(note)}</td>"
            f"<td>{_on_brokers(o, scenario, s.index)}</td>"
            f"<td>{html.escape(lead)}</td>"
            f"<td>{html.escape(_leo(oleo))}</td><td>{html.escape(_leo(pleo))}</td>"
            + report_hw.cells(o, list(scenario.brokers), realised, s.index)
            + f"<td>{_get(o, 'seconds', '') if o is not None else ''}</td></tr>"
        )
    if prevented is not None:
        # The step the model says this version refuses: not played, so no observation.
        parts.append(
            f"<tr class='warn'><td>{prevented.get('step')}</td>"
            f"<td>{html.escape(str(prevented.get('event', '')))}</td>"
            f"<td>prevented: {html.escape(str(prevented.get('reason', '')))}</td>"
            f"<td>{html.escape(str(prevented.get('harness_note', '')))}</td>"
            "<td colspan='6' class='muted'>not played</td></tr>"
        )
    parts.append("</table></div>")
    if prevented is not None:
        reached = "stopped there" if prevented.get("reached") else "did not get there"
        parts.append(
            "<h2>Prevented</h2>"
            f"<p>The model predicts step {prevented.get('step')} "
            f"(<code>{html.escape(str(prevented.get('event', '')))}</code>) impossible on Kafka "
            f"{html.escape(version.name)}: {html.escape(str(prevented.get('reason', '')))}</p>"
            f"<p>Harness (the run {reached}): "
            f"{html.escape(str(prevented.get('harness_note', '')))}</p>"
        )
    parts += report_hw.sections(verdict, info)
    if verdict is not None and verdict.epoch_mismatches:
        parts.append(
            "<h2>Leader epochs that differ</h2><div class='scroll'><table>"
            "<tr><th>replica</th><th>offset</th><th>predicted</th><th>observed</th></tr>"
            + "".join(
                f"<tr><td>{html.escape(str(m.get('replica')))}</td><td>{m.get('offset')}</td>"
                f"<td>{m.get('epoch_predicted')}</td><td>{m.get('epoch_observed')}</td></tr>"
                for m in verdict.epoch_mismatches
            )
            + "</table></div>"
        )
    parts.append(_timings_section(info.extra.get("timings")))
    path.write_text("\n".join(parts))


def _list(items: list[Any]) -> str:
    return ", ".join(str(i) for i in items) if items else "none"


def _leo(leo: dict[str, int]) -> str:
    return " ".join(f"{k}={'-' if v < 0 else v}" for k, v in leo.items()) or "-"


def _verdict_boxes(both: TwoVerdicts, verdict: Verdict | None, info: RunInfo) -> str:
    """Agreement and safety side by side; loss is red whatever the agreement says."""
    if verdict is not None:
        detail = verdict.summary()
    else:
        detail = str(info.extra.get("failure", "")) or info.verdict
    cls = {"match": "ok", "prevented": "ok", "mismatch": "bad"}.get(both.agreement, "warn")
    agreement = (
        f"<p class='verdict {cls}' id='agreement'>agreement: "
        f"{html.escape(both.agreement)}<span class='what'>{html.escape(detail)}</span></p>"
    )
    scls = "loss" if both.lost else ("ok" if both.safety_known else "warn")
    safety = (
        f"<p class='verdict {scls}' id='safety'>safety: {html.escape(both.safety)}"
        f"<span class='what'>{html.escape(both.safety_text())}</span></p>"
    )
    return f"<div class='verdicts'>{agreement}{safety}</div>"


def _loss_causes(scenario: Scenario, pj: dict[str, Any], info: RunInfo, judged: bool) -> list[str]:
    """Each lost write with the step that lost it, or why no step is named."""
    steps = pj.get("lost_steps", {})
    lost = sorted(set(pj["lost_acked"]) | set(info.lost_acked))
    if not lost:
        return []
    rows = []
    for rec in lost:
        where = []
        if rec in info.lost_acked:
            where.append("observed")
        if rec in pj["lost_acked"]:
            where.append("predicted")
        k = steps.get(rec)
        if k is not None and 1 <= k <= len(scenario.steps):
            cause = f"step {k}: {scenario.steps[k - 1].describe(scenario.brokers)}"
        elif rec not in pj["lost_acked"]:
            cause = (
                "no step: the model keeps this write, so it names no step that loses it "
                "(the brokers disagree with the model; see the steps below for the first "
                "step whose observed LEO differs)"
            )
        elif pj.get("leader") is None:
            cause = "no step: the partition ends offline, so no replica serves the write"
        else:
            cause = "no step: the write was never on the final leader's log at its offset"
        rows.append(
            f"<tr><td class='lost'>{html.escape(rec)}</td><td>{' and '.join(where)}</td>"
            f"<td>{html.escape(cause)}</td></tr>"
        )
    head = "<h2>Lost acknowledged writes</h2>"
    if not judged:
        head += "<p class='muted'>The run stopped early: the observed column is incomplete.</p>"
    return [
        head,
        "<div class='scroll'><table><tr><th>record</th><th>lost</th><th>cause</th></tr>",
        *rows,
        "</table></div>",
    ]


def _on_brokers(o: Any, scenario: Scenario, index: int) -> str:
    """What happened on the brokers at this step: the playbook's notes (how the step was
    realised, what was observed), else how the playbook plays this kind of step."""
    if o is None:
        return "<span class='muted'>not played (the run stopped earlier)</span>"
    notes = [str(n).removeprefix("realised: ") for n in _get(o, "notes", []) or []]
    if notes:
        return html.escape("; ".join(notes))
    kind = scenario.steps[index - 1].kind if 1 <= index <= len(scenario.steps) else ""
    how = HOW.get(kind, "played")
    return f"{html.escape(how)} <span class='muted'>(by design)</span>"


def render_folder(folder: Path, path: Path | None = None) -> Path:
    """Write a run folder's report again from its files (``report.html`` by default).

    Everything observed comes from the folder (run.json, verdict.json, replicas.parquet,
    observations.json); the prediction is the model replayed on the folder's scenario.yaml,
    which is what the runner did. Used to refresh reports of runs made by an older harness.
    """
    import json
    from dataclasses import fields

    import pyarrow.parquet as pq

    from harness.db.catalogue.versions import resolve_version
    from harness.generator.scenarios import load_scenario
    from reference_model.run import run_scenario

    info = RunInfo.from_json((folder / "run.json").read_text())
    scenario = load_scenario(folder / "scenario.yaml")
    version = resolve_version(info.version)
    prediction = run_scenario(scenario, version.generation)
    df = pq.read_table(folder / "replicas.parquet").to_pandas()
    obs = df[df.source == "observed"].sort_values(["replica", "offset"])
    logs = {
        str(n): [(int(r.offset), int(r.epoch), str(r.record)) for r in g.itertuples()]
        for n, g in obs.groupby("replica")
    }
    observations = json.loads((folder / "observations.json").read_text())
    detail = json.loads((folder / "verdict.json").read_text()).get("verdict_detail")
    known = {f.name for f in fields(Verdict)}  # a newer harness may have written more
    verdict = Verdict(**{k: v for k, v in detail.items() if k in known}) if detail else None
    out = path or folder / "report.html"
    write_report(out, scenario, version, prediction, logs, observations, info, verdict)
    return out


def _timings_section(timings: dict[str, Any] | None) -> str:
    """"Where the time went": each phase's wall seconds, its fences' share and its slowest
    fence, from ``run.json``'s ``extra.timings`` (empty for a run without timings)."""
    if not timings or not timings.get("phases"):
        return ""
    rows = []
    for p in timings["phases"]:
        fences = p.get("fences", [])
        slow = max(fences, key=lambda f: f["seconds"], default=None)
        slowest = (
            f"{html.escape(slow['what'])} ({slow['seconds']:.2f}s"
            f"{'' if slow.get('ok', True) else ', not reached'})"
            if slow
            else ""
        )
        rows.append(
            f"<tr><td>{html.escape(p['name'])}</td><td>{p['seconds']:.2f}</td>"
            f"<td>{p.get('fence_seconds', 0.0):.2f}</td><td>{len(fences)}</td>"
            f"<td>{slowest}</td></tr>"
        )
    cpu = timings.get("cpu_seconds", {})
    cpu_line = (
        f"<p class='muted'>CPU: harness {cpu.get('harness', '?')}s, "
        f"brokers {cpu.get('jvms', '?')}s</p>"
        if cpu
        else ""
    )
    return (
        "<h2>Where the time went</h2><table><tr><th>phase</th><th>s</th>"
        "<th>in fences (s)</th><th>fences</th><th>slowest fence</th></tr>"
        + "".join(rows)
        + "</table>"
        + cpu_line
    )
