"""``judge(prediction, record)``: the verdict of one run, a pure function of what was observed.

Why pure: a checker that also plays, or that is rewritten after the fact by the runner, cannot
be re-run on a stored record, and a reader cannot tell which rule decided. Everything the
verdict says comes from here: which acknowledged writes the final leader lacks (observed on
its disk), the per-position diff of the logs, epoch checkpoints, the outcomes (offline, halted
brokers) against the model's, and a predicted prevention.
"""

from __future__ import annotations

import pandas as pd

from harness.checker.diff import Verdict, check
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


def lost_acked(record: RunRecord) -> list[str]:
    """Acknowledged records not at their acknowledged offset on the final leader's disk."""
    final = record.final
    leader = final.get("leader") or (final.get("isr") or [None])[0]
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
    if sorted(seen) != sorted(pj["outcomes"]):
        verdict.model_match = False
        verdict.verdict = "model_mismatch"
    if record.stop_before is not None:
        verdict.prevented_step, verdict.prevented_reason = record.stop_before
        verdict.harness_note = record.harness_note
        if verdict.model_match:
            verdict.verdict = "prevented"
    return verdict
