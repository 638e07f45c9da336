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
- ``checkpoint`` waits for Kafka's own HW checkpoint (written every 10 ms) to be stable;
  ``stale_checkpoint`` (a fault) and ``power_loss`` (the log cut to the LEO observed at the
  last ``flush``) are the only writes into a broker's files, each listed in writes.json.
- After every step each replica's HW is read from what its broker wrote
  (harness.readback.hw) and the leader's from the wire, for the per-step HW check.

Every fence is a bounded tenacity wait on observable state (ZooKeeper, files, the leader's
answer); a fence that is not reached raises :class:`FenceTimeout` naming what was expected
and what was seen. Steps that cannot be made to happen on real brokers raise
:class:`StepPrevented` with the reason.

One module per step family, each a mixin over the shared state and fences:

- ``fences``: FenceTimeout, StepPrevented, Observation, wait_until.
- ``state`` (what the run knows, how it reads the cluster), ``cuts`` (network nodes and
  links), ``settle`` (pausing, sessions, LeaderAndIsr/metadata fences): below every family.
- ``produce``, ``fetch``, ``crash`` (crash, power loss, shutdown, pause, restart, files),
  ``held`` (held-back LeaderAndIsr), ``partition`` (partition/heal), ``detect``, ``elect``,
  ``isr`` (isr_shrink), and ``prevented`` (the broker's side of a prevented step).

:class:`Playbook` below composes them; each family marks the methods that play a step kind
with ``@plays(kind)`` (``dispatch``), collected into :attr:`Playbook.STEPS`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any, ClassVar

from harness import timing
from harness.db import TopicSpec
from harness.db.names import PARTITION
from harness.generator.playbook.bell import Doorbell
from harness.generator.playbook.bell import wanted as wants_bell
from harness.generator.playbook.crash import CrashSteps
from harness.generator.playbook.detect import DetectSteps
from harness.generator.playbook.dispatch import StepMethod, model_only, steps_of
from harness.generator.playbook.elect import ElectSteps
from harness.generator.playbook.fences import FenceTimeout, Observation, StepPrevented, wait_until
from harness.generator.playbook.fetch import ROUND_POLL, FetchSteps
from harness.generator.playbook.isr import IsrSteps
from harness.generator.playbook.partition import PartitionSteps
from harness.generator.playbook.prevented import PreventionChecks
from harness.generator.playbook.produce import ProduceSteps
from harness.readback.hw import NO_HW, checkpointed_hw
from reference_model.events import Event
from reference_model.run import expand

BELL_SETUP = 15.0
"""Seconds the setup waits for the doorbell led by the test partition's first leader; past
it the run goes without one (:meth:`Playbook._make_bell`)."""


class Playbook(
    ProduceSteps,
    FetchSteps,
    CrashSteps,
    PartitionSteps,
    DetectSteps,
    ElectSteps,
    IsrSteps,
    PreventionChecks,
):
    """Drives one scenario on one cluster. Use :meth:`setup`, then :meth:`step` per step."""

    STEPS: ClassVar[dict[str, StepMethod]]
    """The step dispatch: scenario step kind to the step family's method that plays it,
    collected once from the ``@plays(kind)`` marks (``playbook.dispatch.steps_of``). A kind
    declared model-only (``fetch_response``) is not here and is refused by name."""

    # ------------------------------------------------------------------ setup

    def setup(self) -> None:
        sc = self.scenario
        order = [sc.brokers[sc.leader]] + [n for n in sc.brokers if n != sc.brokers[sc.leader]]
        want_isr = tuple(sorted(self.ids.values()))
        lead_id = self.ids[order[0]]

        def ready(topic: str | None = None) -> bool:
            v = self.meta.partition(topic)
            return v is not None and v.leader == lead_id and v.isr == want_isr

        if wants_bell(sc, self.prediction):
            self._make_bell(order, ready)
        self.cluster.create_topic(
            TopicSpec(order, sc.min_insync, sc.unclean, name=self.cluster.topic)
        )
        wait_until(ready, f"{order[0]} to lead with ISR {sorted(order)}", self.timeout, self._seen)
        wait_until(
            lambda: all(self.leo(n) == 0 for n in self.names),
            "every replica to create its partition dir",
            self.timeout,
            self._seen,
        )
        # Before a follower is held: its HW checkpoint names the partition, so every later
        # observation of its HW is a value its broker wrote. A follower paused between its
        # partition dir and its checkpoint thread's next write read as "no HW" at step 1
        # until it ran again (4.0.0, a CI trial of 7 Dec 2026 at load ~40).
        wait_until(
            lambda: all(
                checkpointed_hw(self.cluster.log_dir(n), self.cluster.topic, PARTITION) != NO_HW
                for n in self.names
            ),
            "every replica to checkpoint the partition's HW",
            self.timeout,
            self._seen,
        )
        self._leader_ready(order[0])
        for n in order[1:]:
            self._hold(n)

    def _make_bell(self, order: list[str], ready: Callable[[str | None], bool]) -> None:
        """The run's doorbell (bell.py), made before the test topic: the same replicas in
        the same order (the same fetchers, the same leader), and every follower's Fetches
        naming it before the test partition exists. A follower adds a partition to its
        fetcher between two Fetches, so a Fetch parked when it is held must already name
        the bell for a ring to answer it (seen: made after the test topic, the first
        produce of every reused run still waited out the timer)."""
        bell = Doorbell(self.cluster, self.meta, self.ids)
        mark = self._log_mark(order[0])
        self.cluster.create_topic(TopicSpec(order, 1, self.scenario.unclean, name=bell.topic))
        try:
            wait_until(
                lambda: (
                    ready(bell.topic)
                    and all(self.cluster.partition_dir(n, bell.topic).is_dir() for n in self.names)
                ),
                f"the doorbell {bell.topic} led by {order[0]} on every replica",
                min(BELL_SETUP, self.timeout),
                self._seen,
            )
        except FenceTimeout as exc:
            # The bell only shortens waits; a run without it is the run the timer answers.
            # Seen in CI (8 Dec 2026, 4.0.0 in containers at load ~24): the controller's
            # queue was too busy to take A's heartbeat, fenced A just after it became the
            # bell's leader and moved the leadership to B for good (no rebalance here).
            self.bell_declined = f"{exc}: the run plays without a doorbell"
            return
        self._fetching(order[0], order[1:], bell.topic, mark)
        self.bell = bell

    def _fetching(self, lead: str, followers: list[str], topic: str, mark: int) -> None:
        """Fence (bounded, not fatal): ``lead`` has recorded a Fetch of ``topic``'s partition
        from each follower since ``mark`` (its server.log; :data:`RECORDED`), so their
        fetchers name it. Not seen in time is only slower: the timer answers instead."""
        want = {self.ids[n] for n in followers}
        with contextlib.suppress(FenceTimeout):
            wait_until(
                lambda: want <= set(self._recorded_leos(lead, mark, topic)),
                f"every follower to fetch {topic}",
                3.0,
                poll_max=ROUND_POLL,
            )

    # ------------------------------------------------------------------ steps

    def step(self, k: int, ev: Event) -> Observation:
        t0 = time.perf_counter()
        before = self.prediction.steps[k - 1].state
        notes: list[str] = []
        cfg = self.prediction.config
        self._model_step = k - 1
        self.current_step = k
        self.registered_in_step = set()
        self.detected_in_step = set()
        # An exit since the last step ended happened from the state after step k - 1.
        notes += [h.describe() for h in self.note_exits(k - 1)]
        events = list(expand(cfg, before, ev, self.scenario.records_per_produce))
        # the next step's events, when the model plays one (not prevented)
        events_next: list[Event] = []
        if k + 1 < len(self.prediction.steps):
            events_next = expand(cfg, self.prediction.steps[k].state, self.scenario.steps[k])
        for i, e in enumerate(events):
            self._sync_sessions()
            later = [*events[i + 1 :], *events_next]
            self.next_event = later[0] if later else None
            notes.append(self._apply(k, e) or "")
            notes += [h.describe() for h in self.note_exits(k)]
        notes.append(self._bell_unsettled(k))
        self._model_step = k
        self._sync_sessions()
        text = ev.describe(cfg.brokers)
        with timing.timed_fence("observe the cluster after the step"):
            obs = self.observe(k, text, time.perf_counter() - t0, [n for n in notes if n])
        if k + 1 < len(self.prediction.steps):  # the model plays step k + 1 (not prevented)
            held = self.hold_leader_before_its_kill(events_next)
            if held:
                obs.notes.append(held)
        self.progress(
            f"step {k:>2}/{len(self.scenario.steps)} {text:<32} "
            f"{obs.seconds:5.1f}s  leader={obs.leader or '-'} "
            f"epoch={obs.leader_epoch} leo={obs.leo} hw={obs.hw}"
        )
        return obs

    def finish(self) -> dict[str, Any]:
        """What the run left (PlaybookState.finish), with any exit after the last step."""
        self.note_exits(len(self.scenario.steps))
        return super().finish()

    def _apply(self, k: int, ev: Event) -> str:
        name = self.names[ev.replica] if ev.replica >= 0 else ""
        handler = self.STEPS.get(ev.kind)
        if handler is None:
            raise StepPrevented(model_only(k, ev.kind))
        return handler(self, k, ev, name)


Playbook.STEPS = steps_of(Playbook)
