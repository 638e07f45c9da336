"""The playbook's state and its view of the cluster; no step is played here.

One :class:`PlaybookState` per run holds what every step family reads and updates: the
brokers the harness paused between their steps (``held``), those a scenario step paused
(``user_paused``), those down, the run's producers, and the readers of what the cluster
decided (the controller's metadata, the logs on disk, the leader's HW). The step families
(the sibling modules) are mixins over it, so each reads like methods of one playbook while
living in the file of its step kind, and none needs stubs of the others to type-check.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from harness.client.producer import Producer
from harness.db import Cluster
from harness.db.catalogue.versions import KafkaVersion
from harness.db.mode.view import PartitionView
from harness.db.names import CONTROLLER, PARTITION
from harness.generator.playbook.bell import Doorbell
from harness.generator.playbook.fences import FenceTimeout, Observation, wait_until
from harness.generator.realise import PRODUCE_TIMEOUT_MS, needs
from harness.nemesis import faults as nemesis
from harness.nemesis.failover import ControllerFailover, has_spare
from harness.protocol.wire import WireError, list_offsets_latest
from harness.readback.hw import HwReading, checkpointed_hw, stable_hw, stable_hws
from harness.readback.logformat import read_partition_dir
from reference_model.events import Event
from reference_model.run import RunResult
from reference_model.scenario import Scenario


class PlaybookState:
    """What one run of one scenario on one cluster knows, and how it reads the cluster."""

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
        self.halts: list[Any] = []  # brokers that exited on their own (halts.Halt)
        self.flushed: dict[str, int] = {n: 0 for n in self.names}
        # stale_checkpoint faults to write when the broker is down (never a model value)
        self.checkpoint_hw: dict[str, int] = {}
        # Every write the harness made into a broker's files: {step, broker, file, value,
        # source (observed | fault), why}; written to the run folder as writes.json.
        self.file_writes: list[dict[str, Any]] = []
        self.current_step = 0
        # The consumer oracle's reads: {step, replica, role, replica_id, hw, records, error}
        self.reads: list[dict[str, Any]] = []
        self.meta = cluster.metadata()
        self.expiring: set[str] = set()
        self.retired: list[Producer] = []  # earlier producers with reports still to come
        self.bell: Doorbell | None = None  # the run's doorbell, made by the setup (bell.py)
        self.bell_declined = ""  # why a run that wanted a doorbell plays without one
        # The event the step plays after the current one (``fetch: followers`` is several)
        self.next_event: Event | None = None
        self.producer = self._make_producer()
        self._model_step = 0  # the model state whose controller liveness the run follows
        # Brokers restarted during the step being played: registered with the controller,
        # so live to it, although the model state ``_model_step`` is from before the step.
        self.registered_in_step: set[str] = set()
        # Brokers a ``detect`` of the step being played declared dead: no longer live to the
        # controller, although the model state ``_model_step`` still counts them live.
        self.detected_in_step: set[str] = set()
        self.failover = (
            ControllerFailover(cluster, wait_until, timeout) if has_spare(cluster) else None
        )
        self._paused_at = 0.0  # when the harness last paused a broker
        # broker -> when it answered an ApiVersions sent after that pause (produce.py)
        self._answered_after_pause: dict[str, float] = {}
        # How this mode's brokers are seen acting on the controller's decisions.
        self.decisions = cluster.mode.decisions(cluster, self.view, self._controller_brokers)

    def _make_producer(self) -> Producer:
        """The run's producer; runs with ``isr_shrink`` need it patient (see isr.py).

        An acks=all write may wait out a whole ISR shrink there, so its timeouts are long,
        and it bootstraps from the initial leader alone: a first request to a broker
        paused between its fetch steps would hang for the whole (long) socket timeout,
        long enough for the short lag to drop followers behind the script.
        """
        if not needs(self.scenario).short_lag:
            return Producer(self.cluster.bootstrap(), self.scenario.acks, topic=self.cluster.topic)
        lead = self.scenario.brokers[self.scenario.leader]
        host, port = self.cluster.broker_address(lead)
        return Producer(
            f"{host}:{port}",
            self.scenario.acks,
            timeout_ms=PRODUCE_TIMEOUT_MS,
            topic=self.cluster.topic,
        )

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

    def _wait(self, check: Callable[[], object], what: str) -> object:
        """The step's bounded fence, as the mode's waits take it."""
        return wait_until(check, what, self.timeout, self._seen)

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

    def leader_hw(self, lead: str | None = None) -> int:
        """The HW the leader the controller named (``lead``, if the caller just read it)
        reports to consumers; -1 if no answer.

        ListOffsets(latest) on the wire to that broker itself (harness.protocol.wire), not
        through a client library: librdkafka sends it to whichever broker its metadata
        cache names, and after a leader change that was the dead or paused old leader for
        its whole request timeout (2 s per step observed, 3.3.1-kraft, in run.json's
        "observe the cluster after the step" fence), and its first call paid a bootstrap.
        """
        lead = lead or self.leader()
        if lead is None or lead in self.down:
            return -1
        host, port = self.cluster.broker_address(lead)
        try:
            return list_offsets_latest(host, port, self.cluster.topic, PARTITION)
        except (WireError, struct.error, IndexError):  # "no answer" is the observation
            return -1

    def _running(self, name: str) -> bool:
        """Running and not paused: its checkpoint file can still move."""
        return (
            name not in self.down
            and name not in self.held
            and name not in self.user_paused
            and self.cluster.is_running(name)
        )

    def hw_reading(self, name: str) -> HwReading:
        """``name``'s HW as its broker checkpointed it (harness.readback.hw).

        A running broker: wait (bounded) for two fresh checkpoint writes that agree. A paused
        or dead one: its file is frozen, read it as it is.
        """
        log_dir = self.cluster.log_dir(name)
        if self._running(name):
            return stable_hw(log_dir, self.cluster.topic, PARTITION)
        return HwReading(checkpointed_hw(log_dir, self.cluster.topic, PARTITION), True, 0)

    def hw_readings(
        self, names: list[str], meanwhile: Callable[[], object] | None = None
    ) -> dict[str, HwReading]:
        """:meth:`hw_reading` of several brokers, the running ones waited for together
        (``meanwhile`` runs inside that wait: :func:`harness.readback.hw.stable_hws`)."""
        running = {n: self.cluster.log_dir(n) for n in names if self._running(n)}
        if running:
            got = stable_hws(running, self.cluster.topic, PARTITION, meanwhile=meanwhile)
        else:
            got = {}
            if meanwhile is not None:
                meanwhile()
        return {n: got[n] if n in got else self.hw_reading(n) for n in names}

    def consumer_read(self, name: str, role: str) -> None:
        """What a consumer reads from ``name`` now (harness.protocol.fetch), for the oracle.

        The leader is read as an ordinary consumer, a follower as Kafka's debugging
        consumer before 2.4 and with KIP-392 client metadata from 2.4 (either way served by
        the follower, up to its own HW; harness.protocol.fetch). Only a
        running broker can answer, so followers are read just before the harness pauses
        them (their state then is their state until their next step).
        """
        from harness.protocol.fetch import (
            CONSUMER,
            DEBUGGING_CONSUMER,
            fetch,
            fetch_version,
            serves_kip392,
        )

        host, port = self.cluster.broker_address(name)
        kip392 = serves_kip392(self.version.release)
        rid = CONSUMER if role == "leader" or kip392 else DEBUGGING_CONSUMER
        row: dict[str, Any] = {
            "step": self.current_step,
            "replica": name,
            "role": role,
            "replica_id": rid,
            "hw": -1,
            "records": [],
            "error": "",
        }
        try:
            ver = fetch_version(self.version.epoch_on_disk, kip392)
            ans = fetch(host, port, self.cluster.topic, PARTITION, ver, rid)
            row["hw"], row["records"] = ans.high_watermark, [list(x) for x in ans.records]
            row["error"] = "" if ans.error == 0 else f"error code {ans.error}"
        except (WireError, struct.error, IndexError) as exc:
            row["error"] = str(exc) or type(exc).__name__
        self.reads.append(row)

    def record_write(self, name: str, file: str, value: int, source: str, why: str) -> None:
        """List one write into a broker's files for ``writes.json`` (source: observed|fault)."""
        self.file_writes.append(
            {
                "step": self.current_step,
                "broker": name,
                "file": file,
                "value": value,
                "source": source,
                "why": why,
            }
        )

    def observe(self, step: int, event: str, seconds: float, notes: list[str]) -> Observation:
        """The cluster after step ``step``: the controller's view, every replica's
        checkpointed HW and LEO, and the leader on the wire (its HW, a consumer's read).

        The wire reads go inside the wait for the running brokers' checkpoint writes
        (``hw_readings``'s ``meanwhile``): every reading is of the same quiet moment (the
        step is over, followers paused), and the step costs the checkpoint wait alone.
        """
        v = self.view()
        lead = self.by_id.get(v.leader, "")
        wire = [-1]

        def on_the_wire() -> None:
            if lead and self._running(lead):
                wire[0] = self.leader_hw(lead)
                self.consumer_read(lead, "leader")

        readings = self.hw_readings(self.names, meanwhile=on_the_wire)
        return Observation(
            step=step,
            event=event,
            seconds=round(seconds, 3),
            leader=self.by_id.get(v.leader, ""),
            leader_epoch=v.leader_epoch,
            isr=[self.by_id[i] for i in v.isr if i in self.by_id],
            leo={n: self.leo(n) for n in self.names},
            notes=notes,
            hw={n: r.hw for n, r in readings.items()},
            hw_stable={n: r.stable for n, r in readings.items()},
            leader_hw_wire=wire[0],
            live=[self.by_id[i] for i in sorted(v.live) if i in self.by_id],
            live_free=sorted(self.liveness_free()),
        )

    def liveness_free(self) -> set[str]:
        """Brokers whose liveness the controller may change by itself now (not held to the
        model at this step): those a ``detect`` let go of; CutLinks adds the cut ones."""
        return set(self.expiring)

    def _seen(self) -> str:
        try:
            v = self.view()
            leos = {n: self.leo(n) for n in self.names}
            return f"{v.describe()} leo={leos} (broker ids: {self.ids})"
        except Exception as exc:
            return f"(cluster unreadable: {exc})"

    def _controller_brokers(self) -> list[str]:
        """The controller broker, and the spare a failover may hand controllership to."""
        return self.failover.eligible() if self.failover is not None else [CONTROLLER]

    # ------------------------------------------------------------------ end

    def finish(self) -> dict[str, Any]:
        """Read what the run left: producer reports, final state, halted brokers."""
        for p in self.retired:
            p.close(timeout=5.0)
        self.producer.close(timeout=5.0)
        if self.bell is not None:
            self.bell.close()
        v = self.meta.partition()
        # An exit the harness did not cause is a halt (halts.HaltWatch.note_exits, called
        # by the playbook before this); one not restarted since is a final outcome.
        halted = sorted({h.broker for h in self.halts if h.broker in self.down})
        return {
            "deliveries": {r: vars(d) for r, d in self.producer.deliveries.items()},
            "leader": self.by_id.get(v.leader) if v else None,
            "leader_epoch": v.leader_epoch if v else -1,
            "isr": [self.by_id[i] for i in v.isr if i in self.by_id] if v else [],
            # KIP-966: who may lead when an offline partition returns (the judge's stand-in
            # leader); empty before 4.0 and without ELR.
            "elr": [self.by_id[i] for i in v.elr if i in self.by_id] if v else [],
            "halted": halted,
            "halts": [h.to_json() for h in self.halts],
        }

    def close(self) -> None:
        for n in list(self.held) + list(self.user_paused):
            if n not in self._controller_brokers():
                nemesis.resume(self.cluster, n)
        self.held.clear()
        self.meta.close()
