"""The store: writes a run folder from a prediction, a :class:`RunRecord` and its verdict.

Why apart from the runner and the checker: the CLI (``run``, ``matrix``, ``explore
--confirm``) and the pytest plugin all write the same folder (the layout in
:mod:`harness.checker.results`), so it is written in one place; and a record judged again
(another model, another rule) can be stored again without replaying it.

Files: ``scenario.yaml`` and ``model.json`` before the run (:func:`write_inputs`, so a killed
run still says what it meant to play); then ``diff.parquet``, the tables, ``run.json`` (the
commit marker), ``verdict.json``, ``observations.json`` and ``report.html``
(:func:`write_outcome`).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from harness.checker import results
from harness.checker.diff import Verdict, diff_logs
from harness.checker.judge import hw_so_far, log_frames, observed_rows
from harness.checker.realised import realised_run, step_hws
from harness.checker.report import write_report
from harness.checker.verdicts import two_verdicts
from harness.generator.record import RunRecord
from reference_model.run import RunResult
from reference_model.scenario import Scenario, to_document


def write_inputs(folder: Path, scenario: Scenario, prediction: RunResult) -> None:
    """What the run is about to play and what the model predicts, written before it starts."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scenario.yaml").write_text(yaml.safe_dump(to_document(scenario), sort_keys=False))
    (folder / "model.json").write_text(json.dumps(prediction.to_json(), indent=2))


def run_info(record: RunRecord, verdict: Verdict | None, prediction: RunResult) -> results.RunInfo:
    """``run.json``: the run's identity, its settings and its verdict."""
    scenario, version = record.scenario, record.version
    return results.RunInfo(
        run_id=record.run_id,
        scenario=scenario.name,
        version=version.name,
        protocol=version.generation,
        backend=record.backend,
        acks=scenario.acks,
        min_insync=scenario.min_insync,
        unclean=scenario.unclean,
        rf=scenario.rf,
        records=scenario.records_per_produce,
        verdict=verdict.verdict if verdict else record.status,
        model_match=bool(verdict and verdict.model_match),
        lost_acked=verdict.lost_acked if verdict else [],
        divergent_offsets=verdict.divergent_offsets if verdict else [],
        outcomes=verdict.outcomes if verdict else [],
        prevented=_prevented_doc(record),
        extra={
            "seconds": round(record.seconds, 2),
            "failure": record.failure,
            "deliveries": record.deliveries,
            "final": record.final,
            "timings": record.phases,
            "cluster": record.cluster.to_json() if record.cluster is not None else None,
            "hw": verdict.hw if verdict else hw_so_far(prediction, record),
            "harness_missed": verdict.harness_missed if verdict else "",
            "file_writes": record.file_writes,
            "doorbell": record.doorbell,
            "consumer": {
                k: v
                for k, v in (verdict.consumer if verdict else {}).items()
                if k
                in (
                    "summary",
                    "reads_compared",
                    "reads_agreeing",
                    "observed",
                    "predicted",
                    "anomalies_as_predicted",
                )
            },
        },
    )


def timed_steps(prediction: RunResult, record: RunRecord) -> list[dict[str, Any]]:
    """The model trace's rows, each with the wall seconds its step took on the brokers
    (``seconds``; None for step 0 and for steps not played)."""
    played = {p["name"]: p["seconds"] for p in record.phases.get("phases", [])}
    rows = prediction.step_rows(record.run_id)
    for row in rows:
        secs = played.get(f"step {row['step']}")
        row["seconds"] = None if secs is None else round(float(secs), 3)
    return rows


def write_outcome(
    prediction: RunResult, record: RunRecord, verdict: Verdict | None
) -> results.RunInfo:
    """Everything after the run, ``run.json`` last but for the human-readable extras."""
    folder, run_id = record.folder, record.run_id
    info = run_info(record, verdict, prediction)
    # The run is judged on the prediction as played (harness.checker.realised).
    written, prediction = prediction, realised_run(prediction)
    (folder / "model-as-played.json").write_text(json.dumps(prediction.to_json(), indent=2))
    if verdict is not None:
        predicted, observed = log_frames(prediction, record)
        diff_logs(predicted, observed).to_parquet(folder / "diff.parquet")
    lost = set(verdict.lost_acked) if verdict else set()
    observed_writes = [
        {
            "run_id": run_id,
            "source": "observed",
            "record": r,
            "status": d["status"],
            "offset": d["offset"],
            "acked": d["status"] == "acked",
            "lost": r in lost,
            "lost_step": -1,
            "lost_event": "",
        }
        for r, d in record.deliveries.items()
    ]
    writes = prediction.write_rows(run_id) + (observed_writes if verdict is not None else [])
    # Observed rows only for a run that reached its verdict: the logs of a stopped run are an
    # intermediate state, not something to diff against the prediction of the whole run.
    replicas = prediction.replica_rows(run_id) + (observed_rows(record) if verdict else [])
    results.write_run(
        folder,
        info,
        replicas,
        writes,
        step_hw_columns(timed_steps(written, record), prediction, record),
    )
    verdict_doc = {
        **asdict(info),
        **two_verdicts(info).to_json(),  # agreement and safety, kept apart
        "verdict_detail": asdict(verdict) if verdict else None,
        "run_folder": str(folder),
    }
    (folder / "verdict.json").write_text(json.dumps(verdict_doc, indent=2, default=str))
    # Every write the harness made into a broker's files, with its source (observed | fault):
    # no value in it comes from the model. And the consumer oracle's reads.
    (folder / "writes.json").write_text(json.dumps(record.file_writes, indent=2))
    (folder / "reads.json").write_text(json.dumps(record.reads, indent=2))
    (folder / "observations.json").write_text(
        json.dumps([asdict(o) for o in record.observations], indent=2)
    )
    write_report(
        folder / "report.html",
        record.scenario,
        record.version,
        written,
        record.logs,
        record.observations,
        info,
        verdict,
    )
    workdir = folder / "cluster"
    if record.status != "ok" or not (workdir / "KEEP").exists():
        shutil.rmtree(workdir / "zookeeper", ignore_errors=True)
    return info


def step_hw_columns(
    rows: list[dict[str, Any]], played: RunResult, record: RunRecord
) -> list[dict[str, Any]]:
    """``steps.parquet`` rows with the observed HW (each broker's checkpoint) and the
    as-played model's HW beside the scenario's model state."""
    names = list(played.config.brokers)
    hws = step_hws(played)
    seen = {o.step: o.hw for o in record.observations}
    for row in rows:
        k, i = int(row["step"]), names.index(row["replica"])
        row["observed_hw"] = seen.get(k, {}).get(row["replica"], -1)
        row["realised_hw"] = hws[k - 1][i] if 1 <= k <= len(hws) else row["hw"]
    return rows


def _prevented_doc(record: RunRecord) -> dict[str, Any] | None:
    """``prevented`` of run.json/verdict.json: the model's prediction and what the run did."""
    if record.stop_before is None:
        return None
    k, reason = record.stop_before
    steps = record.scenario.steps
    return {
        "step": k,
        "event": steps[k - 1].describe(record.scenario.brokers) if 1 <= k <= len(steps) else "",
        "reason": reason,
        "reached": record.status == "prevented",
        "harness_note": record.harness_note,
    }
