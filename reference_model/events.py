"""Events: the small values that move a partition from one state to the next.

Each kind is one thing that happens in a real cluster and that the harness can make happen
(or wait for) on real brokers. A fetch is split into request and response halves so that
"the leader saw the fetch but the follower never got the answer" can be written down.
"""

from __future__ import annotations

from typing import NamedTuple

# The step kinds (name, arguments, meaning, how each part treats them): ``reference_model.kinds``.

# Network nodes besides the brokers (``Event.links`` and ``PartitionState.cuts`` use broker
# indices for brokers). In ZooKeeper mode the controller is a broker (the harness keeps a
# dedicated one) and ZooKeeper holds the sessions; in KRaft both roles are the quorum's.
CONTROLLER_NODE, ZOOKEEPER_NODE, CLIENT_NODE = -10, -11, -12
NODE_NAMES = {CONTROLLER_NODE: "controller", ZOOKEEPER_NODE: "zookeeper", CLIENT_NODE: "client"}


# Scenario aliases, resolved against the state when the step runs (``run.expand``).
LEADER, FOLLOWERS, ALL = -2, -3, -4
ALIAS_NAMES = {LEADER: "leader", FOLLOWERS: "followers", ALL: "all"}


class Event(NamedTuple):
    """One step. ``replica`` indexes ``Config.brokers`` (-1 = not applicable / default)."""

    kind: str
    replica: int = -1
    record: str = ""
    value: int = -1
    hold: frozenset[int] = frozenset()  # brokers the resulting LeaderAndIsr is held back from
    unclean: bool = False  # elect: allow a replica outside the ISR
    # partition/heal: directed links (src, dst): packets from src to dst are dropped
    # (partition) or no longer dropped (heal). Nodes are broker indices or *_NODE.
    links: frozenset[tuple[int, int]] = frozenset()

    def describe(self, brokers: tuple[str, ...]) -> str:
        """Human form, e.g. ``produce m1``, ``crash B``, ``stale_checkpoint A 0``."""
        parts = [self.kind]
        if self.kind in ("partition", "heal"):
            if self.links:
                return f"{self.kind} {describe_links(self.links, brokers)}"
            return f"{self.kind} {brokers[self.replica] if self.replica >= 0 else 'all'}"
        if self.kind == "produce":
            parts.append(self.record)
            if self.replica >= 0:
                parts.append(f"to {brokers[self.replica]}")
        elif self.replica >= 0:
            parts.append(brokers[self.replica])
        elif self.replica in ALIAS_NAMES:
            parts.append(ALIAS_NAMES[self.replica])
        if self.value >= 0:
            parts.append(str(self.value))
        if self.unclean:
            parts.append("unclean")
        if self.hold:
            parts.append("hold " + ",".join(brokers[i] for i in sorted(self.hold)))
        if self.links:
            parts.append(describe_links(self.links, brokers))
        return " ".join(parts)


def node_name(node: int, brokers: tuple[str, ...]) -> str:
    return brokers[node] if node >= 0 else NODE_NAMES[node]


def describe_links(links: frozenset[tuple[int, int]], brokers: tuple[str, ...]) -> str:
    """``A<->B,A->controller``: a pair cut both ways is shown once with ``<->``."""
    out = []
    for a, b in sorted(links):
        if (b, a) in links:
            if (b, a) < (a, b):
                continue
            out.append(f"{node_name(a, brokers)}<->{node_name(b, brokers)}")
        else:
            out.append(f"{node_name(a, brokers)}->{node_name(b, brokers)}")
    return ",".join(out)
