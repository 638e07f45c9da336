"""A test-only encoder of Kafka log segments (message formats v0, v1, v2), from the spec.

An independent code path to round-trip harness.readback.logformat through: it shares nothing with
the parser but the format description (Kafka's ``LegacyRecord``, ``DefaultRecordBatch`` and
``DefaultRecord``), so a misreading of the spec would have to be made twice to go unseen.
Every function returns the exact bytes a broker would append to a ``.log`` file.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from dataclasses import dataclass, field

import crc32c

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def varint(n: int) -> bytes:
    """Zigzag varint / varlong (protobuf style, as Kafka's ByteUtils.writeVarlong)."""
    v = (n << 1) ^ (n >> 63)
    v &= (1 << 64) - 1
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def compress(codec: str, data: bytes) -> bytes:
    """Compress like Kafka's Java producer: gzip stream, xerial-framed snappy, lz4 frame."""
    if codec == "none":
        return data
    if codec == "gzip":
        return gzip.compress(data)
    import cramjam

    if codec == "snappy":
        block = bytes(cramjam.snappy.compress_raw(data))
        header = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
        return header + struct.pack(">i", len(block)) + block
    if codec == "lz4":
        return bytes(cramjam.lz4.compress(data))
    if codec == "zstd":
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(codec)


@dataclass
class Rec:
    """One v2 record as the producer built it."""

    key: bytes | None
    value: bytes | None
    timestamp_delta: int = 0
    headers: list[tuple[bytes, bytes | None]] = field(default_factory=list)


def _len_prefixed(b: bytes | None) -> bytes:
    return varint(-1) if b is None else varint(len(b)) + b


def v2_record(offset_delta: int, rec: Rec) -> bytes:
    """DefaultRecord: length-prefixed; attributes, deltas, key, value, headers."""
    body = bytearray(b"\x00")
    body += varint(rec.timestamp_delta) + varint(offset_delta)
    body += _len_prefixed(rec.key) + _len_prefixed(rec.value)
    body += varint(len(rec.headers))
    for hk, hv in rec.headers:
        body += _len_prefixed(hk) + _len_prefixed(hv)
    return varint(len(body)) + bytes(body)


def v2_batch(
    base_offset: int,
    records: list[Rec],
    *,
    epoch: int = 0,
    codec: str = "none",
    base_timestamp: int = 1_700_000_000_000,
    offset_deltas: list[int] | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    log_append_time: bool = False,
) -> bytes:
    """DefaultRecordBatch: 61-byte header, crc32c from attributes to the end."""
    deltas = offset_deltas if offset_deltas is not None else list(range(len(records)))
    raw = b"".join(v2_record(d, r) for d, r in zip(deltas, records, strict=True))
    attributes = CODEC_IDS[codec]
    attributes |= 0x08 if log_append_time else 0
    attributes |= 0x10 if transactional else 0
    attributes |= 0x20 if control else 0
    last_delta = deltas[-1] if deltas else 0
    max_ts = base_timestamp + max((r.timestamp_delta for r in records), default=0)
    covered = struct.pack(
        ">hiqqqhii",
        attributes,
        last_delta,
        base_timestamp,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    ) + compress(codec, raw)
    after_length = struct.pack(">ibI", epoch, 2, crc32c.crc32c(covered)) + covered
    return struct.pack(">qi", base_offset, len(after_length)) + after_length


def control_batch(base_offset: int, *, commit: bool, epoch: int = 0, producer_id: int = 7) -> bytes:
    """A transaction marker: key (version, type), value (version, coordinatorEpoch)."""
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, 0)
    return v2_batch(
        base_offset,
        [Rec(key, value)],
        epoch=epoch,
        producer_id=producer_id,
        producer_epoch=0,
        transactional=True,
        control=True,
    )


def legacy_message(
    magic: int,
    offset: int,
    key: bytes | None,
    value: bytes | None,
    *,
    attributes: int = 0,
    timestamp: int = 1_700_000_000_000,
) -> bytes:
    """LegacyRecord v0/v1 with its log overhead: crc32 (IEEE) from magic to the end."""

    def sized(b: bytes | None) -> bytes:
        return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b

    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    body += sized(key) + sized(value)
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


def legacy_wrapper(
    magic: int,
    first_offset: int,
    records: list[tuple[bytes | None, bytes | None]],
    *,
    codec: str = "gzip",
    timestamp: int = 1_700_000_000_000,
    inner_timestamps: list[int] | None = None,
    relative_offsets: list[int] | None = None,
    log_append_time: bool = False,
    kafka_3160_lz4: bool = False,
) -> bytes:
    """A compressed v0/v1 wrapper message holding ``records`` as inner messages.

    v0 inner offsets are absolute (first_offset + i); v1 inner offsets are relative
    (0..n-1 unless ``relative_offsets`` models a compacted wrapper) and the wrapper carries
    the absolute offset of the last one. ``kafka_3160_lz4`` spoils the lz4 frame
    descriptor checksum the way pre-0.10 Kafka wrote it (it hashed the frame magic too).
    """
    rel = relative_offsets if relative_offsets is not None else list(range(len(records)))
    stamps = inner_timestamps if inner_timestamps is not None else [timestamp] * len(records)
    inner = b"".join(
        legacy_message(magic, r if magic == 1 else first_offset + r, k, v, timestamp=ts)
        for r, (k, v), ts in zip(rel, records, stamps, strict=True)
    )
    attributes = CODEC_IDS[codec] | (0x08 if log_append_time else 0)
    value = compress(codec, inner)
    if kafka_3160_lz4:
        flags = value[4]
        at = 6 + (8 if flags & 0x08 else 0)  # the byte after FLG, BD [, content size]
        value = value[:at] + bytes([value[at] ^ 0x5A]) + value[at + 1 :]
    return legacy_message(
        magic,
        first_offset + rel[-1],
        None,
        value,
        attributes=attributes,
        timestamp=timestamp,
    )
