"""KRaft metadata records (``__cluster_metadata``), decoded from Kafka's own JSON schemas.

Why schema-driven: the records we need (brokers, topics, partitions, fencing, ELR, features)
grew fields in almost every release (PartitionRecord v2 added ELR in 4.0, RegisterBroker
gained LogDirs...). Hand-written decoders would pin one version; reading the schemas that
ship inside the broker's own ``libs/kafka-metadata-<v>.jar``
(``common/metadata/*.json``, generated into ``org.apache.kafka.common.metadata.*Record``)
decodes whatever version the broker wrote. Nothing of Kafka's is copied into this project:
the schemas are read from the release tree at run time.

Framing (``MetadataRecordSerde``): a record's value is ``uvarint frame version (1)``,
``uvarint apiKey``, ``uvarint version``, then the body. Every metadata record is a flexible
message: compact strings/arrays as ``uvarint(len + 1)`` (0 = null) and a tagged-field block
after every struct, nested array elements included.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness.readback.logformat import LogRecord, read_partition_dir

METADATA_PARTITION_DIR = "__cluster_metadata-0"


class MetadataDecodeError(ValueError):
    """A record that does not match its schema; the message names record and offset."""


def _versions(spec: str | None) -> tuple[int, int]:
    """``"0+"`` -> (0, big); ``"1-2"`` -> (1, 2); ``"none"``/None -> empty range."""
    if not spec or spec == "none":
        return (1, 0)
    if spec.endswith("+"):
        return (int(spec[:-1]), 1 << 15)
    if "-" in spec:
        lo, hi = spec.split("-")
        return (int(lo), int(hi))
    return (int(spec), int(spec))


def _in(spec: str | None, version: int) -> bool:
    lo, hi = _versions(spec)
    return lo <= version <= hi


@dataclass(frozen=True)
class Schema:
    api_key: int
    name: str
    fields: list[dict[str, Any]]


def _strip_comments(text: str) -> str:
    return re.sub(r"^\s*//.*$", "", text, flags=re.M)


def load_schemas(jar: Path) -> dict[int, Schema]:
    """Every ``type: metadata`` schema in a kafka-metadata jar, by api key."""
    out: dict[int, Schema] = {}
    with zipfile.ZipFile(jar) as z:
        for name in z.namelist():
            if not (name.startswith("common/metadata/") and name.endswith(".json")):
                continue
            doc = json.loads(_strip_comments(z.read(name).decode()))
            if doc.get("type") == "metadata":
                out[int(doc["apiKey"])] = Schema(int(doc["apiKey"]), doc["name"], doc["fields"])
    if not out:
        raise MetadataDecodeError(f"{jar} holds no metadata record schemas")
    return out


@lru_cache(maxsize=8)
def schemas_for_tree(tree: Path) -> dict[int, Schema]:
    """Schemas of the release tree ``tree`` (its ``libs/kafka-metadata-*.jar``)."""
    jars = sorted((tree / "libs").glob("kafka-metadata-*.jar"))
    jars = [j for j in jars if not j.name.endswith(("-sources.jar", "-javadoc.jar", "-test.jar"))]
    if not jars:
        raise MetadataDecodeError(f"{tree}/libs has no kafka-metadata jar (a KRaft release?)")
    return load_schemas(jars[0])


def kafka_uuid(raw: bytes) -> str:
    """A Uuid as Kafka prints it (``Uuid.toString``): base64url without padding."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class _Buf:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def fixed(self, fmt: str) -> Any:
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def raw(self, n: int) -> bytes:
        b = self.data[self.pos : self.pos + n]
        if len(b) != n:
            raise IndexError("past the end of the record")
        self.pos += n
        return b


_FIXED = {"int8": ">b", "int16": ">h", "uint16": ">H", "int32": ">i", "uint32": ">I",
          "int64": ">q", "float64": ">d", "bool": ">?"}  # fmt: skip


def _default(field: dict[str, Any]) -> Any:
    t: str = field["type"]
    d = field.get("default")
    if d == "null":
        return None
    if t.startswith("[]"):
        return []
    if t == "bool":
        return str(d).lower() == "true" if d is not None else False
    if t in _FIXED:
        return int(d, 0) if isinstance(d, str) else (d if d is not None else 0)
    if t == "uuid":
        return kafka_uuid(bytes(16))
    return d if d is not None else ""


def _value(buf: _Buf, t: str, field: dict[str, Any], version: int) -> Any:
    if t.startswith("[]"):
        n = buf.uvarint() - 1
        if n < 0:
            return None
        elem = t[2:]
        return [_value(buf, elem, field, version) for _ in range(n)]
    if t in _FIXED:
        return buf.fixed(_FIXED[t])
    if t == "uuid":
        return kafka_uuid(buf.raw(16))
    if t in ("string", "bytes", "records"):
        n = buf.uvarint() - 1
        if n < 0:
            return None
        b = buf.raw(n)
        return b.decode() if t == "string" else b.hex()
    # a nested struct (array element): its fields are inline in the schema
    return _struct(buf, field.get("fields", []), version)


def _struct(buf: _Buf, fields: list[dict[str, Any]], version: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tagged: dict[int, dict[str, Any]] = {}
    for f in fields:
        if not _in(f.get("versions"), version):
            continue
        if "tag" in f and _in(f.get("taggedVersions"), version):
            tagged[int(f["tag"])] = f
            out[f["name"]] = _default(f)
            continue
        out[f["name"]] = _value(buf, f["type"], f, version)
    for _ in range(buf.uvarint()):
        tag = buf.uvarint()
        size = buf.uvarint()
        known = tagged.get(tag)
        if known is None:
            buf.raw(size)  # a tag this schema does not know: skip it, as Kafka does
            continue
        sub = _Buf(buf.raw(size))
        out[known["name"]] = _value(sub, known["type"], known, version)
    return out


@dataclass(frozen=True)
class MetadataRecord:
    offset: int
    raft_epoch: int  # the batch's partitionLeaderEpoch: the Raft leader epoch
    name: str  # e.g. PartitionChangeRecord
    api_key: int
    version: int
    data: dict[str, Any]


def decode_value(
    value: bytes, schemas: dict[int, Schema], offset: int = -1
) -> tuple[int, int, dict[str, Any]]:
    """(api key, version, fields) of one record value."""
    buf = _Buf(value)
    try:
        frame = buf.uvarint()
        if frame != 1:
            raise MetadataDecodeError(f"offset {offset}: frame version {frame}, expected 1")
        api_key = buf.uvarint()
        version = buf.uvarint()
        schema = schemas.get(api_key)
        if schema is None:
            return api_key, version, {}
        return api_key, version, _struct(buf, schema.fields, version)
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise MetadataDecodeError(
            f"offset {offset}: record does not match its schema: {exc}"
        ) from None


def decode(records: list[LogRecord], schemas: dict[int, Schema]) -> Iterator[MetadataRecord]:
    for r in records:
        if r.value is None:
            continue
        api_key, version, data = decode_value(r.value, schemas, r.offset)
        schema = schemas.get(api_key)
        name = schema.name if schema else f"apiKey{api_key}"
        yield MetadataRecord(r.offset, r.epoch, name, api_key, version, data)


def read_metadata_log(log_dir: Path, schemas: dict[int, Schema]) -> list[MetadataRecord]:
    """Every committed-looking record of ``log_dir/__cluster_metadata-0``, in offset order.

    A torn tail (the controller was killed mid-write) ends the read, as Kafka's own recovery
    would truncate it.
    """
    pdir = log_dir / METADATA_PARTITION_DIR
    if not pdir.is_dir():
        return []
    return list(decode(read_partition_dir(pdir, verify=False), schemas))
