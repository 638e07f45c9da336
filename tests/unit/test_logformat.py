"""Segment reader: round trips through an independent encoder, torn tails, CRC damage, real
Kafka-written segments against DumpLogSegments, and the ``hwchaos dump`` command."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import FrozenInstanceError, dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.readback.dump import main as dump_main
from harness.readback.logformat import (
    BatchInfo,
    LogRecord,
    UnsupportedCodec,
    read_partition,
    read_partition_dir,
    read_segment,
)
from tests.unit.kafka_encoding import (
    Rec,
    control_batch,
    legacy_message,
    legacy_wrapper,
    v2_batch,
)

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parents[1] / "data" / "segments"
SEG = "00000000000000000000.log"
FIXTURES = sorted(DATA.glob(f"*/*/{SEG}"))
needs_fixtures = pytest.mark.skipif(
    not FIXTURES, reason=f"no Kafka-written fixture segments under {DATA}"
)


# --------------------------------------------------------------------------- a segment model


@dataclass
class Expected:
    """What an encoded segment must read back as."""

    data: bytearray = field(default_factory=bytearray)
    records: list[tuple[int, int, int, int, bytes | None, bytes | None, int, str]] = field(
        default_factory=list
    )
    batches: list[tuple[int, int, int, int, str, int, int, bool, int]] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)  # byte end of each batch
    records_before: list[int] = field(default_factory=list)  # records in batches < i

    def add(
        self,
        blob: bytes,
        batch: tuple[int, int, int, int, str, bool, int],
        records: list[tuple[int, int, int, int, bytes | None, bytes | None, int, str]],
    ) -> None:
        base, last, epoch, magic, codec, control, count = batch
        self.records_before.append(len(self.records))
        self.batches.append(
            (base, last, epoch, magic, codec, len(self.data), len(blob), control, count)
        )
        self.data += blob
        self.ends.append(len(self.data))
        self.records += records


def got_records(res: list[LogRecord]) -> list[tuple[object, ...]]:
    return [
        (
            r.offset,
            r.epoch,
            r.magic,
            r.timestamp,
            r.key,
            r.value,
            r.batch_base_offset,
            r.compression,
        )
        for r in res
    ]


def got_batches(res: list[BatchInfo]) -> list[tuple[object, ...]]:
    return [
        (
            b.base_offset,
            b.last_offset,
            b.epoch,
            b.magic,
            b.compression,
            b.position,
            b.size,
            b.is_control,
            b.record_count,
        )
        for b in res
    ]


TS = 1_700_000_000_000
blobs = st.one_of(st.none(), st.binary(max_size=30))
kv = st.tuples(blobs, blobs)
v2_codecs = st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"])
legacy_codecs = st.sampled_from(["gzip", "snappy", "lz4"])


@st.composite
def segments(draw: st.DrawFn, max_batches: int = 6) -> Expected:
    """A mixed segment: v0/v1 messages and wrappers, v2 batches (any codec), markers."""
    exp = Expected()
    offset = draw(st.integers(0, 1_000))
    for _ in range(draw(st.integers(1, max_batches))):
        offset += draw(st.integers(0, 2))  # gaps, as compaction leaves them
        kind = draw(st.sampled_from(["v0", "v1", "v0z", "v1z", "v2", "v2", "v2", "control"]))
        if kind in ("v0", "v1"):
            magic = int(kind[1])
            k, v = draw(kv)
            ts = draw(st.integers(0, 2**62)) if magic else -1
            blob = legacy_message(magic, offset, k, v, timestamp=max(ts, 0))
            exp.add(
                blob,
                (offset, offset, -1, magic, "none", False, 1),
                [(offset, -1, magic, ts, k, v, offset, "none")],
            )
            offset += 1
        elif kind in ("v0z", "v1z"):
            magic = int(kind[1])
            recs = draw(st.lists(kv, min_size=1, max_size=5))
            codec = draw(legacy_codecs)
            rel = [0]
            for _r in recs[1:]:
                rel.append(rel[-1] + draw(st.integers(1, 2)))
            stamps = [TS + draw(st.integers(0, 50)) for _r in recs]
            append_time = magic == 1 and draw(st.booleans())
            blob = legacy_wrapper(
                magic,
                offset,
                recs,
                codec=codec,
                timestamp=TS + 99,
                inner_timestamps=stamps,
                relative_offsets=rel,
                log_append_time=append_time,
            )
            expect_ts = [(TS + 99 if append_time else s) if magic else -1 for s in stamps]
            exp.add(
                blob,
                (offset, offset + rel[-1], -1, magic, codec, False, len(recs)),
                [
                    (offset + r, -1, magic, t, k, v, offset, codec)
                    for r, t, (k, v) in zip(rel, expect_ts, recs, strict=True)
                ],
            )
            offset += rel[-1] + 1
        elif kind == "v2":
            epoch = draw(st.integers(0, 2**31 - 1))
            codec = draw(v2_codecs)
            raw = draw(
                st.lists(
                    st.tuples(
                        kv,
                        st.integers(-(2**40), 2**40),
                        st.lists(st.tuples(st.binary(max_size=5), blobs), max_size=2),
                    ),
                    max_size=5,
                )
            )
            records = [Rec(k, v, d, h) for (k, v), d, h in raw]
            deltas = [0] if records else []
            for _rec in records[1:]:
                deltas.append(deltas[-1] + draw(st.integers(1, 300)))  # multi-byte varints
            base_ts = draw(st.integers(0, 2**50))
            blob = v2_batch(
                offset,
                records,
                epoch=epoch,
                codec=codec,
                base_timestamp=base_ts,
                offset_deltas=deltas,
                producer_id=draw(st.integers(-1, 2**40)),
            )
            last = deltas[-1] if deltas else 0
            exp.add(
                blob,
                (offset, offset + last, epoch, 2, codec, False, len(records)),
                [
                    (
                        offset + d,
                        epoch,
                        2,
                        base_ts + r.timestamp_delta,
                        r.key,
                        r.value,
                        offset,
                        codec,
                    )
                    for d, r in zip(deltas, records, strict=True)
                ],
            )
            offset += last + 1
        else:
            epoch = draw(st.integers(0, 100))
            blob = control_batch(offset, commit=draw(st.booleans()), epoch=epoch)
            exp.add(blob, (offset, offset, epoch, 2, "none", True, 1), [])
            offset += 1
    return exp


def write(tmp: Path, data: bytes, name: str = SEG) -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


# --------------------------------------------------------------------------- round trips


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seg=segments())
def test_round_trip_mixed_formats(seg: Expected, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Whatever the encoder writes (v0, v1, v2, any codec, markers) reads back exactly."""
    path = write(tmp_path_factory.mktemp("seg"), bytes(seg.data))
    for verify in (True, False):
        res = read_segment(path, verify=verify)
        assert got_records(res.records) == seg.records
        assert got_batches(res.batches) == seg.batches
        assert (res.valid_bytes, res.file_bytes) == (len(seg.data), len(seg.data))
        assert not res.torn_tail and res.crc_errors == 0 and res.errors == []
        assert all(b.crc_ok for b in res.batches)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seg=segments(max_batches=4), data=st.data())
def test_any_cut_keeps_exactly_the_complete_batches(
    seg: Expected, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A power-loss cut anywhere: the records of whole batches survive, nothing raises."""
    cut = data.draw(st.integers(0, len(seg.data)))
    path = write(tmp_path_factory.mktemp("seg"), bytes(seg.data[:cut]))
    res = read_segment(path)
    whole = sum(1 for end in seg.ends if end <= cut)
    valid = seg.ends[whole - 1] if whole else 0
    kept = seg.records_before[whole] if whole < len(seg.ends) else len(seg.records)
    assert got_records(res.records) == seg.records[:kept]
    assert len(res.batches) == whole
    assert res.valid_bytes == valid and res.file_bytes == cut
    assert res.torn_tail == (cut != valid)
    assert res.crc_errors == 0


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seg=segments(max_batches=4), data=st.data())
def test_random_byte_damage_never_raises(
    seg: Expected, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Any flipped bytes: reported as CRC errors, batch errors or a torn tail, never raised."""
    damaged = bytearray(seg.data)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(damaged) - 1))
        damaged[at] ^= data.draw(st.integers(1, 255))
    path = write(tmp_path_factory.mktemp("seg"), bytes(damaged))
    res = read_segment(path)
    assert res.valid_bytes <= res.file_bytes
    assert res.crc_errors == sum(not b.crc_ok for b in res.batches)
    read_segment(path, verify=False)


# --------------------------------------------------------------------------- torn tails


LAST_BATCHES = {
    "v0": legacy_message(0, 3, b"k", b"m4"),
    "v1": legacy_message(1, 3, b"k", b"m4"),
    "v0-gzip": legacy_wrapper(0, 3, [(b"k", b"m4"), (None, b"m5")]),
    "v1-gzip": legacy_wrapper(1, 3, [(b"k", b"m4"), (None, b"m5")]),
    "v2": v2_batch(3, [Rec(b"k", b"m4", headers=[(b"h", b"v")]), Rec(None, b"m5")], epoch=2),
    "v2-gzip": v2_batch(3, [Rec(b"k", b"m4"), Rec(None, b"m5")], epoch=2, codec="gzip"),
    "control": control_batch(3, commit=True, epoch=2),
}


@pytest.mark.parametrize("kind", sorted(LAST_BATCHES))
def test_torn_tail_at_every_byte_of_the_last_batch(kind: str, tmp_path: Path) -> None:
    prefix = legacy_message(1, 0, b"k", b"m1") + v2_batch(
        1, [Rec(b"k", b"m2"), Rec(b"k", b"m3")], epoch=1, codec="gzip"
    )
    last = LAST_BATCHES[kind]
    for cut in range(len(last)):
        res = read_segment(write(tmp_path, prefix + last[:cut]))
        assert [r.value for r in res.records] == [b"m1", b"m2", b"m3"], cut
        assert res.valid_bytes == len(prefix) and res.file_bytes == len(prefix) + cut
        assert res.torn_tail == (cut > 0)
        assert len(res.batches) == 2 and res.crc_errors == 0
        assert len(res.errors) == (cut > 0)
    whole = read_segment(write(tmp_path, prefix + last))
    assert not whole.torn_tail and len(whole.batches) == 3


def test_zero_filled_tail_is_a_torn_tail(tmp_path: Path) -> None:
    """Preallocated or power-cut files can end in zeros: no batch there, and no error."""
    good = v2_batch(0, [Rec(b"k", b"m1")])
    res = read_segment(write(tmp_path, good + bytes(4096)))
    assert [r.record_id for r in res.records] == ["m1"]
    assert res.torn_tail and res.valid_bytes == len(good)
    assert "zero-filled" in res.errors[0]


def test_empty_segment(tmp_path: Path) -> None:
    res = read_segment(write(tmp_path, b""))
    assert res.records == [] and res.batches == [] and not res.torn_tail


# --------------------------------------------------------------------------- CRC damage


def _flip_each(tmp_path: Path, before: bytes, victim: bytes, after: bytes, covered: range) -> None:
    for i in covered:
        bad = bytearray(victim)
        bad[i] ^= 0x40
        res = read_segment(write(tmp_path, before + bytes(bad) + after))
        assert [b.crc_ok for b in res.batches] == [True, False, True], i
        assert res.crc_errors == 1
        values = [r.value for r in res.records]
        assert values[0] == b"m1" and values[-1] == b"m9"  # neighbours intact
        fast = read_segment(write(tmp_path, before + bytes(bad) + after), verify=False)
        assert fast.crc_errors == 0 and all(b.crc_ok for b in fast.batches)


def test_crc_mismatch_in_v2_batch_is_reported_per_batch(tmp_path: Path) -> None:
    before = v2_batch(0, [Rec(b"k", b"m1")])
    victim = v2_batch(1, [Rec(b"k", b"m2"), Rec(b"k", b"m3")], epoch=1)
    after = v2_batch(3, [Rec(b"k", b"m9")], epoch=1)
    # the crc32c covers attributes..end, i.e. from byte 21 of the batch
    _flip_each(tmp_path, before, victim, after, range(21, len(victim)))


def test_crc_mismatch_in_v2_gzip_batch(tmp_path: Path) -> None:
    before = v2_batch(0, [Rec(b"k", b"m1")])
    victim = v2_batch(1, [Rec(b"k", b"m2"), Rec(b"k", b"m3")], epoch=1, codec="gzip")
    after = v2_batch(3, [Rec(b"k", b"m9")], epoch=1)
    _flip_each(tmp_path, before, victim, after, range(21, len(victim)))


def test_crc_mismatch_in_v1_message_and_wrapper(tmp_path: Path) -> None:
    before = legacy_message(1, 0, b"k", b"m1")
    after = legacy_message(1, 4, b"k", b"m9")
    victim = legacy_message(1, 1, b"k", b"m2")
    # the legacy crc32 covers magic..end (from byte 16); a bad magic is tested below
    _flip_each(tmp_path, before, victim, after, range(17, len(victim)))
    wrapper = legacy_wrapper(1, 1, [(b"k", b"m2"), (b"k", b"m3")])
    _flip_each(tmp_path, before, wrapper, after, range(17, len(wrapper)))


@pytest.mark.parametrize("magic", [3, 0x41, 0xFF])
def test_unknown_magic_ends_the_readable_log(magic: int, tmp_path: Path) -> None:
    """The magic decides the framing; Kafka's recovery stops there too."""
    bad = bytearray(v2_batch(1, [Rec(b"k", b"m2")]))
    bad[16] = magic
    first = legacy_message(1, 0, b"k", b"m1")
    res = read_segment(write(tmp_path, first + bytes(bad) + v2_batch(2, [Rec(b"k", b"m3")])))
    assert [r.record_id for r in res.records] == ["m1"]
    assert res.torn_tail and res.valid_bytes == len(first)
    assert f"magic {magic}" in res.errors[0]


def test_stored_crc_itself_damaged(tmp_path: Path) -> None:
    batch = bytearray(v2_batch(0, [Rec(b"k", b"m1")]))
    batch[17] ^= 0x01  # first crc byte
    res = read_segment(write(tmp_path, bytes(batch)))
    assert res.crc_errors == 1 and [r.record_id for r in res.records] == ["m1"]


def test_partition_leader_epoch_is_outside_the_crc(tmp_path: Path) -> None:
    """As in Kafka: the leader stamps the epoch without recomputing the producer's crc."""
    batch = bytearray(v2_batch(0, [Rec(b"k", b"m1")], epoch=0))
    batch[12:16] = (7).to_bytes(4, "big")
    res = read_segment(write(tmp_path, bytes(batch)))
    assert res.crc_errors == 0 and res.records[0].epoch == 7


def test_undecodable_batch_gives_no_records_and_one_error(tmp_path: Path) -> None:
    """A batch whose body lies (count, varints) is reported; the segment reads on."""
    bad = bytearray(v2_batch(1, [Rec(b"k", b"m2"), Rec(b"k", b"m3")]))
    bad[57:61] = (5).to_bytes(4, "big")  # records count says 5, body holds 2
    data = v2_batch(0, [Rec(b"k", b"m1")]) + bytes(bad) + v2_batch(3, [Rec(b"k", b"m9")])
    res = read_segment(write(tmp_path, data))
    assert [r.record_id for r in res.records] == ["m1", "m9"]
    assert len(res.batches) == 3 and res.crc_errors == 1
    assert len(res.errors) == 1 and "offset 1" in res.errors[0]


def test_unknown_codec_is_a_batch_error(tmp_path: Path) -> None:
    bad = bytearray(v2_batch(0, [Rec(b"k", b"m1")]))
    bad[22] |= 0x07  # attributes low bits: codec 7 does not exist
    res = read_segment(write(tmp_path, bytes(bad) + v2_batch(1, [Rec(b"k", b"m2")])))
    assert [r.record_id for r in res.records] == ["m2"]
    assert "unknown compression codec 7" in res.errors[0]


@pytest.mark.parametrize("codec", ["snappy", "lz4", "zstd"])
def test_missing_codec_library_names_the_codec(
    codec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, v2_batch(0, [Rec(b"k", b"m1")], codec=codec))
    monkeypatch.setitem(sys.modules, "cramjam", None)  # import cramjam -> ImportError
    with pytest.raises(UnsupportedCodec, match=f"codec {codec}"):
        read_segment(path)


# --------------------------------------------------------------------------- semantics


def test_v1_wrapper_offsets_are_relative_to_the_last_inner_message(tmp_path: Path) -> None:
    """Kafka's rule: absolute = wrapper offset - last relative offset + relative offset."""
    wrapper = legacy_wrapper(1, 10, [(None, b"a"), (None, b"b"), (None, b"c")])
    assert int.from_bytes(wrapper[:8], "big") == 12  # the wrapper holds the last offset
    compacted = legacy_wrapper(1, 20, [(None, b"x"), (None, b"y")], relative_offsets=[0, 3])
    res = read_segment(write(tmp_path, wrapper + compacted))
    assert [(r.offset, r.record_id) for r in res.records] == [
        (10, "a"),
        (11, "b"),
        (12, "c"),
        (20, "x"),
        (23, "y"),
    ]
    assert [(b.base_offset, b.last_offset, b.record_count) for b in res.batches] == [
        (10, 12, 3),
        (20, 23, 2),
    ]


def test_v0_wrapper_offsets_are_absolute(tmp_path: Path) -> None:
    res = read_segment(write(tmp_path, legacy_wrapper(0, 5, [(None, b"a"), (None, b"b")])))
    assert [(r.offset, r.timestamp, r.magic, r.epoch) for r in res.records] == [
        (5, -1, 0, -1),
        (6, -1, 0, -1),
    ]


def test_magic0_lz4_wrapper_with_kafka_3160_descriptor_checksum(tmp_path: Path) -> None:
    """Old brokers wrote a wrong lz4 frame checksum in magic 0 and still read it back."""
    recs: list[tuple[bytes | None, bytes | None]] = [(None, b"a"), (b"k", b"b")]
    res = read_segment(
        write(tmp_path, legacy_wrapper(0, 4, recs, codec="lz4", kafka_3160_lz4=True))
    )
    assert [(r.offset, r.record_id) for r in res.records] == [(4, "a"), (5, "b")]
    assert res.errors == [] and res.crc_errors == 0
    # magic 1 wrote correct checksums, so there a wrong one is damage
    res = read_segment(
        write(tmp_path, legacy_wrapper(1, 4, recs, codec="lz4", kafka_3160_lz4=True))
    )
    assert res.records == [] and "corrupt lz4 data" in res.errors[0]


def test_log_append_time_wrapper_stamps_its_inner_messages(tmp_path: Path) -> None:
    blob = legacy_wrapper(
        1, 0, [(None, b"a"), (None, b"b")], timestamp=999, inner_timestamps=[1, 2]
    )
    assert [r.timestamp for r in read_segment(write(tmp_path, blob)).records] == [1, 2]
    blob = legacy_wrapper(
        1,
        0,
        [(None, b"a"), (None, b"b")],
        timestamp=999,
        inner_timestamps=[1, 2],
        log_append_time=True,
    )
    assert [r.timestamp for r in read_segment(write(tmp_path, blob)).records] == [999, 999]


def test_control_batches_are_metadata_only(tmp_path: Path) -> None:
    data = (
        v2_batch(0, [Rec(b"k", b"m1")], producer_id=7, producer_epoch=0, transactional=True)
        + control_batch(1, commit=True, epoch=3)
        + v2_batch(2, [Rec(b"k", b"m2")], epoch=3)
    )
    res = read_segment(write(tmp_path, data))
    assert [r.offset for r in res.records] == [0, 2]
    marker = res.batches[1]
    assert marker.is_control and marker.is_transactional and marker.record_count == 1
    assert (marker.base_offset, marker.epoch, marker.producer_id) == (1, 3, 7)
    assert res.batches[0].is_transactional and not res.batches[0].is_control


def test_upgraded_log_mixes_formats(tmp_path: Path) -> None:
    """After a message-format upgrade, v1 messages precede v2 batches in one segment."""
    data = (
        legacy_message(0, 0, None, b"m0")
        + legacy_message(1, 1, b"k", b"m1", timestamp=5)
        + legacy_wrapper(1, 2, [(b"k", b"m2"), (b"k", b"m3")])
        + v2_batch(4, [Rec(b"k", b"m4", 3)], epoch=4, base_timestamp=10)
    )
    res = read_segment(write(tmp_path, data))
    assert [(r.offset, r.magic, r.epoch, r.record_id) for r in res.records] == [
        (0, 0, -1, "m0"),
        (1, 1, -1, "m1"),
        (2, 1, -1, "m2"),
        (3, 1, -1, "m3"),
        (4, 2, 4, "m4"),
    ]
    assert res.records[1].timestamp == 5 and res.records[4].timestamp == 13


def test_record_id_and_immutability() -> None:
    rec = LogRecord(0, 0, 2, 0, b"key", b"val", 0, "none")
    assert rec.record_id == "val"
    assert LogRecord(0, 0, 2, 0, b"key", None, 0, "none").record_id == "key"
    assert LogRecord(0, 0, 2, 0, None, None, 0, "none").record_id == ""
    assert LogRecord(0, 0, 2, 0, None, b"\xffm1", 0, "none").record_id == "\ufffdm1"
    with pytest.raises(FrozenInstanceError):
        rec.offset = 3  # type: ignore[misc]


def test_parsed_records_are_plain_frozen_log_records(tmp_path: Path) -> None:
    """The parser's fast construction path must give records equal to the constructor's."""
    res = read_segment(write(tmp_path, v2_batch(0, [Rec(b"k", b"m1")], base_timestamp=7)))
    (rec,) = res.records
    assert type(rec) is LogRecord
    assert rec == LogRecord(0, 0, 2, 7, b"k", b"m1", 0, "none")
    assert hash(rec) == hash(LogRecord(0, 0, 2, 7, b"k", b"m1", 0, "none"))
    with pytest.raises(FrozenInstanceError):
        rec.value = b"x"  # type: ignore[misc]
    (batch,) = read_segment(str(tmp_path / SEG)).batches  # str paths work too
    assert type(batch) is BatchInfo
    assert batch == BatchInfo(
        0, 0, 0, 2, "none", True, 0, batch.size, False, 1, crc=batch.crc, timestamp=7
    )
    with pytest.raises(FrozenInstanceError):
        batch.epoch = 1  # type: ignore[misc]


def test_partition_dir_orders_segments_by_base_offset(tmp_path: Path) -> None:
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    write(pdir, v2_batch(100, [Rec(None, b"b")], epoch=1), "00000000000000000100.log")
    write(pdir, v2_batch(0, [Rec(None, b"a")]), "00000000000000000000.log")
    write(pdir, v2_batch(9, [Rec(None, b"c")]) + b"\x00\x00", "00000000000000000009.log")
    write(pdir, b"not a segment", "server.log")
    (pdir / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n1 100\n")
    assert [r.record_id for r in read_partition_dir(pdir)] == ["a", "c", "b"]
    part = read_partition(pdir)
    assert [s.path.name for s in part.segments] == [
        "00000000000000000000.log",
        "00000000000000000009.log",
        "00000000000000000100.log",
    ]
    assert part.leader_epochs == [(0, 0), (1, 100)]
    assert part.log_end_offset == 101 and part.torn_tail and part.crc_errors == 0


def test_partition_dir_without_epoch_cache_or_segments(tmp_path: Path) -> None:
    part = read_partition(tmp_path)
    assert part.records == [] and part.leader_epochs is None and part.log_end_offset == 0
    with pytest.raises(FileNotFoundError, match="missing"):
        read_partition_dir(tmp_path / "missing")
    with pytest.raises(NotADirectoryError):
        read_partition(write(tmp_path, b""))


# --------------------------------------------------------------------------- real segments

DUMP_BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) ")
DUMP_RECORD = re.compile(r"^(?:\| )?offset: (\d+) ")


def _field(line: str, name: str) -> str | None:
    m = re.search(rf"\b{name}: (\S+)", line)
    return m.group(1) if m else None


def _dump_records(
    text: str,
) -> tuple[list[dict[str, str | None]], list[dict[str, str | None]]]:
    """Dump text as (records, batch lines): DumpLogSegments' 0.10, 2.1 and 3.3 forms, and
    ``hwchaos dump``'s."""
    records: list[dict[str, str | None]] = []
    batches: list[dict[str, str | None]] = []
    for line in text.splitlines():
        if DUMP_BATCH.match(line):
            names = ("baseOffset", "lastOffset", "count", "partitionLeaderEpoch", "position")
            batch = {n: _field(line, n) for n in names}
            for n in ("size", "compresscodec", "crc", "isvalid", "producerId", "isControl"):
                batch[n] = _field(line, n)
            batches.append(batch)
        elif m := DUMP_RECORD.match(line):
            kp = re.search(r" key: (.*?) payload: (.*)$", line)
            assert kp, line
            records.append(
                {
                    "offset": m.group(1),
                    "position": _field(line, "position")
                    or (batches[-1]["position"] if batches else None),
                    "epoch": batches[-1]["partitionLeaderEpoch"] if batches else None,
                    "CreateTime": _field(line, "CreateTime"),
                    "key": kp.group(1),
                    "payload": kp.group(2),
                }
            )
    return records, batches


@needs_fixtures
@pytest.mark.parametrize("seg", FIXTURES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_real_segments_match_dumplogsegments(seg: Path) -> None:
    """Files written by brokers we ran ourselves, against Kafka's own DumpLogSegments."""
    version = seg.parent.parent.name
    expected, dump_batches = _dump_records(seg.with_name(SEG + ".dump.txt").read_text())
    res = read_segment(seg)
    assert not res.torn_tail and res.crc_errors == 0 and res.errors == []
    assert res.records and len(res.records) == len(expected)
    position = {}
    for b in res.batches:
        for r in res.records:
            if b.base_offset <= r.offset <= b.last_offset:
                position[r.offset] = b.position
    for rec, exp in zip(res.records, expected, strict=True):
        assert rec.offset == int(str(exp["offset"]))
        assert (rec.value or b"").decode() == exp["payload"]
        assert (rec.key.decode() if rec.key is not None else "null") == exp["key"]
        assert rec.timestamp == int(str(exp["CreateTime"]))
        assert position[rec.offset] == int(str(exp["position"]))
        if exp["epoch"] is not None:
            assert rec.epoch == int(exp["epoch"])
    if version.startswith("0.10"):
        assert {r.epoch for r in res.records} == {-1}
        assert {r.magic for r in res.records} == {1}
    else:
        assert {r.magic for r in res.records} == {2}
        assert min(r.epoch for r in res.records) >= 0
    if dump_batches:
        assert [
            (
                b.base_offset,
                b.last_offset,
                b.record_count,
                b.epoch,
                b.position,
                b.size,
                b.compression,
                b.crc,
                b.producer_id,
            )
            for b in res.batches
        ] == [
            (
                int(str(d["baseOffset"])),
                int(str(d["lastOffset"])),
                int(str(d["count"])),
                int(str(d["partitionLeaderEpoch"])),
                int(str(d["position"])),
                int(str(d["size"])),
                str(d["compresscodec"]).lower(),
                int(str(d["crc"])),
                int(str(d["producerId"])),
            )
            for d in dump_batches
        ]


@needs_fixtures
def test_real_v2_record_epochs_agree_with_leader_epoch_checkpoint() -> None:
    """Each record's batch epoch is the epoch cache's entry for its offset."""
    pdirs = [p for p in sorted(DATA.glob("*/*-[0-9]*")) if (p / "leader-epoch-checkpoint").exists()]
    assert pdirs
    for pdir in pdirs:
        part = read_partition(pdir)
        assert part.leader_epochs
        for r in part.records:
            owner = max(e for e, start in part.leader_epochs if start <= r.offset)
            assert owner == r.epoch, (pdir, r.offset)


@needs_fixtures
def test_real_codecs_are_covered() -> None:
    """The fixtures exercise every codec a broker wrote for us (guards fixture pruning)."""
    seen = {
        (s.parent.parent.name, b.compression) for s in FIXTURES for b in read_segment(s).batches
    }
    assert {c for v, c in seen if v == "3.3.1"} >= {"none", "gzip", "snappy", "lz4", "zstd"}
    assert {c for v, c in seen if v == "0.10.2.1"} >= {"none", "gzip"}


@needs_fixtures
def test_cut_log_to_keeps_whole_batches_and_drops_indexes(tmp_path: Path) -> None:
    """The nemesis's power-loss cut, read back with this parser."""
    from harness.nemesis.faults import cut_log_to

    pdir = tmp_path / "hwchaos-0"
    shutil.copytree(DATA / "2.1.1" / "hwchaos-0", pdir)
    (pdir / "00000000000000000000.index").write_bytes(b"\0" * 8)
    removed = cut_log_to(pdir, 1)
    assert removed == 72
    assert [r.record_id for r in read_partition(pdir).records] == ["m1"]
    assert not (pdir / "00000000000000000000.index").exists()


# --------------------------------------------------------------------------- hwchaos dump


@needs_fixtures
def test_dump_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert dump_main([str(DATA / "3.3.1" / "chaos-1")]) == 0
    out = capsys.readouterr().out
    assert f"Dumping {DATA / '3.3.1' / 'chaos-1' / SEG}" in out
    assert "Starting offset: 0" in out
    assert (
        "baseOffset: 10 lastOffset: 12 count: 3 partitionLeaderEpoch: 0 magic: 2 "
        "compresscodec: zstd crcValid: true" in out
    )
    assert "| offset: 16 CreateTime: 1795349509055 keysize: 2 valuesize: 35 key: k0" in out
    assert "leader-epoch-checkpoint (partition dir): 0 0, 2 19, 4 865" in out
    assert "replication-offset-checkpoint (log dir): chaos-1 865" in out
    assert "records: 19" in out and "torn tail: no" in out and "crc errors: 0" in out


@needs_fixtures
def test_dump_json_and_single_file(capsys: pytest.CaptureFixture[str]) -> None:
    seg = DATA / "0.10.2.1" / "chaosgz-0" / SEG
    assert dump_main([str(seg), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (segment,) = doc["segments"]
    assert segment["starting_offset"] == 0 and segment["torn_tail"] is False
    assert len(segment["batches"]) == 1 and segment["batches"][0]["compression"] == "gzip"
    assert [r["offset"] for r in segment["batches"][0]["records"]] == list(range(20))
    assert doc["checkpoints"]["replication-offset-checkpoint"]["chaosgz-0"] == 20
    assert doc["summary"] == {"records": 20, "torn_tail": False, "crc_errors": 0, "errors": []}


def test_dump_reports_damage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    bad = bytearray(v2_batch(1, [Rec(b"k", b"m2")]))
    bad[-1] ^= 1
    good = v2_batch(0, [Rec(None, b"m1")])
    write(pdir, good + bytes(bad) + b"\x00" * 7)
    valid = len(good) + len(bad)
    (tmp_path / "replication-offset-checkpoint").write_text("0\n1\nt 0 x\n")
    assert dump_main([str(pdir)]) == 0
    out = capsys.readouterr().out
    assert "crcValid: false" in out and "key: null payload: m1" in out
    assert f"torn tail: yes (valid bytes {valid} of {valid + 7})" in out
    assert "crc errors: 1" in out
    assert "replication-offset-checkpoint (log dir): unreadable:" in out


def test_dump_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert dump_main([str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file or directory" in err
    assert dump_main([str(tmp_path)]) == 2
    assert "not a partition dir" in capsys.readouterr().err
    (tmp_path / "notes.txt").write_text("x")
    assert dump_main([str(tmp_path / "notes.txt")]) == 2
    assert "not a .log segment" in capsys.readouterr().err
    assert dump_main([]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_dump_runs_standalone(tmp_path: Path) -> None:
    write(tmp_path, v2_batch(0, [Rec(b"k", b"m1")], epoch=5))
    proc = subprocess.run(
        [sys.executable, "-m", "harness.readback.dump", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "partitionLeaderEpoch: 5" in proc.stdout and "payload: m1" in proc.stdout


def test_gc_state_is_restored(tmp_path: Path) -> None:
    """The parser pauses the cyclic GC for speed; it must hand it back as it found it."""
    import gc

    path = write(tmp_path, v2_batch(0, [Rec(b"k", b"m1")]))
    assert gc.isenabled()
    read_segment(path)
    assert gc.isenabled()
    gc.disable()
    try:
        read_segment(path)
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(FileNotFoundError):
        read_segment(tmp_path / "missing.log")
    assert gc.isenabled()


@needs_fixtures
@pytest.mark.parametrize("seg", FIXTURES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_dump_prints_every_record_under_its_batch(
    seg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert dump_main([str(seg.parent)]) == 0
    lines = capsys.readouterr().out.splitlines()
    res = read_segment(seg)
    assert sum(line.startswith("| offset: ") for line in lines) == len(res.records)
    assert sum(line.startswith("baseOffset: ") for line in lines) == len(res.batches)
    expected, _ = _dump_records(seg.with_name(SEG + ".dump.txt").read_text())
    ours, _ = _dump_records("\n".join(lines))
    fields = ("offset", "CreateTime", "key", "payload")
    assert [[r[f] for f in fields] for r in ours] == [[r[f] for f in fields] for r in expected]
    for mine, kafka, rec in zip(ours, expected, res.records, strict=True):
        assert mine["epoch"] == (kafka["epoch"] or str(rec.epoch))  # 0.10/2.1 print none
