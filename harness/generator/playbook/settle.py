"""Fences every step shares: pausing, sessions, and "the broker did what the controller said".

Followers are paused (SIGSTOP) between their own steps (``_hold``/``_release``), so a
follower copies records only in its ``fetch`` steps; a leader held during a restart is
resumed only when a step needs it (``_wake_leader``). KRaft brokers a step keeps silent
have their session kept by the harness (``_sync_sessions``). After a step that makes the
controller decide, the brokers concerned must have acted on the decision before the next
step: ZooKeeper mode counts the LeaderAndIsr requests sent (the controller's state-change
log) against those handled (the broker's); KRaft has no LeaderAndIsr and compares the
broker's Metadata answer and its Partition's epoch with the controller's. Every step
family ends on one of these fences, so they sit below all of them.
"""

from __future__ import annotations

import re
import time

from harness.db.names import PARTITION, TOPIC
from harness.generator.playbook.fences import wait_until
from harness.generator.playbook.halts import HaltWatch
from harness.nemesis import faults as nemesis
from harness.protocol.wire import partition_view
from harness.readback.log4j import read_rotated

# A broker's log of LeaderAndIsr handled: one "Finished" line per request (3.x), or per
# partition one "completed" (applied) or "ignoring" (stale epoch) line (0.10-2.x).
LAI_FINISHED = re.compile(r"Finished LeaderAndIsr request")
LAI_DONE = re.compile(r"(?i)(completed|ignoring) LeaderAndIsr request")
# The controller's log of LeaderAndIsr sent: one line per request (3.x) or per partition
# (0.10-2.x); test brokers host one partition, so either counts requests.
# KRaft (and 3.x ZooKeeper) brokers: Partition.makeLeader / makeFollower, per partition.
STARTS_AT_EPOCH = re.compile(
    rf"(?:Leader|Follower) {TOPIC}-{PARTITION} (?:with topic id \S+ )?starts at leader epoch (\d+)"
)
LAI_SENT_REQUEST = re.compile(r"Sending LeaderAndIsr request to broker (\d+) with")
LAI_SENT_PARTITION = re.compile(
    r"(?i)sending become-(?:leader|follower) LeaderAndIsr request .* to broker (\d+) for partition"
)


class Settling(HaltWatch):
    """Pausing, session keeping, and the LeaderAndIsr / metadata fences."""

    def _hold(self, name: str) -> None:
        if name not in self.down and name not in self.held and self.cluster.is_running(name):
            self.held.add(name)
            self._sync_sessions()
            nemesis.pause(self.cluster, name)
            self._paused_at = time.monotonic()

    def _release(self, name: str) -> None:
        if name in self.held:
            nemesis.resume(self.cluster, name)
            self.held.discard(name)
            self._sync_sessions()

    def _leader_ready(self, name: str) -> None:
        """Resume a newly elected leader and wait until it has taken up its leadership.

        Not "answers ListOffsets": from 2.x a new leader reports OFFSET_NOT_AVAILABLE until
        its followers have fetched once, and they are held.
        """
        self._release(name)
        self._lai_settled(name)

    def _wake_leader(self) -> None:
        """A leader held during a restart is resumed only when a step needs it.

        Resuming it earlier would answer the restarted follower's first fetch request, and
        that answer would be applied whenever the follower next runs, even after the leader
        died: a fetch the scenario never scripted.
        """
        lead = self.leader()
        if lead is not None and lead in self.held:
            self._leader_ready(lead)

    def _await_controller(self, name: str) -> None:
        """Wait until the controller has acted on ``name``'s failure, then settle the leader."""
        bid = self.ids[name]
        before = self.view()

        def acted() -> bool:
            v = self.view()
            if bid in v.live:
                return False
            if before.leader == bid:
                return v.leader != bid
            if bid in before.isr and len(before.isr) > 1:
                return bid not in v.isr
            return True

        wait_until(acted, f"the controller to act on {name}'s failure", self.timeout, self._seen)
        lead = self.leader()
        if lead is not None and lead not in self.down:
            self._leader_ready(lead)

    def _sync_sessions(self) -> None:
        """KRaft: keep the controller's liveness view on the script (see KRaftMode).

        Brokers the model's controller still counts as live but that cannot heartbeat
        (paused by the harness or the scenario, or crashed and not yet detected) get their
        session kept by the harness.
        """
        if not self.kraft:
            return
        live = self.prediction.steps[self._model_step].state.controller.live
        silent = self.held | self.user_paused | self.down
        keep = {n for i, n in enumerate(self.names) if i in live and n in silent}
        keep = (keep - self.expiring) | self.sessions_kept_by_cuts(live)
        self.cluster.mode.keep_alive(self.cluster, keep)

    def _applied_or_none(self, name: str) -> bool:
        try:
            return self._kraft_applied(name)
        except Exception:  # not answering yet
            return False

    def _lai_done(self, name: str) -> int:
        text = read_rotated(self.cluster.state_change_log(name))
        pattern = LAI_FINISHED if LAI_FINISHED.search(text) else LAI_DONE
        return len(pattern.findall(text))

    def _lai_sent(self, name: str) -> int:
        """LeaderAndIsr requests sent to ``name`` by every controller of the run so far."""
        total = 0
        for controller in self._controller_brokers():
            text = read_rotated(self.cluster.state_change_log(controller))
            pattern = LAI_SENT_REQUEST if LAI_SENT_REQUEST.search(text) else LAI_SENT_PARTITION
            bid = str(self.ids[name])
            total += sum(1 for m in pattern.finditer(text) if m.group(1) == bid)
        return total

    def _mark_start(self, name: str) -> None:
        """Counters from which LeaderAndIsr requests to a (re)started broker are tracked."""
        self._lai_base[name] = (self._lai_sent(name), self._lai_done(name))

    def _lai_pending(self, name: str) -> int:
        sent0, done0 = self._lai_base.get(name, (0, 0))
        return (self._lai_sent(name) - sent0) - (self._lai_done(name) - done0)

    def _kraft_applied(self, name: str) -> bool:
        """KRaft: broker ``name``'s metadata cache shows the controller's latest decision.

        There is no LeaderAndIsr in KRaft: brokers apply the metadata log
        (``BrokerMetadataPublisher`` -> ``ReplicaManager.applyDelta``). A broker whose
        Metadata answer has the controller's leader, leader epoch and ISR has published that
        image, which is when it became leader or follower of the new epoch.
        """

        v = self.view()
        host, port = self.cluster.broker_address(name)
        seen = partition_view(host, port, TOPIC, PARTITION, self.ids[name])
        if not (
            seen is not None
            and seen.leader == v.leader
            and seen.leader_epoch == v.leader_epoch
            and seen.isr == v.isr
        ):
            return False
        # The metadata cache is published before ReplicaManager.applyDelta runs: wait for
        # Partition.makeLeader/makeFollower to log the epoch too (its epoch cache is then
        # written), unless the partition is offline.
        return v.leader < 0 or self._replica_epoch(name) == v.leader_epoch

    def _replica_epoch(self, name: str) -> int:
        """The leader epoch broker ``name``'s Partition last started at (state-change log)."""
        found = STARTS_AT_EPOCH.findall(read_rotated(self.cluster.state_change_log(name)))
        return int(found[-1]) if found else -1

    def _lai_settled(self, name: str) -> None:
        """Fence: the broker processed every LeaderAndIsr the controller sent it.

        Not for a broker cut from the controller: what was sent is held back (held.py).
        """
        if name in self.cut_from_controller():
            return
        if self.kraft:
            if name in self.down or not self.cluster.is_running(name):
                return
            wait_until(
                lambda: self._applied_or_none(name),
                f"{name} to apply the controller's latest decision",
                self.timeout,
                self._seen,
            )
            return
        wait_until(
            lambda: self._lai_pending(name) <= 0 or self.gone(name),
            f"{name} to process the LeaderAndIsr requests sent to it",
            self.timeout,
            self._seen,
        )
