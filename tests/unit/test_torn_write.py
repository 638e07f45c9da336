"""``torn_write X``: the fault kind added through the step-kind registry.

The model (``reference_model.disk.torn_write``): while X is down its last batch is torn, so
its restart's log recovery drops one record and the checkpointed HW is clamped to the LEO;
nothing happens to a running broker or an empty log. The harness's half
(``harness.nemesis.faults.tear_last_batch``) is checked on real segment files written by
Kafka (tests/data/segments): the file must read back as one batch shorter plus a torn tail.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from harness.generator.scenarios import load_scenario
from harness.nemesis.faults import tear_last_batch
from harness.readback.logformat import read_segment
from reference_model.events import Event
from reference_model.profiles import generation
from reference_model.run import run_scenario
from reference_model.state import Config, PartitionState, initial_state
from reference_model.transitions import apply

DATA = Path(__file__).resolve().parents[1] / "data"
SCENARIO = DATA / "scenarios" / "torn-write-only-isr-copy.yaml"
VERSIONS = ["0.10.2.1", "2.1.1", "3.3.1", "3.3.1-kraft", "4.0.0", "4.0.0-elr"]


def _two_records(version: str) -> tuple[Config, PartitionState]:
    """A leads, B holds m1 and m2 with HW 2 in its replication-offset-checkpoint."""
    cfg = Config(("A", "B"), generation(version), "1", 1, False)
    st = initial_state(cfg, 0)
    for ev in (
        Event("produce", record="m1"),
        Event("produce", record="m2"),
        Event("fetch", 1),
        Event("fetch", 1),
        Event("fetch", 1),
        Event("checkpoint", 1),
    ):
        st = apply(cfg, st, ev)[0]
    return cfg, st


@pytest.mark.parametrize("version", VERSIONS)
def test_a_down_broker_restarts_one_record_shorter_with_its_hw_clamped(version: str) -> None:
    cfg, st = _two_records(version)
    st = apply(cfg, st, Event("crash", 1))[0]
    assert st.replicas[1].checkpoint_hw == 2
    torn, note = apply(cfg, st, Event("torn_write", 1))
    assert note == "last batch (m2) torn: recovery drops it"
    assert [e.record for e in torn.replicas[1].log] == ["m1"]
    assert torn.replicas[1].checkpoint_hw == 2  # the file is not touched
    back = apply(cfg, torn, Event("restart", 1))[0]
    assert back.replicas[1].alive
    assert back.replicas[1].hw == 1  # min(checkpointed 2, LEO 1) on load
    assert all(start <= 1 for _epoch, start in back.replicas[1].epochs)
    # KIP-966: a torn write is an unclean stop (no clean-shutdown marker) where it is seen
    assert torn.replicas[1].unclean_stop == cfg.generation.unclean_shutdown_detection


def test_a_torn_write_after_a_clean_shutdown_is_still_an_unclean_stop() -> None:
    cfg, st = _two_records("4.0.0-elr")
    st = apply(cfg, st, Event("clean_shutdown", 1))[0]
    assert not st.replicas[1].unclean_stop
    torn = apply(cfg, st, Event("torn_write", 1))[0]
    assert torn.replicas[1].unclean_stop


def test_a_running_broker_or_an_empty_log_is_not_torn() -> None:
    cfg, st = _two_records("3.3.1")
    same, note = apply(cfg, st, Event("torn_write", 0))
    assert same is st
    assert note == "A is running: a torn write needs it down (crash or power_loss first)"
    empty = initial_state(cfg, 0)
    empty = apply(cfg, empty, Event("crash", 1))[0]
    same, note = apply(cfg, empty, Event("torn_write", 1))
    assert same is empty
    assert note == "B's log is empty: nothing to tear"


@pytest.mark.parametrize("version", VERSIONS)
def test_the_only_isr_copy_torn_loses_an_acknowledged_write(version: str) -> None:
    """The scenario loses m2 because of the tear, and only then: without the step (the
    mutation) A restarts with m2 and nothing is lost."""
    sc = load_scenario(SCENARIO)
    res = run_scenario(sc, generation(version))
    assert res.prevented is None
    assert res.lost_acked == ["m2"]
    assert [e.record for e in res.final.replicas[0].log] == ["m1"]
    untorn = dataclasses.replace(sc, steps=tuple(e for e in sc.steps if e.kind != "torn_write"))
    assert run_scenario(untorn, generation(version)).lost_acked == []


@pytest.mark.parametrize("version", ["0.10.2.1", "2.1.1", "3.3.1"])
def test_tear_last_batch_leaves_a_torn_tail_kafka_would_cut(version: str, tmp_path: Path) -> None:
    src = DATA / "segments" / version / "hwchaos-0"
    pdir = tmp_path / "hwchaos-0"
    shutil.copytree(src, pdir)
    seg = pdir / "00000000000000000000.log"
    before = read_segment(seg, verify=False)
    last = before.batches[-1]
    torn = tear_last_batch(pdir)
    assert torn is not None
    assert (torn.segment, torn.offset, torn.size) == (seg.name, last.base_offset, last.size)
    after = read_segment(seg, verify=True)
    assert [b.base_offset for b in after.batches] == [b.base_offset for b in before.batches[:-1]]
    assert after.torn_tail and after.crc_errors == 0
    assert after.file_bytes == last.position + torn.kept
    assert 0 < torn.kept < last.size


def test_tear_last_batch_of_an_empty_log_is_none(tmp_path: Path) -> None:
    (tmp_path / "00000000000000000000.log").write_bytes(b"")
    assert tear_last_batch(tmp_path) is None
