"""The fence every step waits on, and the two ways a step can fail to happen.

Every fence is a bounded tenacity wait on observable state (ZooKeeper, files, the leader's
answer); a fence that is not reached raises :class:`FenceTimeout` naming what was expected
and what was seen, so a run stops rather than guess. A step that cannot be made to happen
on this backend or version raises :class:`StepPrevented`: a result, not a bug. These have
no dependency on the playbook, so the runner, the nemesis and every step family share them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tenacity import RetryError, retry, retry_if_result, stop_after_delay, wait_fixed

from harness.db import FenceTimeout, StepPrevented

__all__ = ["FenceTimeout", "Observation", "StepPrevented", "wait_until"]


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


def wait_until(
    check: Callable[[], Any], what: str, timeout: float, seen: Callable[[], str] | None = None
) -> Any:
    """Poll ``check`` until it returns something truthy, or fail naming ``what``."""

    @retry(
        stop=stop_after_delay(timeout), wait=wait_fixed(0.1), retry=retry_if_result(lambda v: not v)
    )
    def poll() -> Any:
        return check()

    try:
        return poll()
    except RetryError:
        now = seen() if seen is not None else "?"
        msg = f"timed out after {timeout:.0f}s waiting for {what}; seen: {now}"
        raise FenceTimeout(msg) from None
