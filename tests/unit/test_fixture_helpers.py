"""The fixture helpers that find loss, on real segment files without a broker.

``HwchaosCluster.lost_acked`` reads the leader's log from its ``.log`` segment (written here
in Kafka's v2 format) and must both find a missing record and keep a present one: the
mutation a helper that always answered [] (or everything) would fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.pytest_plugin.fixtures import HwchaosCluster, _acked_entry
from tests.unit.kafka_encoding import Rec, v2_batch


class _FakeCluster:
    """Just what lost_acked reads: partition dirs; the leader is given, not looked up."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def partition_dir(self, name: str, topic: str) -> Path:
        return self.root / name / f"{topic}-0"


class _Msg:
    """A delivered confluent_kafka.Message, as the delivery callback sees it."""

    def __init__(self, rec: str, offset: int) -> None:
        self._rec, self._off = rec, offset

    def key(self) -> bytes:
        return self._rec.encode()

    def value(self) -> bytes:
        return self._rec.encode()

    def offset(self) -> int:
        return self._off


def _handle(tmp_path: Path, logs: dict[str, list[str]], leader: str) -> HwchaosCluster:
    for name, recs in logs.items():
        d = tmp_path / name / "orders-0"
        d.mkdir(parents=True)
        batch = v2_batch(0, [Rec(r.encode(), r.encode()) for r in recs]) if recs else b""
        (d / "00000000000000000000.log").write_bytes(batch)
    h = HwchaosCluster(_FakeCluster(tmp_path), None, list(logs))  # type: ignore[arg-type]
    h.wait_for_leader = lambda topic="", not_=None, timeout=0.0: leader  # type: ignore[method-assign]
    return h


def test_record_ids_are_unique_per_run(tmp_path: Path) -> None:
    a, b = _handle(tmp_path / "a", {"A": []}, "A"), _handle(tmp_path / "b", {"A": []}, "A")
    ids = [a.record_id() for _ in range(3)] + [b.record_id() for _ in range(3)]
    assert len(set(ids)) == 6


def test_lost_acked_reads_the_leaders_log(tmp_path: Path) -> None:
    h = _handle(tmp_path, {"A": ["x1", "x2", "x3"], "B": ["x1"]}, leader="B")
    assert h.log("A", "orders") == [(0, 0, "x1"), (1, 0, "x2"), (2, 0, "x3")]
    assert h.lost_acked(["x1", b"x2", "x3"], "orders") == ["x2", "x3"]
    # messages: the acknowledged offset counts too (x1 at offset 1 is not x1 at offset 0)
    assert h.lost_acked([_Msg("x1", 0), _Msg("x1", 1)], "orders") == ["x1"]
    assert h.lost == ["x2", "x3", "x1"]


def test_nothing_lost_when_the_leader_holds_everything(tmp_path: Path) -> None:
    h = _handle(tmp_path, {"A": ["x1", "x2"], "B": []}, leader="A")
    assert h.lost_acked([_Msg("x1", 0), _Msg("x2", 1)], "orders") == []
    assert h.lost == []


def test_bad_acked_entries_are_named() -> None:
    with pytest.raises(TypeError, match="expected record ids or delivered messages"):
        _acked_entry(3.5)
    entry: Any = _Msg("k", -1)
    assert _acked_entry(entry) == ("k", None)


def test_run_folders_are_claimed_by_creating_them(tmp_path: Path) -> None:
    """Two xdist workers naming a run folder in the same second each get their own: the
    folder is created when chosen, and creation succeeds in one process only."""
    from harness.pytest_plugin.options import _unique

    first = _unique(tmp_path / "runs" / "s__3.3.1__t")
    second = _unique(tmp_path / "runs" / "s__3.3.1__t")
    assert first.is_dir() and second.is_dir() and first != second
    assert second.name == "s__3.3.1__t-2"
