"""Which invariants the explorer judges on which states (issue 9: settled states only).

Why: a state in the middle of a failover is not an outcome. After ``power_loss A`` the
controller still names A as leader although A is down and B holds every acknowledged record;
reading ``acked_lost`` off that state reported a loss no client could ever observe. Kafka's
promise is about what a consumer reads once the cluster has settled, so state invariants are
judged only on *settled* states:

- the controller names a leader, that broker is up (alive, not paused) and leads in the
  controller's epoch;
- every live replica has processed that LeaderAndIsr (same leader, same epoch), none has a
  LeaderAndIsr pending or held back, and none still owes an OffsetsForLeaderEpoch truncation.

``leader_missing_committed`` is a property of the election step itself (the new leader is up
and elected by construction), so it stays judged on the transition that elects.
"""

from __future__ import annotations

from typing import Final

from reference_model import verdict
from reference_model.state import NO_LEADER, Config, PartitionState

STATE_INVARIANTS: Final = ("acked_lost", "replicas_disagree_below_hw")
TRANSITION_INVARIANTS: Final = ("leader_missing_committed",)


def settled(st: PartitionState) -> bool:
    """A live elected leader all live replicas agree on; nothing in flight that changes logs."""
    ctrl = st.controller
    lead = ctrl.leader
    if lead == NO_LEADER or ctrl.pending or ctrl.held:
        return False
    reps = st.replicas
    rl = reps[lead]
    if not rl.alive or rl.paused or rl.role != "leader" or rl.epoch != ctrl.epoch:
        return False
    for i, r in enumerate(reps):
        if not r.alive or i == lead:
            continue
        if r.paused or r.needs_truncation or r.leader != lead or r.epoch != ctrl.epoch:
            return False
    return True


def judged_violations(
    cfg: Config, prev: PartitionState | None, st: PartitionState, settled_only: bool = True
) -> list[str]:
    """The explorer's verdict on the step ``prev -> st``.

    With ``settled_only`` (the default) state invariants count only on settled states; the
    old behaviour (every state) is kept behind ``settled_only=False`` for comparison.
    """
    if not settled_only or settled(st):
        return verdict.violations(cfg, prev, st)
    if prev is None or prev.controller.leader == st.controller.leader:
        return []  # the transition invariants all concern an election
    return [v for v in verdict.violations(cfg, prev, st) if v in TRANSITION_INVARIANTS]
