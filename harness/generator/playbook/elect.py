"""``elect`` steps: the controller elects a chosen replica (forced, preferred or unclean).

On every release a forced election is a reordering of the replica assignment followed by a
preferred-replica election; ``unclean: true`` is ElectLeaders UNCLEAN (KIP-460, 2.4+). What
is sent is the mode's (:meth:`harness.db.mode.base.Mode.elect_preferred`, ``elect_unclean``):
ZooKeeper mode writes the admin znodes the 0.8-3.x tools write; KRaft sends
AlterPartitionReassignments and ElectLeaders to the active controller directly (a random
broker may be paused). This step holds, releases and fences.
"""

from __future__ import annotations

from harness.generator.playbook.dispatch import plays
from harness.generator.playbook.fences import wait_until
from harness.generator.playbook.held import HeldSteps
from reference_model.events import Event


class ElectSteps(HeldSteps):
    """``elect`` and the admin requests it sends."""

    @plays("elect")
    def do_elect(self, k: int, ev: Event, name: str) -> str:
        """``elect: B``: B first in the assignment, then a preferred-replica election.

        A forced election of a chosen replica is, on every release, a reordering of the
        replica assignment (same replica set: no data moves) followed by a preferred-replica
        election. ZooKeeper mode writes ``/admin/reassign_partitions`` and then
        ``/admin/preferred_replica_election`` (what kafka-reassign-partitions.sh and
        kafka-preferred-replica-election.sh write, 0.8 to 3.x); the reassignment itself bumps
        the leader epoch once (KafkaController.updateLeaderEpochAndSendRequest), which the
        model does not count (epochs are reported apart by the checker). KRaft sends
        AlterPartitionReassignments, then ElectLeaders PREFERRED, to the controller (no epoch
        bump for a reorder). ``unclean: true`` is
        ElectLeaders UNCLEAN (KIP-460, 2.4+), which needs a partition without a live leader:
        the model prevents the other cases before they reach the harness.

        The old leader is held (paused) before the election, so no follower fetches from it
        on the way; it takes its LeaderAndIsr as a follower at its next step, as a follower
        held across any election does. The new leader is resumed and fenced on having taken
        up its leadership.
        """
        before = self.prediction.steps[k - 1].state.controller
        after = self.prediction.steps[k].state.controller
        if name in self.down:
            return f"{name} is down: not elected"
        if after.leader != ev.replica or (after.leader, after.epoch) == (
            before.leader,
            before.epoch,
        ):
            return "the model's controller elects nobody: nothing sent"
        held = self.hold_from_controller(self.names[i] for i in sorted(ev.hold)) if ev.hold else ""
        bid = self.ids[name]
        v0 = self.view()
        old = self.by_id.get(v0.leader)
        if old is not None and old != name and old not in self.down:
            self._hold(old)
        mode = self.cluster.mode
        if ev.unclean:
            self._release(name)
            how = mode.elect_unclean(self.cluster, name)
        else:
            how = mode.elect_preferred(
                self.cluster, self.meta, name, lambda: self._release(name), self._wait
            )
        wait_until(
            lambda: (
                (v := self.view()).leader == bid
                and (v.leader_epoch > v0.leader_epoch or v0.leader != bid)
            ),
            f"the controller to elect {name}",
            self.timeout,
            self._seen,
        )
        self._leader_ready(name)
        v = self.view()
        note = f"realised: {how}; {name} leads at epoch {v.leader_epoch} (was {v0.leader_epoch})"
        return "; ".join(n for n in (held, note) if n)
