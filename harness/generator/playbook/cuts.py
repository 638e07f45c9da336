"""Network nodes and links of the run: as the scenario names them, as iptables cuts them.

The model's nodes are broker indexes and the ``controller``, ``zookeeper`` and ``client``
nodes; the run network's are process names. ``controller`` is the controller broker in
ZooKeeper mode and every controller of the quorum in KRaft; ``zookeeper`` is ZooKeeper
(KRaft: the quorum again, which holds the sessions); ``client`` is the harness's own
clients. Every network step cuts and heals through these helpers, and the shared fences
ask them which brokers a cut holds back from the controller or from their session, so
they sit below every step family.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.db.runtime.linkcuts import CLIENT
from harness.generator.playbook.fences import StepPrevented
from harness.generator.playbook.state import PlaybookState
from reference_model.events import CLIENT_NODE, CONTROLLER_NODE, ZOOKEEPER_NODE


def both_ways(links: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """``links`` and each one reversed: a cut both ways, as every step that isolates a pair
    makes it (iptables rules are one-way)."""
    links = list(links)
    return links + [(d, s) for s, d in links]


class CutLinks(PlaybookState):
    """Model nodes to network nodes, cuts and heals, and who a cut holds back."""

    def _controllers(self) -> list[str]:
        """The node(s) the model's ``controller`` stands for."""
        return self.cluster.mode.controller_nodes()

    def _nodes(self, node: int) -> list[str]:
        """Network node names of one model node (broker index or *_NODE)."""
        if node >= 0:
            return [self.names[node]]
        if node == CONTROLLER_NODE:
            return self._controllers()
        if node == ZOOKEEPER_NODE:
            return self.cluster.mode.liveness_hub()
        if node == CLIENT_NODE:
            return [CLIENT]
        raise ValueError(f"unknown network node {node}")

    def _links(self, links: Iterable[tuple[int, int]]) -> list[tuple[str, str]]:
        out = []
        for a, b in links:
            out += [(s, d) for s in self._nodes(a) for d in self._nodes(b)]
        return sorted(set(out))

    def _net(self) -> Any:
        if self.cluster.network is None:
            raise StepPrevented("this cluster was started without a run network")
        return self.cluster.network

    def _cut(self, links: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        net = self._net()
        new: list[tuple[str, str]] = []
        for s, d in links:
            new += net.partition(s, d, "one-way")
        return new

    def _uncut(self, links: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        net = self.cluster.network
        if net is None:
            return []
        healed: list[tuple[str, str]] = []
        for s, d in links:
            healed += net.heal(s, d, "one-way")
        return healed

    def cut_from_controller(self) -> set[str]:
        """Brokers with a cut link to or from a controller (their metadata is held back)."""
        net = self.cluster.network
        if net is None:
            return set()
        ctl = set(self._controllers())
        out = set()
        for s, d in net.cuts():
            if s in ctl and d in self.ids:
                out.add(d)
            if d in ctl and s in self.ids:
                out.add(s)
        return out

    def cut_from_sessions(self) -> set[str]:
        """Brokers whose session the cuts end: cut from ZooKeeper (KRaft: the controllers)."""
        net = self.cluster.network
        if net is None:
            return set()
        hub = set(self.cluster.mode.liveness_hub())
        return {s for s, d in net.cuts() if d in hub and s in self.ids} | {
            d for s, d in net.cuts() if s in hub and d in self.ids
        }

    @staticmethod
    def _show(links: Iterable[tuple[str, str]]) -> str:
        links = sorted(links)
        out = []
        for s, d in links:
            if (d, s) in links:
                if (d, s) < (s, d):
                    continue
                out.append(f"{s}<->{d}")
            else:
                out.append(f"{s}->{d}")
        return ",".join(out) or "nothing"

    def liveness_free(self) -> set[str]:
        """Also the brokers cut from their session keeper: ZooKeeper mode's short session
        runs out while the cut lasts, before the ``detect`` the model waits for."""
        return super().liveness_free() | self.cut_from_sessions()

    def sessions_kept_by_cuts(self, live: Iterable[int]) -> set[str]:
        """KRaft: brokers the model counts live whose own heartbeats a cut drops."""
        alive = {self.names[i] for i in live if 0 <= i < len(self.names)}
        return (self.cut_from_sessions() & alive) - self.expiring - self.down
