"""``produce`` steps: records sent to the leader, or (``produce: {to: X}``) to X alone.

A plain ``produce`` goes to the leader the controller elected, as the model's producer
does: the fence waits until the producer's metadata names that leader, then until each
record is acknowledged or appended to the leader's log. A broker cut from the controller
answers Metadata from a stale view (a zombie leader names itself), so the harness's client
is cut from it for the step. ``produce: {to: X}`` bootstraps a producer from X alone while
the client is cut from every other broker, so it can only ever talk to X, whatever X's
metadata says; X's answer is the outcome. Both wait out fetches parked in the leader's
purgatory before the first record is sent (a record would complete them behind the
script), with the producer already made, so its bootstrap overlaps that wait. Every
plain ``produce`` uses a producer bootstrapped from the current leader (runs with
``isr_shrink``: a patient one; see ``_fresh_producer``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from harness.client.producer import Delivery, Producer
from harness.db.catalogue.kafka_config import FETCH_WAIT_MAX_MS
from harness.db.runtime.linkcuts import CLIENT
from harness.generator.playbook.cuts import both_ways
from harness.generator.playbook.dispatch import plays
from harness.generator.playbook.fences import wait_until
from harness.generator.playbook.ring import Ringing
from harness.generator.realise import PRODUCE_TIMEOUT_MS, needs
from harness.readback import tcp
from reference_model.events import Event

OFFLINE_TIMEOUT_MS = 1500
"""``message.timeout.ms`` of a record sent while the partition is observed offline."""


class ProduceSteps(Ringing):
    """``produce`` and ``produce: {to: X}``."""

    @plays("produce")
    def do_produce(self, k: int, ev: Event, name: str) -> str:
        if ev.replica >= 0:
            return self.produce_to(k, ev, name)
        self._wake_leader()
        self._fresh_producer()
        stale, note = self.client_cut_from_stale()
        try:
            # The producer's bootstrap and Metadata round run while the paused followers'
            # parked Fetches wait out their timer: neither writes anything to the leader.
            # One read of the controller's view decides the step: a leader elected between
            # two reads skipped the parked-Fetch fence for it (the fence saw none, the
            # send saw one).
            lead_id = self.view().leader
            if lead_id < 0:
                # Offline: no broker takes the record, so it completes no Fetch parked
                # anywhere; nothing to wait for (the timer's 2 s, kip279-fast-leader-change
                # on 3.3.1-kraft, step 11). A leader elected meanwhile is named in the notes.
                return self._produce_offline(ev, note)
            self._producer_knows_leader(lead_id)
            self._parked_fetches_answered(self.by_id.get(lead_id))
            return self._produce_to_leader(ev, note)
        finally:
            self._uncut(stale)

    def _producer_knows_leader(self, lead_id: int) -> None:
        """Fence: the producer's own Metadata answer names the leader the controller named."""
        if self.by_id.get(lead_id) not in self.down:
            wait_until(
                lambda: self.producer.leader_id() == lead_id,
                "the producer's metadata to name the current leader",
                self.timeout,
                self._seen,
            )

    def _produce_to_leader(self, ev: Event, note: str) -> str:
        if self.view().leader < 0:
            return self._produce_offline(ev, note)
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

    def _produce_offline(self, ev: Event, note: str) -> str:
        """A plain ``produce`` while the controller names no leader (observed offline).

        Nothing can append the record: librdkafka holds it until its message timeout, the
        playbook producer's 8 s (kip279-fast-leader-change on 3.3.1-kraft: 8.4 s of its
        run). A producer with :data:`OFFLINE_TIMEOUT_MS` sends it instead; the outcome is
        the same failure, sooner. Observed, not assumed: the controller's view is read
        again after the report, and a leader elected meanwhile is named in the notes.
        """
        up = [n for n in self.names if n not in self.down | self.held | self.user_paused]
        boot = ",".join("{}:{}".format(*self.cluster.broker_address(n)) for n in up)
        short = Producer(
            boot or self.cluster.bootstrap(),
            self.scenario.acks,
            timeout_ms=OFFLINE_TIMEOUT_MS,
            topic=self.cluster.topic,
        )
        out = [note] if note else []
        out.append(f"realised: no leader (offline); message.timeout.ms={OFFLINE_TIMEOUT_MS}")
        try:
            out += self._send_each(short, ev.record, lambda r: f"{r} to be refused (offline)")
        finally:
            short.close(timeout=1.0)
        after = self.view().leader
        if after >= 0:
            out.append(f"a leader ({self.by_id.get(after, after)}) was elected during the step")
        return "; ".join(out)

    def _send_each(self, producer: Producer, records: str, what: Callable[[str], str]) -> list[str]:
        """Send each record of a step with a producer of its own and wait (bounded) for its
        answer; the delivery is the run's (the step's records, as the model has them)."""
        out = []
        for record in records.split(","):
            d = producer.send(record)

            def answered(d: Delivery = d) -> bool:
                producer.poll(0.05)
                return d.status != "pending"

            wait_until(answered, what(record), self.timeout, self._seen)
            self.producer.deliveries[record] = d
            out.append(f"{record}: {d.status}{' ' + d.error if d.error else ''}")
        return out

    def _parked_fetches_answered(self, who: str | None) -> None:
        """Wait until no paused follower's Fetch is parked at the broker that takes the
        record (``who``: the leader the step read, or ``produce: {to: X}``'s X).

        A follower paused just after sending its next Fetch leaves that request parked in the
        leader's fetch purgatory; a record produced before it expires completes it, and the
        paused follower applies the answer whenever it next runs (seen on 0.10.2.1 and
        3.3.1-kraft: kip320-zombie-follower's B held m2 it never fetched).

        Three ways to see it answered, whichever comes first:

        - observed: the answer's bytes wait in the paused follower's socket receive queue
          (:func:`harness.readback.tcp.answered`, per paused follower; a fetcher has one
          request in flight per connection);
        - nothing sent since the last answer (:func:`harness.readback.tcp.nothing_in_flight`,
          looked at once per paused follower: a stopped process sends nothing): a follower
          paused between two Fetches has none parked;
        - the broker's timer: the request's arrival plus ``replica.fetch.wait.max.ms``. The
          arrival is bounded by observation: the broker answered an ApiVersions sent after
          the last pause (taken right after it, :meth:`_probe_after_pause`, or now if the
          broker could not answer then), so its request handlers have run past the
          follower's Fetch, which was on the wire before the pause. From that answer the
          fence is the broker's timer, twice for scheduling slack. Without it (a loaded
          machine: the leader read the Fetch late) the timer alone from the pause was not
          enough: ``elect-unclean`` on 3.3.1 once saw B hold m2 it never fetched.
        """
        # The broker spec holds overrides only; the setting itself is kafka_config's.
        wait_ms = int(
            self.cluster.brokers[self.names[0]].props.get(
                "replica.fetch.wait.max.ms", FETCH_WAIT_MAX_MS
            )
        )
        if who is None:
            return  # an id the cluster does not name: no broker of ours takes the record
        start = self._paused_at
        probed = self._answered_after_pause.get(who)
        if probed is None:
            probed = self._answered_now(who)
        if probed is not None:
            start = max(start, probed)
        deadline = start + 2 * wait_ms / 1000
        paused = sorted((self.held | self.user_paused) - self.down - {who})
        who_pid = self.cluster.host_pid(who)
        if who_pid is not None:
            # paused between two Fetches: nothing parked, and nothing can be sent until it
            # runs again, so one look is enough (harness.readback.tcp.nothing_in_flight)
            paused = [
                n
                for n in paused
                if (pid := self.cluster.host_pid(n)) is None
                or tcp.nothing_in_flight(pid, who_pid) is not True
            ]

        if paused:
            # the timer's answers, now (bell.py): nothing moves the test partition meanwhile
            self._ring(who, paused, "parked fetches before a produce")

        def answered() -> bool:
            if not paused or time.monotonic() >= deadline:
                return True  # no paused follower: nothing can apply a parked answer later
            target_pid = self.cluster.host_pid(who)
            if target_pid is None:
                return False
            for n in paused:
                pid = self.cluster.host_pid(n)
                if pid is not None and tcp.answered(pid, target_pid) is not True:
                    return False  # None (cannot tell): the timer decides
            return True

        wait_until(answered, "parked fetches to expire", 5.0)

    def _fresh_producer(self) -> None:
        """Each produce step gets a producer bootstrapped from the current leader.

        An older one may hold an open connection to a follower that ran in a fetch step
        and is paused now, or pick a paused broker it learned from metadata for its next
        Metadata request; that request hangs for the whole socket timeout: seen as 30 s
        steps with ``isr_shrink`` (long enough for the short lag to drop followers behind
        the script), as 8-10 s first produce steps on KRaft, whose clients bootstrap from
        every broker, and as 6-8 s on 0.10.2.1 although its clients bootstrap from the
        controller broker, which is never paused (kip101-scenario1 step 4,
        controller-queue-two-leader-changes step 6: "the producer's metadata to name the
        current leader" in run.json's timings). A fresh one never completes its handshake
        with a paused broker, so it never uses one. The old one stays open for its reports.
        """
        lead = self.leader()
        if lead is None or lead in self.down:
            return
        short_lag = needs(self.scenario).short_lag
        host, port = self.cluster.broker_address(lead)
        timeout = {"timeout_ms": PRODUCE_TIMEOUT_MS} if short_lag else {}
        fresh = Producer(f"{host}:{port}", self.scenario.acks, topic=self.cluster.topic, **timeout)
        fresh.deliveries = self.producer.deliveries  # one record of every write
        self.retired.append(self.producer)
        self.producer = fresh

    def produce_to(self, k: int, ev: Event, name: str) -> str:
        """``produce: {to: X}``: a client that can reach X alone; its answer is the outcome."""

        if name in self.down:
            for record in ev.record.split(","):
                self._failed(record, f"{name} is down")
            return f"realised: {name} is down: not sent"
        if name in self.held and self.leader() == name:
            self._wake_leader()
        others = [n for n in self.cluster.brokers if n != name]
        new = self._cut(both_ways((CLIENT, n) for n in others))
        host, port = self.cluster.broker_address(name)
        pinned = Producer(f"{host}:{port}", self.scenario.acks, topic=self.cluster.topic)
        out = []
        try:
            # after the producer is made: its bootstrap runs while the timer does
            self._parked_fetches_answered(name)
            out += self._send_each(pinned, ev.record, lambda r: f"{name}'s answer to {r}")
        finally:
            pinned.close(timeout=2.0)
            self._uncut(new)
        return (
            f"realised: producer bootstrapped from {name}, client cut from {','.join(others)}; "
            + "; ".join(out)
        )

    def client_cut_from_stale(self) -> tuple[list[tuple[str, str]], str]:
        """For a plain ``produce``: cut the client from brokers the controller cannot reach.

        The model's producer writes to the leader the controller elected. A broker cut from
        the controller answers Metadata from its stale view (a zombie leader names itself),
        and librdkafka may ask it (KRaft bootstraps from every broker), so while such a
        broker runs the harness's client is cut from it. Returns (cuts made, note).
        """
        v = self.view()
        lead = self.by_id.get(v.leader)
        stale = sorted(n for n in self.cut_from_controller() - self.down if n != lead)
        if not stale:
            return [], ""
        new = self._cut(both_ways((CLIENT, n) for n in stale))
        return new, (
            f"realised: client cut from {','.join(stale)} (cut from the controller: stale "
            "metadata) for this produce"
        )

    def _failed(self, record: str, why: str) -> None:
        d = Delivery(record)
        d.status, d.error = "failed", why
        self.producer.deliveries[record] = d
