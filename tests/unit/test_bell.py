"""The doorbell (harness.generator.playbook.bell): which runs get one, its name, and what
the fences read beside it (no JVM; the ring on real brokers is tests/integration/test_bell.py)."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from harness.db.catalogue.versions import resolve_version
from harness.db.names import bell_topic
from harness.generator.playbook.bell import ENV, wanted
from harness.generator.playbook.fetch import RECORDED, TRUNCATED_TO
from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from harness.readback.log4j import without_other_topics, without_partition
from reference_model.run import run_scenario


def wants(name: str, version: str = "3.3.1") -> bool:
    s = load_scenario(SCENARIO_DIR / f"{name}.yaml")
    return wanted(s, run_scenario(s, resolve_version(version).generation))


def test_runs_whose_requests_or_links_are_scripted_get_no_bell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert wants("kip101-scenario1") and wants("power-loss-all-replicas", "4.0.0")
    assert not wants("controller-queue-two-leader-changes")  # held LeaderAndIsr
    assert not wants("controller-failover-missed-change", "0.10.2.1")  # a failover
    assert not wants("kip101-scenario1-kip-text", "0.10.2.1")  # an unnoticed restart
    assert wants("kip101-scenario1-kip-text", "4.0.0")  # KRaft: no failover played
    assert not wants("jepsen-2013-isr-shrink")  # cut links
    assert not wants("kip320-zombie-follower")
    monkeypatch.setenv(ENV, "0")
    assert not wants("kip101-scenario1")


def test_the_bell_is_named_apart_from_the_test_topics_family() -> None:
    assert bell_topic("hwchaos") == "hwchaos-bell"
    assert bell_topic("hwchaos-3") == "hwchaos-3-bell"
    # 0.10.2.1 cuts a deleted partition's dir name at its first '.' and cannot start
    assert "." not in bell_topic("hwchaos-3")
    # the test partition's own line patterns do not take the bell's for the test topic's
    line = (
        "[Partition hwchaos-3-bell-0 broker=1] Recorded replica 2 log end offset (LEO) "
        "position 4 for partition hwchaos-3-bell-0."
    )
    assert RECORDED.search(line) is not None  # a Recorded line, but of the bell:
    mine = re.compile(r"(?<![\w.-])hwchaos-3-0(?![\w-])")
    assert not mine.search(line)


LOG = """\
[t] INFO Truncating log hwchaos-bell-0 to offset 2. (kafka.log.Log)
[t] INFO Truncating log hwchaos-0 to offset 1. (kafka.log.Log)
[t] ERROR [ReplicaFetcherThread-0-1], Error for partition [hwchaos-bell,0] to broker 1
[t] INFO [Log partition=hwchaos-3-bell-0, dir=/d] Truncating to offset 5 (kafka.log.Log)
[t] INFO [ReplicaFetcher replicaId=2] Shutting down"""


def test_the_fetch_fence_counts_only_the_test_partitions_truncations() -> None:
    def offsets(text: str) -> list[int]:
        return [int(a or b) for a, b in TRUNCATED_TO.findall(text)]

    # without the filter the bell's truncations would count (to 2 and to 5)
    assert offsets(LOG) == [2, 1, 5]
    # a reused cluster's run (hwchaos-4): every bell's lines go, and the earlier topic's
    assert offsets(without_other_topics(LOG, "hwchaos-4", "hwchaos")) == []
    assert offsets(without_other_topics(LOG, "hwchaos", "hwchaos")) == [1]
    first = without_partition(LOG, "hwchaos-bell")
    assert offsets(first) == [1, 5]
    assert "[hwchaos-bell,0]" not in first  # 0.10's way of naming it too
    reused = without_partition(LOG, "hwchaos-3-bell")
    assert offsets(reused) == [2, 1]
    assert without_partition(LOG, "hwchaos-bell").count("Shutting down") == 1


# ------------------------------------------------------------------ when a fetch step rings


class _Bell:
    def __init__(self) -> None:
        self.rung: list[str] = []

    def ring(self, leader: str, step: int, waiting: list[str], why: str) -> bool:
        self.rung.append(leader)
        return True


class _Cluster:
    topic = "hwchaos"

    def host_pid(self, name: str) -> int:
        return {"A": 101, "B": 102, "C": 103}[name]

    def log_dir(self, name: str) -> str:
        return name


def book(
    monkeypatch: pytest.MonkeyPatch,
    in_flight: dict[str, bool],
    hw: dict[str, int],
    next_fetch: str | None = None,
) -> tuple[Any, _Bell]:
    """A fetch step of B (record-less, waiting for the HW) at leader A, C paused: only the
    state the ringer reads, the kernel's and the checkpoints' answers given."""
    from harness.generator.playbook import fetch, ring
    from reference_model.events import Event

    monkeypatch.setattr(ring, "stopped", lambda pid: False)
    monkeypatch.setattr(
        ring.tcp, "nothing_in_flight", lambda pid, lead: not in_flight[{103: "C"}[pid]]
    )
    monkeypatch.setattr(ring, "checkpointed_hw", lambda d, t, p: hw[d])
    b = fetch.FetchSteps.__new__(fetch.FetchSteps)
    bell = _Bell()
    b.__dict__.update(
        cluster=_Cluster(), bell=bell, names=["A", "B", "C"], held={"C"}, user_paused=set(),
        down=set(), current_step=4, next_event=None,
    )  # fmt: skip
    if next_fetch is not None:
        b.next_event = Event("fetch", replica=["A", "B", "C"].index(next_fetch))
    b.leader_hw = lambda lead=None: 1  # type: ignore[method-assign]
    b.leo = lambda name: 1  # type: ignore[method-assign]
    return b, bell


def rings_after(b: Any) -> bool:
    """Drive the ringer past its first-ring delay; whether it rang."""
    ring = b._bell_ringer("B", "A")
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline and not b.bell.rung:
        ring()
        time.sleep(0.01)
    return bool(b.bell.rung)


def test_a_fetch_step_rings_only_when_no_other_follower_learns_from_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # C has nothing parked at A: ring
    b, bell = book(monkeypatch, {"C": False}, {"C": 0})
    assert rings_after(b) and bell.rung == ["A"]
    # C's Fetch is parked at A and its answer would carry HW 1 where C has 0: the timer
    # answers it after whatever the next step does (a crash of A: C never has it)
    b, bell = book(monkeypatch, {"C": True}, {"C": 0})
    assert not rings_after(b)
    # ... unless the answer tells C nothing (its HW is already the leader's) ...
    b, bell = book(monkeypatch, {"C": True}, {"C": 1})
    assert rings_after(b)
    # ... or C's own fetch is what the step plays next (it processes that answer then)
    b, bell = book(monkeypatch, {"C": True}, {"C": 0}, next_fetch="C")
    assert rings_after(b)
    b, bell = book(monkeypatch, {"C": True}, {"C": 0}, next_fetch="A")
    assert not rings_after(b)
