"""Partial-order reduction: sleep sets over a static independence relation.

Why: many orderings differ only in when a broker checkpointed its HW or flushed its log
relative to fetches of *other* replicas. Those steps commute: both orders reach the same
state. Sleep sets (Godefroid) skip the second order of such a pair: after exploring ``b``
then ``a`` from a state ``p``, the state ``p.a`` does not try ``b`` again, because ``p.a.b``
equals ``p.b.a``, which the search reaches from ``p.b``. Sleep sets only skip transitions,
never states, so every reachable state is still visited at its shortest depth and the
breadth-first counterexamples are unchanged (the tests check both claims).

The relation is deliberately small and conservative. Two events are independent only when
the parts of the state each reads and writes are disjoint:

- ``checkpoint i`` reads replica i's HW and writes its checkpoint; ``flush i`` reads replica
  i's log end and writes its recovery point. Any two of them commute (even on the same i).
- ``fetch f`` / ``fetch_request f`` touch follower f, its leader (fetch offsets, HW, ISR),
  the controller's ISR, the in-flight slot of f and the producer's pending writes; they
  never touch another replica's log or checkpoint. ``fetch_response f`` and
  ``leader_epoch_request f`` write follower f only.
- so ``flush i`` commutes with those whenever i != f (the leader's log is only read), and
  ``checkpoint i`` whenever i is neither f nor f's leader (the leader's HW moves).

Everything else (produce, crashes, restarts, detection, elections, ISR changes, held-back
LeaderAndIsr: ``por="never"``) is treated as dependent on everything.
"""

from __future__ import annotations

from typing import Final

from reference_model.events import Event
from reference_model.kinds import kinds_where
from reference_model.state import PartitionState

# Each kind's class is declared once, as ``StepKind.por`` (``reference_model.kinds``); the sets
# are resolved here once, so ``independent`` tests membership in plain frozensets.
LOCAL: Final = kinds_where(por="local")  # checkpoint, flush
FETCHES: Final = kinds_where(por="fetch")  # fetch, fetch_request
FOLLOWER_ONLY: Final = kinds_where(por="follower_only")  # fetch_response, leader_epoch_request
COMMUTING: Final = LOCAL | FETCHES | FOLLOWER_ONLY  # kinds independent of something; others never


def independent(st: PartitionState, a: Event, b: Event) -> bool:
    """True when ``a`` and ``b``, both enabled at ``st``, commute and cannot disable each other."""
    if a.kind in LOCAL:
        if b.kind in LOCAL:
            return True
        local, other = a, b
    elif b.kind in LOCAL:
        local, other = b, a
    else:
        return False
    i = local.replica
    f = other.replica
    if other.kind in FOLLOWER_ONLY:
        return i != f
    if other.kind in FETCHES:
        if local.kind == "flush":
            return i != f
        return i != f and i != st.replicas[f].leader
    return False
