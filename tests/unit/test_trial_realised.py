"""A broker test plays a run once more only when the harness flagged its own step.

``tests.verdicts.trial_realised`` is test policy with a narrow door: a model mismatch whose
first HW difference carries a note the harness wrote of that step ("harness: ..."), with
the final logs agreeing or parting no earlier than that step. Every other verdict reaches
the test's assertions as it came. And the playbook's fetch window is measured from the
follower's own append (its segment file's mtime), not from when a loaded harness noticed it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.checker.diff import Verdict
from harness.checker.hw import missed_window
from harness.checker.verdicts import two_verdicts
from harness.generator.playbook.fetch import FetchSteps
from tests.verdicts import flagged_by_harness, trial_realised

LATE = "harness: B (or its leader) paused 1.30s after its fetch round, past x=1000"


def _mismatch(hint: str, differences: list[dict[str, Any]] | None = None) -> Verdict:
    v = Verdict("model_mismatch", False, [], [], [], [])
    v.differences = differences or []
    v.hw = {
        "summary": "HW per step (replication-offset-checkpoint): 5/6 agree",
        "mismatches": [
            {
                "step": 6,
                "event": "fetch B",
                "replica": "B",
                "predicted": 1,
                "observed": 2,
                "source": "replication-offset-checkpoint",
                "stable": True,
                "hint": hint,
            }
        ]
    }
    return v


def test_only_a_mismatch_the_harness_flagged_with_agreeing_logs_is_flagged() -> None:
    assert "harness: B (or its leader) paused 1.30s" in flagged_by_harness(_mismatch(LATE))
    assert flagged_by_harness(_mismatch("ISR is ['A'], the model's ['A', 'B']")) == ""
    assert flagged_by_harness(_mismatch(LATE, [{"replica": "A", "offset": 1}])) == ""


def test_logs_that_part_at_the_flagged_step_are_downstream_of_it() -> None:
    """A follower that applied a second round (the flagged step 6) keeps a record the model
    has it truncate: the final logs differ from that step on, and the run is played again.
    Logs that parted earlier, or with no step named, are evidence."""
    v = _mismatch(LATE, [{"replica": "A", "offset": 1, "status": "extra"}])
    for began, flagged in ((6, True), (7, True), (5, False), (None, False)):
        v.first_differing_step = began
        assert (flagged_by_harness(v) != "") is flagged, began
    isr = _mismatch("ISR is ['A'], the model's ['A', 'B']", v.differences)
    isr.first_differing_step = 6
    assert flagged_by_harness(isr) == ""
    assert flagged_by_harness(Verdict("match", True, [], [], [], [])) == ""
    assert flagged_by_harness(None) == ""


def test_a_broker_exiting_unpredicted_is_evidence_not_a_missed_window() -> None:
    v = _mismatch(LATE)
    v.halts = [{"broker": "A", "step": 6, "line": "FATAL ...", "predicted": False}]
    assert flagged_by_harness(v) == ""
    v.halts[0]["predicted"] = True
    assert flagged_by_harness(v) != ""


def test_the_verdicts_say_a_missed_window_apart_from_a_mismatch() -> None:
    """What the CLI's last line, run.json's readers and the plugin see."""
    doc = {"verdict": "model_mismatch", "backend": "local", "extra": {}}
    plain = two_verdicts(doc)
    assert plain.agreement_text().startswith("MISMATCH (the brokers did not do")
    doc["extra"] = {"harness_missed": missed_window(_mismatch(LATE))}
    missed = two_verdicts(doc)
    assert missed.agreement == "mismatch"  # not a match: never green
    assert "not played as scripted (no evidence on the model" in missed.agreement_text()
    assert "paused 1.30s after its fetch round" in missed.last_line()
    assert missed.to_json()["harness_missed"] == doc["extra"]["harness_missed"]
    v = _mismatch(LATE)
    v.harness_missed = missed_window(v)
    assert "not played as scripted" in v.summary()
    assert "not played as scripted" not in _mismatch("").summary()


def test_a_flagged_run_is_played_once_more_and_only_once(tmp_path: Path) -> None:
    played: list[Path] = []

    def play(folder: Path) -> Verdict:
        played.append(folder)
        return _mismatch(LATE)

    with pytest.warns(UserWarning, match=r"played again: the harness did not play a step"):
        verdict, folder = trial_realised(play, tmp_path / "run", lambda v: v)
    assert played == [tmp_path / "run", tmp_path / "run-again"] and folder == played[-1]
    assert verdict.verdict == "model_mismatch"  # the second run is judged as it came


def test_an_unflagged_mismatch_is_judged_as_it_came(tmp_path: Path) -> None:
    played: list[Path] = []

    def play(folder: Path) -> Verdict:
        played.append(folder)
        return _mismatch("")

    verdict, folder = trial_realised(play, tmp_path / "run", lambda v: v)
    assert played == [tmp_path / "run"] and folder == tmp_path / "run"
    assert verdict.verdict == "model_mismatch"


def test_the_fetch_window_opens_at_the_followers_append(tmp_path: Path) -> None:
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(b"x")
    ago = time.time() - 1.5
    os.utime(segment, (ago, ago))
    steps: Any = SimpleNamespace(cluster=SimpleNamespace(partition_dir=lambda _n: tmp_path))
    seen = time.monotonic()
    opened = FetchSteps._appended_at(steps, "B", seen)
    assert seen - 1.6 < opened < seen - 1.4
    # a newer append than the harness's sight (clock skew), or no segment: what was seen
    os.utime(segment, None)
    assert FetchSteps._appended_at(steps, "B", seen - 5.0) == seen - 5.0
    empty: Any = SimpleNamespace(cluster=SimpleNamespace(partition_dir=lambda _n: tmp_path / "no"))
    assert FetchSteps._appended_at(empty, "B", seen) == seen
    # and that window is what the late-pause note measures from
    steps.held = {"B"}
    steps.cluster.brokers = {"B": SimpleNamespace(props={"replica.fetch.wait.max.ms": "1000"})}
    note = FetchSteps._late_pause(steps, "B", opened, seen)
    assert note.startswith("harness: B (or its leader) paused 1.5") and "1000" in note
    assert FetchSteps._late_pause(steps, "B", seen, seen + 0.2) == ""


def _trial(verdict: Verdict, lost: list[str] | None = None) -> Any:
    """What ``harness.trial.trial`` returns, as far as its callers read it."""
    info = SimpleNamespace(
        verdict=verdict.verdict,
        lost_acked=lost or [],
        divergent_offsets=[],
        prevented=None,
        extra={"harness_missed": missed_window(verdict), "failure": ""},
    )
    return (info, None, verdict, None)


def test_the_matrix_moves_a_flagged_first_run_aside_and_plays_the_cell_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A matrix cell's folder is fixed (the pipeline reads ``cells/<cell>``): the first run
    goes to ``played-again/<cell>``, outside ``cells/``, and the cell is played once more."""
    import harness.trial as tr

    runs: list[Path] = []

    def fake(_s: Any, _v: Any, _b: str, folder: Path, *_a: Any, **_k: Any) -> Any:
        runs.append(folder)
        folder.mkdir(parents=True)
        (folder / "run.json").write_text(str(len(runs)))
        flagged = len(runs) == 1
        verdict = _mismatch(LATE) if flagged else Verdict("match", True, [], [], [], [])
        return tr.Trial(*_trial(verdict))

    monkeypatch.setattr(tr, "trial", fake)
    monkeypatch.setattr(tr, "resolve_version", lambda name: name)
    cell = tmp_path / "out" / "cells" / "c1"
    aside = tmp_path / "out" / "played-again"
    assert tr.run_on_brokers(Any, "2.1.1", "local", cell, "c1", aside=aside)  # type: ignore[arg-type]
    assert runs == [cell, cell]
    assert (cell / "run.json").read_text() == "2"  # the cell holds the run judged
    assert (aside / "c1" / "run.json").read_text() == "1"  # the first, kept aside
    # a run that was not flagged is played once, aside or not
    runs.clear()
    monkeypatch.setattr(
        tr, "trial", lambda *a, **k: runs.append(a[3]) or tr.Trial(*_trial(_mismatch("")))
    )
    assert tr.run_on_brokers(Any, "2.1.1", "local", tmp_path / "c2", "c2", aside=aside)  # type: ignore[arg-type]
    assert runs == [tmp_path / "c2"]


def test_confirm_plays_a_flagged_counterexample_again_and_classifies_the_second_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen in CI under load: the hw counterexample on 0.10.2.1 classified a mismatch because
    B was paused 1.13 s after its fetch round; the second run is the one classified."""
    import harness.trial as tr
    from harness.db.catalogue.versions import resolve_version
    from harness.generator.confirm import MISMATCH, NOT_VIOLATED, Counterexample, confirm
    from harness.generator.scenarios import load_scenario

    path = tmp_path / "found.yaml"
    path.write_text(
        "name: found\nbrokers: [A, B]\nleader: A\n"
        "topic: {replication_factor: 2, min_insync_replicas: 2, unclean_leader_election: false}\n"
        "producer: {acks: all}\n"
        "steps: [{produce: m1}, {fetch: B}, {fetch: B}, {crash: A}, {crash: B},"
        " {restart: B}, {detect: A}]\n"
    )
    cx = Counterexample("acked_lost", load_scenario(path), str(path))
    outcomes = [_mismatch(LATE), Verdict("match", True, [], [], [], [])]
    played: list[Path] = []

    def fake(_s: Any, _v: Any, _b: str, folder: Path, *_a: Any, **_k: Any) -> Any:
        played.append(folder)
        return tr.Trial(*_trial(outcomes[len(played) - 1]))

    monkeypatch.setattr(tr, "trial", fake)
    said: list[str] = []
    out = confirm([cx], resolve_version("0.10.2.1"), "local", tmp_path / "runs", said.append)
    first = tmp_path / "runs" / "01-found"
    assert played == [first, first.with_name("01-found-again")]
    assert out[0].classification == NOT_VIOLATED and out[0].played_again == str(first)
    assert out[0].run_folder == str(played[1])
    assert any("played again: the harness did not play a step" in m for m in said)
    # missed twice: a mismatch that says it is no evidence, never a match
    played.clear()
    outcomes[1] = _mismatch(LATE)
    out = confirm([cx], resolve_version("0.10.2.1"), "local", tmp_path / "runs2", said.append)
    assert len(played) == 2 and out[0].classification == MISMATCH
    assert out[0].reason.startswith("not played as scripted on 0.10.2.1, twice")
