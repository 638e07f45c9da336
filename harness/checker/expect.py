"""A run against a scenario's ``expect:`` block, and the text a failing check shows.

Checker work, apart from the pytest plugin that reports it (DESIGN-REVIEW P3): what the
``expect:`` block asserts about lost writes, divergent offsets and replica logs, the
per-replica table of predicted, observed and expected logs, the differing positions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reference_model.scenario import Scenario


def read_replicas(folder: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Predicted and observed final logs (records in offset order) from a run folder."""
    import pyarrow.parquet as pq

    df = pq.read_table(folder / "replicas.parquet").to_pandas().sort_values(["replica", "offset"])
    out: dict[str, dict[str, list[str]]] = {"predicted": {}, "observed": {}}
    for (source, replica), g in df.groupby(["source", "replica"]):
        out[str(source)][str(replica)] = [str(r) for r in g["record"]]
    return out["predicted"], out["observed"]


def expected_logs(s: Scenario) -> dict[str, list[str]] | None:
    if s.expect is None or s.expect.replicas is None:
        return None
    return {n: list(r) for n, r in s.expect.replicas}


def expect_problems(
    s: Scenario, lost: list[str], divergent: list[int], logs: dict[str, list[str]]
) -> list[str]:
    """One line per part of the scenario's ``expect:`` block that ``logs`` etc. break."""
    e = s.expect
    if e is None:
        return []
    out = []
    if e.lost_acked is not None and sorted(lost) != list(e.lost_acked):
        out.append(f"  lost_acked: expected {list(e.lost_acked)}, got {sorted(lost)}")
    if e.divergent_offsets is not None and sorted(divergent) != list(e.divergent_offsets):
        out.append(
            f"  divergent_offsets: expected {list(e.divergent_offsets)}, got {sorted(divergent)}"
        )
    for name, want in e.replicas or ():
        got = logs.get(name, [])
        if list(want) != got:
            at = first_difference(list(want), got)
            out.append(
                f"  replicas.{name}: expected {list(want)}, got {got} (first differs at offset "
                f"{at})"
            )
    return out


def first_difference(a: list[str], b: list[str]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def replica_table(
    predicted: dict[str, list[str]],
    observed: dict[str, list[str]] | None,
    expected: dict[str, list[str]] | None,
) -> list[str]:
    """Per-replica final logs side by side, with the first offset where they part."""
    cols = [("predicted", predicted)]
    if observed is not None:
        cols.append(("observed", observed))
    if expected is not None:
        cols.append(("expected", expected))
    names = sorted({n for _, logs in cols for n in logs})
    width = max([10, *(len(" ".join(log)) for _, c in cols for log in c.values())]) + 2
    head = "  replica  " + "".join(f"{title:<{width}}" for title, _ in cols)
    lines = ["per-replica logs (records in offset order):", head]
    for n in names:
        logs = [c.get(n, []) for _, c in cols]
        cells = "".join(f"{(' '.join(log) or '-'):<{width}}" for log in logs)
        note = ""
        if any(log != logs[0] for log in logs[1:]):
            at = min(first_difference(logs[0], log) for log in logs[1:] if log != logs[0])
            note = f"<- differs at offset {at}"
        lines.append(f"  {n:<9}{cells}{note}".rstrip())
    return lines


def diff_rows(differences: list[dict[str, Any]]) -> list[str]:
    if not differences:
        return []
    lines = ["differing positions:"]
    for d in differences[:20]:
        lines.append(
            f"  {d.get('replica')} offset {d.get('offset')}: predicted {d.get('predicted')} "
            f"observed {d.get('observed')} ({d.get('status')})"
        )
    if len(differences) > 20:
        lines.append(f"  ... {len(differences) - 20} more")
    return lines


def lost_step_lines(s: Scenario, pj: dict[str, Any]) -> list[str]:
    steps = pj.get("lost_steps", {})
    return [
        f"model: {rec} lost at step {k}: {s.steps[k - 1].describe(s.brokers)}"
        for rec, k in sorted(steps.items())
        if 1 <= k <= len(s.steps)
    ]
