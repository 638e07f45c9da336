"""The doorbell: a second partition that answers Fetches parked at the leader on demand.

Why: a follower that has everything sends its next Fetch at once, and the leader parks it
for ``replica.fetch.wait.max.ms`` (1 s here, ``FETCH_WAIT_MAX_MS``). Two of the steps'
waits are that timer and nothing else: a produce step waits until every paused follower's
parked Fetch has been answered (else the record would complete it behind the script,
playbook/produce.py), and a fetch that brings no records waits for the parked answer that
carries the leader's HW (playbook/fetch.py ``_hw_learned``). Together about a quarter of a
catalogue run (docs/speed.md).

How: the leader parks a follower's Fetch under a key for every partition it names, and an
append to any of them tries to complete it (``ReplicaManager.fetchMessages``:
``delayedFetchKeys``; the append's ``tryCompleteDelayedFetch`` on 0.10.2 and 2.1,
``delayedFetchPurgatory.checkAndComplete`` from the produce's action queue on 3.x/4.x),
which it does once the new bytes reach ``replica.fetch.min.bytes`` (1). So each run gets
a doorbell topic (:func:`harness.db.names.bell_topic`) with the test partition's replicas
in the same order, hence the same fetcher threads and the same preferred leader; one
record produced to it at the leader answers every Fetch parked there at once.

Why it does not change what the run plays: the bell is rung only where the harness would
otherwise wait, doing nothing, for the timer to answer the very same parked Fetches.
Nothing moves the test partition during that wait, so the answers carry what the timer's
would have carried (no records of the test partition, its HW of that moment), sooner.
A fetch step rings only when no *other* paused follower would learn something from its
own parked Fetch being answered now rather than when its timer runs out, after what the
next step does (playbook/ring.py ``Ringing._bell_ringer`` says how that is read). The
bell is rung only when the controller names the test partition's leader as the bell's
leader too (the two can part in elections); elsewhere the timer answers, as without a
bell. And whatever the bell does, the waits still end on what they observe (the answer in
the follower's socket, the follower's own HW checkpoint): a ring that answered nothing
costs only time.

Not used (the timer answers) in runs with held LeaderAndIsr requests, controller
failovers (scripted, or a restart the controller must not notice) or a run network: there
the controller's requests and the links are what the scenario scripts, and a second
partition would change what they carry.

``HWCHAOS_DOORBELL=0`` turns it off (docs/speed.md, "Switches").
"""

from __future__ import annotations

import os
import time
from typing import Any

from harness.client.producer import Delivery, Producer
from harness.db import Cluster
from harness.db.mode.view import MetadataView
from harness.db.names import bell_topic
from harness.generator.realise import needs
from harness.nemesis.failover import unnoticed_restarts
from reference_model.run import RunResult
from reference_model.scenario import Scenario

ENV = "HWCHAOS_DOORBELL"

SCRIPTED_REQUESTS = ("leader_and_isr", "controller_failover", "partition", "heal")
"""Step kinds whose controller requests or links the scenario scripts (no bell there)."""

RING_TIMEOUT_MS = 2000
"""The bell producer's request and message timeout: a ring is best effort."""

RING_GRACE = 0.5
"""Seconds past ``RING_TIMEOUT_MS`` a ring waits for its delivery report (the producer
reports a message it timed out, so the wait ends on a report either way)."""


def maybe_appended(d: Delivery) -> bool:
    """Whether a ring not acknowledged may still be (or have been) appended: no report yet,
    or the client's own timeout or a broken connection with the request sent (librdkafka's
    ``_MSG_TIMED_OUT``, ``_TIMED_OUT``, ``_TRANSPORT``: "possibly persisted"). A broker's
    error answer (``NOT_LEADER_FOR_PARTITION``, ...) says it was not."""
    if d.status == "pending":
        return True
    if d.status == "acked":
        return False
    return d.error.startswith("_") and ("TIMED_OUT" in d.error or "TRANSPORT" in d.error)


def enabled() -> bool:
    """The switch (``HWCHAOS_DOORBELL``; "0" off)."""
    return os.environ.get(ENV, "1") != "0"


def wanted(scenario: Scenario, prediction: RunResult) -> bool:
    """Whether this run gets a doorbell (see the module docstring)."""
    if not enabled() or needs(scenario, prediction).network or unnoticed_restarts(prediction):
        return False  # a run network, or a frozen controller and its spare (failover)
    return not any(ev.kind in SCRIPTED_REQUESTS for step in prediction.steps for ev in step.events)


class Doorbell:
    """The run's doorbell topic and the producers that ring it (one per leader)."""

    def __init__(self, cluster: Cluster, meta: MetadataView, ids: dict[str, int]) -> None:
        self.cluster = cluster
        self.meta = meta
        self.ids = ids
        self.topic = bell_topic(cluster.topic)
        self.rings: list[dict[str, Any]] = []  # run.json ``extra.doorbell``
        self.not_leading = 0  # rings not made: the bell led elsewhere (the timer answered)
        self._producers: dict[str, Producer] = {}
        # rings whose append the harness could not confirm: (step, leader, ring number,
        # delivery) until a report says appended, or surely not
        self._unsettled: list[tuple[int, str, int, Delivery]] = []

    def leads(self, name: str) -> bool:
        """The controller names ``name`` the bell's leader (read now)."""
        view = self.meta.partition(self.topic)
        return view is not None and view.leader == self.ids[name]

    def ring(self, leader: str, step: int, waiting: list[str], why: str) -> bool:
        """Append one record to the bell at ``leader`` (running, not stopped: the caller's
        to know) if it leads the bell; True when the leader appended it. Each ring is
        listed for run.json: the step, the broker, whose parked Fetch the harness waited
        for, why, whether it was appended and how long that took.

        It returns once the leader has acknowledged the record (acks=1: appended), so the
        Fetches it answers are those parked during the step that rang. A ring sent and not
        waited for answered a Fetch of the next step: a CI trial of 7 Dec 2026 (4.1.0,
        kip101-scenario2 on a reused cluster) had step 1's ring, the first on a new
        producer (a connection and a metadata request first), appended ~50 ms into step 2
        (``fetch: B``), where it answered B's next Fetch, parked at the leader, with HW 1,
        and B applied the HW a round before the model. A ring not acknowledged within the
        producer's timeout is False (not rung, as far as the caller knows)."""
        if not self.leads(leader):
            self.not_leading += 1
            return False
        p = self._producers.get(leader)
        if p is None:
            host, port = self.cluster.broker_address(leader)
            p = Producer(f"{host}:{port}", "1", timeout_ms=RING_TIMEOUT_MS, topic=self.topic)
            self._producers[leader] = p
        t0 = time.monotonic()
        d = p.send(f"ring-{len(self.rings) + 1}")
        deadline = t0 + RING_TIMEOUT_MS / 1000 + RING_GRACE
        while d.status == "pending" and time.monotonic() < deadline:
            p.poll(0.005)
        self.rings.append(
            {
                "step": step,
                "at": leader,
                "waiting_for": waiting,
                "why": why,
                "appended": d.status == "acked",
                "seconds": round(time.monotonic() - t0, 3),
            }
        )
        if d.status != "acked" and maybe_appended(d):
            self._unsettled.append((step, leader, len(self.rings), d))
        return d.status == "acked"

    def unsettled(self, step: int) -> str:
        """A harness note for ``step`` while a ring the leader did not acknowledge in time
        may still be appended (or was, late); "" when there is none.

        Such a ring is a record the leader can append at any moment after its wait gave up:
        it then answers every Fetch parked there in whatever step is playing, which no step
        scripted (the race e845744 closed for acknowledged rings). The harness cannot tell
        when, so every step from the ring's on says so until a delivery report settles it:
        appended (said once more, for the step it was seen in) or surely not (a broker's
        error). A HW that differs from the model's at such a step is then the harness's own
        miss (:func:`harness.checker.hw.missed_window`), not evidence on the model.
        """
        if not self._unsettled:
            return ""
        for leader in {x[1] for x in self._unsettled}:
            self._producers[leader].poll(0)  # the reports that came meanwhile
        out, keep = [], []
        for k, leader, n, d in self._unsettled:
            if d.status == "acked":
                out.append(
                    f"harness: doorbell ring {n} (step {k}) was appended at {leader} after "
                    f"its wait gave up, by step {step}: it may have answered a Fetch parked "
                    "after its step"
                )
            elif maybe_appended(d):
                keep.append((k, leader, n, d))
                out.append(
                    f"harness: doorbell ring {n} (step {k}) at {leader} not acknowledged "
                    f"({d.error or 'no report'}): if appended, it answers the Fetches parked "
                    "there when it is"
                )
        self._unsettled = keep
        return "; ".join(out)

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "rings": self.rings, "not_leading": self.not_leading}

    def close(self) -> None:
        """Drop the producers (bounded: a ring to a broker stopped since may never be
        answered)."""
        for p in self._producers.values():
            p.close(timeout=0.5)
        self._producers.clear()
