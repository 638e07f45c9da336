"""A minimal Kafka wire-protocol client for the three requests librdkafka cannot make for us.

Why not confluent-kafka: it routes requests to whichever broker it likes and does not expose
the leader epoch a broker's metadata cache holds, nor the controller-only RPCs. The harness
needs to ask *one chosen broker* what it believes (a fence: "B has applied the controller's
decision"), and to talk to a KRaft controller the way a broker does:

- ``Metadata`` v7 (api key 3) to one broker: leader, leader epoch, ISR as *that broker's*
  metadata cache has them (``KafkaApis.handleTopicMetadataRequest``).
- ``BrokerHeartbeat`` v0 (api key 63, KIP-631) to the active controller on behalf of a broker:
  ``WantFence=true`` fences a dead broker at once, exactly what
  ``BrokerHeartbeatManager`` does when its session expires (``handleBrokerFenced``);
  ``WantFence=false`` keeps the session of a broker the scenario says is alive (paused) or
  not yet noticed dead, so the controller's liveness view follows the script.
- ``UnregisterBroker`` v0 (api key 64) for clean-up only.
- ``ApiVersions`` v0 (api key 18, every release from 0.10 to 4.x) as a probe: its answer
  says the broker's request handlers took a request sent after a given moment.
- ``ListOffsets`` v1 (api key 2, every release from 0.10.1 to 4.x) to the leader the
  controller named: the HW it reports to consumers. librdkafka sends it to whichever broker
  its metadata names, and after a leader change that can be the old leader for seconds.

Encodings follow ``clients/src/main/resources/common/message/*.json``: request header v1
(non-flexible) or v2 (flexible), big-endian ints, compact strings/arrays as
``uvarint(len + 1)``, and an empty tagged-field block ``0x00`` after flexible structs.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

LIST_OFFSETS = 2
METADATA = 3
API_VERSIONS = 18
BROKER_HEARTBEAT = 63
UNREGISTER_BROKER = 64


class WireError(RuntimeError):
    """A request could not be sent or its answer was an error; the message is one line."""


@dataclass(frozen=True)
class BrokerPartitionView:
    """One partition as one broker's metadata cache describes it."""

    broker: int  # who answered
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    error: int


@dataclass(frozen=True)
class HeartbeatAnswer:
    error: int
    is_caught_up: bool
    is_fenced: bool
    should_shut_down: bool


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def take(self, fmt: str) -> int:
        (v,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(v)

    def string(self) -> str | None:
        n = self.take(">h")
        if n < 0:
            return None
        s = self.buf[self.pos : self.pos + n].decode()
        self.pos += n
        return s

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.buf[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def compact_string(self) -> str | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        s = self.buf[self.pos : self.pos + n].decode()
        self.pos += n
        return s

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.pos += self.uvarint()

    def int32_array(self) -> tuple[int, ...]:
        return tuple(self.take(">i") for _ in range(self.take(">i")))


def _roundtrip(host: str, port: int, request: bytes, timeout: float) -> bytes:
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(struct.pack(">i", len(request)) + request)
            head = _recv(s, 4)
            return _recv(s, struct.unpack(">i", head)[0])
    except OSError as exc:
        raise WireError(f"{host}:{port}: {exc}") from None


def _recv(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    return bytes(buf)


def _header(api_key: int, version: int, correlation: int, flexible: bool) -> bytes:
    head = struct.pack(">hhi", api_key, version, correlation) + _string("hwchaos")
    return head + (b"\x00" if flexible else b"")


def api_versions(host: str, port: int, timeout: float = 2.0) -> int:
    """ApiVersions v0 to one broker; its error code (0) once a request handler answered.

    Every request, this one included, goes through the broker's request queue to a
    ``KafkaRequestHandler`` thread (``KafkaApis.handleApiVersionsRequest``), so the answer
    means the broker was reading and handling requests after this one was sent.
    """
    r = _Reader(_roundtrip(host, port, _header(API_VERSIONS, 0, 1, False), timeout))
    r.take(">i")  # correlation id
    err: int = r.take(">h")
    return err


def list_offsets_latest(
    host: str, port: int, topic: str, partition: int, timeout: float = 2.0
) -> int:
    """ListOffsets v1 (timestamp -1, "latest") as a consumer (replica id -1) to one broker.

    A leader answers its high watermark (``Partition.fetchOffsetForTimestamp``: a consumer
    reads up to the HW). An error code (NOT_LEADER_OR_FOLLOWER, OFFSET_NOT_AVAILABLE of a
    new leader before its followers fetched, KIP-207) raises :class:`WireError`.
    """
    body = struct.pack(">i", -1) + struct.pack(">i", 1) + _string(topic)
    body += struct.pack(">iiq", 1, partition, -1)
    r = _Reader(_roundtrip(host, port, _header(LIST_OFFSETS, 1, 6, False) + body, timeout))
    r.take(">i")  # correlation id
    for _ in range(r.take(">i")):  # topics
        name = r.string()
        for _ in range(r.take(">i")):  # partitions
            index = r.take(">i")
            err = r.take(">h")
            r.take(">q")  # timestamp
            offset = r.take(">q")
            if name == topic and index == partition:
                if err:
                    raise WireError(f"{host}:{port}: ListOffsets error code {err}")
                return offset
    raise WireError(f"{host}:{port}: ListOffsets answered nothing for {topic}-{partition}")


def partition_view(
    host: str, port: int, topic: str, partition: int, broker: int = -1, timeout: float = 2.0
) -> BrokerPartitionView | None:
    """Ask one broker (Metadata v7) how it sees ``topic``/``partition``; None if unknown."""
    body = struct.pack(">i", 1) + _string(topic) + b"\x00"  # topics, allow_auto_create=false
    r = _Reader(_roundtrip(host, port, _header(METADATA, 7, 1, False) + body, timeout))
    r.take(">i")  # correlation id
    r.take(">i")  # throttle
    for _ in range(r.take(">i")):  # brokers
        r.take(">i")
        r.string()
        r.take(">i")
        r.string()
    r.string()  # cluster id
    r.take(">i")  # controller id
    for _ in range(r.take(">i")):
        r.take(">h")
        name = r.string()
        r.take(">b")  # is_internal
        for _ in range(r.take(">i")):
            err = r.take(">h")
            index = r.take(">i")
            leader = r.take(">i")
            epoch = r.take(">i")
            r.int32_array()  # replicas
            isr = r.int32_array()
            r.int32_array()  # offline
            if name == topic and index == partition:
                return BrokerPartitionView(broker, leader, epoch, tuple(sorted(isr)), err)
    return None


def broker_heartbeat(
    host: str,
    port: int,
    broker_id: int,
    broker_epoch: int,
    metadata_offset: int,
    want_fence: bool,
    timeout: float = 2.0,
) -> HeartbeatAnswer:
    """Send a BrokerHeartbeat v0 to a KRaft controller on behalf of ``broker_id``."""
    body = (
        struct.pack(">iqq??", broker_id, broker_epoch, metadata_offset, want_fence, False) + b"\x00"
    )
    req = _header(BROKER_HEARTBEAT, 0, 2, True) + body
    r = _Reader(_roundtrip(host, port, req, timeout))
    r.take(">i")
    r.skip_tags()  # response header v1
    r.take(">i")  # throttle
    err = r.take(">h")
    caught_up, fenced, shut = (bool(r.take(">b")) for _ in range(3))
    return HeartbeatAnswer(err, caught_up, fenced, shut)


def unregister_broker(host: str, port: int, broker_id: int, timeout: float = 5.0) -> int:
    """UnregisterBroker v0 through any broker (forwarded to the controller); the error code."""
    req = _header(UNREGISTER_BROKER, 0, 3, True) + struct.pack(">i", broker_id) + b"\x00"
    r = _Reader(_roundtrip(host, port, req, timeout))
    r.take(">i")
    r.skip_tags()
    r.take(">i")
    return r.take(">h")


ELECT_LEADERS = 43
ALTER_PARTITION_REASSIGNMENTS = 45


def _compact_string(s: str) -> bytes:
    b = s.encode()
    return _uvarint(len(b) + 1) + b


def _partition_errors(r: _Reader) -> list[tuple[int, int, str | None]]:
    """(partition, error code, message) of a flexible per-topic result array."""
    out: list[tuple[int, int, str | None]] = []
    for _ in range(r.uvarint() - 1):  # topics
        r.compact_string()
        for _ in range(r.uvarint() - 1):  # partitions
            part = r.take(">i")
            err = r.take(">h")
            msg = r.compact_string()
            r.skip_tags()
            out.append((part, err, msg))
        r.skip_tags()
    return out


def alter_partition_reassignments(
    host: str, port: int, topic: str, partition: int, replicas: list[int], timeout: float = 10.0
) -> tuple[int, str | None]:
    """AlterPartitionReassignments v0 (KIP-455) to a KRaft controller: the new replica order.

    Sent to the controller itself (its listener serves it, KIP-919): a broker-side admin
    client routes it through a broker it picks, which may be one the harness paused.
    Returns (error code, message): the top-level error, else the partition's.
    """
    body = struct.pack(">i", int(timeout * 1000)) + _uvarint(2) + _compact_string(topic)
    body += _uvarint(2) + struct.pack(">i", partition)
    body += _uvarint(len(replicas) + 1) + b"".join(struct.pack(">i", b) for b in replicas)
    body += b"\x00" + b"\x00" + b"\x00"  # partition, topic, request tags
    req = _header(ALTER_PARTITION_REASSIGNMENTS, 0, 4, True) + body
    r = _Reader(_roundtrip(host, port, req, timeout + 5))
    r.take(">i")
    r.skip_tags()
    r.take(">i")  # throttle
    err = r.take(">h")
    msg = r.compact_string()
    if err:
        return err, msg
    parts = _partition_errors(r)
    return (parts[0][1], parts[0][2]) if parts else (0, None)


def elect_leaders(
    host: str, port: int, topic: str, partition: int, unclean: bool, timeout: float = 10.0
) -> tuple[int, str | None]:
    """ElectLeaders v2 (KIP-183; type UNCLEAN: KIP-460) to a KRaft controller.

    Returns (error code, message) of the partition (84 ELECTION_NOT_NEEDED, 83
    ELIGIBLE_LEADERS_NOT_AVAILABLE, 80 PREFERRED_LEADER_NOT_AVAILABLE...).
    """
    body = struct.pack(">b", 1 if unclean else 0)
    body += _uvarint(2) + _compact_string(topic) + _uvarint(2) + struct.pack(">i", partition)
    body += b"\x00" + struct.pack(">i", int(timeout * 1000)) + b"\x00"
    req = _header(ELECT_LEADERS, 2, 5, True) + body
    r = _Reader(_roundtrip(host, port, req, timeout + 5))
    r.take(">i")
    r.skip_tags()
    r.take(">i")  # throttle
    err = r.take(">h")
    if err:
        return err, None
    parts = _partition_errors(r)
    return (parts[0][1], parts[0][2]) if parts else (0, None)
