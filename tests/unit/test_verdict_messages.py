"""A broker test's failure message says what the brokers did against the model (the CI
log of a model mismatch once read ``('model_mismatch', '')``)."""

from __future__ import annotations

from pathlib import Path

from harness.checker.diff import Verdict
from harness.checker.hw import HwCheck, HwMismatch
from harness.checker.results import RunInfo
from tests.verdicts import SHOWN, why


def _info(verdict: str) -> RunInfo:
    return RunInfo("r", "s", "3.3.1", "kip320", "local", "all", 1, False, 3, 2, verdict,
                   verdict == "match")


def test_a_mismatch_names_reason_step_positions_hw_and_folder() -> None:
    hw = HwCheck(steps_compared=9, steps_agreeing=8)
    hw.mismatches.append(HwMismatch(7, "heal B", "A", 2, 1, "checkpoint", True))
    diffs = [{"replica": "B", "offset": i, "predicted": "m2", "observed": None}
             for i in range(SHOWN + 2)]
    v = Verdict("model_mismatch", False, ["m2"], [], [], [], differences=diffs,
                first_differing_step=7, reason="B's log differs", hw=hw.to_json())
    text = why(_info("model_mismatch"), v, Path("/tmp/run"))
    assert "verdict: model_mismatch (model match: False)" in text
    assert "reason: B's log differs" in text and "first differing step: 7" in text
    assert "step 7 (heal B): A's HW is 1 (checkpoint), the model says 2" in text
    assert text.count("difference: ") == SHOWN and "2 more of these" in text
    assert "lost acked ['m2'] (predicted [])" in text and "run folder: /tmp/run" in text


def test_no_verdict_says_the_failure() -> None:
    info = _info("error")
    info.extra["failure"] = "cluster start: A exited"
    text = why(info, None)
    assert text.splitlines() == ["verdict: error (model match: False)",
                                 "failure: cluster start: A exited"]
