"""Decompression of Kafka batch bodies (v2) and wrapper values (v0/v1).

none and gzip come from the standard library; snappy (xerial framing as snappy-java writes
it), lz4 (frame format) and zstd through ``cramjam``. A codec this process cannot decode
raises :class:`UnsupportedCodec` naming it rather than dropping records; a body that does
not decode raises :class:`CorruptBatch`, which the segment reader turns into one ``errors``
line (damage is reported, never raised, past this module).
"""

from __future__ import annotations

import gzip
import struct
from typing import Any

#: Codec names by the low three attribute bits, in Kafka's ``CompressionType`` order.
CODECS: dict[int, str] = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"
_INT32 = struct.Struct(">i")


class UnsupportedCodec(ValueError):
    """A batch is compressed with a codec this process cannot decompress."""


class CorruptBatch(Exception):
    """A batch body that cannot be decoded; becomes one line of ``errors``."""


def _cramjam(codec: str) -> Any:
    try:
        import cramjam
    except ImportError:
        raise UnsupportedCodec(
            f"compression codec {codec} needs the cramjam package (pip install cramjam)"
        ) from None
    return cramjam


def _unsnappy(data: bytes) -> bytes:
    """Kafka's clients write snappy through snappy-java's stream: the xerial header, then
    blocks of (int32 length, raw snappy block). librdkafka and old clients write one raw
    snappy block, so both are accepted."""
    snappy = _cramjam("snappy").snappy
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(snappy.decompress_raw(data))
    out = bytearray()
    pos = 16  # magic (8), version (4), compatible version (4)
    while pos < len(data):
        (n,) = _INT32.unpack_from(data, pos)
        if n < 0 or pos + 4 + n > len(data):
            raise CorruptBatch(f"snappy block of {n} bytes overruns the batch")
        out += snappy.decompress_raw(data[pos + 4 : pos + 4 + n])
        pos += 4 + n
    return bytes(out)


def _xxh32_short(data: bytes) -> int:
    """xxHash32 (seed 0) of fewer than 16 bytes: all an LZ4 frame descriptor needs."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    h = (p5 + len(data)) & mask
    i = 0
    while i + 4 <= len(data):
        h = rotl((h + int.from_bytes(data[i : i + 4], "little") * p3) & mask, 17) * p4 & mask
        i += 4
    for b in data[i:]:
        h = rotl((h + b * p5) & mask, 11) * p1 & mask
    h = ((h ^ (h >> 15)) * p2) & mask
    h = ((h ^ (h >> 13)) * p3) & mask
    return h ^ (h >> 16)


def _fix_lz4_descriptor_checksum(data: bytes) -> bytes:
    """Magic-0 lz4 wrappers carry a wrong frame-descriptor checksum (KAFKA-3160: Kafka
    hashed the frame magic too); Kafka still reads them, so recompute it before decoding."""
    if len(data) < 7 or not data.startswith(_LZ4_FRAME_MAGIC):
        return data
    flags = data[4]
    end = 6 + (8 if flags & 0x08 else 0) + (4 if flags & 0x01 else 0)  # content size, dictID
    if len(data) <= end:
        return data
    checksum = (_xxh32_short(data[4:end]) >> 8) & 0xFF
    return data[:end] + bytes([checksum]) + data[end + 1 :]


def decompress(codec: int, data: bytes, magic: int = 2) -> bytes:
    """Decompress a batch body (v2) or a wrapper's value (v0/v1)."""
    try:
        if codec == 1:
            return gzip.decompress(data)
        if codec == 2:
            return _unsnappy(data)
        if codec == 3:
            if magic == 0:
                data = _fix_lz4_descriptor_checksum(data)
            return bytes(_cramjam("lz4").lz4.decompress(data))
        if codec == 4:
            return bytes(_cramjam("zstd").zstd.decompress(data))
    except (UnsupportedCodec, CorruptBatch):
        raise
    except Exception as exc:  # zlib.error, EOFError, OSError, cramjam.DecompressionError
        raise CorruptBatch(f"corrupt {CODECS[codec]} data: {exc}") from None
    raise CorruptBatch(f"unknown compression codec {codec}")
