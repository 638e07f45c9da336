"""Kafka record batches decoded from a segment's bytes: v2 batches (0.11+) and the legacy
message sets v0/v1 with their compressed wrappers (see :mod:`harness.readback.logformat`
for the formats and how damage is reported)."""

from __future__ import annotations

import dataclasses
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import crc32c

from harness.readback.codecs import CODECS
from harness.readback.codecs import CorruptBatch as _CorruptBatch
from harness.readback.codecs import decompress as _decompress

# Shared by every format: offset / baseOffset (int64) and size / batchLength (int32).
_LOG_OVERHEAD = struct.Struct(">qi")
_LOG_OVERHEAD_SIZE = 12
# v2 batch header: baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes,
# lastOffsetDelta, baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence,
# records count.
_V2_BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")  # log overhead included
_V2_RECORDS_AT = _V2_BATCH_HEADER.size  # 61: Kafka's RECORD_BATCH_OVERHEAD
_V2_CRC_FROM = _LOG_OVERHEAD_SIZE + 9  # attributes: the crc32c covers attributes..end
# Legacy message after the log overhead: crc, magic, attributes.
_LEGACY_HEADER = struct.Struct(">Ibb")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
# Smallest legal size field per magic (crc + magic + attributes [+ timestamp] + two lengths):
# a smaller one cannot be a message, so it is corruption, not a message to decode.
_MIN_SIZE = {0: 14, 1: 22, 2: _V2_RECORDS_AT - _LOG_OVERHEAD_SIZE}

_V2_TRANSACTIONAL = 0x10
_V2_CONTROL = 0x20
_LEGACY_LOG_APPEND_TIME = 0x08


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One record as a replica holds it: the unit the reference model predicts.

    ``epoch`` is the batch's ``partitionLeaderEpoch`` (-1 for message formats v0/v1, which
    predate leader epochs): comparing it across replicas is how divergence is told apart
    from a record that is merely missing.
    """

    offset: int
    epoch: int
    magic: int
    timestamp: int  # -1 for v0, which has no timestamp
    key: bytes | None
    value: bytes | None
    batch_base_offset: int  # groups records of one batch (or one v0/v1 wrapper)
    compression: str

    @property
    def record_id(self) -> str:
        """The id hwchaos writes into each record: the value, else the key, else ''.

        Decoded with ``errors='replace'`` so a foreign or damaged record still compares
        (unequal) instead of aborting a whole read-back.
        """
        raw = self.value if self.value is not None else self.key
        return raw.decode("utf-8", errors="replace") if raw is not None else ""


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """One shallow batch: a v2 record batch, or a v0/v1 message (wrapper or plain).

    Kept for every batch, control batches included, because truncation points, leader
    epochs and positions are batch-level facts even when a batch has no user records.
    For v0/v1 ``base_offset`` is the first inner offset and ``last_offset`` the wrapper's.
    ``crc_ok`` is True when the CRC was not checked (``verify=False``).
    """

    base_offset: int
    last_offset: int
    epoch: int
    magic: int
    compression: str
    crc_ok: bool
    position: int
    size: int
    is_control: bool
    record_count: int
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    is_transactional: bool = False
    crc: int = 0
    timestamp: int = -1  # v2 maxTimestamp, the v0/v1 wrapper's timestamp


def _builder(cls: type) -> Callable[..., Any]:
    """A mutable twin of frozen dataclass ``cls``: same fields, same layout.

    Building a frozen dataclass costs one ``object.__setattr__`` per field, which dominated
    the parser's profile. Instances are built as the twin and then re-classed to ``cls``
    (``obj.__class__ = cls``), about 3x faster; the result is an ordinary frozen instance,
    equal to and hashing like one from the constructor (a test holds it to that).
    """
    return dataclasses.make_dataclass(
        f"_{cls.__name__}Builder",
        [(f.name, f.type) for f in dataclasses.fields(cls)],
        slots=True,
    )


_LogRecordBuilder = _builder(LogRecord)
_BatchInfoBuilder = _builder(BatchInfo)


def _record(
    offset: int,
    epoch: int,
    magic: int,
    timestamp: int,
    key: bytes | None,
    value: bytes | None,
    batch_base_offset: int,
    compression: str,
) -> LogRecord:
    rec = _LogRecordBuilder(
        offset, epoch, magic, timestamp, key, value, batch_base_offset, compression
    )
    rec.__class__ = LogRecord
    return rec  # type: ignore[no-any-return]


def _batch(*fields: Any) -> BatchInfo:
    """A BatchInfo from all its fields, positionally (see :func:`_builder`)."""
    batch = _BatchInfoBuilder(*fields)
    batch.__class__ = BatchInfo
    return batch  # type: ignore[no-any-return]


@dataclass
class SegmentReadResult:
    """Everything read from one segment file, including how much of it was readable."""

    path: Path
    records: list[LogRecord] = field(default_factory=list)
    batches: list[BatchInfo] = field(default_factory=list)
    valid_bytes: int = 0  # bytes of the prefix made of complete batches
    file_bytes: int = 0
    torn_tail: bool = False  # valid_bytes < file_bytes: a partial or unreadable tail
    crc_errors: int = 0
    errors: list[str] = field(default_factory=list)  # one line per damaged batch / the tail


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Zigzag varint/varlong (Kafka's ByteUtils.readVarint): (value, next position).

    Callers inline the one-byte case; this is the slow path for longer encodings.
    """
    raw = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise _CorruptBatch(f"varint longer than 10 bytes at {pos}")


def _decode_v2_records(
    body: bytes,
    count: int,
    base_offset: int,
    epoch: int,
    base_timestamp: int,
    compression: str,
    out: list[LogRecord],
) -> None:
    """Append ``count`` varint-encoded records of a v2 batch body to ``out``.

    The hot loop of the parser: every varint's one-byte case is decoded inline, records are
    built through the builder twin, headers are skipped via the record length (LogRecord
    does not carry them).
    """
    append = out.append
    n = len(body)
    pos = 0
    for _ in range(count):
        b = body[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            length, pos = _varint(body, pos)
        end = pos + length
        pos += 1  # record attributes: unused by every Kafka version
        b = body[pos]
        if b < 0x80:
            ts_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            ts_delta, pos = _varint(body, pos)
        b = body[pos]
        if b < 0x80:
            offset_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            offset_delta, pos = _varint(body, pos)
        b = body[pos]
        if b < 0x80:
            key_len = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            key_len, pos = _varint(body, pos)
        if key_len < 0:
            key = None
        else:
            key = body[pos : pos + key_len]
            pos += key_len
        b = body[pos]
        if b < 0x80:
            value_len = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            value_len, pos = _varint(body, pos)
        if value_len < 0:
            value = None
        else:
            value = body[pos : pos + value_len]
            pos += value_len
        if pos >= end or end > n:  # >=: the headers count needs at least one byte
            raise _CorruptBatch(f"record at body byte {pos} overruns its length {length}")
        rec = _LogRecordBuilder(
            base_offset + offset_delta,
            epoch,
            2,
            base_timestamp + ts_delta,
            key,
            value,
            base_offset,
            compression,
        )
        rec.__class__ = LogRecord
        append(rec)
        pos = end
    if pos != n:
        raise _CorruptBatch(f"{n - pos} bytes after the {count} records the header declares")


def _decode_legacy_inner(
    data: bytes, wrapper_magic: int, verify: bool
) -> tuple[list[tuple[int, int, bytes | None, bytes | None]], bool]:
    """The inner message set of a v0/v1 wrapper: [(offset, timestamp, key, value)], crc ok.

    Offsets are returned as stored (absolute in v0, relative in v1); the caller places them.
    """
    out: list[tuple[int, int, bytes | None, bytes | None]] = []
    crc_ok = True
    pos = 0
    n = len(data)
    while pos < n:
        if pos + _LOG_OVERHEAD_SIZE > n:
            raise _CorruptBatch("inner message set ends inside a message header")
        offset, size = _LOG_OVERHEAD.unpack_from(data, pos)
        start = pos + _LOG_OVERHEAD_SIZE
        end = start + size
        if size < _MIN_SIZE[0] or end > n:
            raise _CorruptBatch(f"inner message of size {size} at {pos} overruns the wrapper")
        crc, magic, attributes = _LEGACY_HEADER.unpack_from(data, start)
        if magic != wrapper_magic:
            raise _CorruptBatch(f"inner message magic {magic} in a magic {wrapper_magic} wrapper")
        if attributes & 0x07:
            raise _CorruptBatch("nested compressed message")
        if verify and zlib.crc32(memoryview(data)[start + 4 : end]) != crc:
            crc_ok = False
        timestamp, key, value = _legacy_fields(data, start + 6, end, magic)
        out.append((offset, timestamp, key, value))
        pos = end
    return out, crc_ok


def _legacy_fields(
    buf: bytes, pos: int, end: int, magic: int
) -> tuple[int, bytes | None, bytes | None]:
    """(timestamp, key, value) of a v0/v1 message whose attributes byte ends at ``pos``."""
    timestamp = -1
    if magic == 1:
        (timestamp,) = _INT64.unpack_from(buf, pos)
        pos += 8
    (key_len,) = _INT32.unpack_from(buf, pos)
    pos += 4
    key = None
    if key_len >= 0:
        key = buf[pos : pos + key_len]
        pos += key_len
    if pos + 4 > end:
        raise _CorruptBatch("message key overruns the message")
    (value_len,) = _INT32.unpack_from(buf, pos)
    pos += 4
    value = None
    if value_len >= 0:
        value = buf[pos : pos + value_len]
        pos += value_len
    if pos != end:
        raise _CorruptBatch(f"message fields end at {pos}, message size says {end}")
    return timestamp, key, value


def _read_legacy(
    buf: bytes, pos: int, end: int, magic: int, verify: bool, res: SegmentReadResult
) -> None:
    """One shallow v0/v1 message at ``pos``: a plain message or a compressed wrapper."""
    wrapper_offset, _size = _LOG_OVERHEAD.unpack_from(buf, pos)
    start = pos + _LOG_OVERHEAD_SIZE
    crc, _magic, attributes = _LEGACY_HEADER.unpack_from(buf, start)
    crc_ok = not verify or zlib.crc32(memoryview(buf)[start + 4 : end]) == crc
    codec = attributes & 0x07
    compression = CODECS.get(codec, str(codec))
    first = wrapper_offset
    count = 0
    timestamp = -1
    try:
        timestamp, key, value = _legacy_fields(buf, start + 6, end, magic)
        if not codec:
            res.records.append(
                _record(wrapper_offset, -1, magic, timestamp, key, value, first, compression)
            )
            count = 1
        elif value is None:
            raise _CorruptBatch("compressed wrapper message without a value")
        else:
            inner, inner_ok = _decode_legacy_inner(_decompress(codec, value, magic), magic, verify)
            crc_ok = crc_ok and inner_ok
            shift = 0
            if magic >= 1 and inner:  # relative inner offsets, the last is the wrapper's
                shift = wrapper_offset - inner[-1][0]
            if inner:
                first = inner[0][0] + shift
            log_append_time = magic >= 1 and attributes & _LEGACY_LOG_APPEND_TIME
            for offset, ts, k, v in inner:
                res.records.append(
                    _record(
                        offset + shift,
                        -1,
                        magic,
                        timestamp if log_append_time else ts,
                        k,
                        v,
                        first,
                        compression,
                    )
                )
            count = len(inner)
    except (_CorruptBatch, struct.error) as exc:
        res.errors.append(f"{res.path}: message at position {pos} (offset {wrapper_offset}): {exc}")
    res.crc_errors += not crc_ok
    res.batches.append(
        _batch(
            first,
            wrapper_offset,
            -1,
            magic,
            compression,
            crc_ok,
            pos,
            end - pos,
            False,
            count,
            -1,
            -1,
            -1,
            False,
            crc,
            timestamp,
        )
    )


def _read_v2(buf: bytes, pos: int, end: int, verify: bool, res: SegmentReadResult) -> None:
    """One v2 record batch at ``pos``; control batches go to ``batches`` only."""
    (
        base_offset,
        _length,
        epoch,
        _magic,
        crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = _V2_BATCH_HEADER.unpack_from(buf, pos)
    crc_ok = not verify or crc32c.crc32c(memoryview(buf)[pos + _V2_CRC_FROM : end]) == crc
    codec = attributes & 0x07
    compression = CODECS.get(codec) or str(codec)
    is_control = attributes & _V2_CONTROL != 0
    try:
        body = buf[pos + _V2_RECORDS_AT : end]
        if codec:
            body = _decompress(codec, body)
        if count < 0:
            raise _CorruptBatch(f"negative record count {count}")
        if is_control:  # control markers are not data: the model never predicts them
            _decode_v2_records(body, count, base_offset, epoch, base_timestamp, compression, [])
        else:
            records = res.records
            mark = len(records)
            try:
                _decode_v2_records(
                    body, count, base_offset, epoch, base_timestamp, compression, records
                )
            except BaseException:
                del records[mark:]  # all of a batch's records or none
                raise
    except (_CorruptBatch, IndexError) as exc:
        reason = str(exc) if isinstance(exc, _CorruptBatch) else "record overruns the batch"
        res.errors.append(f"{res.path}: batch at position {pos} (offset {base_offset}): {reason}")
    if not crc_ok:
        res.crc_errors += 1
    res.batches.append(
        _batch(
            base_offset,
            base_offset + last_offset_delta,
            epoch,
            2,
            compression,
            crc_ok,
            pos,
            end - pos,
            is_control,
            count,
            producer_id,
            producer_epoch,
            base_sequence,
            attributes & _V2_TRANSACTIONAL != 0,
            crc,
            max_timestamp,
        )
    )


def read_batches(buf: bytes, verify: bool, res: SegmentReadResult) -> int:
    """Parse batch after batch into ``res``; returns the length of the valid prefix.

    Stops at the first entry whose header, size or magic is not a complete batch: what a
    broker's recovery would truncate away, whether torn by a crash or zero-filled.
    """
    path = res.path
    n = len(buf)
    pos = 0
    while pos < n:
        if pos + 17 > n:
            res.errors.append(f"{path}: torn batch header at position {pos}")
            break
        offset, size = _LOG_OVERHEAD.unpack_from(buf, pos)
        magic = buf[pos + 16]
        end = pos + _LOG_OVERHEAD_SIZE + size
        if magic not in _MIN_SIZE or size < _MIN_SIZE[magic]:
            res.errors.append(
                f"{path}: no batch at position {pos}: size {size}, magic {magic}"
                f" (corrupt or zero-filled tail)"
            )
            break
        if end > n:
            res.errors.append(
                f"{path}: torn batch at position {pos} (offset {offset}): "
                f"{end - pos} bytes declared, {n - pos} in the file"
            )
            break
        if magic == 2:
            _read_v2(buf, pos, end, verify, res)
        else:
            _read_legacy(buf, pos, end, magic, verify, res)
        pos = end
    return pos
