"""``hwchaos explore --confirm``: play the explorer's counterexamples on real brokers.

The explorer searches one model profile (``--protocol``) and reports the shortest ordering
that breaks each invariant. That is a claim about Kafka; this module puts it to the test on
the brokers of one catalogue version (``--kafka``), run by run, and classifies each:

``confirmed``
    the version's own model profile predicts the violation (an acknowledged write lost, or
    replicas that diverge) and the broker's per-replica logs match that prediction;
``prevented``
    the version's profile predicts that it makes a step of the ordering impossible (the
    reason names the Kafka change) and the run stopped there, matching the model up to it;
``not_violated``
    the version's profile predicts no violation (a fix the explored profile lacks) and the
    broker agrees;
``mismatch``
    anything else: logs that differ from the model, a fence timeout, a step the harness
    could not realise that the model does not predict prevented, an error.

The version's profile, not the explored one, is the prediction: exploring ``hw`` and
confirming on 3.3.1 asks whether 3.3.1 still loses the write (it does not: ``not_violated``)
as well as whether the model of 3.3.1 is right about it.

Identical orderings (one ordering can break several invariants at once) are played once; the
other counterexamples point at that run (``same_run_as``).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from explorer.invariants import judged_violations
from harness.db.catalogue.versions import KafkaVersion
from reference_model.run import RunResult, run_scenario
from reference_model.scenario import Scenario

if TYPE_CHECKING:
    from harness.generator.warm import WarmClusters

CONFIRMED = "confirmed"
PREVENTED = "prevented"
NOT_VIOLATED = "not_violated"
MISMATCH = "mismatch"
CLASSIFICATIONS = (CONFIRMED, PREVENTED, NOT_VIOLATED, MISMATCH)


@dataclass
class ModelVerdict:
    """What the version's own profile predicts for one ordering."""

    profile: str
    lost_acked: list[str]
    divergent_offsets: list[int]
    violations: list[str]  # explorer invariants broken on the way (settled states)
    outcomes: list[str]
    prevented: dict[str, Any] | None  # {"step", "event", "reason"} or None

    @property
    def violated(self) -> bool:
        return bool(self.lost_acked or self.divergent_offsets or self.violations)


@dataclass
class RunOutcome:
    """What the broker run ended with (from its RunInfo)."""

    verdict: str  # match | prevented | model_mismatch | step_prevented | fence_timeout | error
    lost_acked: list[str] = field(default_factory=list)
    divergent_offsets: list[int] = field(default_factory=list)
    failure: str = ""
    harness_note: str = ""
    first_differing_step: int | None = None
    differences: int = 0
    # the harness's note when it did not play a step as scripted (harness.checker.hw)
    harness_missed: str = ""


def unavailable(version: KafkaVersion, backend: str) -> str | None:
    """Why this machine cannot run ``version`` on ``backend`` (one line), None if it can.

    Checked before the search so a missing tree or daemon costs nothing. The docker backend
    builds a missing image itself, as ``hwchaos run`` does.
    """
    if backend == "docker":
        from harness.db.runtime.docker import docker_available

        return docker_available()
    from harness.db.runtime.local import local_unavailable

    return local_unavailable(version)


def model_verdict(scenario: Scenario, profile: str) -> ModelVerdict:
    """Play ``scenario`` under ``profile``: losses, divergence, invariants, prevention."""
    res = run_scenario(scenario, profile)
    return verdict_of(res, profile)


def verdict_of(res: RunResult, profile: str) -> ModelVerdict:
    """The :class:`ModelVerdict` of a model run (see :func:`model_verdict`)."""
    j = res.to_json()
    broken: list[str] = []
    for prev, nxt in zip(res.steps, res.steps[1:], strict=False):
        for v in judged_violations(res.config, prev.state, nxt.state):
            if v not in broken:
                broken.append(v)
    prevented: dict[str, Any] | None = None
    value = res.prevented
    if value is not None:
        k, reason = value
        sc = res.scenario
        event = sc.steps[k - 1].describe(sc.brokers) if 1 <= k <= len(sc.steps) else ""
        prevented = {"step": int(k), "event": event, "reason": str(reason)}
    return ModelVerdict(
        profile=profile,
        lost_acked=list(j["lost_acked"]),
        divergent_offsets=list(j["divergent_offsets"]),
        violations=broken,
        outcomes=list(j["outcomes"]),
        prevented=prevented,
    )


def _what(lost: list[str], divergent: list[int]) -> str:
    parts = []
    if lost:
        parts.append(f"acknowledged {', '.join(lost)} lost")
    if divergent:
        parts.append(f"replicas diverge at offsets {divergent}")
    return " and ".join(parts) or "no loss, no divergence"


def classify(model: ModelVerdict, run: RunOutcome, version: str) -> tuple[str, str]:
    """(classification, one-line reason) of one counterexample played on ``version``."""
    if model.prevented is not None:
        p = model.prevented
        where = f"step {p['step']} ({p['event']})"
        if run.verdict == "prevented":
            note = f"; harness: {run.harness_note}" if run.harness_note else ""
            return PREVENTED, f"{where} prevented on {version} as predicted: {p['reason']}{note}"
        return MISMATCH, (
            f"the {model.profile} profile predicts {where} prevented ({p['reason']}), "
            f"but the run ended {run.verdict}{_failure(run)}"
        )
    if run.verdict == "match":
        if model.violated and not (run.lost_acked or run.divergent_offsets):
            # The brokers agree with the model run on the events as played, and nothing was
            # lost: the ordering as written needs something the brokers did not do (e.g. a
            # crash before Kafka wrote its own HW checkpoint; the harness never writes the
            # model's HW into a broker, so that takes an explicit ``stale_checkpoint``).
            return NOT_VIOLATED, (
                f"on {version} the ordering as played loses nothing and the model run on the "
                "events as played agrees (per-replica logs as predicted); as written it needs "
                "a step the brokers did not take, such as a crash before Kafka checkpointed "
                "the HW (stale_checkpoint)"
            )
        if model.violated:
            invariants = f" ({', '.join(model.violations)})" if model.violations else ""
            return CONFIRMED, (
                f"on {version}: {_what(run.lost_acked, run.divergent_offsets)}{invariants}, "
                f"per-replica logs as the {model.profile} profile predicts"
            )
        return NOT_VIOLATED, (
            f"the {model.profile} profile predicts no violation and {version} agrees "
            "(per-replica logs as predicted): fixed in this version"
        )
    if run.verdict == "model_mismatch" and run.harness_missed:
        # Played once more already (harness.trial.once_more_if_missed) and missed again.
        return MISMATCH, (
            f"not played as scripted on {version}, twice, so no evidence on the model: "
            f"{run.harness_missed}"
        )
    extra = sorted(set(run.lost_acked) - set(model.lost_acked))
    if (
        run.verdict == "model_mismatch"
        and run.differences == 0
        and model.violated
        and extra
        and set(model.lost_acked) <= set(run.lost_acked)
        and run.divergent_offsets == model.divergent_offsets
    ):
        # The logs are as predicted and so is the violation; the broker only acknowledged
        # more before losing it. A real follower sends its next Fetch as soon as it has
        # appended (ReplicaFetcherThread), so the leader's HW, and with it the acks=all
        # reply, moves one fetch round ahead of a single model ``fetch`` step; the harness
        # cannot pause the follower between the append and that request.
        return CONFIRMED, (
            f"on {version}: {_what(run.lost_acked, run.divergent_offsets)}, per-replica logs "
            f"as the {model.profile} profile predicts; the broker also acknowledged "
            f"{', '.join(extra)} before losing it (a follower's next Fetch leaves as soon as "
            "it appended, so the leader's HW moves one round ahead of a single fetch step)"
        )
    if run.verdict == "model_mismatch" and run.differences == 0:
        predicted = _what(model.lost_acked, model.divergent_offsets)
        return MISMATCH, (
            f"{version}'s per-replica logs are as the {model.profile} profile predicts, but "
            f"not the verdict: predicted {predicted}, observed "
            f"{_what(run.lost_acked, run.divergent_offsets)} (a write acknowledged on one side "
            "only, or another outcome)"
        )
    if run.verdict == "model_mismatch":
        step = (
            f", first differing step {run.first_differing_step}"
            if run.first_differing_step is not None
            else ""
        )
        return MISMATCH, (
            f"{version}'s logs differ from the {model.profile} profile "
            f"({run.differences} positions{step}): predicted "
            f"{_what(model.lost_acked, model.divergent_offsets)}, observed "
            f"{_what(run.lost_acked, run.divergent_offsets)}"
        )
    if run.verdict == "step_prevented":
        return MISMATCH, (
            f"the harness could not play a step the {model.profile} profile does not "
            f"predict prevented{_failure(run)}"
        )
    if run.verdict == "prevented":  # cannot happen without a predicted prevention
        return (
            MISMATCH,
            f"the run stopped as prevented, the model predicts none{_failure(run)}",
        )
    return MISMATCH, f"run ended {run.verdict}{_failure(run)}"


def _failure(run: RunOutcome) -> str:
    return f": {run.failure}" if run.failure else ""


@dataclass
class Confirmation:
    """One counterexample played on one version: the ``--json`` entry."""

    index: int  # 1-based, in the explorer's order
    invariant: str
    steps: list[str]
    scenario_file: str
    classification: str
    reason: str
    run_folder: str
    model_verdict: dict[str, Any]
    observed: dict[str, Any]  # {"verdict", "lost_acked", "divergent_offsets"}
    seconds: float
    same_run_as: int | None = None  # index of the counterexample whose run this one shares
    # the first run's folder when the harness did not play a step of it as scripted and
    # played it once more (harness.trial.once_more_if_missed); this entry judges the second
    played_again: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def outcome_of(info: Any, verdict: Any) -> RunOutcome:
    """A :class:`RunOutcome` from what ``harness.trial.trial`` returns (RunInfo, Verdict | None)."""
    prevented = info.prevented or {}
    return RunOutcome(
        verdict=info.verdict,
        lost_acked=list(info.lost_acked),
        divergent_offsets=list(info.divergent_offsets),
        failure=str(info.extra.get("failure", "")),
        harness_note=str(prevented.get("harness_note", "")),
        first_differing_step=verdict.first_differing_step if verdict is not None else None,
        differences=len(verdict.differences) if verdict is not None else 0,
        harness_missed=str(info.extra.get("harness_missed") or ""),
    )


@dataclass
class Counterexample:
    """A counterexample as the explorer CLI wrote it: its scenario and where it lives."""

    invariant: str
    scenario: Scenario
    file: str


# explore --confirm's classifications, one row per counterexample played, as a table the
# analysis pipeline reads (``hwchaos analyze`` on the confirm folder: ``hunt_confirm``).
CONFIRM_TABLE = "confirm.parquet"
CONFIRM_COLUMNS = [
    "hunt",
    "index", "invariant", "profile", "version", "backend", "ordering", "classification",
    "reason", "run_folder", "observed_verdict", "seconds", "same_run_as",
]  # fmt: skip


def write_table(
    results: list[Confirmation], version: KafkaVersion, backend: str, runs: Path
) -> Path:
    """``RUNS/confirm.parquet``, rewritten whole after each counterexample (tmp, then rename):
    a confirm that is killed keeps the rows of what it played, never a half-written file."""
    import pandas as pd

    rows = [
        {
            "hunt": runs.name,  # the confirm folder: tells hunts apart in a runs/ of many
            "index": r.index,
            "invariant": r.invariant,
            "profile": version.generation,
            "version": version.name,
            "backend": backend,
            "ordering": ", ".join(r.steps),
            "classification": r.classification,
            "reason": r.reason,
            "run_folder": r.run_folder,
            "observed_verdict": str(r.observed.get("verdict", "")),
            "seconds": float(r.seconds),
            "same_run_as": -1 if r.same_run_as is None else r.same_run_as,
        }
        for r in results
    ]
    df = pd.DataFrame(rows, columns=CONFIRM_COLUMNS).astype(
        {"index": "int64", "seconds": "float64", "same_run_as": "int64"}
    )
    runs.mkdir(parents=True, exist_ok=True)
    tmp = runs / (CONFIRM_TABLE + ".tmp")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, runs / CONFIRM_TABLE)
    return runs / CONFIRM_TABLE


def _ordering(sc: Scenario) -> tuple[str, ...]:
    """What makes two counterexamples one run (:func:`confirm` plays an ordering once)."""
    return (
        sc.acks,
        str(sc.min_insync),
        str(sc.unclean),
        *(e.describe(sc.brokers) for e in sc.steps),
    )


def _prestart_following(
    warm: WarmClusters,
    found: list[Counterexample],
    i: int,
    played: set[tuple[str, ...]],
    version: KafkaVersion,
    backend: str,
) -> None:
    """Counterexample ``i`` (1-based) is about to play: when the next one that will play
    (not an ordering already played) needs a cluster ``i``'s will not be, have it started in
    the background meanwhile (harness.generator.background), as ``matrix`` does. A speed-up
    only: whatever fails here, the next run starts its own cluster."""
    from harness.generator.runner import prestart_next
    from harness.generator.warm import warm_key

    nxt = next(
        (j for j in range(i + 1, len(found) + 1) if _ordering(found[j - 1].scenario) not in played),
        None,
    )
    if nxt is None:
        return
    this, that = found[i - 1].scenario, found[nxt - 1].scenario
    try:
        mine = warm_key(this, run_scenario(this, version.generation), version.name, backend, 1)
        prestart_next(warm, that, version, backend, f"{nxt:02d}-{that.name}", playing_key=mine)
    except Exception:  # the next run plays (or fails) with a cluster of its own
        return


def confirm(
    found: list[Counterexample],
    version: KafkaVersion,
    backend: str,
    runs: Path,
    progress: Callable[[str], None],
    warm: WarmClusters | None = None,
) -> list[Confirmation]:
    """Play every counterexample on ``version`` (identical orderings once) and classify.

    ``warm``: counterexamples of one cluster configuration play on one running cluster,
    checked clean and reset between them (harness.generator.warm); None: each on a fresh one.
    """
    from harness.trial import Trial, once_more_if_missed, trial, trial_missed

    out: list[Confirmation] = []
    played: dict[tuple[str, ...], Confirmation] = {}
    total = len(found)
    for i, cx in enumerate(found, start=1):
        sc = cx.scenario
        steps = [e.describe(sc.brokers) for e in sc.steps]
        model = model_verdict(sc, version.generation)
        key = _ordering(sc)
        first = played.get(key)
        if first is not None:
            progress(
                f"[{i}/{total}] {cx.invariant}: same ordering as counterexample "
                f"{first.index}: {first.classification}"
            )
            out.append(
                Confirmation(
                    index=i,
                    invariant=cx.invariant,
                    steps=steps,
                    scenario_file=cx.file,
                    classification=first.classification,
                    reason=first.reason,
                    run_folder=first.run_folder,
                    model_verdict=first.model_verdict,
                    observed=first.observed,
                    seconds=0.0,
                    same_run_as=first.index,
                    played_again=first.played_again,
                )
            )
            write_table(out, version, backend, runs)
            continue
        folder = runs / f"{i:02d}-{sc.name}"
        if folder.exists():
            shutil.rmtree(folder)
        progress(
            f"[{i}/{total}] {cx.invariant}: {', '.join(steps)} on Kafka {version.name} "
            f"({backend}) -> {folder}"
        )
        t0 = time.perf_counter()
        if warm is not None and i == total:
            warm.last_run()  # no counterexample follows: close its cluster, no reset
        if warm is not None:
            _prestart_following(warm, found, i, {*played, key}, version, backend)

        def one(where: Path, sc: Scenario = sc, run_id: str = folder.name) -> Trial:
            return trial(
                sc, version, backend, where, run_id, lambda m: progress(f"    {m}"), warm=warm
            )

        # A run the harness did not play as scripted is no evidence: played once more.
        judged, folder, first_run = once_more_if_missed(
            one, folder, trial_missed, lambda m: progress(f"    {m}")
        )
        info, _prediction, verdict, _record = judged
        run = outcome_of(info, verdict)
        label, reason = classify(model, run, version.name)
        c = Confirmation(
            index=i,
            invariant=cx.invariant,
            steps=steps,
            scenario_file=cx.file,
            classification=label,
            reason=reason,
            run_folder=str(folder),
            model_verdict=asdict(model),
            observed={
                "verdict": run.verdict,
                "lost_acked": run.lost_acked,
                "divergent_offsets": run.divergent_offsets,
            },
            seconds=round(time.perf_counter() - t0, 2),
            played_again=str(first_run) if first_run else None,
        )
        progress(f"[{i}/{total}] {label}: {reason} ({c.seconds:.0f}s)")
        played[key] = c
        out.append(c)
        write_table(out, version, backend, runs)
    return out


def counts(results: list[Confirmation]) -> dict[str, int]:
    """How many counterexamples fall in each class (all four keys, zeros included)."""
    return {c: sum(1 for r in results if r.classification == c) for c in CLASSIFICATIONS}


def summary_table(results: list[Confirmation]) -> str:
    """The text-mode table: one row per counterexample, then the counts."""
    head = f"{'#':>2}  {'invariant':<28} {'classification':<13} {'s':>5}  ordering"
    lines = [head, "-" * len(head)]
    for r in results:
        secs = f"{r.seconds:5.0f}" if r.same_run_as is None else f"{'=' + str(r.same_run_as):>5}"
        lines.append(
            f"{r.index:>2}  {r.invariant:<28} {r.classification:<13} {secs}  {', '.join(r.steps)}"
        )
        lines.append(f"{'':>4}{r.reason}")
        lines.append(f"{'':>4}run folder: {r.run_folder}")
    n = counts(results)
    lines.append("")
    lines.append(", ".join(f"{v} {k}" for k, v in n.items()))
    return "\n".join(lines)
