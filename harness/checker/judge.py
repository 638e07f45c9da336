"""``judge(prediction, record)``: the verdict of one run, a pure function of what was observed.

Why pure: a checker that also plays, or that is rewritten after the fact by the runner, cannot
be re-run on a stored record, and a reader cannot tell which rule decided. Everything the
verdict says comes from here: which acknowledged writes the final leader lacks (observed on
its disk), the per-position diff of the logs, epoch checkpoints, the outcomes (offline, halted
brokers) against the model's, and a predicted prevention; the HW of every replica after every
step (harness.checker.hw) and the consumer oracle (harness.checker.consumer).

The model it compares with is the prediction *as played* (harness.checker.realised: the same
rules on the fetch rounds and HW checkpoints Kafka makes on its own), itself a pure function
of the prediction.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from harness.checker.consumer import consumer_verdict
from harness.checker.diff import Verdict, check
from harness.checker.hw import (
    controller_view,
    hw_check,
    judge_hw,
    missed_window,
    predicted_hws,
)
from harness.checker.liveness import liveness_check, predicted_live
from harness.checker.realised import differences, realised_run, step_hws
from harness.generator.record import RunRecord
from reference_model.run import RunResult

COLUMNS = ["run_id", "source", "replica", "offset", "epoch", "record"]


def observed_rows(record: RunRecord) -> list[dict[str, object]]:
    """The record's on-disk logs as ``replicas`` rows (source ``observed``)."""
    return [
        {
            "run_id": record.run_id,
            "source": "observed",
            "replica": n,
            "offset": o,
            "epoch": e,
            "record": r,
        }
        for n, entries in record.logs.items()
        for o, e, r in entries
    ]


def log_frames(prediction: RunResult, record: RunRecord) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(predicted, observed) replica logs; every log can end empty, so the columns are kept."""
    predicted = pd.DataFrame(prediction.replica_rows(record.run_id), columns=COLUMNS)
    observed = pd.DataFrame(observed_rows(record), columns=COLUMNS)
    return predicted, observed


def judge_liveness(verdict: Verdict, predicted: list[list[str]], observations: list[Any]) -> None:
    """Add the per-step liveness check (harness.checker.liveness); a difference fails it,
    at its step, as a HW difference does."""
    found = liveness_check(predicted, observations)
    verdict.liveness = [m.to_json() for m in found]
    if found:
        verdict.differs_at(found[0].step, found[0].describe())


def lost_acked(record: RunRecord) -> list[str]:
    """Acknowledged records not at their acknowledged offset on the final leader's disk.

    An offline partition is judged on the replica a clean election would pick when it
    returns, as the model's ``effective_leader`` does: the first ISR member, or under KIP-966
    with an empty ISR the first eligible leader replica the controller recorded (without it
    a run where ELR members kept every write read as losing them all: kip320-zombie-follower
    on 4.0.0-elr ends with ISR [] and ELR [A, B]).
    """
    final = record.final
    leader = (
        final.get("leader") or (final.get("isr") or [None])[0] or (final.get("elr") or [None])[0]
    )
    lead_log = {o: r for o, _e, r in record.logs.get(leader or "", [])}
    return [
        rec
        for rec, d in record.deliveries.items()
        if d["status"] == "acked" and lead_log.get(d["offset"]) != rec
    ]


def outcomes(record: RunRecord) -> list[str]:
    """What the cluster ended as, in the model's words: ``offline``, ``broker_halted:N``."""
    out = [] if record.final.get("leader") is not None else ["offline"]
    return out + [f"broker_halted:{n}" for n in record.final.get("halted", [])]


def judge(prediction: RunResult, record: RunRecord) -> Verdict | None:
    """The verdict, or None for a run that did not reach its end (fence timeout, error...).

    A prevented run is judged like a finished one, on the state before the prevented step:
    the model's trace ends there too, so the logs must agree up to it.
    """
    if not record.reached_end:
        return None
    scenario, version = record.scenario, record.version
    written = prediction
    prediction = realised_run(written)
    predicted, observed = log_frames(prediction, record)
    pj = prediction.to_json()
    predicted_leo = [
        {n: r.leo for n, r in zip(scenario.brokers, s.state.replicas, strict=True)}
        for s in prediction.steps[1:]
    ]
    seen = outcomes(record)
    verdict, _diff = check(
        predicted,
        observed if not observed.empty else predicted.iloc[0:0],
        lost_acked(record),
        pj["lost_acked"],
        pj["divergent_offsets"],
        version.epoch_on_disk,
        predicted_leo,
        [o.leo for o in record.observations],
        seen,
    )
    if version.epoch_on_disk:
        final = prediction.steps[-1].state.replicas
        verdict.epoch_checkpoints = {
            n: {
                "predicted": [list(e) for e in r.epochs],
                "observed": [list(e) for e in record.epoch_files.get(n, [])],
            }
            for n, r in zip(scenario.brokers, final, strict=True)
        }
    names = list(scenario.brokers)
    judge_hw(verdict, names, step_hws(prediction), record.observations, controller_view(prediction))
    judge_liveness(verdict, predicted_live(prediction), record.observations)
    verdict.hw["scenario_hw"] = predicted_hws(written)
    verdict.hw["as_played_differs"] = differences(written, prediction)
    verdict.consumer = consumer(prediction, record, verdict)
    if sorted(seen) != sorted(pj["outcomes"]):
        verdict.model_match = False
        verdict.verdict = "model_mismatch"
    verdict.halts = list(record.final.get("halts", []))
    unpredicted = [h for h in verdict.halts if not h["predicted"]]
    if unpredicted:
        # A broker that stopped itself where the model has it running is a diff, named by
        # the step it was seen at and the broker's own fatal line (playbook/halts.py).
        verdict.model_match = False
        verdict.verdict = "model_mismatch"
        verdict.reason = "; ".join(
            f"step {h['step']}: {h['broker']} exited, not predicted: {h['line']}"
            for h in unpredicted
        )
    if record.stop_before is not None:
        verdict.prevented_step, verdict.prevented_reason = record.stop_before
        verdict.harness_note = record.harness_note
        if verdict.model_match:
            verdict.verdict = "prevented"
    verdict.harness_missed = missed_window(verdict)
    return verdict


def hw_so_far(prediction: RunResult, record: RunRecord) -> dict[str, Any]:
    """A run that stopped early (a fence not reached): the HW check of the steps it played.

    A broker that went elsewhere than the model is then named at the step where its HW
    first differed, not only by the fence that timed out later.
    """
    if not record.observations:
        return {}
    played = realised_run(prediction)
    names = list(record.scenario.brokers)
    return hw_check(
        names, step_hws(played), record.observations, controller_view(played)
    ).to_json()


def consumer(played: RunResult, record: RunRecord, verdict: Verdict) -> dict[str, Any]:
    """The consumer oracle's verdict (harness.checker.consumer); ``played`` as played."""
    names = list(played.config.brokers)
    final = played.steps[-1].state
    lead = final.controller.leader
    predicted_log = (
        {o: e.record for o, e in enumerate(final.replicas[lead].log)}
        if 0 <= lead < len(names)
        else {}
    )
    fin = record.final
    leader = fin.get("leader") or (fin.get("isr") or [None])[0]
    lead_log = {o: r for o, _e, r in record.logs.get(leader or "", [])}
    leader_hw = {o.step: o.hw.get(o.leader, -1) for o in record.observations if o.leader}
    return consumer_verdict(
        names,
        [x.state for x in played.steps[1:]],
        record.reads,
        lead_log,
        predicted_log,
        leader_hw,
        verdict.lost_acked,
        verdict.predicted_lost_acked,
    )
