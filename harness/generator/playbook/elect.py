"""``elect`` steps: the controller elects a chosen replica (forced, preferred or unclean).

On every release a forced election is a reordering of the replica assignment followed by a
preferred-replica election: ZooKeeper mode writes the admin znodes the 0.8-3.x tools write;
KRaft sends AlterPartitionReassignments and ElectLeaders to the active controller directly
(a random broker may be paused); ``unclean: true`` is ElectLeaders UNCLEAN (KIP-460, 2.4+).
The requests differ by mode and release, so they live together here; ``do_elect`` says
which is sent when.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.db.mode.kraft_view import KRaftView
from harness.db.mode.zk_view import ZkView
from harness.db.names import CONTROLLER, PARTITION, TOPIC
from harness.generator.playbook.fences import FenceTimeout, wait_until
from harness.generator.playbook.held import HeldSteps
from harness.protocol.wire import WireError, alter_partition_reassignments, elect_leaders
from reference_model.events import Event


class ElectSteps(HeldSteps):
    """``elect`` and the admin requests it sends."""

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
        if ev.unclean:
            self._release(name)
            how = self._elect_leaders(name, "unclean")
        elif self.kraft:
            self._release(name)
            order = [bid] + [i for i in self._assignment() if i != bid]
            self._kraft_reassign(name, order)
            how = f"AlterPartitionReassignments {order}; " + self._elect_leaders(name, "preferred")
        else:
            how = self._zk_preferred(name)
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

    def _assignment(self) -> list[int]:
        """The partition's replica assignment as the controller has it, in order."""

        if isinstance(self.meta, ZkView):
            return self.meta.assignment()
        assert isinstance(self.meta, KRaftView)
        p = self.meta.image().partition(TOPIC, PARTITION)
        if p is None:
            raise FenceTimeout("the controller has no state for the test partition")
        return list(p.replicas)

    def _zk_preferred(self, name: str) -> str:
        """ZooKeeper mode: the reassignment znode, then the preferred-election znode."""

        assert isinstance(self.meta, ZkView)
        zk = self.meta
        bid = self.ids[name]
        old = zk.assignment()
        order = [bid] + [i for i in old if i != bid]
        if old != order:
            zk.reassign(order)
            wait_until(
                lambda: zk.assignment() == order and not zk.admin_pending("reassign_partitions"),
                f"the controller to reorder the assignment to {order}",
                self.timeout,
                self._seen,
            )
        zk.preferred_election()
        wait_until(
            lambda: not zk.admin_pending("preferred_replica_election"),
            "the controller to run the preferred-replica election",
            self.timeout,
            self._seen,
        )
        return (
            f"/admin/reassign_partitions {old} -> {order}, then /admin/preferred_replica_election"
        )

    def _admin_on(self, name: str) -> Any:
        """An admin client on broker ``name`` alone (others may be paused: a request to a
        paused broker would hang for the whole socket timeout)."""
        from confluent_kafka.admin import AdminClient

        host, port = self.cluster.broker_address(name)
        return AdminClient({"bootstrap.servers": f"{host}:{port}", "log_level": 0})

    def _elect_leaders(self, name: str, kind: str) -> str:
        """ElectLeaders (KIP-183, 2.2; UNCLEAN: KIP-460, 2.4): KRaft to the controller,
        ZooKeeper mode through broker ``name`` (librdkafka forwards it to the controller)."""
        if self.kraft:
            err, msg = self._to_controller(
                "ElectLeaders",
                lambda h, p: elect_leaders(h, p, TOPIC, PARTITION, kind == "unclean"),
            )
            return f"ElectLeaders {kind.upper()}" + (f" (error {err} {msg or ''})" if err else "")
        from confluent_kafka import ElectionType, TopicPartition

        how = ElectionType.UNCLEAN if kind == "unclean" else ElectionType.PREFERRED
        admin = self._admin_on(name)
        fut = admin.elect_leaders(
            how, [TopicPartition(TOPIC, PARTITION)]
        )  # kwargs: SystemError (2.16.1)
        try:
            result = fut.result(timeout=30)
        except Exception as exc:
            raise FenceTimeout(f"ElectLeaders {kind.upper()} for {name}: {exc}") from None
        errors = [str(e) for e in result.values() if e is not None]
        return f"ElectLeaders {kind.upper()}" + (f" ({'; '.join(errors)})" if errors else "")

    def _to_controller(
        self, what: str, call: Callable[[str, int], tuple[int, str | None]]
    ) -> tuple[int, str | None]:
        """Send a KRaft admin request to the active controller (NOT_CONTROLLER: the next)."""

        seen: list[str] = []
        for c in getattr(self.cluster.mode, "controllers", [CONTROLLER]):
            host, port = self.cluster.node_address(c)
            try:
                err, msg = call(host, port)
            except WireError as exc:
                seen.append(str(exc))
                continue
            if err == 41:  # NOT_CONTROLLER
                continue
            return err, msg
        raise FenceTimeout(f"{what}: no controller answered ({'; '.join(seen) or 'none active'})")

    def _kraft_reassign(self, name: str, order: list[int]) -> None:
        """KRaft: the reordered assignment (AlterPartitionReassignments to the controller).

        Not ReassignPartitionsCommand: its admin client sends the request to the broker the
        Metadata answer names as controller, a random one in KRaft, possibly one the harness
        paused (seen on 4.0.0: 30 s then TimeoutException).
        """

        if self._assignment() == order:
            return
        err, msg = self._to_controller(
            "AlterPartitionReassignments",
            lambda h, p: alter_partition_reassignments(h, p, TOPIC, PARTITION, order),
        )
        if err:
            raise FenceTimeout(f"AlterPartitionReassignments {order}: error {err} {msg or ''}")
        wait_until(
            lambda: self._assignment() == order,
            f"the controller to reorder the assignment to {order}",
            self.timeout,
            self._seen,
        )
