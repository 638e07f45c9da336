"""Segment and checkpoint readers: real Kafka-written files, round trips, torn tails."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.checkpoints import (
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
    write_leader_epoch_checkpoint,
    write_offset_checkpoint,
)
from harness.dump import main as dump_main
from harness.logformat import read_partition, read_segment
from harness.nemesis import cut_log_to
from tests.kafka_encoding import v1_gzip_wrapper, v1_message, v2_batch

DATA = Path(__file__).parent / "data" / "segments"
FIXTURES = sorted(DATA.glob("*/*/00000000000000000000.log"))
DUMP_LINE = re.compile(r"offset: (\d+) .*?(?:key: (\S+) )?payload: (.*)$")


@pytest.mark.parametrize("seg", FIXTURES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_real_segments_match_dumplogsegments(seg: Path) -> None:
    """Files written by brokers we ran, against Kafka's own DumpLogSegments output."""
    dump = seg.with_name(seg.name + ".dump.txt")
    expected = [
        (int(m.group(1)), m.group(3).strip())
        for line in dump.read_text().splitlines()
        if (m := DUMP_LINE.search(line))
    ]
    res = read_segment(seg)
    assert not res.torn_tail and res.crc_errors == 0
    got = [(r.offset, (r.value or b"").decode()) for r in res.records]
    assert got == expected and got
    version = seg.parent.parent.name
    epochs = {r.epoch for r in res.records}
    assert epochs == {-1} if version.startswith("0.10") else -1 not in epochs


def test_real_v2_epochs_agree_with_leader_epoch_checkpoint() -> None:
    for pdir in sorted(DATA.glob("*/hwchaos-0")):
        if pdir.parent.name.startswith("0.10"):
            continue
        part = read_partition(pdir)
        assert part.leader_epochs is not None
        # every record's batch epoch is the cache's epoch for that offset
        for r in part.records:
            owner = max(e for e, start in part.leader_epochs if start <= r.offset)
            assert owner == r.epoch
        assert [r.record_id for r in part.records] == ["m1", "m3"]


def test_real_checkpoint_files_parse() -> None:
    for f in DATA.glob("*/replication-offset-checkpoint"):
        entries = read_offset_checkpoint(f)
        assert entries and all(o >= 0 for o in entries.values())


records = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(max_size=20)), st.one_of(st.none(), st.binary(max_size=40))
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(
    batches=st.lists(st.tuples(records, st.integers(0, 50), st.booleans()), min_size=1, max_size=6)
)
def test_v2_round_trip(batches: list, tmp_path_factory: pytest.TempPathFactory) -> None:
    data = bytearray()
    expected = []
    offset = 0
    for recs, epoch, gz in batches:
        data += v2_batch(offset, epoch, recs, gzip_it=gz)
        expected += [(offset + i, epoch, k, v) for i, (k, v) in enumerate(recs)]
        offset += len(recs)
    path = tmp_path_factory.mktemp("seg") / "00000000000000000000.log"
    path.write_bytes(bytes(data))
    res = read_segment(path)
    assert [(r.offset, r.epoch, r.key, r.value) for r in res.records] == expected
    assert res.crc_errors == 0 and not res.torn_tail


@settings(max_examples=100, deadline=None)
@given(batches=st.lists(st.tuples(records, st.booleans()), min_size=1, max_size=6))
def test_v1_round_trip_with_gzip_wrappers(
    batches: list, tmp_path_factory: pytest.TempPathFactory
) -> None:
    data = bytearray()
    expected = []
    offset = 0
    for recs, gz in batches:
        if gz:
            data += v1_gzip_wrapper(offset, recs)
        else:
            data += b"".join(v1_message(offset + i, k, v) for i, (k, v) in enumerate(recs))
        expected += [(offset + i, k, v) for i, (k, v) in enumerate(recs)]
        offset += len(recs)
    path = tmp_path_factory.mktemp("seg") / "00000000000000000000.log"
    path.write_bytes(bytes(data))
    res = read_segment(path)
    assert [(r.offset, r.key, r.value) for r in res.records] == expected
    assert all(r.epoch == -1 for r in res.records)


def test_torn_tail_at_every_byte_of_the_last_batch(tmp_path: Path) -> None:
    first = v2_batch(0, 0, [(b"k", b"m1"), (b"k", b"m2")])
    last = v2_batch(2, 1, [(b"k", b"m3")], gzip_it=True)
    path = tmp_path / "00000000000000000000.log"
    for cut in range(len(last)):
        path.write_bytes(first + last[:cut])
        res = read_segment(path)
        assert [r.value for r in res.records] == [b"m1", b"m2"]
        assert res.valid_bytes == len(first)
        assert res.torn_tail == (cut > 0)


def test_crc_corruption_is_counted_not_fatal(tmp_path: Path) -> None:
    good = v2_batch(0, 0, [(b"k", b"m1")])
    bad = bytearray(v2_batch(1, 0, [(b"k", b"m2")]))
    bad[-3] ^= 0xFF
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(good + bytes(bad))
    res = read_segment(path)
    assert res.crc_errors == 1
    assert [b.crc_ok for b in res.batches] == [True, False]
    assert read_segment(path, verify=False).crc_errors == 0


def test_cut_log_to_keeps_whole_batches_and_drops_indexes(tmp_path: Path) -> None:
    src = DATA / "2.1.1" / "hwchaos-0"
    pdir = tmp_path / "hwchaos-0"
    shutil.copytree(src, pdir)
    (pdir / "00000000000000000000.index").write_bytes(b"\0" * 8)
    removed = cut_log_to(pdir, 1)
    assert removed == 72
    assert [r.record_id for r in read_partition(pdir).records] == ["m1"]
    assert not (pdir / "00000000000000000000.index").exists()


def test_checkpoint_round_trip_and_errors(tmp_path: Path) -> None:
    f = tmp_path / "replication-offset-checkpoint"
    write_offset_checkpoint(f, {("hwchaos", 0): 7, ("t", 3): 1})
    assert read_offset_checkpoint(f) == {("hwchaos", 0): 7, ("t", 3): 1}
    e = tmp_path / "leader-epoch-checkpoint"
    write_leader_epoch_checkpoint(e, [(0, 0), (3, 1)])
    assert read_leader_epoch_checkpoint(e) == [(0, 0), (3, 1)]
    f.write_text("0\n2\nhwchaos 0 7\n")
    with pytest.raises(ValueError, match="count line says 2 entries, found 1"):
        read_offset_checkpoint(f)
    f.write_text("0\n1\nhwchaos zero 7\n")
    with pytest.raises(ValueError, match="line 3"):
        read_offset_checkpoint(f)
    with pytest.raises(FileNotFoundError):
        read_offset_checkpoint(tmp_path / "missing")


def test_dump_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pdir = DATA / "2.1.1" / "hwchaos-0"
    assert dump_main([str(pdir)]) == 0
    out = capsys.readouterr().out
    assert "partitionLeaderEpoch: 3" in out and "payload: m3" in out
    assert "leader-epoch-checkpoint: [(0, 0), (3, 1)]" in out
    assert dump_main([str(tmp_path)]) == 2
    assert "no .log segments" in capsys.readouterr().err
