"""What a broker test prints when a run's verdict is not the expected one, and when it may
play a run once more.

Why: a failed broker test in a CI log said ``AssertionError: ('model_mismatch', '')`` and
nothing else; the run folder it left was on a CI machine long gone. The message a broker
test asserts with is what the brokers did against the model, in a few lines: the verdict,
its reason, the first differing step and positions, the HW mismatches, unpredicted halts,
loss observed against predicted, and the run folder (kept under pytest's basetemp). A run
is played once more only when the harness itself wrote that it did not play a step as
scripted (:func:`trial_realised`); never for any other mismatch.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from harness.checker.hw import HwMismatch, missed_window
from harness.checker.liveness import LivenessMismatch
from harness.trial import once_more_if_missed

T = TypeVar("T")
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
        lines += _some("liveness", [LivenessMismatch(**m).describe() for m in verdict.liveness])
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


def flagged_by_harness(verdict: Any) -> str:
    """The harness's own note on the step where a model mismatch first shows; "" otherwise
    (:func:`harness.checker.hw.missed_window`, which the checker also writes into the
    verdict as ``harness_missed`` and the pytest plugin plays once more on)."""
    return missed_window(verdict)


def trial_realised(
    play: Callable[[Path], T], folder: Path, verdict_of: Callable[[T], Any]
) -> tuple[T, Path]:
    """``play(folder)``; once more in ``folder``-again when the harness flagged its own step
    (:func:`harness.trial.once_more_if_missed`, what ``run``, ``matrix`` and ``explore
    --confirm`` do). Returns the run the test judges and its folder.

    Only a mismatch :func:`flagged_by_harness` names is played again, once, and the test
    then judges the second run; a warning in the test report says what the first run's
    harness wrote, with its folder (kept). Any other verdict is the test's to judge.
    """

    def say(m: str) -> None:
        warnings.warn(m, stacklevel=3)

    judged, where, _first = once_more_if_missed(
        play, folder, lambda t: flagged_by_harness(verdict_of(t)), say
    )
    return judged, where
