"""``fetch`` steps: a paused follower runs for one fetch round, then is paused again.

``fetch F`` resumes F and waits until F's log on disk has the leader's LEO (from 0.11 also
identical records, or a truncation logged since the resume: KIP-101/279) and the leader
reports, as its high watermark, what the ISR now holds; a follower the model puts back into
the ISR must be back in the controller's ISR before the next step can overtake it.
A fetch that brings no records also waits until F applied the leader's HW (observed in
both brokers' own checkpoints). ``fetch_request`` is, when observed so, already realised
by F's last fetch step (see :meth:`FetchSteps.do_fetch_request`), else a whole fetch; and
``leader_epoch_request`` plays as a fetch from 0.11 on. A follower cut from the controller
fetches from the leader it last heard of with its stale leader epoch (the zombie follower
of KIP-320): there is no LeaderAndIsr to wait for, so the fence is the model's outcome
(F's log, F's fetcher fenced with FENCED_LEADER_EPOCH, F back in the ISR; served, F
applied the leader's HW).
"""

from __future__ import annotations

import re
import struct
import time

from harness import timing
from harness.checker.realised import realised_run
from harness.db.catalogue.kafka_config import FETCH_WAIT_MAX_MS
from harness.db.names import PARTITION, TOPIC
from harness.generator.playbook.dispatch import plays
from harness.generator.playbook.fences import FenceTimeout, wait_until
from harness.generator.playbook.ring import Ringing
from harness.nemesis import faults as nemesis
from harness.protocol.wire import WireError, partition_view
from harness.readback.hw import checkpointed_hw
from harness.readback.log4j import read_rotated, without_other_topics, without_partition
from reference_model.events import Event
from reference_model.run import RunResult
from reference_model.state import PartitionState

# ReplicaFetcherThread.processPartitionData at TRACE (0.10: "Follower 2 set replica high
# watermark for partition hwchaos-0 to 1"; 2.x on: "Follower set replica high watermark ...").
HW_TRACED = re.compile(r"set replica high watermark for partition \S+ to (\d+)")
# The offset a truncation cut the log to, as each version logs it: Log.truncateTo (0.10:
# "Truncating log hwchaos-0 to offset 1."; 2.x on: "[Log partition=...] Truncating to offset
# 1"), AbstractFetcherThread ("Truncating partition hwchaos-0 to local high watermark 1",
# "... with TruncationState(offset=1, completed=true)").
TRUNCATED_TO = re.compile(
    r"Truncating (?:log \S+ |partition \S+ )?to (?:offset |local high watermark )?(\d+)"
    r"|Truncating partition \S+ with TruncationState\(offset=(\d+)"
)


# The leader's record of a follower's fetch position (kafka.cluster.Partition at DEBUG,
# harness.db.runtime.logconf): 0.10.2 "Recorded replica 2 log end offset (LEO) position 1 for
# partition hwchaos-0."; 2.1 on "[Partition hwchaos-0 broker=1] Recorded replica 2 ... 1." ...
RECORDED = re.compile(r"Recorded replica (\d+) log end offset \(LEO\) position (\d+)")


RECORD_GRACE = 2.0
"""Seconds, beyond ``replica.fetch.wait.max.ms``, a fetch step waits for the leader to record
the follower's next Fetch (:meth:`FetchSteps._next_fetch_recorded`); it normally takes ms."""


def _from(log: list[tuple[int, int, str]], offset: int) -> list[str]:
    """The records of ``log`` ((offset, epoch, record), offset order) at ``offset`` and on."""
    return [r for o, _, r in log if o >= offset]


ROUND_POLL = 0.02
"""Seconds between polls of the fences inside a follower's fetch step: its round opens the
window (its next Fetch parked at the leader for ``replica.fetch.wait.max.ms``) in which F
must be paused, and a fence polling every 100 ms (``fences.POLL_MAX``) spent up to a tenth
of that window noticing it was reached."""


class FetchSteps(Ringing):
    """``fetch``, ``fetch_request``, ``leader_epoch_request``; a held-back follower's fetch."""

    _played_run: RunResult | None = None

    def _played(self, k: int) -> PartitionState:
        """The model's state after step ``k`` *as played* (harness.checker.realised).

        The fences bound what they wait for by the model the run is judged on: a follower's
        fetch round leaves its next Fetch at the leader, which moves the leader's HW; the
        scenario as written has no such request and predicts a lower leader HW.
        """
        if self._played_run is None:
            self._played_run = realised_run(self.prediction)
        return self._played_run.steps[k].state

    @plays("fetch")
    def do_fetch(self, k: int, ev: Event, name: str) -> str:
        if name in self.down:
            return f"{name} is down"
        if name in self.user_paused:
            return f"{name} is paused"
        if self.leader() == name:
            return f"{name} leads"
        if name in self.cut_from_controller():
            return self.fetch_while_cut(k, name)
        self._wake_leader()
        refused = self._leader_unaware(name)
        if refused:
            return refused
        cuts0 = len(self._truncated_to(name))
        leo0 = self.leo(name)
        lead_mark = self._log_mark(self.leader())
        self._release_settled(name)
        round_done: float | None = None
        note = ""
        try:
            self._caught_up(name, cuts0, k)
            round_done = time.monotonic()
            note = self._isr_joined(k, name)
            # No records: the LEO is not above where the log stood at its lowest in this
            # step (a truncation logged since the resume can have cut it below ``leo0``).
            # A follower that truncated and fetched back to ``leo0`` did get records: its
            # next Fetch is parked at the leader and its answer is not applied this step.
            low = min([leo0, *self._truncated_to(name)[cuts0:]])
            if self.leo(name) <= low:
                note = "; ".join(x for x in (note, self._hw_learned(name)) if x)
                round_done = time.monotonic()  # the answer it waited for opens a new window
            else:
                round_done = self._appended_at(name, round_done)
                recorded = self._next_fetch_recorded(name, lead_mark)
                note = "; ".join(x for x in (note, recorded) if x)
        finally:
            shield = self._shield_from_leader(name)
            shielded_at = time.monotonic()
            try:
                self._hold(name)
            finally:
                if shield is not None:
                    nemesis.resume(self.cluster, shield)
                    self._probe_after_pause()  # the produce fence's bound, taken again
        stopped = shielded_at if shield is not None else self._paused_at
        return "; ".join(x for x in (note, self._late_pause(name, round_done, stopped)) if x)

    def _leader_unaware(self, name: str) -> str:
        """A note when the leader the controller named has not heard that it leads; else "".

        A leader cut from the controller (KRaft: its metadata fetch; ZooKeeper mode: its
        LeaderAndIsr) keeps the partition state it had: F's Fetch to it is answered
        NOT_LEADER_OR_FOLLOWER and nothing changes (the model: "C is not leader ...:
        truncation waits"). No fetch round can complete, so waiting for one ends in a fence
        timeout (seen: controller-failover-missed-change on KRaft, where the failover is not
        played and C stays cut). Observed, not assumed: the leader's own Metadata answer
        names another leader or an older epoch than the controller's. F is not resumed.
        """
        lead = self.leader()
        if lead is None or lead in self.down or lead not in self.cut_from_controller():
            return ""
        want = self.view()
        host, port = self.cluster.broker_address(lead)
        try:
            seen = partition_view(host, port, self.cluster.topic, PARTITION, self.ids[lead])
        except (WireError, struct.error, IndexError):
            return ""  # no answer: not evidence either way; the fetch is played as usual
        if seen is None:
            return ""
        if seen.leader == want.leader and seen.leader_epoch >= want.leader_epoch:
            return ""
        told = self.by_id.get(seen.leader, str(seen.leader))
        return (
            f"observed: {lead} has not heard that it leads (its metadata: leader {told}, "
            f"epoch {seen.leader_epoch}; the controller's: {lead}, epoch "
            f"{want.leader_epoch}), cut from the controller: {name}'s Fetch is refused "
            f"(NOT_LEADER_OR_FOLLOWER); {name} not resumed"
        )

    def _release_settled(self, name: str) -> None:
        """Resume F with its leader stopped until F has acted on every controller decision
        sent to it while it was paused, then resume the leader.

        A decision that reached F while it was paused (e.g. the new leader epoch after
        ``detect``) and F's fetcher race once F runs: seen on 2.1.1 (kraft-isr-shrink-epoch,
        step 9, 1 of 8 fresh runs under load) F's fetcher appended m2 from a Fetch answered
        at once, the LeaderAndIsr's truncation came after it ("Truncating to 2 has no
        effect") and the answer carrying HW 2 was dropped meanwhile; F's HW then stayed 1
        (the fetch session sends an unchanged HW no more). The model's ``fetch`` is one round
        by a follower that has taken up the controller's decisions: with the leader stopped
        nothing can be fetched before they are applied.
        """
        if name not in self.held or name in self.cut_from_controller():
            self._release(name)
            return
        shield = self._shield_from_leader(name)
        try:
            self._release(name)
            self._settled(name)
        finally:
            if shield is not None:
                nemesis.resume(self.cluster, shield)

    def _log_mark(self, name: str | None) -> int:
        """Where broker ``name``'s server.log ends now (bytes; 0 if it has none yet)."""
        if name is None:
            return 0
        try:
            return self.cluster.broker_log(name).stat().st_size
        except OSError:
            return 0

    def _log_since(self, name: str, mark: int) -> str:
        """Broker ``name``'s server.log written since ``mark`` (:meth:`_log_mark`); the whole
        log with its rotated files if it was rolled meanwhile (shorter than the mark)."""
        path = self.cluster.broker_log(name)
        try:
            with path.open("rb") as f:
                if f.seek(0, 2) < mark:
                    return read_rotated(path)
                f.seek(mark)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def _next_fetch_recorded(self, name: str, lead_mark: int) -> str:
        """Fence: the leader has recorded F's next Fetch, at the LEO F just appended to.

        The model's ``fetch`` ends with that request at the leader (``fetch_request``): the
        leader knows F's LEO and moves its HW by it, and the model as played counts on it.
        Kafka's follower sends it as soon as it appended, but a loaded machine can pause F
        after its ``NetworkClient`` queued the request and before its bytes left; paused
        until its next step, F's LEO is then unknown to the leader (seen in CI: 4.0.1,
        kraft-isr-shrink-epoch on a reused cluster, step 3 waited 45 s for a HW the model
        as played reached). Observed in the leader's own log (harness.db.runtime.logconf),
        or by the leader's HW reaching F's LEO. Bounded; not seen is the harness's note.
        """
        lead = self.leader()
        if lead is None or lead in self.down or lead == name or self.gone(name):
            return ""
        leo, bid = self.leo(name), self.ids[name]

        def recorded() -> bool:
            if self.gone(name):
                return True
            if self._recorded_leos(lead, lead_mark, self.cluster.topic).get(bid, -1) >= leo:
                return True
            return self.leader_hw() >= leo

        bound = FETCH_WAIT_MAX_MS / 1000 + RECORD_GRACE
        try:
            wait_until(
                recorded,
                f"{lead} to record {name}'s Fetch at its LEO {leo}",
                bound,
                poll_max=ROUND_POLL,
            )
        except FenceTimeout:
            return (
                f"harness: {lead} did not record {name}'s Fetch at its LEO {leo} within "
                f"{bound:.1f}s of the append: the request the model's fetch ends with may not "
                f"have left {name} before it was paused"
            )
        return ""

    def _recorded_leos(self, lead: str, mark: int, topic: str) -> dict[int, int]:
        """Per follower id, the highest LEO ``lead`` has recorded of its Fetches of
        ``topic``'s partition since ``mark`` (its server.log; :data:`RECORDED`)."""
        part = re.compile(rf"(?<![\w.-]){re.escape(topic)}-{PARTITION}(?![\w-])")
        got: dict[int, int] = {}
        for line in self._log_since(lead, mark).splitlines():
            m = RECORDED.search(line)
            if m and part.search(line):
                bid, leo = int(m.group(1)), int(m.group(2))
                got[bid] = max(leo, got.get(bid, -1))
        return got

    def _appended_at(self, name: str, seen: float) -> float:
        """When F last appended (its newest segment file's mtime), on the monotonic clock;
        ``seen`` (when the harness saw the round done) if that is earlier or unreadable.

        A follower sends its next Fetch as soon as it has appended what the last answer
        brought, so the window in which it must be paused (that Fetch parked at the leader)
        opened then, not when the fence noticed: on a loaded machine the two were apart by
        enough for a pause inside the window to be a pause past it (3.3.1 in a container,
        kip101-scenario2 step 6: B applied HW 2, and no note said why).
        """
        try:
            segments = sorted(self.cluster.partition_dir(name).glob("*.log"))
            mtime = segments[-1].stat().st_mtime if segments else None
        except OSError:
            mtime = None
        if mtime is None:
            return seen
        age = max(0.0, time.time() - mtime)
        return min(seen, time.monotonic() - age)

    def _late_pause(self, name: str, round_done: float | None, stopped: float) -> str:
        """A note when F was paused later than one parked Fetch after its round completed.

        The model's ``fetch`` is one request/response round; the harness realises it by
        pausing F while its next Fetch is parked at the leader (``replica.fetch.wait.max.ms``).
        A loaded machine can delay the pause (of the leader, which shields F, or of F) past
        that window, and F may then have applied a second answer (a newer HW): the step was
        not the model's. Said, so that a per-step HW difference at this step reads as what
        it is.
        """
        if round_done is None or name not in self.held:
            return ""
        wait_ms = int(
            self.cluster.brokers[name].props.get("replica.fetch.wait.max.ms", FETCH_WAIT_MAX_MS)
        )
        late = stopped - round_done
        if late * 1000 < wait_ms:
            return ""
        return (
            f"harness: {name} (or its leader) paused {late:.2f}s after its fetch round "
            f"(its last append or, without records, its HW seen), past "
            f"replica.fetch.wait.max.ms={wait_ms}: it may have applied a second round"
        )

    def _hw_learned(self, name: str) -> str:
        """A fetch round that brought no records: wait until F applied the leader's HW.

        Kafka's follower takes the HW from the Fetch answer, and with nothing new the leader
        parks that answer for ``replica.fetch.wait.max.ms``; so the round is complete when
        F's own checkpoint shows min(leader's HW, F's LEO), both observed (the leader's from
        its checkpoint). Bounded; not reached is a note, and the per-step HW check compares.
        Before 2.4 (model rule ``hw_in_log``) a truncation leaves F's HW above its LEO until
        that answer comes, so the round is complete only once F's HW is also within its log.
        """
        lead = self.leader()
        if lead is None or lead == name or lead in self.down:
            return ""
        log_dir = self.cluster.log_dir(name)
        lead_dir = self.cluster.log_dir(lead)

        # The leader's checkpoint lags its HW by up to its checkpoint interval: F's Fetch may
        # have just moved the HW the parked answer will carry, so the HW the leader reports
        # (ListOffsets, read once the fetch round is over) counts as well.
        lead_hw = self.leader_hw()

        def target() -> int:
            lead_now = max(lead_hw, checkpointed_hw(lead_dir, self.cluster.topic, PARTITION))
            return min(lead_now, self.leo(name))

        ring = self._bell_ringer(name, lead)

        def applied() -> bool:
            hw = checkpointed_hw(log_dir, self.cluster.topic, PARTITION)
            if target() <= hw <= self.leo(name):
                return True
            ring()
            return False

        try:
            wait_until(
                applied,
                f"{name} to apply the leader's HW",
                FETCH_WAIT_MAX_MS / 1000 + 5.0,
                poll_max=ROUND_POLL,
            )
        except FenceTimeout:
            got = checkpointed_hw(log_dir, self.cluster.topic, PARTITION)
            return f"observed: {name}'s HW stayed {got} (leader's HW and {name}'s LEO: {target()})"
        return ""

    @plays("fetch_request")
    def do_fetch_request(self, k: int, ev: Event, name: str) -> str:
        """A Fetch whose answer F never processes (model: ``fetch_request``).

        A Kafka follower sends its next Fetch as soon as it appended, so at the end of its
        last fetch step F's request at its LEO is already at the leader, parked there, and
        F was paused before the answer came. Observed so (F paused since, in the ISR, the
        leader's checkpointed HW covering F's LEO: the leader has seen F at its LEO), the
        step is already realised and nothing is played: resuming F would apply the answer.
        Otherwise it plays as a whole fetch round (the answer's HW then is applied).
        """
        lead = self.leader()
        if (
            name in self.held
            and lead is not None
            and lead not in self.down
            and self.ids[name] in self.view().isr
        ):
            lead_hw = checkpointed_hw(self.cluster.log_dir(lead), self.cluster.topic, PARTITION)
            leo = self.leo(name)
            if 0 <= leo <= lead_hw:
                return (
                    f"realised: {name}'s Fetch at its LEO {leo} reached {lead} when {name} "
                    f"last ran ({lead}'s HW is {lead_hw}); {name} stays paused, the answer "
                    "unprocessed"
                )
        return self.do_fetch(k, ev, name)

    @plays("leader_epoch_request")
    def do_leader_epoch_request(self, k: int, ev: Event, name: str) -> str:
        if not self.version.epoch_on_disk:
            return "no OffsetsForLeaderEpoch before 0.11"
        return self.do_fetch(k, ev, name)

    def _truncated_to(self, name: str) -> list[int]:
        """The offsets the broker's logged truncations cut its log to, oldest first."""
        text = self._server_log(name)
        return [int(a or b) for a, b in TRUNCATED_TO.findall(text)]

    def _server_log(self, name: str) -> str:
        """Broker ``name``'s server.log, less the lines of an earlier run's partition (a
        reused cluster's brokers still remove its dirs while this run plays) and of the
        run's doorbell (bell.py: it truncates and fetches beside the test partition)."""
        text = read_rotated(self.cluster.broker_log(name))
        if self.bell is not None:
            text = without_partition(text, self.bell.topic, PARTITION)
        if self.cluster.topic == TOPIC:
            return text  # a fresh cluster, or a reused one's first run: no earlier topic
        return without_other_topics(text, self.cluster.topic, TOPIC, PARTITION)

    def _caught_up(self, name: str, cuts_before: int, k: int) -> None:
        """Fence of a fetch step: the follower finished at least one full fetch round.

        Equal LEOs alone are not enough from 0.11 on: a follower that still has to truncate
        (OffsetsForLeaderEpoch) can have the leader's LEO with other records. So: equal
        LEOs, and either identical logs, or a pre-0.11 version, which truncates only while
        processing LeaderAndIsr, before its fetcher starts, or a truncation logged since the
        resume whose work is seen done: from the lowest offset it cut to, the follower's
        records are the leader's (the divergent outcomes KIP-279 fixed lie below that cut).

        Why the cut and not a time: Kafka logs "Truncating to offset T" before it cuts the
        log, and this fence once accepted a divergent log that stayed so for 0.1 s after the
        line. At load ~36 (CI, 7 Dec 2026) kip101-scenario2 on a reused 2.1.1 cluster ended
        with A [m1, m2] beside B [m1, m3] (a fresh run: both [m1, m3]); the run folder went
        with the CI machine, and a follower paused between its truncation line and its cut
        is what that 0.1 s let through.
        """
        self._settled(name)
        lead = self.leader()
        if lead is None or lead in self.down or lead == name:
            return

        def done() -> bool:
            if self.gone(name):
                return True  # it exited (a halt): the step records it, nothing to wait for
            mine, theirs = self.log(name), self.log(lead)
            if len(mine) != len(theirs):
                return False
            if [r for _, _, r in mine] == [r for _, _, r in theirs]:
                return True
            if not self.version.epoch_on_disk:
                return True
            if mine and mine[-1][1] == theirs[-1][1]:
                # Divergent within one leader epoch (a leader that came back at the same
                # epoch without what it had, e.g. after an unnoticed restart): the leader's
                # end offset for that epoch is the follower's LEO, so no truncation comes.
                return True
            # server.log is read only here, after the logs: a cut logged since can only
            # lower the lowest cut, so the logs read before are judged at least as strictly.
            cuts = self._truncated_to(name)[cuts_before:]
            return bool(cuts) and _from(mine, min(cuts)) == _from(theirs, min(cuts))

        wait_until(
            done,
            f"{name} to complete a fetch round from {lead}",
            self.timeout,
            self._seen,
            poll_max=ROUND_POLL,
        )
        if self.gone(name):
            return
        isr = [self.by_id[i] for i in self.view().isr if i in self.by_id]
        settled = min(self.leo(n) for n in isr if n not in self.down)
        # From 3.7 (KAFKA-15583) the HW stays put while the ISR is below
        # min.insync.replicas: never wait past what the model says the leader's HW is.
        st = self._played(k)
        if 0 <= st.controller.leader < len(self.names) and self.names[st.controller.leader] == lead:
            model_leader = st.replicas[st.controller.leader]
            settled = min(settled, model_leader.hw)
            if self.version.epoch_on_disk and model_leader.hw < model_leader.leader_start:
                # A leader whose HW is below its epoch's start offset answers ListOffsets
                # with OFFSET_NOT_AVAILABLE (Partition.fetchOffsetForTimestamp, KIP-207)
                # until every ISR member fetched from it: nothing to wait for here.
                return
        wait_until(
            lambda: self.leader_hw() >= settled,
            f"leader HW to reach {settled}",
            self.timeout,
            self._seen,
            poll_max=ROUND_POLL,
        )
        # Drain the reports the HW now makes due (bounded): a record the leader holds below
        # its HW is acknowledged, its report on the way. A pending record above the HW has
        # no report coming yet (acks=all waiting on a follower that has not fetched, or
        # never: kip320's m2), so it is not waited for: that cost 2 s per fetch step.
        below_hw = {r for o, _e, r in self.log(lead) if o < settled}
        deadline = time.monotonic() + 2.0
        with timing.timed_fence("reports of records below the HW"):
            while time.monotonic() < deadline and any(
                d.status == "pending" and d.record in below_hw
                for p in [self.producer, *self.retired]
                for d in p.deliveries.values()
            ):
                self.poll_producers()

    def _isr_joined(self, k: int, name: str) -> str:
        """Fence: a follower the model puts back into the ISR is back in the controller's.

        The leader expands the ISR asynchronously (a ZooKeeper write, AlterIsr or
        AlterPartition to the controller), so a later step (a crash of the leader) could
        otherwise overtake it. Not reached in a few seconds is an observation, not a hang:
        the step's notes say so and the verdict compares the outcome.
        """
        want = self.prediction.steps[k].state.controller.isr
        bid = self.ids[name]
        if self.names.index(name) not in want or bid in self.view().isr or self.gone(name):
            return ""
        try:
            wait_until(
                lambda: bid in self.view().isr,
                f"{name} to rejoin the ISR",
                10.0,
                poll_max=ROUND_POLL,
            )
        except FenceTimeout:
            return f"the model has {name} back in the ISR; the controller still has {self._seen()}"
        return ""

    def _fenced_lines(self, name: str) -> int:
        """How often ``name``'s fetcher was fenced (KIP-320, AbstractFetcherThread)."""
        return self._server_log(name).count("than the current leader. Will await")

    def fetch_while_cut(self, k: int, name: str) -> str:
        """``fetch F`` of a follower cut from the controller: it fetches from the leader it
        last heard of, with its stale leader epoch (the zombie follower of KIP-320).

        No LeaderAndIsr fence (it is held back); the fence is the model's outcome: F's log as
        predicted and, where the model has the fetch refused, F's fetcher fenced
        (FENCED_LEADER_EPOCH, logged by AbstractFetcherThread.onPartitionFenced); where the
        model has F back in the ISR, the controller's ISR too.
        """

        after = self.prediction.steps[k]
        idx = self.names.index(name)
        want = [r for _e, r in after.state.replicas[idx].log]
        fenced = any("FENCED_LEADER_EPOCH" in n for n in after.notes)
        joins = idx in after.state.controller.isr
        fenced0 = self._fenced_lines(name)
        bid = self.ids[name]

        def done() -> bool:
            if self.gone(name):
                return True  # it exited (a halt): the step records it
            if [r for _o, _e, r in self.log(name)] != want:
                return False
            if fenced:
                return self._fenced_lines(name) > fenced0
            if joins:
                return bid in self.view().isr
            return True

        t0 = time.perf_counter()
        self._wake_leader()
        self._release(name)
        learned = ""
        try:
            wait_until(done, f"{name}'s fetch as a held-back follower", self.timeout, self._seen)
            if not fenced and not self.gone(name):
                # Served: the leader puts F back in the ISR (a ZooKeeper write before 2.x)
                # while handling F's fetch, before F has the answer; F takes the HW from it
                # only when it arrives. Paused earlier, F's HW would be its old one.
                learned = self._hw_learned(name)
        finally:
            self._hold(name)
        what = "fenced (FENCED_LEADER_EPOCH)" if fenced else "served"
        if joins and not fenced:
            what += ", back in the ISR"
        took = time.perf_counter() - t0
        note = f"realised: {name} ran {took:.1f} s, still cut from the controller: {what}"
        return f"{note}; {learned}" if learned else note
