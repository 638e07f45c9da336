"""Held-back LeaderAndIsr: ``hold: [C]`` of a ``detect``/``elect`` step, and ``leader_and_isr C``.

The controller is cut from C before it acts (ZooKeeper: the controller broker's channel;
C keeps its ZooKeeper session; KRaft: C from every controller, with the harness's session
keeper heartbeating for C so it is not fenced), and healed at ``leader_and_isr C``. Once
healed, C rejoins much like a restart: it registers again if its session ended, then
processes what the controller sends it, with the leader held so it cannot fetch before
its next fetch step. ``partition``/``heal``, ``detect`` and ``elect`` build on this (a
heal of a controller link is a rejoin), hence a family of its own below them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from harness.db.mode.zookeeper import LeaderAndIsrLog
from harness.generator.playbook.cuts import both_ways
from harness.generator.playbook.dispatch import plays
from harness.generator.playbook.fences import StepPrevented, wait_until
from harness.generator.playbook.settle import Settling
from reference_model.events import Event


class HeldSteps(Settling):
    """Cut a broker from the controller before it acts; deliver what was held back."""

    def _mark_held(self, names: Iterable[str]) -> None:
        """Where brokers about to be cut from the controller stand (the mode's Decisions)."""
        for n in names:
            if n not in self.cut_from_controller():
                self.decisions.mark(n)

    def hold_from_controller(self, names: Iterable[str]) -> str:
        """Cut the controller(s) from each broker in ``names`` both ways, before it acts."""
        names = [n for n in names if n not in self.cut_from_controller()]
        if not names:
            return ""
        self._mark_held(names)
        new = self._cut(both_ways((c, n) for n in names for c in self._controllers()))
        self._sync_sessions()
        how = self.cluster.mode.held_session_note
        return f"realised: hold {','.join(names)}: iptables DROP {self._show(new)} ({how})"

    @plays("leader_and_isr")
    def do_leader_and_isr(self, k: int, ev: Event, name: str) -> str:
        if name not in self.cut_from_controller():
            return f"no LeaderAndIsr held back from {name}"
        healed = self._uncut(both_ways((c, name) for c in self._controllers()))
        note = self._rejoin(k, name) if name not in self.down else f"{name} is down"
        self._sync_sessions()
        return f"realised: heal {self._show(healed)}; {note}"

    @plays("controller_failover")
    def do_controller_failover(self, k: int, ev: Event, name: str) -> str:
        """``controller_failover: C``: C misses what the controller held back from it.

        ZooKeeper mode: the controller's ``ControllerChannelManager`` keeps a queue per live
        broker and delivers a held-back LeaderAndIsr once the link heals, so a follower cut
        through two leader changes hears both. It misses them only when the queue dies
        with its controller: the harness freezes the active controller broker (SIGSTOP),
        heals every cut link of it (frozen, it sends nothing), kills it and lets the
        spare win the election (harness.nemesis.failover); the new controller's
        ``onControllerFailover`` sends every live broker the current state only
        (``ReplicaStateMachine.startup``). KRaft has no such queue to lose: a broker cut
        from the quorum fetches the metadata log from where it stopped.
        """
        if not isinstance(self.decisions, LeaderAndIsrLog):
            # KRaft, as the model: nothing queued to lose, nothing played.
            return "KRaft: the metadata log survives a controller failover; not played"
        if self.failover is None:
            raise StepPrevented(
                f"step {k}: controller_failover: the cluster has no spare controller broker "
                "(harness.nemesis.failover.prepare adds one when the model has this step)"
            )
        # LeaderAndIsr fences count from the failover: what the new controller sends from
        # then on is pending until processed; the dead controller's queue never comes. A
        # broker the harness held paused may also process the one request the dead
        # controller had on the wire; it comes first on that connection, so a fence can at
        # worst pass between the two, milliseconds apart.
        log = self.decisions
        t0 = time.perf_counter()
        counts = {n: (log.sent(n), log.done(n)) for n in self.names}
        frozen = self.failover.freeze()
        healed = ""
        net = self.cluster.network
        if net is not None:
            # the controller node is another broker from now on: its old links go
            ctl = set(self._controllers())
            links = [(s, d) for s, d in net.cuts() if s in ctl or d in ctl]
            healed = self._show(self._uncut(links)) if links else ""
        done0 = log.done(name)
        running = [
            n
            for n in self.names
            if n not in self.down | self.held | self.user_paused and self.cluster.is_running(n)
        ]
        new = self.failover.fail_over(pause=running)
        note = ""
        if name not in self.down and self.cluster.is_running(name):
            lead = self.leader()
            if lead is not None and lead != name and lead not in self.down:
                self._hold(lead)
            self._release(name)
            try:
                wait_until(
                    lambda: log.done(name) > done0,
                    f"{name} to process the new controller's LeaderAndIsr",
                    self.timeout,
                    self._seen,
                )
                log.base.update(counts)
            finally:
                if self.leader() != name:
                    self._hold(name)
                else:
                    self._leader_ready(name)
            note = f"; {name} processed the new controller's current state"
        log.base.update(counts)
        self.failover.restore_standby(frozen)
        took = time.perf_counter() - t0
        what = f" (healed {healed} while it was frozen)" if healed else ""
        return (
            f"realised: controller {frozen} frozen{what}, failed over to {new}{note}, {took:.1f} s"
        )

    def _rejoin(self, k: int, name: str) -> str:
        """Fence after the controller's link to ``name`` heals.

        A broker whose session ended while cut registers again (ZooKeeper: a new session,
        KafkaHealthcheck/KafkaZkClient re-registration; KRaft: heartbeats, unfenced); then it
        processes what the controller sends it, with the leader held so it cannot fetch
        before the scenario's next fetch step.
        """

        if name in self.down or not self.cluster.is_running(name):
            return ""
        t0 = time.perf_counter()
        bid = self.ids[name]
        lead = self.leader()
        if lead is not None and lead != name and lead not in self.down:
            self._hold(lead)
        try:
            self._release(name)
            expired = bid not in self.view().live
            if expired:
                wait_until(
                    lambda: bid in self.view().live,
                    f"{name} to register again after the heal",
                    self.timeout,
                    self._seen,
                )
            self._settle_after_cut(name, expired)
        finally:
            # like a restart: the leader stays held until a step needs it (_wake_leader)
            if self.leader() != name:
                self._hold(name)
            else:
                self._leader_ready(name)
            self.expiring.discard(name)
        again = "registered again, " if expired else ""
        took = time.perf_counter() - t0
        return f"{name} {again}processed the controller's requests {took:.1f}s after the heal"

    def _settle_after_cut(self, name: str, expired: bool) -> None:
        """Fence: ``name`` acted on what the cut held back (the mode's Decisions)."""
        self.decisions.after_heal(name, expired, self._wait)
