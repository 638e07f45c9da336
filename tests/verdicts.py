"""What a broker test prints when a run's verdict is not the expected one.

Why: a failed broker test in a CI log said ``AssertionError: ('model_mismatch', '')`` and
nothing else; the run folder it left was on a CI machine long gone. The message a broker
test asserts with is what the brokers did against the model, in a few lines: the verdict,
its reason, the first differing step and positions, the HW mismatches, unpredicted halts,
loss observed against predicted, and the run folder (kept under pytest's basetemp).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.checker.hw import HwMismatch

SHOWN = 5  # differences / mismatches listed; the rest are counted


def _some(label: str, items: list[Any]) -> list[str]:
    lines = [f"{label}: {x}" for x in items[:SHOWN]]
    if len(items) > SHOWN:
        lines.append(f"... and {len(items) - SHOWN} more of these (verdict.json)")
    return lines


def _hw_line(m: dict[str, Any]) -> str:
    try:
        return HwMismatch(**m).describe()
    except TypeError:  # a field added or renamed since: the raw record still says it
        return str(m)


def why(info: Any, verdict: Any, folder: Path | None = None) -> str:
    """The verdict of one run in lines a CI log can be read from.

    ``info``: the run's :class:`harness.checker.results.RunInfo`; ``verdict``: its
    :class:`harness.checker.diff.Verdict` or None (the run reached none).
    """
    lines = [f"verdict: {info.verdict} (model match: {info.model_match})"]
    failure = info.extra.get("failure")
    if failure:
        lines.append(f"failure: {failure}")
    if verdict is not None:
        if verdict.reason:
            lines.append(f"reason: {verdict.reason}")
        if verdict.first_differing_step is not None:
            lines.append(f"first differing step: {verdict.first_differing_step}")
        lines += _some("difference", verdict.differences)
        hw = verdict.hw or {}
        if hw.get("mismatches"):
            lines.append(hw.get("summary", "HW mismatches"))
            lines += _some("HW mismatch", [_hw_line(m) for m in hw["mismatches"]])
        lines += _some("unpredicted halt", [h for h in verdict.halts if not h.get("predicted")])
        if verdict.checkpoint_mismatches:
            lines.append(f"leader-epoch-checkpoint differs on {verdict.checkpoint_mismatches}")
        lines.append(
            f"lost acked {verdict.lost_acked} (predicted {verdict.predicted_lost_acked}), "
            f"divergent offsets {verdict.divergent_offsets} "
            f"(predicted {verdict.predicted_divergent_offsets})"
        )
    if folder is not None:
        lines.append(f"run folder: {folder}")
    return "\n".join(lines)
