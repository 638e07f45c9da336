"""When a step rings the run's doorbell (playbook/bell.py), and when it must not.

Two waits ring it: a produce step's wait for the Fetches parked at the leader
(playbook/produce.py ``_parked_fetches_answered``: every one of them is waited for anyway,
and nothing moves the test partition meanwhile) and a record-less fetch's wait for the
parked answer that carries the leader's HW (playbook/fetch.py ``_hw_learned``), where a
ring must not answer another paused follower's Fetch sooner than its timer would if that
answer tells it something (:meth:`Ringing._bell_ringer`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from harness.db.names import PARTITION
from harness.db.runtime.process import stopped
from harness.generator.playbook.settle import Settling
from harness.readback import tcp
from harness.readback.hw import checkpointed_hw

BELL_FIRST = 0.02
"""Seconds into a record-less fetch's wait for the HW before the first ring (bell.py)."""

BELL_EVERY = 0.1
"""Seconds between two rings of that wait."""

BELL_RINGS = 5
"""Rings at most per wait; then the timer answers."""


class Ringing(Settling):
    """Ringing the doorbell from a step's wait (the produce and fetch families)."""

    def _ring(self, leader: str | None, waiting: list[str], why: str) -> bool:
        """Ring the run's doorbell at ``leader`` (playbook/bell.py): every Fetch parked there
        is answered now rather than at its timer. Only at a broker that runs (not down,
        not paused by anyone); True when rung. The caller decides that ringing changes
        nothing but when those answers come."""
        if self.bell is None or leader is None:
            return False
        if leader in self.down or leader in self.held or leader in self.user_paused:
            return False
        pid = self.cluster.host_pid(leader)
        if pid is not None and stopped(pid):
            return False  # shielded or held by a step: it answers nothing now anyway
        try:
            return self.bell.ring(leader, self.current_step, waiting, why)
        except Exception:  # a ring is best effort; the waits observe what happened
            return False

    def _bell_unsettled(self, k: int) -> str:
        """The note for step ``k`` while a ring not acknowledged may still land
        (:meth:`harness.generator.playbook.bell.Doorbell.unsettled`); "" otherwise."""
        if self.bell is None:
            return ""
        try:
            return self.bell.unsettled(k)
        except Exception:  # a producer closed under it: nothing more will land from it
            return ""

    def _bell_ringer(self, name: str, lead: str) -> Callable[[], None]:
        """What rings the doorbell (bell.py) while F waits for the parked answer that carries
        the leader's HW: a few rings, ``BELL_FIRST`` s after the wait began and every
        ``BELL_EVERY`` s after (F sends that Fetch when it has processed the last answer,
        which the harness does not see; a ring before it arrives answers nothing of F's).

        A ring answers every Fetch parked at the leader, so it is rung only when no *other*
        paused follower G would learn anything from its answer coming now rather than when
        its timer runs out, after whatever the next step does (a crash of the leader: G
        would never have had it). Either G has no Fetch in flight to the leader (read from
        the kernel, ``harness.readback.tcp.nothing_in_flight``), or the answer would tell
        G nothing: its own HW (its checkpoint, frozen since its pause) is already the
        leader's HW as far as G's log reaches, and a parked Fetch brings no records; or G's
        own fetch is the next event played (the rest of ``fetch: followers``, or the next
        step), so G processes that answer next whenever it comes, nothing played between.
        Else a no-op: the timer answers, as without a bell.
        """
        lead_pid = self.cluster.host_pid(lead)
        others = sorted((self.held | self.user_paused) - self.down - {name, lead})
        lead_hw = self.leader_hw(lead) if others and self.bell is not None else -1

        nxt = self.next_event
        fetches_next = (
            self.names[nxt.replica]
            if nxt is not None and nxt.kind == "fetch" and 0 <= nxt.replica < len(self.names)
            else None
        )

        def told_nothing(n: str) -> bool:
            if n == fetches_next:
                return True
            pid = self.cluster.host_pid(n)
            if pid is None or lead_pid is None:
                return False
            if tcp.nothing_in_flight(pid, lead_pid) is True:
                return True
            if lead_hw < 0:
                return False
            hw = checkpointed_hw(self.cluster.log_dir(n), self.cluster.topic, PARTITION)
            return hw == min(lead_hw, self.leo(n))

        quiet = self.bell is not None and lead_pid is not None and all(map(told_nothing, others))
        start = time.monotonic()
        rung: list[float] = []

        def ring() -> None:
            now = time.monotonic()
            if not quiet or len(rung) >= BELL_RINGS or now - start < BELL_FIRST:
                return
            if rung and now - rung[-1] < BELL_EVERY:
                return
            rung.append(now)
            self._ring(lead, [name], "the leader's HW for a fetch without records")

        return ring
