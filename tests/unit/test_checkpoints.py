"""Checkpoint files: Kafka-written ones parse, writers round-trip atomically, damage is a
one-line error naming file and line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.readback.checkpoints import (
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
    write_leader_epoch_checkpoint,
    write_offset_checkpoint,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "segments"
HW = "replication-offset-checkpoint"

topics = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
    min_size=1,
    max_size=20,
)
offsets = st.integers(0, 2**63 - 1)


@settings(max_examples=100, deadline=None)
@given(entries=st.dictionaries(st.tuples(topics, st.integers(0, 10_000)), offsets, max_size=20))
def test_offset_checkpoint_round_trip(
    entries: dict[tuple[str, int], int], tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("ckpt") / HW
    write_offset_checkpoint(path, entries)
    assert read_offset_checkpoint(path) == entries


@settings(max_examples=100, deadline=None)
@given(entries=st.lists(st.tuples(st.integers(0, 2**31 - 1), offsets), max_size=20))
def test_leader_epoch_checkpoint_round_trip(
    entries: list[tuple[int, int]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("ckpt") / "leader-epoch-checkpoint"
    write_leader_epoch_checkpoint(path, entries)
    assert read_leader_epoch_checkpoint(path) == entries


def test_written_bytes_are_kafkas_format(tmp_path: Path) -> None:
    path = tmp_path / HW
    write_offset_checkpoint(path, {("t", 1): 5, ("hwchaos", 0): 7})
    assert path.read_text() == "0\n2\nhwchaos 0 7\nt 1 5\n"
    lec = tmp_path / "leader-epoch-checkpoint"
    write_leader_epoch_checkpoint(lec, [(0, 0), (3, 1)])
    assert lec.read_text() == "0\n2\n0 0\n3 1\n"
    write_offset_checkpoint(path, {})
    assert path.read_text() == "0\n0\n" and read_offset_checkpoint(path) == {}


def test_write_is_tmp_fsync_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash mid-write must leave the old checkpoint whole, as Kafka's writer does."""
    path = tmp_path / HW
    write_offset_checkpoint(path, {("t", 0): 1})
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)

    def crash(src: object, dst: object) -> None:
        assert Path(str(src)).read_text() == "0\n1\nt 0 2\n"  # complete before the rename
        raise OSError("crash before rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="crash before rename"):
        write_offset_checkpoint(path, {("t", 0): 2})
    assert synced, "the tmp file must be fsynced before it replaces the checkpoint"
    assert read_offset_checkpoint(path) == {("t", 0): 1}
    monkeypatch.undo()
    write_offset_checkpoint(path, {("t", 0): 2})
    assert read_offset_checkpoint(path) == {("t", 0): 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == [HW]  # no tmp file left over


def test_writer_refuses_entries_kafka_could_not_read(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="topic 'a b'"):
        write_offset_checkpoint(tmp_path / HW, {("a b", 0): 1})
    with pytest.raises(ValueError, match="negative partition"):
        write_offset_checkpoint(tmp_path / HW, {("t", -1): 1})
    assert not (tmp_path / HW).exists()


def test_empty_file_is_an_empty_checkpoint(tmp_path: Path) -> None:
    """Brokers create checkpoint files empty (cleaner-offset-checkpoint stays so)."""
    (tmp_path / HW).write_text("")
    assert read_offset_checkpoint(tmp_path / HW) == {}
    (tmp_path / "leader-epoch-checkpoint").write_text("")
    assert read_leader_epoch_checkpoint(tmp_path / "leader-epoch-checkpoint") == []


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / HW
    with pytest.raises(FileNotFoundError, match=str(missing)):
        read_offset_checkpoint(missing)
    with pytest.raises(FileNotFoundError, match="leader-epoch-checkpoint"):
        read_leader_epoch_checkpoint(tmp_path / "leader-epoch-checkpoint")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1\n0\n", "replication-offset-checkpoint: line 1: expected version '0', got '1'"),
        ("0\n", "replication-offset-checkpoint: line 2: expected an entry count, got end"),
        ("0\ntwo\n", "replication-offset-checkpoint: line 2: expected an entry count, got 'two'"),
        (
            "0\n2\nt 0 7\n",
            "replication-offset-checkpoint: line 2: count says 2 entries, file has 1",
        ),
        ("0\n1\nt 0 7\nt 1 8\n", "line 2: count says 1 entries, file has 2"),
        (
            "0\n1\nt 0\n",
            "replication-offset-checkpoint: line 3: expected 'topic partition offset', got 't 0'",
        ),
        ("0\n1\nt zero 7\n", "line 3: expected 'topic partition offset', got 't zero 7'"),
        ("0\n2\nt 0 7\n\n", "line 4: expected 'topic partition offset', got ''"),
        ("0\n1\nt 0 7x\n", "line 3: expected 'topic partition offset', got 't 0 7x'"),
    ],
)
def test_malformed_offset_checkpoint(text: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / HW
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        read_offset_checkpoint(path)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0\n1\n0\n", "leader-epoch-checkpoint: line 3: expected 'epoch startOffset', got '0'"),
        ("0\n1\n0 x\n", "line 3: expected 'epoch startOffset', got '0 x'"),
        ("0\n1\n0 0 0\n", "line 3: expected 'epoch startOffset', got '0 0 0'"),
        ("0\n3\n0 0\n", "line 2: count says 3 entries, file has 1"),
    ],
)
def test_malformed_leader_epoch_checkpoint(text: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_leader_epoch_checkpoint(path)


REAL = sorted(DATA.glob("*/*-checkpoint")) + sorted(DATA.glob("*/*/leader-epoch-checkpoint"))


@pytest.mark.skipif(not REAL, reason=f"no Kafka-written checkpoint fixtures under {DATA}")
def test_real_checkpoint_files_parse() -> None:
    """Checkpoints written by the 0.10.2.1, 2.1.1 and 3.3.1 brokers we ran."""
    for path in REAL:
        if path.name == "leader-epoch-checkpoint":
            epochs = read_leader_epoch_checkpoint(path)
            assert epochs and epochs[0][1] == 0
            assert epochs == sorted(epochs)
        else:
            entries = read_offset_checkpoint(path)
            assert all(offset >= 0 for offset in entries.values())
    hw = read_offset_checkpoint(DATA / "3.3.1" / HW)
    assert hw == {("chaosgz", 0): 20, ("chaos", 0): 1159, ("chaos", 1): 865}
    assert read_offset_checkpoint(DATA / "3.3.1" / "log-start-offset-checkpoint") == {}
    assert read_leader_epoch_checkpoint(DATA / "3.3.1" / "chaos-1" / "leader-epoch-checkpoint") == [
        (0, 0),
        (2, 19),
        (4, 865),
    ]


def test_real_files_round_trip_byte_for_byte(tmp_path: Path) -> None:
    """Rewriting what Kafka wrote (as the stale-HW fault does) keeps Kafka's bytes."""
    if not REAL:
        pytest.skip(f"no Kafka-written checkpoint fixtures under {DATA}")
    for path in REAL:
        out = tmp_path / path.name
        if path.name == "leader-epoch-checkpoint":
            write_leader_epoch_checkpoint(out, read_leader_epoch_checkpoint(path))
            assert out.read_bytes() == path.read_bytes()
        else:
            entries = read_offset_checkpoint(path)
            write_offset_checkpoint(out, entries)
            assert read_offset_checkpoint(out) == entries
            assert sorted(out.read_text().splitlines()) == sorted(path.read_text().splitlines())
