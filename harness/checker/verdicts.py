"""Two verdicts of every run, kept apart: *agreement* and *safety*.

*Agreement*: did the brokers do what the model predicted (``match``, ``mismatch``,
``fence timeout``, ``prevented``, ...). *Safety*: was data lost (acknowledged writes the final
leader lacks, offsets where replicas hold different records, and consumer anomalies once the
consumer oracle fills ``consumer_anomalies``). A run that loses a write exactly as predicted
is a model match *and* unsafe: a CI user must never read the green of the first as the
second, so every surface (CLI last line, HTML report, JUnit properties, matrix table) shows
both, built here from the same ``run.json`` fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.checker.results import RunInfo

# RunInfo.verdict -> the agreement word shown to users.
AGREEMENT = {
    "match": "match",
    "ok": "match",  # model-only runs: the model agrees with itself; see ``model_only``
    "lost_acked": "match",
    "divergence": "match",
    "offline": "match",
    "prevented": "prevented",
    "model_mismatch": "mismatch",
    "fence_timeout": "fence timeout",
    "step_prevented": "step not played",
    "error": "error",
}
# Agreement words for which the run reached its end state: safety is then known.
JUDGED = ("match", "mismatch", "prevented")


@dataclass(frozen=True)
class TwoVerdicts:
    """Agreement and safety of one run (from ``run.json``; no model is consulted)."""

    agreement: str
    model_only: bool
    lost_acked: list[str] = field(default_factory=list)
    divergent_offsets: list[int] = field(default_factory=list)
    # Filled by the consumer oracle (records read twice, out of order, skipped) when a run
    # carries ``extra["consumer_anomalies"]``; empty until then.
    consumer_anomalies: list[str] = field(default_factory=list)
    # A mismatch the harness says it made itself (harness.checker.hw.missed_window): the
    # step it names was not played as scripted, so the run is no evidence on the model.
    harness_missed: str = ""

    @property
    def safety_known(self) -> bool:
        """False when the run stopped before its end state (fence timeout, error)."""
        return self.agreement in JUDGED

    @property
    def lost(self) -> bool:
        """Data was lost or replicas diverged (the safety verdict is red)."""
        return bool(self.lost_acked or self.divergent_offsets or self.consumer_anomalies)

    @property
    def safety(self) -> str:
        """``lost`` | ``no loss`` | ``unknown`` (one word, for tables and JUnit)."""
        if self.lost:
            return "lost"
        return "no loss" if self.safety_known else "unknown"

    def agreement_text(self) -> str:
        if self.model_only:
            return "model only (no brokers played)"
        if self.agreement == "mismatch" and self.harness_missed:
            return (
                "MISMATCH, but not played as scripted (no evidence on the model; play it "
                f"again): {self.harness_missed}"
            )
        return {
            "match": "match (the brokers did what the model predicted)",
            "prevented": "prevented (the version refused the step, as predicted)",
            "mismatch": "MISMATCH (the brokers did not do what the model predicted)",
        }.get(self.agreement, f"{self.agreement.upper()} (no verdict on the model)")

    def safety_text(self) -> str:
        parts = []
        if self.lost_acked:
            parts.append(f"acknowledged writes LOST: {', '.join(self.lost_acked)}")
        if self.divergent_offsets:
            offs = ", ".join(str(o) for o in self.divergent_offsets)
            parts.append(f"replicas DIVERGE at offsets {offs}")
        if self.consumer_anomalies:
            parts.append(f"consumer anomalies: {', '.join(self.consumer_anomalies)}")
        if parts:
            return "; ".join(parts)
        if not self.safety_known:
            return "unknown (the run stopped before its end state)"
        return "no acknowledged write lost, replicas agree"

    def last_line(self) -> str:
        """The CLI's last line: both verdicts, the loss named."""
        return f"agreement: {self.agreement_text()} | safety: {self.safety_text()}"

    def to_json(self) -> dict[str, Any]:
        return {
            "agreement": self.agreement if not self.model_only else "model only",
            "safety": self.safety,
            "lost_acked": list(self.lost_acked),
            "divergent_offsets": list(self.divergent_offsets),
            "consumer_anomalies": list(self.consumer_anomalies),
            "harness_missed": self.harness_missed,
        }


def two_verdicts(info: RunInfo | dict[str, Any]) -> TwoVerdicts:
    """Both verdicts of a run, from its RunInfo or its ``run.json``/``verdict.json`` dict."""
    doc = info if isinstance(info, dict) else info.__dict__
    verdict = str(doc.get("verdict", "error"))
    extra = doc.get("extra") or {}
    return TwoVerdicts(
        agreement=AGREEMENT.get(verdict, verdict.replace("_", " ")),
        model_only=doc.get("backend") == "model",
        lost_acked=sorted(str(r) for r in doc.get("lost_acked") or []),
        divergent_offsets=sorted(int(o) for o in doc.get("divergent_offsets") or []),
        consumer_anomalies=[str(a) for a in extra.get("consumer_anomalies") or []]
        or consumer_anomaly_words(extra.get("consumer") or {}),
        harness_missed=str(extra.get("harness_missed") or ""),
    )


# The consumer oracle's anomalies that make a run unsafe on their own: a consumer read a
# record that was later gone, saw the HW go back, or was served above the committed HW.
# ("lost" and "divergent_offsets" are the run's own lost_acked / divergent_offsets.)
UNSAFE_READS = ("read_then_lost", "hw_regression", "uncommitted_read")


def consumer_anomaly_words(consumer: dict[str, Any]) -> list[str]:
    """One short phrase per anomaly the consumer oracle observed (``extra["consumer"]``)."""
    observed = consumer.get("observed") or {}
    out: list[str] = []
    for kind in UNSAFE_READS:
        for item in observed.get(kind) or []:
            if isinstance(item, dict) and "record" in item:
                what = f"{item['record']}@{item.get('offset', '?')}"
                out.append(f"{kind.replace('_', '-')} {what} (step {item.get('step', '?')})")
            elif isinstance(item, dict):  # an HW regression: the leader's HW a consumer saw
                what = f"{item.get('before', '?')} -> {item.get('after', '?')}"
                out.append(f"{kind.replace('_', '-')} {what} (step {item.get('step', '?')})")
            else:
                out.append(f"{kind.replace('_', '-')} {item}")
    return out
