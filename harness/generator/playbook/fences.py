"""The fence every step waits on, and the two ways a step can fail to happen.

Every fence is a bounded tenacity wait on observable state (ZooKeeper, files, the leader's
answer); a fence that is not reached raises :class:`FenceTimeout` naming what was expected
and what was seen, so a run stops rather than guess. A step that cannot be made to happen
on this backend or version raises :class:`StepPrevented`: a result, not a bug. These have
no dependency on the playbook, so the runner, the nemesis and every step family share them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tenacity import RetryError, retry, retry_if_result, stop_after_delay, wait_exponential

from harness import timing
from harness.db import FenceTimeout, StepPrevented

__all__ = ["FenceTimeout", "Observation", "StepPrevented", "wait_until"]

POLL_FIRST = 0.01
POLL_MAX = 0.1
"""A fence polls again after 10 ms, doubling up to 100 ms between polls.

Why not a fixed 100 ms: most fences are reached within milliseconds of the step's action
(a follower resumed for one fetch round, a leader that already answered, a checkpoint
written every 10 ms), and a fixed interval made each of them wait for the next tick, ~50 ms
on average, 8-13 fences per run. The few polls more cost little CPU, and a fetch step that
ends sooner pauses its follower sooner, well inside ``replica.fetch.wait.max.ms``. A fence
that takes long still polls every 100 ms (the fetch step's own fences every 20 ms:
``playbook.fetch.ROUND_POLL``)."""


@dataclass
class Observation:
    """What the cluster looked like after one step."""

    step: int
    event: str
    seconds: float
    leader: str
    leader_epoch: int
    isr: list[str]
    leo: dict[str, int]  # on-disk LEO per replica (-1: no partition dir yet)
    notes: list[str] = field(default_factory=list)
    # Each replica's HW as its broker checkpointed it (harness.readback.hw; -1: none), and
    # whether that reading was stable (two fresh writes agreed, or the broker was paused or
    # down so its file could not move).
    hw: dict[str, int] = field(default_factory=dict)
    hw_stable: dict[str, bool] = field(default_factory=dict)
    # The leader's HW on the wire (ListOffsets latest; -1: no answer).
    leader_hw_wire: int = -1
    # The brokers the controller counts live (ZooKeeper: registered; KRaft: unfenced);
    # None: not observed. ``live_free``: brokers whose session can run out by itself, so
    # not held to the model: cut from their session keeper (ZooKeeper mode's short session
    # runs while the cut lasts) or let go by a ``detect`` of a running broker.
    live: list[str] | None = None
    live_free: list[str] = field(default_factory=list)


def wait_until(
    check: Callable[[], Any],
    what: str,
    timeout: float,
    seen: Callable[[], str] | None = None,
    poll_max: float = POLL_MAX,
) -> Any:
    """Poll ``check`` until it returns something truthy, or fail naming ``what``.

    ``poll_max`` caps the time between polls: a fence whose moment opens a window Kafka's
    timer closes (a follower's fetch round, see playbook/fetch.py) polls more often, so
    the window is not spent waiting for the next poll.

    The wait is recorded (``what``, seconds) in the run's timings (:mod:`harness.timing`), so
    the run folder says which fence a slow step spent its time in.
    """

    @retry(
        stop=stop_after_delay(timeout),
        wait=wait_exponential(multiplier=POLL_FIRST, min=POLL_FIRST, max=poll_max),
        retry=retry_if_result(lambda v: not v),
    )
    def poll() -> Any:
        return check()

    t0 = time.perf_counter()
    try:
        value = poll()
    except RetryError:
        timing.fence(what, time.perf_counter() - t0, ok=False)
        now = seen() if seen is not None else "?"
        msg = f"timed out after {timeout:.0f}s waiting for {what}; seen: {now}"
        raise FenceTimeout(msg) from None
    timing.fence(what, time.perf_counter() - t0)
    return value
