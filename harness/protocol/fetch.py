"""A consumer's Fetch, on the wire, to one chosen broker: what it would serve, and its HW.

The consumer oracle (harness.checker.consumer) needs what a consumer reads from *one
chosen replica* after every step, and the HW that replica reports in its answer. librdkafka
picks brokers itself and needs a group id (whose coordinator lookup would create
``__consumer_offsets`` on a test broker), so this sends Kafka's Fetch request itself:

- ``replica_id = -1`` (an ordinary consumer) to the leader: records below the leader's HW
  (``ReplicaManager.readFromLocalLog`` with the high-watermark isolation), and the HW.
- A follower, before 2.4: ``replica_id = -2``, Kafka's *debugging consumer*
  (``Request.DebuggingConsumerId``): ``ReplicaManager.fetchMessages`` sets
  ``fetchOnlyFromLeader = replicaId != DebuggingConsumerId`` (0.10.2.1, 2.1.1), so a
  follower serves it, up to *its own* HW.
- A follower, from 2.4 (KIP-392): Fetch v11 carries a ``rack_id``; with it the request has
  client metadata and ``FetchParams.fetchOnlyLeader`` (``isFromFollower || (isFromConsumer
  && clientMetadata.isEmpty)``) is false, so a follower serves an ordinary consumer, up to
  its own HW. (From 2.4 the debugging id alone no longer does: it counts as a consumer.)

Fetch v3 before 0.11, v4 from 0.11 to 2.3, v11 from 2.4 (v0 to v3 are gone in 4.0,
KIP-896). All answer ``high_watermark`` per partition; the record set is parsed with the
segment reader (harness.readback.logformat), since a fetched record set is segment bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from harness.protocol.wire import WireError, _header, _Reader, _roundtrip, _string
from harness.readback.batches import SegmentReadResult, read_batches

FETCH = 1
CONSUMER = -1
DEBUGGING_CONSUMER = -2
RACK = "hwchaos"
"""The ``rack_id`` of v11 requests: any value gives the request client metadata."""


def serves_kip392(release: str) -> bool:
    """Whether a broker of ``release`` (``"2.4.0"``) is 2.4 or later: it speaks Fetch v11 and
    serves a consumer from a follower (KIP-392), where an older one serves Kafka's debugging
    consumer (replica id -2) instead."""
    return tuple(int(x) for x in release.split(".")[:2]) >= (2, 4)


def fetch_version(epoch_on_disk: bool, kip392: bool) -> int:
    """The Fetch version hwchaos speaks to a broker of that generation."""
    return 11 if kip392 else 4 if epoch_on_disk else 3


@dataclass
class FetchAnswer:
    """One partition's answer: error code, the replica's HW, and (offset, record) served."""

    error: int
    high_watermark: int
    records: list[tuple[int, str]] = field(default_factory=list)


def fetch(
    host: str,
    port: int,
    topic: str,
    partition: int,
    version: int,
    replica_id: int = CONSUMER,
    offset: int = 0,
    timeout: float = 3.0,
) -> FetchAnswer:
    """One Fetch (``max_wait_ms`` 0: answer at once) of ``topic-partition`` from ``offset``."""
    if version not in (3, 4, 11):
        raise ValueError(f"Fetch v{version}: only v3 (0.10), v4 (0.11+), v11 (2.4+) spoken here")
    body = struct.pack(">iiii", replica_id, 0, 0, 1 << 20)
    if version >= 4:
        body += struct.pack(">b", 0)  # isolation_level READ_UNCOMMITTED
    if version >= 11:
        body += struct.pack(">ii", 0, -1)  # session_id 0, session_epoch -1: no session
    body += struct.pack(">i", 1) + _string(topic) + struct.pack(">i", 1)
    if version >= 11:
        # partition, current_leader_epoch (-1: not checked), fetch_offset, log_start_offset
        body += struct.pack(">iiqqi", partition, -1, offset, -1, 1 << 20)
        body += struct.pack(">i", 0) + _string(RACK)  # no forgotten topics; rack_id
    else:
        body += struct.pack(">iqi", partition, offset, 1 << 20)
    raw = _roundtrip(host, port, _header(FETCH, version, 7, False) + body, timeout)
    r = _Reader(raw)
    r.take(">i")  # correlation id
    r.take(">i")  # throttle_time_ms
    if version >= 11:
        top = r.take(">h")
        r.take(">i")  # session_id
        if top != 0:
            return FetchAnswer(top, -1)
    for _ in range(r.take(">i")):
        name = r.string()
        for _ in range(r.take(">i")):
            pid = r.take(">i")
            err = r.take(">h")
            hw = r.take(">q")
            if version >= 4:
                r.take(">q")  # last_stable_offset
                if version >= 11:
                    r.take(">q")  # log_start_offset
                n = r.take(">i")
                for _ in range(max(n, 0)):
                    r.take(">q")
                    r.take(">q")
                if version >= 11:
                    r.take(">i")  # preferred_read_replica
            size = r.take(">i")
            data = r.buf[r.pos : r.pos + max(size, 0)]
            r.pos += max(size, 0)
            if name == topic and pid == partition:
                res = SegmentReadResult(Path(f"fetch:{host}:{port}"))
                read_batches(bytes(data), False, res)  # a partial last batch is normal
                return FetchAnswer(
                    err, hw, [(rec.offset, rec.record_id) for rec in res.records]
                )
    raise WireError(f"{host}:{port}: the Fetch answer has no {topic}-{partition}")
