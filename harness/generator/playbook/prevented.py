"""The broker's side of a step the model predicts prevented (the runner's, not a step).

For a step the model refuses on this version, the runner asks the playbook to check that
the broker refuses it too, instead of playing it; a check that would be costly or
ambiguous is not made, and the note says so. Only ``isr_shrink F`` is checked
(KAFKA-7152: a caught-up follower is never out of sync): F is cut from the leader for the
window in which an older broker would shrink it, and the controller's ISR is read
throughout.
"""

from __future__ import annotations

import time

from harness.generator.playbook.cuts import both_ways
from harness.generator.playbook.fences import FenceTimeout, wait_until
from harness.generator.playbook.settle import Settling
from reference_model.events import Event

PROPAGATION_S = 3.0
"""Slack after the last ISR-expiry run that could shrink F: the leader's ISR change written
(ZooKeeper, or AlterPartition to the controller) and read back by the harness."""


class PreventionChecks(Settling):
    """``check_prevented``, called by harness.generator.runner."""

    def check_prevented(self, k: int, ev: Event, reason: str) -> str:
        """The broker's side of a prevention the model predicts for step ``k``.

        ``isr_shrink F`` (KAFKA-7152: a caught-up follower is never out of sync): F is cut
        from the leader for the window in which an older broker would shrink it, and the
        controller's ISR is read throughout. F is paused since before the cut, so its last
        catch-up is no later than the cut; an older leader drops it at the first run of its
        ISR-expiry task (every half lag) after one lag: within 1.5 lag of the cut. The
        window is that plus :data:`PROPAGATION_S` for the ISR change to reach the
        controller's metadata on a loaded machine (it was 2 lag + 3 s: 15 s of waiting per
        run where 12 s say the same). Other kinds are not checked here. Called by the
        runner instead of playing the step.
        """

        if ev.kind != "isr_shrink" or ev.replica < 0:
            return f"not played: step {k} predicted prevented; the broker's refusal not checked"
        name = self.names[ev.replica]
        lead = self.leader()
        bid = self.ids[name]
        if lead is None or lead in self.down or bid not in self.view().isr:
            return f"not checked: {name} is not a follower in the controller's ISR here"
        lag = int(self.cluster.brokers[lead].props.get("replica.lag.time.max.ms", 0))
        if not lag or lag > 60_000:
            return f"not checked: {lead} runs without the short replica.lag.time.max.ms"
        self._wake_leader()
        new = self._cut(both_ways([(name, lead)]))
        released = name in self.held and name not in self.cut_from_controller()
        window = 1.5 * lag / 1000 + PROPAGATION_S
        t0 = time.perf_counter()
        try:
            if released:
                self._release(name)
            wait_until(lambda: bid not in self.view().isr, f"{name} to leave the ISR", window)
        except FenceTimeout:
            return (
                f"refused as predicted: {lead} kept {name} in the ISR for "
                f"{time.perf_counter() - t0:.1f} s with {self._show(new)} cut "
                f"(replica.lag.time.max.ms={lag})"
            )
        finally:
            if released:
                self._hold(name)
            self._uncut(new)
        return (
            f"NOT refused: {lead} shrank {name} out of the ISR after "
            f"{time.perf_counter() - t0:.1f} s with {self._show(new)} cut, although the model "
            f"predicts the step prevented ({reason})"
        )
