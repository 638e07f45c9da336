"""The timeline: every fact as a Parquet row, and an HTML page with one lane per replica.

Each lane shows the replica's leader spans with their epochs (green), the time it was down
(grey, from the controller noticing the failure to its next start), its truncations (red,
with the offset), restarts (triangles) and ISR changes (blue ticks). The page is static SVG
so it renders in any browser without scripts; the verdict in words and the reconstructed
steps sit under the lanes.
"""

from __future__ import annotations

import html
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from harness.replay.parse import Fact
from harness.replay.reconstruct import Reconstruction
from harness.replay.verdict import evidence

COLUMNS = [
    "ts",
    "broker",
    "file",
    "kind",
    "subject",
    "leader",
    "epoch",
    "offset",
    "hw",
    "isr",
    "detail",
    "line",
]


def rows(rec: Reconstruction) -> list[dict[str, Any]]:
    names = rec.names
    out = []
    for f in rec.facts:
        subject = names.get(f.broker_id, "") if f.broker_id >= 0 else f.broker
        out.append(
            {
                "ts": f.ts,
                "broker": f.broker,
                "file": f.file,
                "kind": f.kind,
                "subject": subject,
                "leader": names.get(f.leader, str(f.leader)) if f.leader >= 0 else "",
                "epoch": f.epoch,
                "offset": f.offset,
                "hw": f.hw,
                "isr": ",".join(names.get(i, str(i)) for i in f.isr),
                "detail": f.detail[:300],
                "line": f.line,
            }
        )
    return out


def write_parquet(rec: Reconstruction, path: Path) -> None:
    df = pd.DataFrame(rows(rec), columns=COLUMNS)
    df["ts"] = pd.to_datetime(df["ts"])
    df.to_parquet(path, index=False)


def _leader_changes(rec: Reconstruction) -> list[tuple[datetime, str | None, int]]:
    """(when, new leader or None, epoch) from controller elections and brokers' own lines."""
    out: list[tuple[datetime, str | None, int]] = []
    for f in rec.facts:
        if f.kind == "election":
            out.append((f.ts, rec.names.get(f.leader) if f.leader >= 0 else None, f.epoch))
        elif f.kind == "become_leader" or (
            f.kind == "leader_and_isr" and f.leader >= 0 and rec.names.get(f.leader) == f.broker
        ):
            out.append((f.ts, f.broker, f.epoch))
    return out


def render_html(rec: Reconstruction, words: str, path: Path, title: str) -> None:
    replicas = list(rec.scenario.brokers)
    facts = [f for f in rec.facts if f.kind != "log_created"]
    if not facts:
        path.write_text("<html><body>no facts</body></html>")
        return
    t0 = min(f.ts for f in facts)
    t1 = max(f.ts for f in facts)
    span = max((t1 - t0).total_seconds(), 1e-3)
    left, width, lane_h, top = 110, 1220, 70, 40

    def x(ts: datetime) -> float:
        return left + (ts - t0).total_seconds() / span * width

    def lane_y(name: str) -> int:
        return top + replicas.index(name) * lane_h

    svg: list[str] = []
    h = top + lane_h * len(replicas) + 30
    svg.append(f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 40}" height="{h}">')
    svg.append(
        '<defs><pattern id="hatch" width="8" height="8" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="8" stroke="#c9a227" '
        'stroke-width="3"/></pattern></defs>'
    )
    logged_lanes = {f.broker for f in rec.facts}
    for n in replicas:
        y = lane_y(n)
        if n in logged_lanes:
            svg.append(
                f'<rect class="lane logged" x="{left}" y="{y}" width="{width}" '
                f'height="{lane_h - 14}" fill="#f4f6f8"/>'
            )
        else:  # a broker only other brokers' lines name: everything about it is inferred
            svg.append(
                f'<rect class="lane inferred" x="{left}" y="{y}" width="{width}" '
                f'height="{lane_h - 14}" fill="url(#hatch)" fill-opacity="0.35" '
                f'stroke="#c9a227" stroke-dasharray="6 4"><title>{n}: no logs; named by other '
                "brokers' lines (inferred)</title></rect>"
            )
        svg.append(f'<text x="10" y="{y + 30}" font-size="16" font-family="sans-serif">{n}</text>')
    # Leader spans.
    changes = _leader_changes(rec)
    down_at: dict[str, list[tuple[datetime, datetime]]] = {n: [] for n in replicas}
    fail: dict[str, datetime] = {}
    for f in facts:
        subj = rec.names.get(f.broker_id) if f.kind == "broker_failure" else f.broker
        if f.kind == "broker_failure" and subj in down_at and subj not in fail:
            fail[subj] = f.ts
        elif f.kind == "start" and f.broker in fail:
            down_at[f.broker].append((fail.pop(f.broker), f.ts))
    for n, ts in fail.items():
        down_at[n].append((ts, t1))
    for n, downs in down_at.items():
        for a, b in downs:
            y = lane_y(n)
            svg.append(
                f'<rect x="{x(a):.1f}" y="{y}" width="{max(x(b) - x(a), 2):.1f}" '
                f'height="{lane_h - 14}" fill="#b0b0b0"><title>{n} down</title></rect>'
            )
    current: tuple[datetime, str | None, int] | None = None
    spans: list[tuple[str, datetime, datetime, int]] = []
    for ch in sorted(changes, key=lambda c: c[0]):
        if current is not None and current[1] is not None and (ch[1], ch[2]) != current[1:]:
            spans.append((current[1], current[0], ch[0], current[2]))
        if current is None or (ch[1], ch[2]) != current[1:]:
            current = ch
    if current is not None and current[1] is not None:
        spans.append((current[1], current[0], t1, current[2]))
    for n, a, b, epoch in spans:
        if n not in replicas:
            continue
        for da, _db in down_at[n]:
            if a <= da < b:
                b = da
        y = lane_y(n) + 8
        svg.append(
            f'<rect x="{x(a):.1f}" y="{y}" width="{max(x(b) - x(a), 3):.1f}" height="18" '
            f'fill="#3a9d5d"><title>{n} leader, epoch {epoch}</title></rect>'
        )
        svg.append(
            f'<text x="{x(a) + 3:.1f}" y="{y + 14}" font-size="12" fill="white" '
            f'font-family="sans-serif">leader e{epoch}</text>'
        )
    for f in facts:
        if f.broker not in replicas:
            continue
        y = lane_y(f.broker)
        px = x(f.ts)
        when = f"{f.ts:%H:%M:%S.%f}" if f.timed else "time not logged"
        tip = html.escape(f"{f.cite} {when} {f.kind} {f.line}"[:300])
        cls = "logged" if f.timed else "logged untimed"
        if f.kind == "truncate" and "no effect" not in f.detail:
            svg.append(
                f'<line class="{cls}" x1="{px:.1f}" y1="{y}" x2="{px:.1f}" y2="{y + lane_h - 14}" '
                f'stroke="#d62728" stroke-width="3"><title>{tip}</title></line>'
            )
            svg.append(
                f'<text x="{px + 3:.1f}" y="{y + 44}" font-size="11" fill="#d62728" '
                f'font-family="sans-serif">trunc {f.offset}</text>'
            )
        elif f.kind == "start":
            svg.append(
                f'<polygon points="{px:.1f},{y + 52} {px + 8:.1f},{y + 44} {px:.1f},{y + 36}" '
                f'fill="#1f77b4"><title>{tip}</title></polygon>'
            )
        elif f.kind == "isr_change":
            svg.append(
                f'<line x1="{px:.1f}" y1="{y + 30}" x2="{px:.1f}" y2="{y + 56}" stroke="#1f5fb4" '
                f'stroke-width="2"><title>{tip}</title></line>'
            )
        elif f.kind == "fatal_truncation":
            svg.append(
                f'<circle cx="{px:.1f}" cy="{y + 28}" r="7" fill="black">'
                f"<title>{tip}</title></circle>"
            )
    for n, ts in ((n, a) for n, sp in down_at.items() for a, _ in sp):
        y = lane_y(n)
        px = x(ts)
        svg.append(
            f'<text x="{px - 6:.1f}" y="{y + 34}" font-size="18" fill="black" '
            f'font-family="sans-serif">✕<title>{n} failed (controller)</title></text>'
        )
    svg.append(
        f'<text x="{left}" y="{h - 8}" font-size="12" font-family="sans-serif">'
        f"{t0:%Y-%m-%d %H:%M:%S}</text>"
    )
    svg.append(
        f'<text x="{left + width - 130}" y="{h - 8}" font-size="12" font-family="sans-serif">'
        f"{t1:%H:%M:%S}</text>"
    )
    svg.append("</svg>")
    steps = "".join(
        f'<tr class="{_step_class(w)}"><td>{k}</td>'
        f"<td>{html.escape(e.describe(rec.scenario.brokers))}</td>"
        f"<td>{html.escape(w)}</td></tr>"
        for k, (e, w) in enumerate(zip(rec.scenario.steps, rec.step_facts, strict=False), 1)
    )
    found = "".join(
        f'<li class="{f.how}"><b>{f.how}</b>: {html.escape(f.claim)} '
        f"<code>{html.escape(', '.join(f.cites))}</code></li>"
        for f in evidence(rec)["findings"]
    )
    untimed = (
        " Lines without timestamps are placed in written order; their times are unknown."
        if any(not f.timed for f in facts)
        else ""
    )
    doc = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:20px}} pre{{background:#f4f6f8;padding:10px}}
td{{padding:2px 8px;border-bottom:1px solid #ddd}}
tr.inferred,li.inferred,.inferred-key{{background:#fbf1cf}}</style></head>
<body><h2>{html.escape(title)}</h2>
<p>Green: leader (epoch); grey: down; red: truncation (offset); triangle: start;
blue tick: ISR change; ✕: failure noticed by the controller. Marks on a plain lane are
<b>logged</b> (hover: the file:line); a <span style="background:#f3e2a9">hatched, dashed
lane</span> is a broker no log speaks for (<b>inferred</b> from other brokers' lines). In
the tables, <span class="inferred-key">yellow rows</span> are inferred, white rows rest on
a cited line.{untimed}</p>
{"".join(svg)}
<h3>Verdict</h3><pre>{html.escape(words)}</pre>
<h3>Findings</h3><ul>{found}</ul>
<h3>Reconstructed steps</h3><table>{steps}</table>
</body></html>
"""
    path.write_text(doc, encoding="utf-8")


def _step_class(why: str) -> str:
    """``logged`` when the step cites a line (``[file:line]``) and infers nothing."""
    return "logged" if "[" in why and "inferred" not in why else "inferred"


def facts_of(rec: Reconstruction) -> list[Fact]:
    return rec.facts
