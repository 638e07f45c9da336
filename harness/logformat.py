"""Kafka log segments (``*.log``) read back as (offset, leader epoch, record) rows.

Formats: message sets v0 (0.8-0.9) and v1 (0.10, adds a timestamp), with compressed
wrapper messages whose inner messages carry relative (v1) or absolute (v0) offsets; and v2
record batches (0.11+) whose header carries ``partitionLeaderEpoch``, the field that says
which leader epoch wrote each record. Compression: none and gzip (what hwchaos writes and
what brokers keep), snappy, lz4 and zstd (through cramjam); an unknown codec raises a
one-line error naming it.

A crash or a power-loss cut can leave a torn last batch: parsing stops there and reports it
(``torn_tail``, ``valid_bytes``) instead of failing, because a torn tail is exactly the
state a recovering broker starts from.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import crc32c

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_HEAD = struct.Struct(">qi")  # offset / baseOffset, size / batchLength
_V2 = struct.Struct(">iBIhiqqqhii")  # after baseOffset+batchLength


@dataclass(frozen=True)
class LogRecord:
    offset: int
    epoch: int  # partitionLeaderEpoch; -1 for message formats v0/v1
    magic: int
    timestamp: int  # -1 for v0
    key: bytes | None
    value: bytes | None
    batch_base_offset: int
    compression: str

    @property
    def record_id(self) -> str:
        """The id hwchaos writes as key and value."""
        raw = self.value if self.value is not None else self.key
        return raw.decode("utf-8", errors="replace") if raw is not None else ""


@dataclass(frozen=True)
class BatchInfo:
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


@dataclass
class SegmentReadResult:
    path: Path
    records: list[LogRecord] = field(default_factory=list)
    batches: list[BatchInfo] = field(default_factory=list)
    valid_bytes: int = 0
    file_bytes: int = 0
    torn_tail: bool = False
    crc_errors: int = 0


class UnsupportedCodec(ValueError):
    pass


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Zigzag varint (Kafka's ByteUtils.readVarint/readVarlong)."""
    shift = 0
    raw = 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


_XERIAL = b"\x82SNAPPY\x00"


def _snappy(data: bytes) -> bytes:
    """Kafka writes snappy through snappy-java's stream: a xerial header, then blocks of
    (int32 length, raw snappy); very old clients wrote plain raw snappy."""
    import cramjam

    if not data.startswith(_XERIAL):
        return bytes(cramjam.snappy.decompress_raw(data))
    out = bytearray()
    pos = 16
    while pos + 4 <= len(data):
        (n,) = struct.unpack_from(">i", data, pos)
        out += bytes(cramjam.snappy.decompress_raw(data[pos + 4 : pos + 4 + n]))
        pos += 4 + n
    return bytes(out)


def _decompress(codec: int, data: bytes, where: str) -> bytes:
    """gzip with the standard library; snappy, lz4 (frame) and zstd through cramjam."""
    name = CODECS.get(codec, str(codec))
    try:
        if codec == 1:
            return gzip.decompress(data)
        if codec in (2, 3, 4):
            import cramjam

            if codec == 2:
                return _snappy(data)
            if codec == 3:
                return bytes(cramjam.lz4.decompress(data))
            return bytes(cramjam.zstd.decompress(data))
    except (OSError, EOFError, zlib.error, ValueError) as exc:
        raise ValueError(f"{where}: corrupt {name} data: {exc}") from None
    except Exception as exc:  # cramjam raises its own DecompressionError
        raise ValueError(f"{where}: corrupt {name} data: {exc}") from None
    raise UnsupportedCodec(f"{where}: compression codec {name} unsupported")


def _v2_records(body: bytes, base: int, epoch: int, ts0: int, comp: str) -> list[LogRecord]:
    out = []
    pos = 0
    n = len(body)
    while pos < n:
        length, pos = _varint(body, pos)
        end = pos + length
        pos += 1  # attributes
        ts_delta, pos = _varint(body, pos)
        off_delta, pos = _varint(body, pos)
        klen, pos = _varint(body, pos)
        key = None if klen < 0 else body[pos : pos + klen]
        pos += max(klen, 0)
        vlen, pos = _varint(body, pos)
        value = None if vlen < 0 else body[pos : pos + vlen]
        out.append(LogRecord(base + off_delta, epoch, 2, ts0 + ts_delta, key, value, base, comp))
        pos = end  # headers skipped
    return out


def _message_set(buf: bytes, where: str, verify: bool, outer: int | None) -> list[LogRecord]:
    """v0/v1 messages in ``buf`` (a whole wrapper's inner set when ``outer`` is given)."""
    out: list[LogRecord] = []
    pos = 0
    while pos + 12 <= len(buf):
        offset, size = _HEAD.unpack_from(buf, pos)
        msg = buf[pos + 12 : pos + 12 + size]
        if len(msg) < size:
            break
        magic, attrs = msg[4], msg[5]
        q = 6
        ts = -1
        if magic == 1:
            (ts,) = struct.unpack_from(">q", msg, q)
            q += 8
        (klen,) = struct.unpack_from(">i", msg, q)
        q += 4
        key = None if klen < 0 else msg[q : q + klen]
        q += max(klen, 0)
        (vlen,) = struct.unpack_from(">i", msg, q)
        q += 4
        value = None if vlen < 0 else msg[q : q + vlen]
        codec = attrs & 0x07
        if codec and value is not None:
            inner = _message_set(_decompress(codec, value, where), where, verify, offset)
            if magic >= 1 and inner:  # relative inner offsets: last one == wrapper offset
                shift = offset - inner[-1].offset
                inner = [
                    LogRecord(
                        r.offset + shift,
                        -1,
                        r.magic,
                        r.timestamp,
                        r.key,
                        r.value,
                        offset,
                        CODECS[codec],
                    )
                    for r in inner
                ]
            out.extend(inner)
        else:
            base = outer if outer is not None else offset
            out.append(LogRecord(offset, -1, magic, ts, key, value, base, "none"))
        pos += 12 + size
    return out


def read_segment(path: Path, verify: bool = True) -> SegmentReadResult:
    """Every record and batch of one segment file; stops cleanly at a torn tail."""
    buf = Path(path).read_bytes()
    res = SegmentReadResult(Path(path), file_bytes=len(buf))
    pos = 0
    n = len(buf)
    where = str(path)
    while pos + 17 <= n:
        base, length = _HEAD.unpack_from(buf, pos)
        end = pos + 12 + length
        if length < 14 or end > n:
            break
        magic = buf[pos + 16]
        if magic == 2:
            (epoch, _m, crc, attrs, last_delta, ts0, _tsmax, _pid, _pep, _seq, count) = (
                _V2.unpack_from(buf, pos + 12)
            )
            crc_ok = True
            if verify:
                crc_ok = crc32c.crc32c(buf[pos + 21 : end]) == crc
                res.crc_errors += not crc_ok
            codec = attrs & 0x07
            control = bool(attrs & 0x20)
            body = buf[pos + 61 : end]
            if codec:
                body = _decompress(codec, body, where)
            comp = CODECS.get(codec, str(codec))
            recs = _v2_records(body, base, epoch, ts0, comp)
            if not control:
                res.records.extend(recs)
            res.batches.append(
                BatchInfo(
                    base, base + last_delta, epoch, 2, comp, crc_ok, pos, end - pos, control, count
                )
            )
        else:
            (crc,) = struct.unpack_from(">I", buf, pos + 12)
            crc_ok = True
            if verify:
                crc_ok = zlib.crc32(buf[pos + 16 : end]) == crc
                res.crc_errors += not crc_ok
            recs = _message_set(buf[pos:end], where, verify, None)
            comp = recs[0].compression if recs else "none"
            res.records.extend(recs)
            first = recs[0].offset if recs else base
            res.batches.append(
                BatchInfo(first, base, -1, magic, comp, crc_ok, pos, end - pos, False, len(recs))
            )
        pos = end
    res.valid_bytes = pos
    res.torn_tail = pos < n
    return res


@dataclass
class PartitionDirContents:
    path: Path
    records: list[LogRecord]
    segments: list[SegmentReadResult]
    leader_epochs: list[tuple[int, int]] | None


def _segments(path: Path) -> list[Path]:
    return sorted(Path(path).glob("*.log"), key=lambda p: int(p.stem))


def read_partition_dir(path: Path, verify: bool = True) -> list[LogRecord]:
    """All records of a partition dir, in offset order across segments."""
    out: list[LogRecord] = []
    for seg in _segments(path):
        out.extend(read_segment(seg, verify).records)
    return out


def read_partition(path: Path, verify: bool = True) -> PartitionDirContents:
    from harness.checkpoints import read_leader_epoch_checkpoint

    segs = [read_segment(s, verify) for s in _segments(path)]
    lec = Path(path) / "leader-epoch-checkpoint"
    epochs = read_leader_epoch_checkpoint(lec) if lec.exists() else None
    return PartitionDirContents(Path(path), [r for s in segs for r in s.records], segs, epochs)
