"""``partition``/``heal``: one iptables DROP per directed link (harness.db.runtime.netns).

A broker whose link to or from the controller a ``partition`` cuts has its LeaderAndIsr
counters marked at the cut, so that when a ``heal`` restores the link the harness can tell
what was held back from it; it then rejoins (held.py) before the next step. A broker cut
from ZooKeeper while running is given a short session timeout before the cluster starts
(harness.generator.realise.configure), so a later ``detect`` of it is a real expiry.

A ``partition`` that cuts two followers F and G from the leader, followed by ``isr_shrink F``
while the model keeps G in the ISR (jepsen-2013-isr-shrink: ``isr_shrink B`` then
``isr_shrink C``), needs G's last catch-up to be later than F's: the leader's ISR expiry
(``Partition.maybeShrinkIsr``) drops every follower out of sync at its run, by time since
``lastCaughtUpTimeMs``, so two followers paused at the same step lagging the same record
leave in one update. G, caught up (its fetch copies nothing), keeps fetching for one
``replica.lag.time.max.ms`` before the cut, as a real follower does; F stays paused. Its last
catch-up is then at least one expiry period (half the lag) after F's.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from harness.generator.playbook.dispatch import plays
from harness.generator.playbook.fences import wait_until
from harness.generator.playbook.held import HeldSteps
from reference_model.events import Event

if TYPE_CHECKING:
    from reference_model.run import RunResult


def fetch_first(
    prediction: RunResult,
    steps: Sequence[Event],
    names: Sequence[str],
    k: int,
    links: Iterable[tuple[str, str]],
) -> list[str]:
    """Followers that partition step ``k`` (cutting ``links``) must let fetch before the cut.

    Those the next ``isr_shrink`` (same leader, of another follower this partition also
    cuts) keeps in the model's ISR, and whose fetch now would copy nothing and change
    nothing the model knows (same log and HW as the leader, no write in flight).
    """
    before = prediction.steps[k - 1].state
    li = before.controller.leader
    if li < 0:
        return []
    lead = names[li]
    cut = {d for s, d in links if s == lead} | {s for s, d in links if d == lead}
    lead_rep = before.replicas[li]
    for j, ev in enumerate(steps[k:], start=k + 1):
        if ev.kind != "isr_shrink":
            continue
        after = prediction.steps[j].state
        f = names[ev.replica]
        if after.controller.leader != li or f not in cut:
            return []
        keep = []
        for g_i in sorted(after.controller.isr):
            rep = before.replicas[g_i]
            if (
                names[g_i] not in (f, lead)
                and names[g_i] in cut
                and len(rep.log) == len(lead_rep.log)
                and rep.hw == lead_rep.hw
                and not rep.needs_truncation
                and before.inflight[g_i] is None
                and g_i not in before.controller.pending
            ):
                keep.append(names[g_i])
        return keep
    return []


class PartitionSteps(HeldSteps):
    """``partition`` and ``heal``."""

    @plays("partition")
    def do_partition(self, k: int, ev: Event, _name: str) -> str:
        links = self._links(ev.links)
        ctl = set(self._controllers())
        to_ctl = {s for s, d in links if d in ctl} | {d for s, d in links if s in ctl}
        self._mark_held(n for n in to_ctl if n in self.ids)
        ahead = self._fetch_ahead(k, links)
        new = self._cut(links)
        self._sync_sessions()
        note = f"realised: iptables DROP {self._show(new)}"
        if ahead:
            note += f"; {ahead}"
        return note

    def _fetch_ahead(self, k: int, links: list[tuple[str, str]]) -> str:
        """Let followers the next ``isr_shrink`` keeps in the ISR fetch (nothing to copy)
        for one lag before the cut, so their catch-up is later than the shrunk one's.

        Returns the note saying who ran and how long ("" when nobody needed to).
        """
        li = self.prediction.steps[k - 1].state.controller.leader
        lead = self.names[li] if li >= 0 else ""
        keep = [
            g
            for g in fetch_first(self.prediction, self.scenario.steps, self.names, k, links)
            if g in self.held and g not in self.cut_from_controller()
        ]
        if not keep or lead in self.held or lead in self.down:
            return ""
        lag = int(self.cluster.brokers[lead].props.get("replica.lag.time.max.ms", 0)) / 1000
        if lag <= 0 or lag > 60:
            return ""
        t0 = time.monotonic()
        try:
            for g in keep:
                self._release(g)
            # Not a synchronisation: the time is the fault (Kafka's rule is a duration).
            # Bounded; the leader must keep G in its ISR throughout.
            ids = {self.ids[g] for g in keep}
            wait_until(
                lambda: time.monotonic() - t0 >= lag or not ids <= set(self.view().isr),
                f"{','.join(keep)} to fetch for {lag:.0f} s before the cut",
                lag + 30,
                self._seen,
            )
        finally:
            for g in keep:
                self._hold(g)
        return (
            f"{','.join(keep)} fetched {time.monotonic() - t0:.1f} s first (caught up: "
            "its last catch-up after the paused follower's, so a later isr_shrink drops "
            "only that one)"
        )

    @plays("heal")
    def do_heal(self, k: int, ev: Event, name: str) -> str:
        net = self._net()
        before = set(net.cuts())
        held_before = self.cut_from_controller()
        # Hold the leader *before* the rules go: a broker cut from the controller learns it
        # is a follower within milliseconds of the heal and fetches at once; holding the
        # leader after the heal (as _rejoin does) loses that race whenever reading the
        # leader's HW before its pause takes longer than the rejoiner's metadata fetch
        # (seen on 3.3.1-kraft under load: A copied m3 during the heal step itself).
        pre_held = self._hold_leader_for(held_before)
        if ev.links:
            self._uncut(self._links(ev.links))
        elif name:
            net.heal(name)
        else:
            net.heal()
        healed = before - set(net.cuts())
        notes = [f"realised: iptables rules removed for {self._show(healed)}"]
        rejoined = sorted(
            n
            for n in held_before - self.cut_from_controller()
            if n not in self.down and self.cluster.is_running(n)
        )
        for n in rejoined:
            notes.append(self._rejoin(k, n))
        if pre_held is not None and not rejoined:
            self._release(pre_held)  # nobody rejoined: the heal leaves the leader as it was
        self._sync_sessions()
        return "; ".join(x for x in notes if x)

    def _hold_leader_for(self, cut: set[str]) -> str | None:
        """Hold the current leader ahead of a heal that may end a controller cut.

        Returns the leader held here (None if none was: no broker cut from the controller,
        no live leader, the leader itself cut, or already held).
        """
        if not cut:
            return None
        lead = self.leader()
        if lead is None or lead in cut or lead in self.down or lead in self.held:
            return None
        self._hold(lead)
        return lead
