"""One trial: predict, play, judge, store. What ``run``, ``matrix``, ``explore --confirm`` and
the pytest plugin all call, so a run means the same thing wherever it starts.

Four calls, each one job (DESIGN-REVIEW P3, Jepsen's core/checker/store split):
:func:`reference_model.run.run_scenario` predicts; :func:`harness.generator.runner.play`
plays and returns a :class:`~harness.generator.record.RunRecord`;
:func:`harness.checker.judge.judge` compares; :mod:`harness.checker.store` writes the folder.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from harness.checker import store
from harness.checker.diff import Verdict
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


def run_on_brokers(
    scenario: Scenario,
    version_name: str,
    backend: str,
    folder: Path,
    run_id: str,
    warm: WarmClusters | None = None,
) -> bool:
    """Matrix and plugin entry point: one trial; True when the run reached a verdict."""
    info = trial(
        scenario,
        resolve_version(version_name),
        backend,
        folder,
        run_id,
        progress=lambda m: print(f"  {m}", file=sys.stderr),
        warm=warm,
    ).info
    return info.verdict in CONCLUDED
