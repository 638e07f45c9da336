"""A consumer's Fetch, on the wire, to one chosen broker: what it would serve, and its HW.

The consumer oracle (harness.checker.consumer) needs what a consumer reads from *one
chosen replica* after every step, and the HW that replica reports in its answer. librdkafka
picks brokers itself and needs a group id (whose coordinator lookup would create
``__consumer_offsets`` on a test broker), so this sends Kafka's Fetch request itself:

- ``replica_id = -1`` (an ordinary consumer) to the leader: records below the leader's HW
  (``ReplicaManager.readFromLocalLog`` with the high-watermark isolation), and the HW.
- ``replica_id = -2`` (Kafka's *debugging consumer*, ``Request.DebuggingConsumerId``) to a
  follower: served by a non-leader (``fetchOnlyFromLeader`` is false for it on every version
  hwchaos runs) and bounded by *that follower's* HW, like a KIP-392 follower fetch, but
  with no rack configuration needed.

Fetch v3 (0.10.1 and later) before 0.11, v4 from 0.11 (v0 to v3 are gone in 4.0,
KIP-896). Both answer ``high_watermark`` per partition; the record set is parsed with the
segment reader (harness.readback.logformat), since a fetched record set is segment bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from harness.client.wire import WireError, _header, _Reader, _roundtrip, _string
from harness.readback.logformat import SegmentReadResult, _read_batches

FETCH = 1
CONSUMER = -1
DEBUGGING_CONSUMER = -2


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
    if version not in (3, 4):
        raise ValueError(f"Fetch v{version}: only v3 (0.10.x) and v4 (0.11+) are spoken here")
    body = struct.pack(">iiii", replica_id, 0, 0, 1 << 20)
    if version >= 4:
        body += struct.pack(">b", 0)  # isolation_level READ_UNCOMMITTED
    body += struct.pack(">i", 1) + _string(topic) + struct.pack(">i", 1)
    body += struct.pack(">iqi", partition, offset, 1 << 20)
    raw = _roundtrip(host, port, _header(FETCH, version, 7, False) + body, timeout)
    r = _Reader(raw)
    r.take(">i")  # correlation id
    r.take(">i")  # throttle_time_ms
    for _ in range(r.take(">i")):
        name = r.string()
        for _ in range(r.take(">i")):
            pid = r.take(">i")
            err = r.take(">h")
            hw = r.take(">q")
            if version >= 4:
                r.take(">q")  # last_stable_offset
                n = r.take(">i")
                for _ in range(max(n, 0)):
                    r.take(">q")
                    r.take(">q")
            size = r.take(">i")
            data = r.buf[r.pos : r.pos + max(size, 0)]
            r.pos += max(size, 0)
            if name == topic and pid == partition:
                res = SegmentReadResult(Path(f"fetch:{host}:{port}"))
                _read_batches(bytes(data), False, res)  # a partial last batch is normal
                return FetchAnswer(
                    err, hw, [(rec.offset, rec.record_id) for rec in res.records]
                )
    raise WireError(f"{host}:{port}: the Fetch answer has no {topic}-{partition}")
