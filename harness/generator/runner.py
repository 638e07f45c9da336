"""One scenario on real brokers, end to end: cluster, playbook, read-back, verdict, files.

The run folder holds everything needed to judge the run without re-running it: the
scenario, the model's trace, the observed logs (Parquet), the broker logs, the verdict
(JSON) and an HTML report. Whatever happens (a fence times out, a step is prevented,
Ctrl-C), every JVM/container is stopped before this returns or raises.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from harness.checker import results
from harness.checker.diff import Verdict, check
from harness.checker.report import write_report
from harness.db import BrokerUnavailable, Cluster, ClusterError
from harness.db.catalogue.versions import KafkaVersion, resolve_version
from harness.db.mode.base import SPARE_CONTROLLER
from harness.db.runtime.docker import DockerCluster, docker_available
from harness.db.runtime.local import LocalCluster
from harness.db.runtime.netns import network_available
from harness.generator.playbook import Playbook
from harness.generator.playbook.fences import FenceTimeout, Observation, StepPrevented
from harness.generator.realise import configure, needs, network_unavailable
from harness.nemesis import failover
from harness.readback.checkpoints import read_leader_epoch_checkpoint
from reference_model.events import Event
from reference_model.run import RunResult, run_scenario
from reference_model.scenario import Scenario, to_document


def make_cluster(
    version: KafkaVersion,
    backend: str,
    names: list[str],
    workdir: Path,
    run_id: str,
    controllers: int = 1,
    network: bool = False,
) -> Cluster:
    """A cluster of ``version`` on ``backend``; ``controllers`` is the KRaft quorum size.

    ``network``: the scenario cuts links (see harness.generator.realise.needs): the local
    backend runs every node in its own network namespace, which needs root; without it
    this raises BrokerUnavailable with the reason, before anything starts.
    """
    if controllers != 1 and version.mode != "kraft":
        raise ValueError(f"--controllers {controllers}: {version.name} is not a KRaft version")
    if backend == "local":
        if network:
            reason = network_available()
            if reason is not None:
                raise BrokerUnavailable(f"the scenario needs network partitions: {reason}")
        return LocalCluster(version, names, workdir, controllers=controllers, network=network)
    if backend == "docker":
        reason = docker_available()
        if reason is not None:
            raise BrokerUnavailable(reason)
        cluster: Cluster = DockerCluster(version, names, workdir, run_id, controllers=controllers)
        return cluster
    raise ValueError(f"unknown backend {backend!r} (local, docker)")


def _observed_rows(
    run_id: str, logs: dict[str, list[tuple[int, int, str]]]
) -> list[dict[str, Any]]:
    return [
        {"run_id": run_id, "source": "observed", "replica": n, "offset": o, "epoch": e, "record": r}
        for n, entries in logs.items()
        for o, e, r in entries
    ]


def play(
    scenario: Scenario,
    version: KafkaVersion,
    backend: str,
    folder: Path,
    run_id: str,
    progress: Callable[[str], None],
    controllers: int = 1,
) -> tuple[results.RunInfo, RunResult, Verdict | None]:
    """Play ``scenario`` and write the run folder; returns what was written."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scenario.yaml").write_text(yaml.safe_dump(to_document(scenario), sort_keys=False))
    prediction = run_scenario(scenario, version.generation)
    (folder / "model.json").write_text(json.dumps(prediction.to_json(), indent=2))
    stop_at = predicted_prevention(prediction)  # the step this version refuses, if any
    harness_note = ""
    workdir = folder / "cluster"
    observations: list[Observation] = []
    epoch_files: dict[str, list[tuple[int, int]]] = {}
    logs: dict[str, list[tuple[int, int, str]]] = {}
    finish: dict[str, Any] = {}
    failure = ""
    status = "ok"
    t0 = time.perf_counter()
    want = needs(scenario, prediction)
    cluster = make_cluster(
        version,
        backend,
        list(scenario.brokers),
        workdir,
        run_id,
        controllers=controllers,
        network=want.network,
    )
    failover.prepare(cluster, prediction)  # a spare controller broker if a step needs one
    for line in configure(cluster, want):
        progress(f"network steps: {line}")
    try:
        progress(
            f"starting {backend} cluster: Kafka {version.name} "
            f"({version.generation}), brokers {list(scenario.brokers)}"
        )
        cluster.start()
        progress(f"cluster up in {time.perf_counter() - t0:.1f}s")
        missing = network_unavailable(cluster, want)
        if missing is not None:
            raise BrokerUnavailable(missing)
        book = Playbook(cluster, scenario, version, prediction, progress=progress)
        try:
            book.setup()
            for k, ev in enumerate(scenario.steps, start=1):
                if stop_at is not None and k >= stop_at[0]:
                    # The model says this version makes step k impossible: it is not played
                    # (even where the harness could force it), the run ends before it.
                    status = "prevented"
                    harness_note = _harness_note(book, k, ev, stop_at[1])
                    progress(f"step {k:>2}/{len(scenario.steps)} prevented: {stop_at[1]}")
                    break
                observations.append(book.step(k, ev))
            finish = book.finish()
        except StepPrevented as exc:
            status, failure = "step_prevented", str(exc)
        except FenceTimeout as exc:
            status, failure = "fence_timeout", str(exc)
        finally:
            logs = {n: book.log(n) for n in scenario.brokers}
            epoch_files = {n: _epoch_checkpoint(cluster, n) for n in scenario.brokers}
            book.close()
    except ClusterError as exc:
        status, failure = "error", str(exc)
    finally:
        cluster.close()
        _copy_broker_logs(workdir, folder / "logs", list(scenario.brokers))
    elapsed = time.perf_counter() - t0

    columns = ["run_id", "source", "replica", "offset", "epoch", "record"]
    # every log can end empty (kip966-last-replica-standing without ELR): keep the columns
    predicted = pd.DataFrame(prediction.replica_rows(run_id), columns=columns)
    observed = pd.DataFrame(_observed_rows(run_id, logs), columns=columns)
    verdict: Verdict | None = None
    deliveries = finish.get("deliveries", {})
    lost: list[str] = []
    if status in ("ok", "prevented"):
        # A prevented run is judged like a finished one, on the state before the prevented
        # step: the model's trace ends there too, so the logs must agree up to it.
        final_leader = finish.get("leader") or (finish.get("isr") or [None])[0]
        lead_log = {o: r for o, _e, r in logs.get(final_leader or "", [])}
        for rec, d in deliveries.items():
            if d["status"] == "acked" and lead_log.get(d["offset"]) != rec:
                lost.append(rec)
        outcomes = []
        if finish.get("leader") is None:
            outcomes.append("offline")
        outcomes += [f"broker_halted:{n}" for n in finish.get("halted", [])]
        pj = prediction.to_json()
        predicted_leo = [
            {n: r.leo for n, r in zip(scenario.brokers, s.state.replicas, strict=True)}
            for s in prediction.steps[1:]
        ]
        verdict, diff = check(
            predicted,
            observed if not observed.empty else predicted.iloc[0:0],
            lost,
            pj["lost_acked"],
            pj["divergent_offsets"],
            version.epoch_on_disk,
            predicted_leo,
            [o.leo for o in observations],
            outcomes,
        )
        if version.epoch_on_disk:
            final = prediction.steps[-1].state.replicas
            verdict.epoch_checkpoints = {
                n: {
                    "predicted": [list(e) for e in r.epochs],
                    "observed": [list(e) for e in epoch_files.get(n, [])],
                }
                for n, r in zip(scenario.brokers, final, strict=True)
            }
        if sorted(outcomes) != sorted(pj["outcomes"]):
            verdict.model_match = False
            verdict.verdict = "model_mismatch"
        verdict.halts = list(finish.get("halts", []))
        unpredicted = [h for h in verdict.halts if not h["predicted"]]
        if unpredicted:
            # A broker that stopped itself where the model has it running is a diff, named
            # by the step it was seen at and the broker's own fatal line.
            verdict.model_match = False
            verdict.verdict = "model_mismatch"
            verdict.reason = "; ".join(
                f"step {h['step']}: {h['broker']} exited, not predicted: {h['line']}"
                for h in unpredicted
            )
        if stop_at is not None:
            verdict.prevented_step, verdict.prevented_reason = stop_at
            verdict.harness_note = harness_note
            if verdict.model_match:
                verdict.verdict = "prevented"
        diff.to_parquet(folder / "diff.parquet")
    info = results.RunInfo(
        run_id=run_id,
        scenario=scenario.name,
        version=version.name,
        protocol=version.generation,
        backend=backend,
        acks=scenario.acks,
        min_insync=scenario.min_insync,
        unclean=scenario.unclean,
        rf=scenario.rf,
        records=scenario.records_per_produce,
        verdict=verdict.verdict if verdict else status,
        model_match=bool(verdict and verdict.model_match),
        lost_acked=verdict.lost_acked if verdict else [],
        divergent_offsets=verdict.divergent_offsets if verdict else [],
        outcomes=verdict.outcomes if verdict else [],
        prevented=_prevented_doc(scenario, stop_at, status == "prevented", harness_note),
        extra={
            "seconds": round(elapsed, 2),
            "failure": failure,
            "deliveries": deliveries,
            "final": {k: v for k, v in finish.items() if k != "deliveries"},
        },
    )
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
        for r, d in deliveries.items()
    ]
    writes = prediction.write_rows(run_id) + (observed_writes if verdict is not None else [])
    # Observed rows only for a run that reached its verdict: the logs of a stopped run are an
    # intermediate state, not something to diff against the prediction of the whole run.
    observed_rows = _observed_rows(run_id, logs) if verdict is not None else []
    replicas = prediction.replica_rows(run_id) + observed_rows
    results.write_run(folder, info, replicas, writes, prediction.step_rows(run_id))
    verdict_doc = {
        **asdict(info),
        "verdict_detail": asdict(verdict) if verdict else None,
        "run_folder": str(folder),
    }
    (folder / "verdict.json").write_text(json.dumps(verdict_doc, indent=2, default=str))
    (folder / "observations.json").write_text(
        json.dumps([asdict(o) for o in observations], indent=2)
    )
    write_report(
        folder / "report.html", scenario, version, prediction, logs, observations, info, verdict
    )
    if status != "ok" or not (workdir / "KEEP").exists():
        shutil.rmtree(workdir / "zookeeper", ignore_errors=True)
    return info, prediction, verdict


def predicted_prevention(prediction: RunResult) -> tuple[int, str] | None:
    """The step the model says this version makes impossible, and why (None: none).

    ``RunResult.prevented`` (issue 9): 1-based step index and a one-line reason naming the
    Kafka change and broker method. Read with ``getattr`` so the harness runs against a model
    that predates the field.
    """
    value = getattr(prediction, "prevented", None)
    if value is None:
        return None
    step, reason = value
    return int(step), str(reason)


def _harness_note(book: Playbook, k: int, ev: Event, reason: str) -> str:
    """What the harness saw of a prevention the model predicted, for the run folder.

    A playbook that can cheaply check that the broker really refuses the step (for example:
    cut the follower off and see the ISR does not shrink within the lag time) offers
    ``check_prevented(k, event, reason) -> str``; otherwise the harness only stopped there.
    """
    check = getattr(book, "check_prevented", None)
    if check is None:
        return (
            f"not played: the model predicts step {k} prevented on {book.version.name}; "
            "the harness stopped before it (the broker's refusal not checked)"
        )
    try:
        return str(check(k, ev, reason))
    except (FenceTimeout, StepPrevented) as exc:
        return f"the broker check of the prevention did not conclude: {exc}"


def _prevented_doc(
    scenario: Scenario, stop_at: tuple[int, str] | None, reached: bool, harness_note: str
) -> dict[str, Any] | None:
    """``prevented`` of run.json/verdict.json: the model's prediction and what the run did."""
    if stop_at is None:
        return None
    k, reason = stop_at
    return {
        "step": k,
        "event": scenario.steps[k - 1].describe(scenario.brokers)
        if 1 <= k <= len(scenario.steps)
        else "",
        "reason": reason,
        "reached": reached,
        "harness_note": harness_note,
    }


def _epoch_checkpoint(cluster: Cluster, name: str) -> list[tuple[int, int]]:
    """Broker ``name``'s leader-epoch-checkpoint for the test partition ([] if absent)."""
    path = cluster.partition_dir(name) / "leader-epoch-checkpoint"
    try:
        return read_leader_epoch_checkpoint(path) if path.exists() else []
    except Exception:  # a torn file after a crash is an observation of its own
        return [(-1, -1)]


def _copy_broker_logs(workdir: Path, dest: Path, names: list[str]) -> None:
    for name in ["zookeeper", "controller", SPARE_CONTROLLER, *names]:
        src = workdir / name / "logs"
        if src.is_dir():
            shutil.copytree(src, dest / name, dirs_exist_ok=True)


def run_on_brokers(
    scenario: Scenario, version_name: str, backend: str, folder: Path, run_id: str
) -> bool:
    """Matrix entry point: play one cell; True when the run reached a verdict."""
    info, _, _ = play(
        scenario,
        resolve_version(version_name),
        backend,
        folder,
        run_id,
        progress=lambda m: print(f"  {m}", file=sys.stderr),
    )
    return info.verdict in ("match", "prevented", "model_mismatch", "step_prevented")
