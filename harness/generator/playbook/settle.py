"""Fences every step shares: pausing, sessions, and "the broker did what the controller said".

Followers are paused (SIGSTOP) between their own steps (``_hold``/``_release``), so a
follower copies records only in its ``fetch`` steps; a leader held during a restart is
resumed only when a step needs it (``_wake_leader``). KRaft brokers a step keeps silent
have their session kept by the harness (``_sync_sessions``). After a step that makes the
controller decide, the brokers concerned must have acted on the decision before the next
step: how that is seen is the mode's (:meth:`harness.db.mode.base.Mode.decisions`:
LeaderAndIsr requests counted in ZooKeeper mode, the Metadata answer and the Partition's
epoch in KRaft). Every step family ends on one of these fences, so they sit below all.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from harness.db.runtime.process import stopped
from harness.generator.playbook.fences import wait_until
from harness.generator.playbook.halts import HaltWatch
from harness.nemesis import faults as nemesis
from harness.protocol.wire import WireError, api_versions


class Settling(HaltWatch):
    """Pausing, session keeping, and the LeaderAndIsr / metadata fences."""

    def _hold(self, name: str) -> None:
        if name not in self.down and name not in self.held and self.cluster.is_running(name):
            if name not in self.user_paused:
                # Let the broker checkpoint its HW first (bounded on the file being stable,
                # not on any value), so its frozen file is its HW at the pause; the oracle's
                # read of a follower is taken inside that wait (the same moment).
                follower = self.current_step > 0 and self.by_id.get(self.view().leader) != name
                self.hw_readings(
                    [name],
                    meanwhile=(lambda: self.consumer_read(name, "follower")) if follower else None,
                )
            self.held.add(name)
            self._sync_sessions()
            nemesis.pause(self.cluster, name)
            self._paused_at = time.monotonic()
            self._probe_after_pause()

    def _probe_after_pause(self) -> None:
        """Right after a pause: when each running scenario broker answers an ApiVersions.

        A broker's answer to a request sent after the pause bounds when it read the Fetch
        the paused follower had sent it before (produce.py waits out that Fetch's timer).
        Taken here, not when the next record is produced, so the time between the two
        counts: a produce step seconds after the last pause waits for nothing.
        """
        self._answered_after_pause = {}
        for n in self.names:
            pid = self.cluster.host_pid(n)
            if not self._running(n) or (pid is not None and stopped(pid)):
                continue  # e.g. a leader stopped while F is paused (fetch.py): probed later
            t = self._answered_now(n, timeout=1.0)
            if t is not None:
                self._answered_after_pause[n] = t

    def _answered_now(self, name: str, timeout: float = 5.0) -> float | None:
        """When broker ``name`` answered an ApiVersions sent now (None: it cannot answer:
        down, paused, or cut from the harness's client)."""
        if name in self.down or name in self.held or name in self.user_paused:
            return None
        host, port = self.cluster.broker_address(name)
        try:
            api_versions(host, port, timeout=timeout)
        except WireError:
            return None
        return time.monotonic()

    def _release(self, name: str) -> None:
        if name in self.held:
            nemesis.resume(self.cluster, name)
            self.held.discard(name)
            self._sync_sessions()

    def _shield_from_leader(self, name: str, lead: str | None = None) -> str | None:
        """SIGSTOP the leader (``lead``, if the caller just read it) while F is read and
        paused; returns the leader stopped, if any.

        F's next Fetch is parked at the leader for ``replica.fetch.wait.max.ms``; reading
        F's HW (two fresh checkpoint writes) and serving the consumer oracle's read before
        F's pause must fit in that window, which a loaded machine overran (F then applied a
        second answer: a newer HW than the model's one round). A stopped leader answers
        nothing, so the window no longer bounds the readings. The parked Fetch is answered
        after the leader resumes, into F's socket while F is paused: the produce step's wait
        for parked fetches (playbook/produce.py) covers that case already.
        """
        lead = lead or self.leader()
        if (
            lead is None
            or lead == name
            or lead in self.down
            or lead in self.held
            or lead in self.user_paused
            or not self.cluster.is_running(lead)
        ):
            return None
        nemesis.pause(self.cluster, lead)
        return lead

    def _leader_ready(self, name: str) -> None:
        """Resume a newly elected leader and wait until it has taken up its leadership.

        Not "answers ListOffsets": from 2.x a new leader reports OFFSET_NOT_AVAILABLE until
        its followers have fetched once, and they are held.
        """
        self._release(name)
        self._settled(name)

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
        """Keep the controller's liveness view on the script (KRaftMode's session keeper;
        ZooKeeper sessions outlast any pause, so that mode keeps nothing).

        Brokers the model's controller still counts as live but that cannot heartbeat
        (paused by the harness or the scenario, or crashed and not yet detected) get their
        session kept by the harness. That includes a broker restarted earlier in the step
        being played and held since (``restart: all`` holds A while B and C restart): it
        registered, so the controller counts it live, although the model state followed
        is the one before the step. Without it a 4.0 controller fenced A "because its
        session has timed out" while B waited for its old session to lapse. And the other
        way: a broker the step's ``detect`` declared dead is not kept (``detected_in_step``).
        """
        live = self.prediction.steps[self._model_step].state.controller.live
        silent = self.held | self.user_paused | self.down
        keep = {n for i, n in enumerate(self.names) if i in live and n in silent}
        keep |= (self.registered_in_step & silent) - self.down
        keep = (keep - self.expiring - self.detected_in_step) | self.sessions_kept_by_cuts(live)
        self.cluster.mode.keep_alive(self.cluster, keep)

    def _settled(self, name: str) -> None:
        """Fence: the broker acted on every decision the controller sent it (the mode's
        :class:`~harness.db.mode.base.Decisions`).

        Not for a broker cut from the controller: what was sent is held back (held.py).
        """
        if name in self.cut_from_controller():
            return
        self.decisions.settle(name, self._wait_unless_gone(name))

    def _wait_unless_gone(self, name: str) -> Callable[[Callable[[], object], str], object]:
        """``_wait`` that also stops when ``name`` exits on its own (a halt, halts.py)."""

        def wait(check: Callable[[], object], what: str) -> object:
            return self._wait(lambda: check() or self.gone(name), what)

        return wait
