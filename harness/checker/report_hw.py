"""The report's HW parts: per-step HW columns, the HW check, the consumer oracle, the writes.

Apart from ``report.py`` so the page's layout and these observations evolve separately.
"""

from __future__ import annotations

import html
from typing import Any

from harness.checker.diff import Verdict
from harness.checker.results import RunInfo

HEADER = (
    "<th>observed HW (each broker's checkpoint; leader on the wire)</th>"
    "<th>model HW (as played)</th>"
)


def _get(o: Any, key: str, default: Any = None) -> Any:
    return o.get(key, default) if isinstance(o, dict) else getattr(o, key, default)


def cells(o: Any, names: list[str], realised: list[list[int]], index: int) -> str:
    """Two cells of one step's row: observed HW per replica, and the as-played model's."""
    mhw = dict(zip(names, realised[index - 1], strict=True)) if index <= len(realised) else {}
    ohw: dict[str, int] = dict(_get(o, "hw", {}) or {}) if o is not None else {}
    bad = any(v >= 0 and mhw.get(k) != v for k, v in ohw.items())
    style = " style='background:#f8d4d4'" if bad else ""
    wire = int(_get(o, "leader_hw_wire", -1)) if o is not None else -1
    text = ", ".join(f"{k} {v}" for k, v in ohw.items()) + (f"; wire {wire}" if wire >= 0 else "")
    model = ", ".join(f"{k} {v}" for k, v in mhw.items())
    return f"<td{style}>{html.escape(text)}</td><td>{html.escape(model)}</td>"


def sections(verdict: Verdict | None, info: RunInfo) -> list[str]:
    """The HW check, the consumer oracle and the writes into the brokers' files."""
    parts: list[str] = []
    if verdict is not None and verdict.hw:
        parts.append(f"<h2>High watermark per step</h2><p>{html.escape(verdict.hw['summary'])}</p>")
        if verdict.hw.get("mismatches"):
            items = "".join(
                f"<li>step {m['step']} ({html.escape(m['event'])}): {html.escape(m['replica'])} "
                f"observed {m['observed']}, model {m['predicted']}"
                + (f" ({html.escape(m['hint'])})" if m.get("hint") else "")
                + "</li>"
                for m in verdict.hw["mismatches"]
            )
            parts.append(f"<ul>{items}</ul>")
    if verdict is not None and verdict.consumer:
        c = verdict.consumer
        rows = "".join(
            f"<tr><td>{html.escape(k)}</td><td>{html.escape(str(c['observed'].get(k)))}</td>"
            f"<td>{html.escape(str(c['predicted'].get(k)))}</td></tr>"
            for k in c["observed"]
        )
        parts.append(
            f"<h2>Consumer oracle</h2><p>{html.escape(c['summary'])}</p>"
            "<table><tr><th>anomaly</th><th>observed</th><th>predicted</th></tr>"
            f"{rows}</table>"
        )
    writes = info.extra.get("file_writes") or []
    items = "".join(
        f"<li>step {w['step']}: {html.escape(w['broker'])} {html.escape(w['file'])} = "
        f"{w['value']} ({html.escape(w['source'])}: {html.escape(w['why'])})</li>"
        for w in writes
    )
    parts.append(
        "<h2>Writes into the brokers' files</h2>"
        + (f"<ul>{items}</ul>" if writes else "<p>none: every file was written by Kafka</p>")
    )
    return parts
