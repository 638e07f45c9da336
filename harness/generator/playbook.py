"""The *generator*: plays a scenario's steps on a real cluster, each behind a fence.

How a scripted ordering is made to happen on brokers that replicate continuously:

- Followers are paused (SIGSTOP) between their own steps, so a follower copies records only
  in its ``fetch`` steps; the leader and the controller broker always run. The ZooKeeper
  session timeout is longer than any pause, so a paused follower is not declared dead.
- ``fetch F`` resumes F and waits until F's log on disk has the leader's LEO and the leader
  reports (as its high watermark) what the ISR now holds, then pauses F again.
- ``restart F`` holds the leader (pauses it) while F starts, so F processes its
  LeaderAndIsr (truncating to its HW before 0.11; before 0.11 nothing else can happen) but
  cannot fetch until a later step; then F is paused and the leader resumed. A restart the
  model's controller did not notice (no ``detect F`` before it) happens while the
  controller broker is frozen, and controllership then fails over to a spare broker that
  never knew F was gone (ZooKeeper mode; harness.nemesis.failover).
- ``detect F`` deletes the dead broker's registration, which is what the expiry of its
  ZooKeeper session does, and waits until the controller's decision is in ZooKeeper.
- ``checkpoint``/``stale_checkpoint``/``flush`` decide what the files say after a crash or
  power loss (the nemesis writes them); Kafka's own checkpoint and flush timers are hourly.

Every fence is a bounded tenacity wait on observable state (ZooKeeper, files, the leader's
answer); a fence that is not reached raises :class:`FenceTimeout` naming what was expected
and what was seen. Steps that cannot be made to happen on real brokers raise
:class:`StepPrevented` with the reason.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tenacity import RetryError, retry, retry_if_result, stop_after_delay, wait_fixed

from harness.client.producer import Delivery, Producer
from harness.db import CONTROLLER, PARTITION, TOPIC, Cluster, TopicSpec
from harness.db.versions import KafkaVersion
from harness.generator.realise import PRODUCE_TIMEOUT_MS, NetworkSteps, needs
from harness.metadata import PartitionView
from harness.nemesis import faults as nemesis
from harness.nemesis.failover import ControllerFailover, has_spare
from harness.readback.logformat import read_partition_dir
from reference_model.events import Event
from reference_model.run import RunResult, expand
from reference_model.scenario import Scenario

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


class FenceTimeout(RuntimeError):
    """A step's precondition never became true; the run stops rather than guess."""


class StepPrevented(RuntimeError):
    """The step cannot be made to happen on this backend/version (a result, not a bug)."""


@dataclass
class Observation:
    """What the cluster looked like after one step."""

    step: int
    event: str
    seconds: float
    leader: str
    leader_epoch: int
    isr: list[str]
    leo: dict[str, int]  # on-disk LEO per replica (-1: no partition dir yet)
    notes: list[str] = field(default_factory=list)


def wait_until(
    check: Callable[[], Any], what: str, timeout: float, seen: Callable[[], str] | None = None
) -> Any:
    """Poll ``check`` until it returns something truthy, or fail naming ``what``."""

    @retry(
        stop=stop_after_delay(timeout), wait=wait_fixed(0.1), retry=retry_if_result(lambda v: not v)
    )
    def poll() -> Any:
        return check()

    try:
        return poll()
    except RetryError:
        now = seen() if seen is not None else "?"
        msg = f"timed out after {timeout:.0f}s waiting for {what}; seen: {now}"
        raise FenceTimeout(msg) from None


class Playbook(NetworkSteps):
    """Drives one scenario on one cluster. Use :meth:`setup`, then :meth:`step` per step."""

    def __init__(
        self,
        cluster: Cluster,
        scenario: Scenario,
        version: KafkaVersion,
        prediction: RunResult,
        timeout: float = 45.0,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.cluster = cluster
        self.scenario = scenario
        self.version = version
        self.prediction = prediction
        self.timeout = timeout
        self.progress = progress or (lambda _m: None)
        self.names = list(scenario.brokers)
        self.ids = {n: cluster.brokers[n].broker_id for n in self.names}
        self.by_id = {i: n for n, i in self.ids.items()}
        self.down: set[str] = set()
        self.held: set[str] = set()  # paused by the harness between steps
        self.user_paused: set[str] = set()  # paused by a scenario step
        self.flushed: dict[str, int] = {n: 0 for n in self.names}
        self.checkpoint_hw: dict[str, int] = {}
        self.kraft = cluster.mode.name == "kraft"
        self.meta = cluster.metadata()
        self._admin: Any = None
        self.expiring: set[str] = set()
        self.retired: list[Producer] = []  # earlier producers with reports still to come
        self.producer = self._make_producer()
        self._consumer: Any = None
        self._lai_base: dict[str, tuple[int, int]] = {}
        self._model_step = 0  # the model state whose controller liveness the run follows
        self.failover = (
            ControllerFailover(cluster, wait_until, timeout) if has_spare(cluster) else None
        )
        self._paused_at = 0.0  # when the harness last paused a broker

    def _make_producer(self) -> Producer:
        """The run's producer; runs with ``isr_shrink`` need it patient (see realise.py).

        An acks=all write may wait out a whole ISR shrink there, so its timeouts are long,
        and it bootstraps from the initial leader alone: a first request to a broker
        paused between its fetch steps would hang for the whole (long) socket timeout,
        long enough for the short lag to drop followers behind the script.
        """
        if not needs(self.scenario).short_lag:
            return Producer(self.cluster.bootstrap(), self.scenario.acks)
        lead = self.scenario.brokers[self.scenario.leader]
        host, port = self.cluster.broker_address(lead)
        return Producer(f"{host}:{port}", self.scenario.acks, timeout_ms=PRODUCE_TIMEOUT_MS)

    def _fresh_producer(self) -> None:
        """Runs with ``isr_shrink``: each produce step gets a producer bootstrapped from the
        current leader. An older one may hold an open connection to a follower that ran
        in a fetch step and is paused now; a Metadata request on it hangs for the whole
        (long) socket timeout, seen as 30 s steps, long enough for the short lag to drop
        followers behind the script. A fresh one never completes its handshake with a
        paused broker, so it never uses one. The old one stays open for its reports.
        """
        lead = self.leader()
        if not needs(self.scenario).short_lag or lead is None or lead in self.down:
            return
        host, port = self.cluster.broker_address(lead)
        fresh = Producer(f"{host}:{port}", self.scenario.acks, timeout_ms=PRODUCE_TIMEOUT_MS)
        fresh.deliveries = self.producer.deliveries  # one record of every write
        self.retired.append(self.producer)
        self.producer = fresh

    def poll_producers(self) -> None:
        """Serve delivery reports of every producer of the run."""
        for p in self.retired:
            p.poll(0)
        self.producer.poll(0.05)

    # ------------------------------------------------------------------ observing

    def view(self) -> PartitionView:
        v = self.meta.partition()
        if v is None:
            raise FenceTimeout("the controller has no state for the test partition")
        return v

    def leader(self) -> str | None:
        return self.by_id.get(self.view().leader)

    def log(self, name: str) -> list[tuple[int, int, str]]:
        """(offset, epoch, record) on broker ``name``'s disk, in offset order."""
        pdir = self.cluster.partition_dir(name)
        if not pdir.is_dir():
            return []
        return [(r.offset, r.epoch, r.record_id) for r in read_partition_dir(pdir, verify=False)]

    def leo(self, name: str) -> int:
        pdir = self.cluster.partition_dir(name)
        if not pdir.is_dir():
            return -1
        entries = self.log(name)
        return entries[-1][0] + 1 if entries else 0

    def leader_hw(self) -> int:
        """The HW as the leader reports it to consumers; -1 if it does not answer.

        A consumer that saw brokers die can keep stale connections for a while, so one that
        fails is replaced by a fresh one for the next poll.
        """
        from confluent_kafka import Consumer, TopicPartition

        if self.kraft:
            return self._leader_hw_admin()
        if self._consumer is None:
            self._consumer = Consumer(
                {
                    "bootstrap.servers": self.cluster.bootstrap(),
                    "group.id": "hwchaos-watermarks",
                    "enable.auto.commit": False,
                    "topic.metadata.refresh.interval.ms": 250,
                    "metadata.max.age.ms": 1000,
                    "log_level": 0,  # connection noise while brokers die is expected
                }
            )
        try:
            _low, high = self._consumer.get_watermark_offsets(
                TopicPartition(TOPIC, PARTITION), timeout=2.0, cached=False
            )
            return int(high)
        except Exception:  # "no answer" is the observation
            with contextlib.suppress(Exception):
                self._consumer.close()
            self._consumer = None
            return -1

    def _leader_hw_admin(self) -> int:
        """KRaft: ListOffsets(latest) through an admin client.

        A consumer with a group id would make the brokers create ``__consumer_offsets`` on a
        test broker (KRaft has no broker that faults never touch to put it on).
        """
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

        if self._admin is None:
            self._admin = AdminClient(
                {
                    "bootstrap.servers": self.cluster.bootstrap(),
                    "log_level": 0,
                    "metadata.max.age.ms": 1000,
                }
            )
        tp = TopicPartition(TOPIC, PARTITION)
        try:
            latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
            futs = self._admin.list_offsets({tp: latest}, request_timeout=2.0)
            return int(futs[tp].result(timeout=3.0).offset)
        except Exception:  # "no answer" is the observation
            self._admin = None
            return -1

    def observe(self, step: int, event: str, seconds: float, notes: list[str]) -> Observation:
        v = self.view()
        return Observation(
            step=step,
            event=event,
            seconds=round(seconds, 3),
            leader=self.by_id.get(v.leader, ""),
            leader_epoch=v.leader_epoch,
            isr=[self.by_id[i] for i in v.isr if i in self.by_id],
            leo={n: self.leo(n) for n in self.names},
            notes=notes,
        )

    def _seen(self) -> str:
        try:
            v = self.view()
            leos = {n: self.leo(n) for n in self.names}
            return f"{v.describe()} leo={leos} (broker ids: {self.ids})"
        except Exception as exc:
            return f"(cluster unreadable: {exc})"

    # ------------------------------------------------------------------ pausing

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

    # ------------------------------------------------------------------ setup

    def setup(self) -> None:
        sc = self.scenario
        order = [sc.brokers[sc.leader]] + [n for n in sc.brokers if n != sc.brokers[sc.leader]]
        self.cluster.create_topic(TopicSpec(order, sc.min_insync, sc.unclean))
        want_isr = tuple(sorted(self.ids.values()))
        lead_id = self.ids[order[0]]

        def ready() -> bool:
            v = self.meta.partition()
            return v is not None and v.leader == lead_id and v.isr == want_isr

        wait_until(ready, f"{order[0]} to lead with ISR {sorted(order)}", self.timeout, self._seen)
        wait_until(
            lambda: all(self.leo(n) == 0 for n in self.names),
            "every replica to create its partition dir",
            self.timeout,
            self._seen,
        )
        self._leader_ready(order[0])
        for n in order[1:]:
            self._hold(n)

    # ------------------------------------------------------------------ steps

    def step(self, k: int, ev: Event) -> Observation:
        t0 = time.perf_counter()
        before = self.prediction.steps[k - 1].state
        notes: list[str] = []
        cfg = self.prediction.config
        self._model_step = k - 1
        for e in expand(cfg, before, ev, self.scenario.records_per_produce):
            self._sync_sessions()
            notes.append(self._apply(k, e) or "")
        self._model_step = k
        self._sync_sessions()
        text = ev.describe(cfg.brokers)
        obs = self.observe(k, text, time.perf_counter() - t0, [n for n in notes if n])
        self.progress(
            f"step {k:>2}/{len(self.scenario.steps)} {text:<32} "
            f"{obs.seconds:5.1f}s  leader={obs.leader or '-'} "
            f"epoch={obs.leader_epoch} leo={obs.leo}"
        )
        return obs

    def _apply(self, k: int, ev: Event) -> str:
        name = self.names[ev.replica] if ev.replica >= 0 else ""
        handler = getattr(self, f"do_{ev.kind}", None)
        if handler is None:
            raise StepPrevented(
                f"step {k}: '{ev.kind}' cannot be scripted on real brokers: "
                f"{UNSUPPORTED.get(ev.kind, 'not implemented')}"
            )
        result: str = handler(k, ev, name)
        return result

    def do_produce(self, k: int, ev: Event, name: str) -> str:
        if ev.replica >= 0:
            return self.produce_to(k, ev, name)
        self._wake_leader()
        self._parked_fetches_answered()
        self._fresh_producer()
        stale, note = self.client_cut_from_stale()
        try:
            return self._produce_to_leader(ev, note)
        finally:
            self._uncut(stale)

    def _produce_to_leader(self, ev: Event, note: str) -> str:
        lead_id = self.view().leader
        if lead_id >= 0 and self.by_id.get(lead_id) not in self.down:
            wait_until(
                lambda: self.producer.leader_id() == lead_id,
                "the producer's metadata to name the current leader",
                self.timeout,
                self._seen,
            )
        out = [note] if note else []
        for record in ev.record.split(","):
            d = self.producer.send(record)
            lead = self.leader()

            def done(rec: str = record, lead: str | None = lead, d: Delivery = d) -> bool:
                self.poll_producers()
                if d.status != "pending":
                    return True
                return lead is not None and any(r == rec for _, _, r in self.log(lead))

            wait_until(done, f"{record} to be acknowledged or appended", self.timeout, self._seen)
            out.append(f"{record}: {d.status}{' ' + d.error if d.error else ''}")
        return "; ".join(out)

    def _parked_fetches_answered(self) -> None:
        """Wait out ``replica.fetch.wait.max.ms`` since the last follower was paused.

        A follower paused just after sending its next Fetch leaves that request parked in the
        leader's fetch purgatory; a record produced before it expires completes it, and the
        paused follower applies the answer whenever it next runs (seen on 0.10.2.1 and
        3.3.1-kraft: kip320-zombie-follower's B held m2 it never fetched). The answer is not
        observable from outside, but its deadline is the broker's own timer, so the fence is
        that timer (twice, for scheduling slack).
        """
        wait_ms = int(
            self.cluster.brokers[self.names[0]].props.get("replica.fetch.wait.max.ms", 100)
        )
        deadline = self._paused_at + 2 * wait_ms / 1000
        wait_until(lambda: time.monotonic() >= deadline, "parked fetches to expire", 5.0)

    def _truncations(self, name: str) -> int:
        """How many truncation decisions ("Truncating ...") the broker has logged."""
        path = self.cluster.broker_log(name)
        if path is None or not path.exists():
            return 0
        return path.read_text(errors="replace").count("Truncating")

    def _caught_up(self, name: str, truncations_before: int, k: int) -> None:
        """Fence of a fetch step: the follower finished at least one full fetch round.

        Equal LEOs alone are not enough from 0.11 on: a follower that still has to truncate
        (OffsetsForLeaderEpoch) can have the leader's LEO with other records. So: equal
        LEOs, and either identical logs, or a truncation decision logged since the resume
        (the divergent outcomes KIP-279 fixed), or a pre-0.11 version, which truncates only
        while processing LeaderAndIsr, before its fetcher starts.
        """
        self._lai_settled(name)
        lead = self.leader()
        if lead is None or lead in self.down or lead == name:
            return

        stable = [0]

        def done() -> bool:
            # The truncation count is read before the logs, and a divergent-but-equal-length
            # outcome must hold on two polls in a row: Kafka logs "Truncating ..." before it
            # cuts the log and fetches on, so one read can fall between the two.
            truncated = self._truncations(name) > truncations_before
            mine, theirs = self.log(name), self.log(lead)
            if len(mine) != len(theirs):
                stable[0] = 0
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
            stable[0] = stable[0] + 1 if truncated else 0
            return stable[0] >= 2

        wait_until(done, f"{name} to complete a fetch round from {lead}", self.timeout, self._seen)
        isr = [self.by_id[i] for i in self.view().isr if i in self.by_id]
        settled = min(self.leo(n) for n in isr if n not in self.down)
        # From 3.7 (KAFKA-15583) the HW stays put while the ISR is below
        # min.insync.replicas: never wait past what the model says the leader's HW is.
        st = self.prediction.steps[k].state
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
        )
        deadline = time.monotonic() + 2.0
        while (
            any(p.outstanding() for p in [self.producer, *self.retired])
            and time.monotonic() < deadline
        ):
            self.poll_producers()  # bounded: drains reports for what the HW now covers

    def _wake_leader(self) -> None:
        """A leader held during a restart is resumed only when a step needs it.

        Resuming it earlier would answer the restarted follower's first fetch request, and
        that answer would be applied whenever the follower next runs, even after the leader
        died: a fetch the scenario never scripted.
        """
        lead = self.leader()
        if lead is not None and lead in self.held:
            self._leader_ready(lead)

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
        before = self._truncations(name)
        self._release(name)
        try:
            self._caught_up(name, before, k)
            note = self._isr_joined(k, name)
        finally:
            self._hold(name)
        return note

    def _isr_joined(self, k: int, name: str) -> str:
        """Fence: a follower the model puts back into the ISR is back in the controller's.

        The leader expands the ISR asynchronously (a ZooKeeper write, AlterIsr or
        AlterPartition to the controller), so a later step (a crash of the leader) could
        otherwise overtake it. Not reached in a few seconds is an observation, not a hang:
        the step's notes say so and the verdict compares the outcome.
        """
        want = self.prediction.steps[k].state.controller.isr
        bid = self.ids[name]
        if self.names.index(name) not in want or bid in self.view().isr:
            return ""
        try:
            wait_until(lambda: bid in self.view().isr, f"{name} to rejoin the ISR", 10.0)
        except FenceTimeout:
            return f"the model has {name} back in the ISR; the controller still has {self._seen()}"
        return ""

    do_fetch_request = do_fetch  # the answer's HW lives only in memory; see README

    def do_leader_epoch_request(self, k: int, ev: Event, name: str) -> str:
        if not self.version.epoch_on_disk:
            return "no OffsetsForLeaderEpoch before 0.11"
        return self.do_fetch(k, ev, name)

    def do_checkpoint(self, k: int, ev: Event, name: str) -> str:
        hw = self.prediction.steps[k].state.replicas[ev.replica].checkpoint_hw
        self.checkpoint_hw[name] = hw
        return f"{name}'s replication-offset-checkpoint will say {hw}"

    def do_stale_checkpoint(self, k: int, ev: Event, name: str) -> str:
        self.checkpoint_hw[name] = ev.value
        if name in self.down:
            nemesis.write_hw_checkpoint(self.cluster, name, ev.value)
        return ""

    def do_flush(self, k: int, ev: Event, name: str) -> str:
        self.flushed[name] = max(self.leo(name), 0)
        return ""

    def _after_kill(self, name: str) -> None:
        self.down.add(name)
        self._sync_sessions()
        self.held.discard(name)
        self.user_paused.discard(name)
        if name in self.checkpoint_hw:
            nemesis.write_hw_checkpoint(self.cluster, name, self.checkpoint_hw[name])

    def do_crash(self, k: int, ev: Event, name: str) -> str:
        if name in self.down:
            return f"{name} is already down"
        nemesis.crash(self.cluster, name)
        self._after_kill(name)
        return ""

    def do_power_loss(self, k: int, ev: Event, name: str) -> str:
        lost = nemesis.power_loss(self.cluster, name, self.flushed[name])
        self._after_kill(name)
        return f"{lost} unflushed bytes lost"

    def do_clean_shutdown(self, k: int, ev: Event, name: str) -> str:
        self._wake_leader()
        self._release(name)
        nemesis.clean_stop(self.cluster, name)
        self.down.add(name)
        self._await_controller(name)
        return ""

    def do_pause(self, k: int, ev: Event, name: str) -> str:
        self._hold(name)
        self.held.discard(name)
        self.user_paused.add(name)
        return ""

    def do_resume(self, k: int, ev: Event, name: str) -> str:
        if name in self.user_paused:
            nemesis.resume(self.cluster, name)
            self.user_paused.discard(name)
            self._sync_sessions()
        return ""

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

    def do_detect(self, k: int, ev: Event, name: str) -> str:
        note = self.hold_from_controller(self.names[i] for i in sorted(ev.hold)) if ev.hold else ""
        if name not in self.down:
            running = self.detect_running(k, ev, name)
            if running is None:
                raise StepPrevented(
                    f"step {k}: detect {name}: a live broker's session does not expire"
                )
            return "; ".join(n for n in (note, running) if n)
        self.cluster.declare_dead(name)
        self._await_controller(name)
        return note

    def do_restart(self, k: int, ev: Event, name: str) -> str:
        before = self.prediction.steps[k - 1].state
        unnoticed = ev.replica in before.controller.live
        if unnoticed and (self.kraft or self.failover is None):
            why = (
                "a KRaft controller refuses the new registration while the old heartbeat "
                "session lives (DuplicateBrokerRegistrationException) and registers it with "
                "a new broker epoch afterwards"
                if self.kraft
                else "the cluster was started without a spare controller broker to fail "
                "over to (harness.nemesis.failover.prepare)"
            )
            raise StepPrevented(
                f"step {k}: restart {name} before the controller noticed its failure: {why}; "
                f"add 'detect: {name}' before it"
            )
        if name not in self.down:
            return f"{name} is already running"
        lead = self.leader()
        if lead is not None and lead not in self.down:
            self._hold(lead)  # so the restarted broker cannot fetch before its fetch step
        frozen = ""
        if unnoticed and self.failover is not None:
            # The bounce no controller sees: see harness.nemesis.failover.
            frozen = self.failover.freeze()
            self.cluster.declare_dead(name)  # F crashed; its session has not expired
        if not self.kraft:
            self._mark_start(name)
        self.cluster.start_broker(name)
        self.down.discard(name)
        wait_until(
            lambda: self.ids[name] in self.view().live,
            f"{name} to register",
            self.timeout,
            self._seen,
        )
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
        if not self.kraft:
            sent0 = self._lai_base[name][0]
            wait_until(
                lambda: self._lai_sent(name) > sent0,
                f"the controller to send {name} its LeaderAndIsr",
                self.timeout,
                self._seen,
            )
        self._lai_settled(name)
        new_lead = self.leader()
        if new_lead == name:
            if lead is not None and lead != name:
                self._release(lead)
            self._leader_ready(name)
        else:
            self._hold(name)  # the leader stays held until a step needs it
        if frozen and self.failover is not None:
            self.failover.restore_standby(frozen)
        return note

    # ------------------------------------------------------------------ elect

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
        from harness.metadata.kraft import KRaftView
        from harness.metadata.zk import ZkView

        if isinstance(self.meta, ZkView):
            return self.meta.assignment()
        assert isinstance(self.meta, KRaftView)
        p = self.meta.image().partition(TOPIC, PARTITION)
        if p is None:
            raise FenceTimeout("the controller has no state for the test partition")
        return list(p.replicas)

    def _zk_preferred(self, name: str) -> str:
        """ZooKeeper mode: the reassignment znode, then the preferred-election znode."""
        from harness.metadata.zk import ZkView

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
            from harness.client.wire import elect_leaders

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
        from harness.client.wire import WireError

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
        from harness.client.wire import alter_partition_reassignments

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

    def _applied_or_none(self, name: str) -> bool:
        try:
            return self._kraft_applied(name)
        except Exception:  # not answering yet
            return False

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

    def _lai_done(self, name: str) -> int:
        path = self.cluster.state_change_log(name)
        if path is None or not path.exists():
            return 0
        text = path.read_text(errors="replace")
        pattern = LAI_FINISHED if LAI_FINISHED.search(text) else LAI_DONE
        return len(pattern.findall(text))

    def _lai_sent(self, name: str) -> int:
        """LeaderAndIsr requests sent to ``name`` by every controller of the run so far."""
        total = 0
        for controller in self._controller_brokers():
            path = self.cluster.state_change_log(controller)
            if path is None or not path.exists():
                continue
            text = path.read_text(errors="replace")
            pattern = LAI_SENT_REQUEST if LAI_SENT_REQUEST.search(text) else LAI_SENT_PARTITION
            bid = str(self.ids[name])
            total += sum(1 for m in pattern.finditer(text) if m.group(1) == bid)
        return total

    def _controller_brokers(self) -> list[str]:
        """The controller broker, and the spare a failover may hand controllership to."""
        return self.failover.eligible() if self.failover is not None else [CONTROLLER]

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
        from harness.client.wire import partition_view

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
        path = self.cluster.state_change_log(name)
        if path is None or not path.exists():
            return -1
        found = STARTS_AT_EPOCH.findall(path.read_text(errors="replace"))
        return int(found[-1]) if found else -1

    def _lai_settled(self, name: str) -> None:
        """Fence: the broker processed every LeaderAndIsr the controller sent it.

        Not for a broker cut from the controller: what was sent is held back (realise.py).
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
            lambda: self._lai_pending(name) <= 0,
            f"{name} to process the LeaderAndIsr requests sent to it",
            self.timeout,
            self._seen,
        )

    # ------------------------------------------------------------------ end

    def finish(self) -> dict[str, Any]:
        """Read what the run left: producer reports, final state, halted brokers."""
        for p in self.retired:
            p.close(timeout=5.0)
        self.producer.close(timeout=5.0)
        v = self.meta.partition()
        halted = [
            n
            for n in self.names
            if n not in self.down
            and n not in self.held
            and n not in self.user_paused
            and not self.cluster.is_running(n)
        ]
        return {
            "deliveries": {r: vars(d) for r, d in self.producer.deliveries.items()},
            "leader": self.by_id.get(v.leader) if v else None,
            "leader_epoch": v.leader_epoch if v else -1,
            "isr": [self.by_id[i] for i in v.isr if i in self.by_id] if v else [],
            "halted": halted,
        }

    def close(self) -> None:
        for n in list(self.held) + list(self.user_paused):
            if n not in self._controller_brokers():
                nemesis.resume(self.cluster, n)
        self.held.clear()
        if self._consumer is not None:
            with contextlib.suppress(Exception):
                self._consumer.close()
        self.meta.close()
        if self._admin is not None:
            self._admin = None


UNSUPPORTED: dict[str, str] = {}
