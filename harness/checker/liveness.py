"""The controller's liveness after every step against the model's: who it counts alive.

The model's controller counts a broker live until a ``detect`` step (ZooKeeper: the
session's expiry; KRaft: the heartbeat session's) and again once it restarts. The harness
keeps the real controller on that script: ZooKeeper sessions outlast any pause, and in
KRaft a session keeper heartbeats for every broker that is silent but live to the model
(harness.db.mode.kraft). A controller that fenced or dropped a broker the model counts
live, or kept one it does not, went behind the script: the fence changes ISR and
elections later, and may not show in any HW or log (seen: a 4.0 controller fenced a broker
restarted and held during ``restart: all``, unfenced it a step later, and the run's logs
and HWs still matched). So it is a difference of its own, at the step it shows.

Observed from the controller (``Observation.live``: registered in ZooKeeper, unfenced in
KRaft), never from the model. Brokers whose session can run out by itself at that step
(``Observation.live_free``: cut from their session keeper, or let go by a ``detect`` of a
running broker) are not compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class LivenessMismatch:
    step: int
    event: str
    observed: list[str]  # live to the real controller
    predicted: list[str]  # live to the model's controller

    def describe(self) -> str:
        extra = sorted(set(self.observed) - set(self.predicted))
        gone = sorted(set(self.predicted) - set(self.observed))
        what = "; ".join(
            x
            for x in (
                f"{', '.join(gone)} not live to the controller" if gone else "",
                f"{', '.join(extra)} still live to the controller" if extra else "",
            )
            if x
        )
        return (
            f"step {self.step} ({self.event}): {what} (the controller counts "
            f"{self.observed or 'none'} live, the model {self.predicted or 'none'})"
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def predicted_live(run: Any) -> list[list[str]]:
    """The model's live brokers by name after every step of ``run`` (a RunResult)."""
    names = list(run.config.brokers)
    return [sorted(names[i] for i in s.state.controller.live) for s in run.steps[1:]]


def liveness_check(
    predicted: Sequence[Sequence[str]], observations: Sequence[Any]
) -> list[LivenessMismatch]:
    """Every step whose observed live set differs from the model's, over the brokers held
    to the model at that step. Observations without a live set (older runs) are skipped."""
    out = []
    for obs in observations:
        live = getattr(obs, "live", None)
        k = int(obs.step)
        if live is None or not 1 <= k <= len(predicted):
            continue
        free = set(getattr(obs, "live_free", []) or [])
        seen = sorted(set(live) - free)
        want = sorted(set(predicted[k - 1]) - free)
        if seen != want:
            out.append(LivenessMismatch(k, str(obs.event), seen, want))
    return out
