"""Process faults and the files they leave: ``crash``, ``power_loss``, ``clean_shutdown``,
``pause``/``resume``, ``restart``, ``checkpoint``/``stale_checkpoint``/``flush`` and
``torn_write``.

``checkpoint F`` writes nothing: Kafka checkpoints every replica's HW itself every 10 ms
(harness.db.catalogue.kafka_config), so the step waits until F's own file is stable and notes the
value F wrote (a paused F's file is frozen at its HW when it was paused). No model value is
ever written into a broker. ``stale_checkpoint`` is an explicit fault: the scenario's value
is written into the file while the broker is down, listed in ``writes.json`` as a fault.
``flush`` records the LEO observed on disk; a ``power_loss`` cuts the log back to it (also
listed in ``writes.json``), because Kafka's own flush timer is hourly. ``torn_write`` (a
fault, listed too) cuts a down broker's last batch mid-way; its restart's log recovery drops it.

``restart F`` holds the leader (pauses it) while F starts, so F processes its
LeaderAndIsr (truncating to its HW before 0.11) but cannot fetch until a later step; then F
is paused and the leader resumed. A restart the model's controller did not notice (no
``detect F`` before it) happens while the controller broker is frozen, and controllership
then fails over to a spare broker that never knew F was gone (ZooKeeper mode;
harness.nemesis.failover); KRaft and clusters without a spare refuse it.
"""

from __future__ import annotations

from harness.generator.playbook.dispatch import plays
from harness.generator.playbook.fences import StepPrevented, wait_until
from harness.generator.playbook.settle import Settling
from harness.nemesis import faults as nemesis
from harness.readback import tcp
from reference_model.events import Event

KILLS = frozenset({"crash", "power_loss"})
"""Step kinds that kill a broker where it stands (no shutdown: a parked Fetch dies with it)."""


def unread_note(who: list[str], leader: str) -> str:
    """The note of followers ``who`` holding killed ``leader``'s answer unread; the HW
    check carries it to their next HW difference (``harness.checker.hw.CARRIED``)."""
    names = ",".join(who)
    return (
        f"harness: {names} held {leader}'s answer to a parked Fetch unread when {leader} "
        f"was killed: applied when {names} next runs"
    )


class CrashSteps(Settling):
    """Kill, stop, pause and restart brokers; record what their files will say."""

    @plays("checkpoint")
    def do_checkpoint(self, k: int, ev: Event, name: str) -> str:
        """Kafka's own checkpoint of F's HW: wait until F's file is stable, write nothing."""
        self.checkpoint_hw.pop(name, None)  # a later crash leaves Kafka's own file alone
        reading = self.hw_reading(name)
        how = "stable" if reading.stable else "still moving after 5 s"
        return (
            f"observed: {name}'s replication-offset-checkpoint (written by Kafka) says "
            f"{reading.hw} ({how})"
        )

    @plays("stale_checkpoint")
    def do_stale_checkpoint(self, k: int, ev: Event, name: str) -> str:
        self.checkpoint_hw[name] = ev.value
        if name in self.down:
            self._write_stale_checkpoint(name)
        return f"fault: {name}'s replication-offset-checkpoint set to {ev.value} while down"

    def _write_stale_checkpoint(self, name: str) -> None:
        value = self.checkpoint_hw[name]
        nemesis.write_hw_checkpoint(self.cluster, name, value)
        self.record_write(
            name,
            nemesis.HW_CHECKPOINT,
            value,
            "fault",
            "stale_checkpoint: the scenario's value, older than the HW",
        )

    @plays("torn_write")
    def do_torn_write(self, k: int, ev: Event, name: str) -> str:
        """Tear F's last batch on disk while F is down (``nemesis.torn_write``)."""
        if name not in self.down:
            return f"{name} is running: a torn write needs it down (crash or power_loss first)"
        torn = nemesis.torn_write(self.cluster, name)
        if torn is None:
            return f"{name}'s log is empty: nothing to tear"
        self.flushed[name] = min(self.flushed[name], torn.offset)
        self.record_write(
            name,
            f"{self.cluster.partition_dir(name).name}/{torn.segment} (torn)",
            torn.offset,
            "fault",
            f"torn_write: the batch at offset {torn.offset} cut to {torn.kept} of its "
            f"{torn.size} bytes (read back: a torn tail); no clean-shutdown marker",
        )
        return f"fault: {name}'s batch at offset {torn.offset} torn ({torn.kept}/{torn.size} bytes)"

    @plays("flush")
    def do_flush(self, k: int, ev: Event, name: str) -> str:
        self.flushed[name] = max(self.leo(name), 0)
        return f"observed: {name}'s LEO on disk is {self.flushed[name]} (what a power loss keeps)"

    def _after_kill(self, name: str) -> None:
        self.down.add(name)
        self._sync_sessions()
        self.held.discard(name)
        self.user_paused.discard(name)
        if name in self.checkpoint_hw:
            self._write_stale_checkpoint(name)

    def _answers_unread(self, name: str) -> str:
        """A note when a paused follower holds an answer of leader ``name``, about to be
        killed, unread in its socket; else "".

        A follower paused after its fetch round leaves its next Fetch parked at the leader,
        answered when ``replica.fetch.wait.max.ms`` runs out. Answered before the kill, the
        answer is in the follower's kernel and the follower applies it (a newer HW) when it
        next runs, although its leader died: as if the round had been completed before the
        crash, which the model's in-flight request is not. Observed
        (``tcp.answer_waiting``), so a HW difference at a later step says why.
        """
        paused = sorted((self.held | self.user_paused) - self.down - {name})
        lead_pid = self.cluster.host_pid(name)
        if not paused or lead_pid is None or self.leader() != name:
            return ""
        who = [
            n
            for n in paused
            if (pid := self.cluster.host_pid(n)) is not None and tcp.answer_waiting(pid, lead_pid)
        ]
        return unread_note(who, name) if who else ""

    def hold_leader_before_its_kill(self, next_events: list[Event]) -> str:
        """Hold (SIGSTOP) the leader now when the next step only kills brokers, it among them.

        Why: a follower paused after its fetch round leaves its next Fetch parked at the
        leader, answered when ``replica.fetch.wait.max.ms`` runs out; an answer sent before
        the leader dies sits in the follower's socket and is applied when the follower next
        runs (a newer HW the model's lost in-flight request does not give:
        :meth:`_answers_unread` names it, and the run is played again). Under load the
        crash step came after the timer often enough to be the window CI missed most
        (acks-all-min-isr2-one-crash: ``fetch: followers`` then ``crash: leader``). A held
        leader answers nothing, and is killed held. Called once this step's observation has
        read the leader (its HW on the wire, a consumer's read), so nothing is left unread;
        the hold itself waits for the leader's checkpoint to be stable, as every hold does.
        """
        if not next_events or any(e.kind not in KILLS for e in next_events):
            return ""  # most steps: decided without reading the controller's view
        lead = self.leader()
        if (
            lead is None
            or lead in self.down | self.held | self.user_paused
            or not self.cluster.is_running(lead)
            or all(self.names[e.replica] != lead for e in next_events if e.replica >= 0)
        ):
            return ""
        self._hold(lead)
        return f"{lead} held until the next step kills it: from now it answers no parked Fetch"

    @plays("crash")
    def do_crash(self, k: int, ev: Event, name: str) -> str:
        if name in self.down:
            return f"{name} is already down"
        unread = self._answers_unread(name)
        nemesis.crash(self.cluster, name)
        self._after_kill(name)
        return unread

    @plays("power_loss")
    def do_power_loss(self, k: int, ev: Event, name: str) -> str:
        unread = self._answers_unread(name)
        lost = nemesis.power_loss(self.cluster, name, self.flushed[name])
        self.record_write(
            name,
            f"{self.cluster.partition_dir(name).name}/*.log (cut)",
            self.flushed[name],
            "observed",
            f"power_loss: log cut to the LEO observed at {name}'s last flush step "
            f"({lost} bytes)",
        )
        self._after_kill(name)
        return "; ".join(x for x in (f"{lost} unflushed bytes lost", unread) if x)

    @plays("clean_shutdown")
    def do_clean_shutdown(self, k: int, ev: Event, name: str) -> str:
        self._wake_leader()
        self._release(name)
        nemesis.clean_stop(self.cluster, name)
        self.down.add(name)
        self._await_controller(name)
        return ""

    @plays("pause")
    def do_pause(self, k: int, ev: Event, name: str) -> str:
        self._hold(name)
        self.held.discard(name)
        self.user_paused.add(name)
        return ""

    @plays("resume")
    def do_resume(self, k: int, ev: Event, name: str) -> str:
        if name in self.user_paused:
            nemesis.resume(self.cluster, name)
            self.user_paused.discard(name)
            self._sync_sessions()
        return ""

    @plays("restart")
    def do_restart(self, k: int, ev: Event, name: str) -> str:
        before = self.prediction.steps[k - 1].state
        unnoticed = ev.replica in before.controller.live
        why = self.cluster.mode.restart_before_detect(self.failover is not None)
        if unnoticed and why is not None:
            raise StepPrevented(
                f"step {k}: restart {name} before the controller noticed its failure: {why}; "
                f"add 'detect: {name}' before it"
            )
        if name not in self.down:
            return f"{name} is already running"
        killed = ""
        if self.cluster.is_running(name):
            # A halt whose JVM hung in its shutdown hook (KAFKA-4039, before 0.11): what an
            # operator does first, kill it, then start it again.
            nemesis.crash(self.cluster, name)
            killed = f"{name} hung after its halt (KAFKA-4039): killed before the restart"
        lead = self.leader()
        if lead is not None and lead not in self.down:
            self._hold(lead)  # so the restarted broker cannot fetch before its fetch step
        frozen = ""
        if unnoticed and self.failover is not None:
            # The bounce no controller sees: see harness.nemesis.failover.
            frozen = self.failover.freeze()
            self.cluster.declare_dead(name)  # F crashed; its session has not expired
        self.decisions.mark(name)
        self.cluster.start_broker(name)
        self.down.discard(name)
        wait_until(
            lambda: self.ids[name] in self.view().live or self.gone(name),
            f"{name} to register",
            self.timeout,
            self._seen,
        )
        if not self.gone(name):
            self.registered_in_step.add(name)
        note = ""
        if frozen and self.failover is not None:
            running = [
                n
                for n in self.names
                if n not in self.down | self.held | self.user_paused and self.cluster.is_running(n)
            ]
            new = self.failover.fail_over(pause=running)
            ids = self.cluster.brokers
            note = (
                f"realised: controller {ids[frozen].broker_id} frozen, {name} re-registered, "
                f"controller failed over to {ids[new].broker_id}"
            )
        self.decisions.after_restart(name, self._wait_unless_gone(name))
        self._settled(name)
        new_lead = self.leader()
        if new_lead == name:
            if lead is not None and lead != name:
                self._release(lead)
            self._leader_ready(name)
        else:
            self._hold(name)  # the leader stays held until a step needs it
        if frozen and self.failover is not None:
            self.failover.restore_standby(frozen)
        return "; ".join(n for n in (killed, note) if n)
