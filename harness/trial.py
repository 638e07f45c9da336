"""One trial: predict, play, judge, store. What ``run``, ``matrix``, ``explore --confirm`` and
the pytest plugin all call, so a run means the same thing wherever it starts.

Four calls, each one job (DESIGN-REVIEW P3, Jepsen's core/checker/store split):
:func:`reference_model.run.run_scenario` predicts; :func:`harness.generator.runner.play`
plays and returns a :class:`~harness.generator.record.RunRecord`;
:func:`harness.checker.judge.judge` compares; :mod:`harness.checker.store` writes the folder.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, TypeVar

from harness.checker import store
from harness.checker.diff import Verdict
from harness.checker.hw import missed_window
from harness.checker.judge import judge
from harness.checker.results import RunInfo
from harness.db.catalogue.versions import KafkaVersion, resolve_version
from harness.db.mode import check_controllers
from harness.generator.playbook.dispatch import check_played
from harness.generator.record import RunRecord
from harness.generator.runner import play
from harness.generator.warm import WarmClusters
from reference_model.run import RunResult, run_scenario
from reference_model.scenario import Scenario

# Verdicts of runs that reached their end (a mismatch included): the cell is done.
CONCLUDED = ("match", "prevented", "model_mismatch", "step_prevented")

T = TypeVar("T")


class Trial(NamedTuple):
    """What a trial left: ``run.json``'s content, the prediction, the verdict, the record."""

    info: RunInfo
    prediction: RunResult
    verdict: Verdict | None
    record: RunRecord


def trial(
    scenario: Scenario,
    version: KafkaVersion,
    backend: str,
    folder: Path,
    run_id: str,
    progress: Callable[[str], None],
    controllers: int = 1,
    warm: WarmClusters | None = None,
) -> Trial:
    """Predict, play on a ``backend`` cluster (fresh, or a clean one of ``warm``), judge,
    and write the run folder."""
    check_controllers(version, controllers)  # bad input: one line, and no folder left behind
    check_played(scenario.steps)  # a model-only step kind: the same
    prediction = run_scenario(scenario, version.generation)
    store.write_inputs(folder, scenario, prediction)
    record = play(
        scenario,
        version,
        prediction,
        backend,
        folder,
        run_id,
        progress,
        controllers=controllers,
        warm=warm,
    )
    verdict = judge(prediction, record)
    info = store.write_outcome(prediction, record, verdict)
    return Trial(info, prediction, verdict, record)


def free_folder(folder: Path) -> Path:
    """``folder``, or ``folder``-2, -3 ... when it exists."""
    k, out = 1, folder
    while out.exists():
        k += 1
        out = folder.with_name(f"{folder.name}-{k}")
    return out


def once_more_if_missed(
    play: Callable[[Path], T],
    folder: Path,
    missed_of: Callable[[T], str],
    say: Callable[[str], None],
    aside: Path | None = None,
) -> tuple[T, Path, Path | None]:
    """``play(folder)``; once more when the harness says it did not play a step as scripted.

    Why: a step with a window the harness must act in (a follower paused while its next
    Fetch is parked at the leader) can be missed on a loaded machine, and the run says so
    (:func:`harness.checker.hw.missed_window`): such a run is no evidence on the model either
    way, and a mismatch it shows is the harness's. Every entry point (``run``, ``matrix``,
    ``explore --confirm``, the pytest plugin, the broker tests) plays it once more and judges
    the second run as it comes; the first is kept and named (``say``). ``aside``: where the
    first run goes, the second taking ``folder`` (the matrix's cell folders are fixed);
    without it the second run plays in ``folder``-again. Returns the run to judge, its
    folder, and the first run's folder when it was played again.
    """
    first = play(folder)
    missed = missed_of(first)
    if not missed:
        return first, folder, None
    if aside is not None:
        kept = free_folder(aside / folder.name)
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(folder), str(kept))
        again = folder
    else:
        kept, again = folder, free_folder(folder.with_name(folder.name + "-again"))
    say(f"played again: the harness did not play a step as scripted ({missed}); first run: {kept}")
    return play(again), again, kept


def trial_missed(t: Trial) -> str:
    """The harness's note on a trial it did not play as scripted; "" otherwise."""
    return missed_window(t.verdict)


def run_on_brokers(
    scenario: Scenario,
    version_name: str,
    backend: str,
    folder: Path,
    run_id: str,
    warm: WarmClusters | None = None,
    aside: Path | None = None,
) -> bool:
    """Matrix and plugin entry point: one trial; True when the run reached a verdict.

    With ``aside`` (the matrix) a run the harness did not play as scripted is moved there
    and played once more in ``folder`` (:func:`once_more_if_missed`); without it (the
    plugin, which says so in its own report) it is not.
    """

    def say(m: str) -> None:
        print(f"  {m}", file=sys.stderr)

    def one(where: Path) -> Trial:
        return trial(
            scenario, resolve_version(version_name), backend, where, run_id, say, warm=warm
        )

    if aside is None:
        return one(folder).info.verdict in CONCLUDED
    judged, _folder, _first = once_more_if_missed(one, folder, trial_missed, say, aside=aside)
    return judged.info.verdict in CONCLUDED
