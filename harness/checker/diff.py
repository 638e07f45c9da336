"""The *checker*: observed replica logs against the model's prediction, per replica/offset.

A pandas outer join on (replica, offset) of the predicted and observed logs gives one row
per position with a status: ``match``, ``missing`` (predicted, not on disk), ``extra`` (on
disk, not predicted) or ``different`` (another record). Epochs are compared where the
message format stores them and reported apart: which epoch number a controller hands out
after simultaneous failures depends on how it batches ZooKeeper events, which the model does
not pin, while records at offsets are the safety property under test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass
class Verdict:
    # match | prevented (stopped where the model predicts the version refuses the step, logs
    # matching up to it: a pass) | model_mismatch | step_prevented | error
    verdict: str
    model_match: bool
    lost_acked: list[str]
    predicted_lost_acked: list[str]
    divergent_offsets: list[int]
    predicted_divergent_offsets: list[int]
    differences: list[dict[str, Any]] = field(default_factory=list)
    epoch_mismatches: list[dict[str, Any]] = field(default_factory=list)
    # leader-epoch-checkpoint per replica: {"predicted": [[epoch, start], ...], "observed": ...}
    epoch_checkpoints: dict[str, dict[str, list[list[int]]]] = field(default_factory=dict)
    first_differing_step: int | None = None
    outcomes: list[str] = field(default_factory=list)
    reason: str = ""
    # The model's prediction that this version makes step ``prevented_step`` impossible
    # (reason names the Kafka change), and what the harness saw of it.
    prevented_step: int | None = None
    prevented_reason: str = ""
    harness_note: str = ""
    # The per-step HW check (harness.checker.hw.HwCheck.to_json()): source, agreement
    # counts, every mismatch, the first one.
    hw: dict[str, Any] = field(default_factory=dict)
    # The consumer oracle (harness.checker.consumer.consumer_verdict): reads against the
    # model, and Jepsen-style anomalies observed and predicted.
    consumer: dict[str, Any] = field(default_factory=dict)
    # Brokers that exited on their own (harness.generator.playbook.halts.Halt.to_json): the
    # step each was seen at, its fatal log line, the model's step of it (None: unpredicted).
    halts: list[dict[str, Any]] = field(default_factory=list)
    # Steps where the controller counted other brokers live than the model's controller
    # (harness.checker.liveness.LivenessMismatch.to_json()).
    liveness: list[dict[str, Any]] = field(default_factory=list)
    # A mismatch the harness itself says it made (a window its step missed, observed):
    # the first HW difference with the harness's note (harness.checker.hw.missed_window).
    harness_missed: str = ""

    def differs_at(self, step: int, why: str) -> None:
        """A difference the brokers showed at ``step``: the run is a model mismatch from
        there, whatever its final logs say (the per-step checks call this)."""
        self.model_match = False
        if self.verdict in ("match", "prevented"):
            self.verdict = "model_mismatch"
        self.reason = "; ".join(x for x in (self.reason, why) if x)
        if self.first_differing_step is None or step < self.first_differing_step:
            self.first_differing_step = step

    @property
    def checkpoint_mismatches(self) -> list[str]:
        """Replicas whose leader-epoch-checkpoint differs from the model's epoch cache."""
        return sorted(
            n for n, c in self.epoch_checkpoints.items() if c["predicted"] != c["observed"]
        )

    def summary(self) -> str:
        if self.verdict == "match":
            what = []
            if self.lost_acked:
                what.append(f"lost acknowledged {self.lost_acked}")
            if self.divergent_offsets:
                what.append(f"divergent offsets {self.divergent_offsets}")
            told = "; ".join(what) or "no loss, no divergence"
            return f"model match: {told}, as predicted"
        if self.verdict == "prevented":
            return (
                f"prevented as predicted at step {self.prevented_step}: {self.prevented_reason}"
                f" (harness: {self.harness_note})"
            )
        if self.verdict == "model_mismatch":
            step = (
                f" (first differing step {self.first_differing_step})"
                if self.first_differing_step is not None
                else ""
            )
            hw = f"; {self.hw['summary']}" if self.hw.get("mismatches") else ""
            missed = (
                f"; not played as scripted, so no evidence on the model: {self.harness_missed}"
                if self.harness_missed
                else ""
            )
            return f"MODEL MISMATCH{step}: {len(self.differences)} positions differ{hw}{missed}"
        return f"{self.verdict}: {self.reason}"


def diff_logs(predicted: pd.DataFrame, observed: pd.DataFrame) -> pd.DataFrame:
    """Outer join of two (replica, offset, epoch, record) frames with a per-row status."""
    cols = ["replica", "offset", "epoch", "record"]
    p = predicted[cols].rename(columns={"epoch": "epoch_predicted", "record": "predicted"})
    o = observed[cols].rename(columns={"epoch": "epoch_observed", "record": "observed"})
    d = p.merge(o, on=["replica", "offset"], how="outer").sort_values(["replica", "offset"])
    status = pd.Series("match", index=d.index)
    status[d["observed"].isna()] = "missing"
    status[d["predicted"].isna()] = "extra"
    both = d["observed"].notna() & d["predicted"].notna()
    status[both & (d["observed"] != d["predicted"])] = "different"
    d["status"] = status
    return d.reset_index(drop=True)


def divergent_offsets(logs: pd.DataFrame) -> list[int]:
    """Offsets at which two replicas hold different records."""
    if logs.empty:
        return []
    n = logs.groupby("offset")["record"].nunique()
    return sorted(int(o) for o in n[n > 1].index)


def first_differing_step(
    predicted_leo: list[dict[str, int]], observed_leo: list[dict[str, int]]
) -> int | None:
    """First step (1-based) after which some replica's on-disk LEO differs from the model."""
    for k, (p, o) in enumerate(zip(predicted_leo, observed_leo, strict=False), start=1):
        for name, leo in o.items():
            if leo >= 0 and p.get(name) != leo:
                return k
    return None


def check(
    predicted: pd.DataFrame,
    observed: pd.DataFrame,
    lost_acked: list[str],
    predicted_lost: list[str],
    predicted_divergent: list[int],
    compare_epochs: bool,
    predicted_leo: list[dict[str, int]] | None = None,
    observed_leo: list[dict[str, int]] | None = None,
    outcomes: list[str] | None = None,
) -> tuple[Verdict, pd.DataFrame]:
    """The verdict of one run, and the per-position diff behind it."""
    d = diff_logs(predicted, observed)
    bad = d[d["status"] != "match"]
    epochs: list[dict[str, Any]] = []
    if compare_epochs:
        both = d[(d["status"] == "match")]
        ep = both[both["epoch_predicted"] != both["epoch_observed"]]
        epochs = _records(ep[["replica", "offset", "epoch_predicted", "epoch_observed"]])
    div = divergent_offsets(observed)
    match = (
        bad.empty
        and sorted(lost_acked) == sorted(predicted_lost)
        and div == sorted(predicted_divergent)
    )
    step = None
    if not match and predicted_leo is not None and observed_leo is not None:
        step = first_differing_step(predicted_leo, observed_leo)
    verdict = Verdict(
        verdict="match" if match else "model_mismatch",
        model_match=match,
        lost_acked=sorted(lost_acked),
        predicted_lost_acked=sorted(predicted_lost),
        divergent_offsets=div,
        predicted_divergent_offsets=sorted(predicted_divergent),
        differences=_records(
            bad[["replica", "offset", "predicted", "observed", "status"]]
            .astype(object)
            .where(bad.notna(), None)
        ),
        epoch_mismatches=epochs,
        first_differing_step=step,
        outcomes=outcomes or [],
    )
    return verdict, d


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain dicts keyed by column name (JSON-ready)."""
    return [{str(k): v for k, v in row.items()} for row in df.to_dict("records")]
