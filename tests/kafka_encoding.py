"""A test-only encoder of Kafka log segments (message formats v1 and v2), from the spec.

An independent code path to round-trip the parser through: it shares nothing with
harness.logformat but the format description.
"""

from __future__ import annotations

import gzip
import struct
import zlib

import crc32c


def _zigzag(n: int) -> bytes:
    v = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _bytes_field(b: bytes | None) -> bytes:
    return _zigzag(-1) if b is None else _zigzag(len(b)) + b


def v2_batch(
    base: int,
    epoch: int,
    records: list[tuple[bytes | None, bytes | None]],
    gzip_it: bool = False,
    ts: int = 1_000,
) -> bytes:
    body = bytearray()
    for i, (k, v) in enumerate(records):
        rec = b"\x00" + _zigzag(i) + _zigzag(i) + _bytes_field(k) + _bytes_field(v) + _zigzag(0)
        body += _zigzag(len(rec)) + rec
    payload = gzip.compress(bytes(body)) if gzip_it else bytes(body)
    attrs = 1 if gzip_it else 0
    tail = (
        struct.pack(
            ">hiqqqhii", attrs, len(records) - 1, ts, ts + len(records), -1, -1, -1, len(records)
        )
        + payload
    )
    crc = crc32c.crc32c(tail)
    after_len = struct.pack(">iBI", epoch, 2, crc) + tail
    return struct.pack(">qi", base, len(after_len)) + after_len


def v1_message(
    offset: int, key: bytes | None, value: bytes | None, attrs: int = 0, ts: int = 1_000
) -> bytes:
    def field(b: bytes | None) -> bytes:
        return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b

    body = struct.pack(">BBq", 1, attrs, ts) + field(key) + field(value)
    msg = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(msg)) + msg


def v1_gzip_wrapper(first: int, records: list[tuple[bytes | None, bytes | None]]) -> bytes:
    inner = b"".join(v1_message(i, k, v) for i, (k, v) in enumerate(records))
    return v1_message(first + len(records) - 1, None, gzip.compress(inner), attrs=1)
