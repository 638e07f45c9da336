"""A run's HTML report: per-replica log pictures, predicted against observed, step by step.

One self-contained file (inline CSS, no scripts) so it opens from a CI artifact folder. Each
replica's log is a row of cells, one per offset, coloured by record; a red border marks an
offset where the observed record differs from the prediction.
"""

from __future__ import annotations

import hashlib
import html
from pathlib import Path
from typing import Any

from harness.checker.diff import Verdict
from harness.checker.results import RunInfo
from harness.db.catalogue.versions import KafkaVersion
from reference_model.run import RunResult
from reference_model.scenario import Scenario

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.4em} h2{font-size:1.1em;margin-top:1.6em}
.verdict{padding:.6em 1em;border-radius:6px;display:inline-block;font-weight:600}
.ok{background:#d9f2d9}.bad{background:#f8d4d4}.warn{background:#fff1c2}
table{border-collapse:collapse;margin:.4em 0}
td,th{border:1px solid #ccc;padding:2px 6px;font-size:.85em;text-align:left}
.log td.rec{width:3.2em;text-align:center;font-family:monospace}
.log td.diff{outline:3px solid #d00;outline-offset:-3px}
.log th{background:#f4f4f4}
.muted{color:#777}
"""


def _colour(record: str) -> str:
    h = int(hashlib.sha1(record.encode()).hexdigest()[:6], 16)
    return f"hsl({h % 360},65%,80%)"


def _log_row(label: str, entries: dict[int, str], width: int, other: dict[int, str]) -> str:
    cells = [f"<th>{html.escape(label)}</th>"]
    for off in range(width):
        rec = entries.get(off)
        if rec is None:
            cells.append("<td class='rec muted'>·</td>")
            continue
        cls = "rec diff" if other.get(off) != rec else "rec"
        cells.append(f"<td class='{cls}' style='background:{_colour(rec)}'>{html.escape(rec)}</td>")
    return "<tr>" + "".join(cells) + "</tr>"


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
    pj = prediction.to_json()
    predicted = {n: {e["offset"]: e["record"] for e in v} for n, v in pj["replicas"].items()}
    seen = {n: {o: r for o, _e, r in observed.get(n, [])} for n in scenario.brokers}
    width = max([len(v) for v in predicted.values()] + [len(v) for v in seen.values()] + [1])
    if verdict is None:
        cls, text = "warn", f"{info.verdict}: {info.extra.get('failure', '')}"
    else:
        cls, text = ("ok" if verdict.model_match else "bad"), verdict.summary()
    prevented = info.prevented
    parts = [
        "<!doctype html><meta charset='utf-8'>",
        f"<title>hwchaos {html.escape(scenario.name)} on Kafka {version.name}</title>",
        f"<style>{CSS}</style>",
        f"<h1>{html.escape(scenario.name)} on Kafka {version.name} "
        f"<span class='muted'>({version.generation}, {info.backend})</span></h1>",
        f"<p class='verdict {cls}'>{html.escape(text)}</p>",
        f"<p>{html.escape(scenario.description)}</p>",
        f"<p>acks={info.acks}, min.insync.replicas={info.min_insync}, "
        f"unclean={str(info.unclean).lower()}, rf={info.rf}; "
        f"run took {info.extra.get('seconds', '?')}s</p>",
        "<h2>Replica logs at the end (top: predicted, bottom: observed on disk)</h2>",
        "<table class='log'><tr><th>offset</th>"
        + "".join(f"<th>{o}</th>" for o in range(width))
        + "</tr>",
    ]
    for n in scenario.brokers:
        parts.append(_log_row(f"{n} predicted", predicted.get(n, {}), width, seen.get(n, {})))
        parts.append(_log_row(f"{n} observed", seen.get(n, {}), width, predicted.get(n, {})))
    parts.append("</table>")
    parts.append(
        f"<p>acknowledged: {pj['acked']} · lost (predicted): {pj['lost_acked']} · "
        f"lost (observed): {info.lost_acked} · divergent offsets (predicted): "
        f"{pj['divergent_offsets']} · (observed): {info.divergent_offsets}</p>"
    )
    parts.append(
        "<h2>Steps</h2><table><tr><th>#</th><th>step</th><th>model note</th>"
        "<th>realised on the brokers</th><th>leader/epoch</th>"
        "<th>observed LEO per replica</th><th>predicted LEO</th><th>s</th></tr>"
    )
    by_step = {o.step: o for o in observations}
    for s in prediction.steps[1:]:
        o = by_step.get(s.index)
        pleo = {n: r.leo for n, r in zip(scenario.brokers, s.state.replicas, strict=True)}
        oleo = o.leo if o else {}
        mismatch = o is not None and any(v >= 0 and pleo.get(k) != v for k, v in oleo.items())
        style = " style='background:#f8d4d4'" if mismatch else ""
        parts.append(
            f"<tr{style}><td>{s.index}</td><td>{html.escape(s.text)}</td>"
            f"<td>{html.escape('; '.join(n for n in s.notes if n))}</td>"
            f"<td>{html.escape(_realised(o))}</td>"
            f"<td>{html.escape(o.leader if o else '')}/{o.leader_epoch if o else ''}</td>"
            f"<td>{html.escape(str(oleo))}</td><td>{html.escape(str(pleo))}</td>"
            f"<td>{o.seconds if o else ''}</td></tr>"
        )
    if prevented is not None:
        # The step the model says this version refuses: not played, so no observation.
        parts.append(
            f"<tr class='warn'><td>{prevented.get('step')}</td>"
            f"<td>{html.escape(str(prevented.get('event', '')))}</td>"
            f"<td>prevented: {html.escape(str(prevented.get('reason', '')))}</td>"
            f"<td>{html.escape(str(prevented.get('harness_note', '')))}</td>"
            "<td colspan='4' class='muted'>not played</td></tr>"
        )
    parts.append("</table>")
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
    if verdict is not None and verdict.epoch_mismatches:
        parts.append(f"<h2>Leader epochs that differ</h2><p>{verdict.epoch_mismatches}</p>")
    path.write_text("\n".join(parts))


def _realised(o: Any) -> str:
    """How the harness made the abstract step happen (notes prefixed ``realised: ``)."""
    if o is None:
        return ""
    return "; ".join(n.removeprefix("realised: ") for n in o.notes if n.startswith("realised: "))
