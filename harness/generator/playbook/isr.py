"""``isr_shrink F``: the leader drops follower F from the ISR, for real, by time.

F is cut from the leader (and left running, so its session lives) until the controller's
ISR lost F. That needs a short ``replica.lag.time.max.ms`` on the leader for the run (the
default is long because followers are paused between their fetch steps;
harness.generator.realise.configure sets it). Other paused followers the model keeps in the
ISR would fall out too on versions where a caught-up follower goes stale by time alone
(before KAFKA-7152, 2.1.0: ``Replica.lastCaughtUpTimeMs``); there, those whose fetch would
change nothing run meanwhile (from 2.1 they stay paused: a caught-up follower stays in sync,
and a running one would learn the HW the shrink raises before the model's next fetch step),
and any other follower that drops anyway is named in the step's notes. The shrink
completes pending acks=all writes, whose reports are awaited before the next step.
"""

from __future__ import annotations

import time

from harness.generator.playbook.cuts import both_ways
from harness.generator.playbook.dispatch import plays
from harness.generator.playbook.fences import FenceTimeout, wait_until
from harness.generator.playbook.fetch import ROUND_POLL
from harness.generator.playbook.settle import Settling
from harness.nemesis import faults as nemesis
from reference_model.events import Event


class IsrSteps(Settling):
    """``isr_shrink``."""

    @plays("isr_shrink")
    def do_isr_shrink(self, k: int, ev: Event, name: str) -> str:
        before = self.prediction.steps[k - 1].state
        after = self.prediction.steps[k].state
        bid = self.ids[name]
        lead = self.leader()
        if lead is None or lead in self.down:
            return "no leader"
        if bid not in self.view().isr:
            # The shrink that dropped F happened earlier (with another follower's); it may
            # still have completed acks=all writes whose answers are in flight: wait for
            # them as below, or a crash of the leader in the next step races them.
            self.await_acks(k)
            return f"realised: {name} was already out of the controller's ISR"
        t0 = time.perf_counter()
        self._wake_leader()
        new = self._cut(both_ways([(name, lead)]))
        # Followers the model keeps in the ISR and whose fetch would change nothing run
        # meanwhile (a paused one goes stale by time alone before KAFKA-7152).
        lead_i = self.names.index(lead)
        lead_rep = before.replicas[lead_i]
        run_meanwhile = []
        # From KAFKA-7152 (2.1) a caught-up follower is never out of sync, and running it
        # would let it learn the HW the shrink raises, which the model gives it only at its
        # next fetch step (kip320 on 4.0.0-elr: A's HW 2 at the shrink, the model's 1).
        stale_by_time = not self.prediction.config.generation.caught_up_stays_in_isr
        for j, rep in enumerate(before.replicas):
            n = self.names[j]
            if not stale_by_time:
                break
            if n in (name, lead) or j not in after.controller.isr or n not in self.held:
                continue
            if (
                len(rep.log) == len(lead_rep.log)
                and rep.hw == lead_rep.hw
                and not rep.needs_truncation
                and before.inflight[j] is None
                and j not in before.controller.pending
            ):
                run_meanwhile.append(n)
        # A follower the controller cannot reach (held back) still follows its old leader:
        # running it would fetch from that one, a fetch the script never had; it stays paused.
        released = name in self.held and name not in self.cut_from_controller()
        hw_before = {n: self.hw_reading(n).hw for n in run_meanwhile}  # paused: its file
        try:
            if released:
                self._release(name)  # alive and heartbeating, only cut from the leader
            for n in run_meanwhile:
                self._release(n)
            limit = 3 * int(self.cluster.brokers[lead].props.get("replica.lag.time.max.ms", 0))
            wait_until(
                lambda: bid not in self.view().isr,
                f"the leader {lead} to shrink {name} out of the ISR",
                max(self.timeout, limit / 1000 + 15),
                self._seen,
                # the shrink raises the leader's HW and a follower run meanwhile takes it
                # with its parked Fetch's answer: its pause (below) must follow at once
                poll_max=ROUND_POLL,
            )
        except FenceTimeout as exc:
            raise FenceTimeout(
                f"step {k}: {exc} (cut {self._show(new)}; the leader kept {name}: "
                "a caught-up follower is never out of sync from KAFKA-7152, 2.1.0)"
            ) from None
        finally:
            # The leader stopped while the followers that ran are read and paused: its HW
            # moved with the shrink, and a parked Fetch answered meanwhile would hand it to
            # them inside the step (0.10.2.1 kip320-zombie-follower: A took HW 2 21-151 ms
            # after "Shrinking ISR", while its HW was being read before its pause).
            shield = self._shield_from_leader(name, lead) if run_meanwhile else None
            try:
                for n in run_meanwhile:
                    self._hold(n)
                if released:
                    self._hold(name)
            finally:
                if shield is not None:
                    nemesis.resume(self.cluster, shield)
            self._uncut(new)
        self.await_acks(k)
        waited = time.perf_counter() - t0
        cut = (
            f"iptables cut {self._show(new)}"
            if new
            else f"{name}<->{lead} already cut by the scenario"
        )
        notes = [
            f"realised: {cut}; replica.lag.time.max.ms="
            f"{self.cluster.brokers[lead].props.get('replica.lag.time.max.ms', '?')}; "
            f"waited {waited:.1f} s for the ISR shrink{'; healed' if new else ''}"
        ]
        if run_meanwhile:
            notes.append(f"{','.join(run_meanwhile)} ran meanwhile (caught up)")
        for n, hw in hw_before.items():
            now = self.hw_reading(n).hw
            if now > hw >= 0:
                # The answer to its parked Fetch carried the HW the shrink raised before the
                # pause above: a fetch round the script does not have (the window is one
                # parked Fetch from the shrink, which can be milliseconds).
                notes.append(
                    f"harness: {n} ran meanwhile and applied the HW the shrink raised "
                    f"({hw} -> {now}, its own checkpoint) before it was paused again"
                )
        isr = self.view().isr
        dropped = [
            self.names[j]
            for j in after.controller.isr
            if self.ids[self.names[j]] not in isr and self.names[j] != name
        ]
        if dropped:
            notes.append(
                f"{','.join(dropped)} dropped out of the ISR too (paused, lagging the leader)"
            )
        return "; ".join(notes)

    def await_acks(self, k: int) -> None:
        """Fence: writes the model acknowledges by step ``k`` have their delivery report.

        An ISR shrink completes pending acks=all writes (the HW passes them); the report
        must be in before a later step (a crash of the leader) can turn it into a
        transport error the model never had.
        """

        acked = {w.record for w in self.prediction.steps[k].state.writes if w.status == "acked"}
        waiting = [
            d for r, d in self.producer.deliveries.items() if r in acked and d.status == "pending"
        ]
        if not waiting:
            return

        def reported() -> bool:
            self.poll_producers()
            return all(d.status != "pending" for d in waiting)

        wait_until(reported, "the leader's answer to writes the shrink completes", self.timeout)
