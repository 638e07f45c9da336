"""``partition``/``heal``: one iptables DROP per directed link (harness.db.runtime.netns).

A broker whose link to or from the controller a ``partition`` cuts has its LeaderAndIsr
counters marked at the cut, so that when a ``heal`` restores the link the harness can tell
what was held back from it; it then rejoins (held.py) before the next step. A broker cut
from ZooKeeper while running is given a short session timeout before the cluster starts
(harness.generator.realise.configure), so a later ``detect`` of it is a real expiry.
"""

from __future__ import annotations

from harness.generator.playbook.held import HeldSteps
from reference_model.events import Event


class PartitionSteps(HeldSteps):
    """``partition`` and ``heal``."""

    def do_partition(self, k: int, ev: Event, _name: str) -> str:
        links = self._links(ev.links)
        ctl = set(self._controllers())
        to_ctl = {s for s, d in links if d in ctl} | {d for s, d in links if s in ctl}
        self._mark_held(n for n in to_ctl if n in self.ids)
        new = self._cut(links)
        self._sync_sessions()
        return f"realised: iptables DROP {self._show(new)}"

    def do_heal(self, k: int, ev: Event, name: str) -> str:
        net = self._net()
        before = set(net.cuts())
        held_before = self.cut_from_controller()
        if ev.links:
            self._uncut(self._links(ev.links))
        elif name:
            net.heal(name)
        else:
            net.heal()
        healed = before - set(net.cuts())
        notes = [f"realised: iptables rules removed for {self._show(healed)}"]
        for n in sorted(held_before - self.cut_from_controller()):
            notes.append(self._rejoin(k, n))
        self._sync_sessions()
        return "; ".join(x for x in notes if x)
