"""What one run on real brokers left behind, before anyone judges it: the :class:`RunRecord`.

Why a record of its own: playing and judging are two jobs (Jepsen's core runs the generator
into a *history*, its checker is a pure function of that history). The runner fills a record
with what it observed on the brokers (files, wire answers, log lines) and what it did to them;
:func:`harness.checker.judge.judge` compares it with the model's prediction; the store
(:mod:`harness.checker.store`) writes the run folder. Nothing in the record comes from the
model, except :attr:`RunRecord.stop_before`: the step the run does not play because the
prediction says the version refuses it, named as such.

Add a field with a default (``field(default_factory=...)`` for containers), so every producer
and reader of records keeps working.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.db.catalogue.versions import KafkaVersion
from harness.generator.playbook.fences import Observation
from reference_model.scenario import Scenario

LogEntries = list[tuple[int, int, str]]  # (offset, partitionLeaderEpoch, record id)

# ok: every step played; prevented: stopped before the step the model predicts refused;
# step_prevented: a step the harness could not play; fence_timeout; error (cluster failure).
STATUSES = ("ok", "prevented", "step_prevented", "fence_timeout", "error")


@dataclass
class RunRecord:
    """One scenario played once on real brokers: what happened, observed, unjudged."""

    run_id: str
    scenario: Scenario
    version: KafkaVersion
    backend: str  # local | docker
    folder: Path
    status: str = "ok"  # one of STATUSES
    failure: str = ""  # one line: why the run ended early
    # Per played step: the cluster as the controller and the on-disk logs showed it.
    observations: list[Observation] = field(default_factory=list)
    # Per replica: its log as written on disk at the end ([] if unreadable).
    logs: dict[str, LogEntries] = field(default_factory=dict)
    # Per replica: its leader-epoch-checkpoint file at the end ((-1, -1): torn).
    epoch_files: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    # Per record id: the producer's report (status acked/refused/failed/pending, offset).
    deliveries: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The controller's final word: leader, leader_epoch, isr, elr (KIP-966); brokers that
    # halted by themselves.
    final: dict[str, Any] = field(default_factory=dict)
    # (step, reason): the step the *prediction* says this version refuses; the run stops
    # before it (status ``prevented`` once it got there).
    stop_before: tuple[int, str] | None = None
    harness_note: str = ""  # what the harness saw of that refusal
    timings: dict[str, float] = field(default_factory=dict)  # seconds: cluster_up, total
    # Where the time went (harness.timing): phases with their fences, and CPU seconds.
    phases: dict[str, Any] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)  # written by the runner, folder-relative
    # Every write the harness made into a broker's files: step, broker, file, value, source
    # (``observed`` | ``fault``, never the model), why (``writes.json``).
    file_writes: list[dict[str, Any]] = field(default_factory=list)
    # The consumer oracle's reads: step, replica, role, replica_id, hw, records, error.
    reads: list[dict[str, Any]] = field(default_factory=list)
    # The doorbell's rings (harness.generator.playbook.bell): topic, rings, not_leading.
    doorbell: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # The cluster it played on: fresh or reused, the topic, the runs before it on that
    # cluster, what the reset put back (harness.generator.warm.Reuse); None: not recorded.
    cluster: Any = None

    @property
    def reached_end(self) -> bool:
        """The run played every step it meant to: its logs are a final state worth judging."""
        return self.status in ("ok", "prevented")

    @property
    def seconds(self) -> float:
        return self.timings.get("total", 0.0)
