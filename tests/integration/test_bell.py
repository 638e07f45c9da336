"""The doorbell (harness.generator.playbook.bell) on real brokers.

What it rests on, each able to fail: one record appended to the bell answers the Fetch a
paused follower left parked at the leader, at once (``replica.fetch.wait.max.ms`` is 30 s
here, so nothing else answers it within the test's bound; with the ring made a no-op the
test fails), and the record is in the leader's log when the ring returns; a broker that
does not lead the bell is not rung; and a reused cluster's reset deletes the bell with the
run's topic (controller and disk), so the clean check passes. ZooKeeper mode (0.10.2.1,
3.3.1) and KRaft (4.0.0): each version's purgatory completes the parked Fetch from its own
code path (bell.py's docstring).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.checker.hw import HARNESS_NOTE
from harness.db import BrokerUnavailable
from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.versions import KafkaVersion, resolve_version
from harness.db.runtime.local import LocalCluster
from harness.db.runtime.process import jvms_under
from harness.generator.playbook import Playbook
from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from harness.generator.warm_reset import dirty, reset
from harness.readback import tcp
from reference_model.run import run_scenario

pytestmark = pytest.mark.broker

TIMER_MS = 30_000  # the leader parks a Fetch this long: only a ring answers it sooner


def required(version: str) -> KafkaVersion:
    """``version``'s entry; the test skips, saying why, when its release tree is missing."""
    v = resolve_version(version)
    try:
        find_tree(v)
    except BrokerUnavailable as exc:
        pytest.skip(str(exc))
    return v


def wait(check: Callable[[], object], what: str, timeout: float) -> float:
    """Poll ``check`` until true; the seconds it took (fails past ``timeout``)."""
    t0 = time.monotonic()
    while not check():
        assert time.monotonic() - t0 < timeout, f"{what} within {timeout:.0f}s"
        time.sleep(0.02)
    return time.monotonic() - t0


@pytest.mark.parametrize("version", ["0.10.2.1", "3.3.1", "4.0.0"])
def test_a_ring_answers_the_fetch_a_paused_follower_left_parked(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HWCHAOS_DOORBELL", raising=False)
    v = required(version)
    scenario = load_scenario(SCENARIO_DIR / "kip101-scenario1.yaml")  # B leads, A follows
    cluster = LocalCluster(v, ["A", "B"], tmp_path / "c")
    for spec in cluster.brokers.values():
        spec.props["replica.fetch.wait.max.ms"] = str(TIMER_MS)
    try:
        cluster.start()
        book = Playbook(cluster, scenario, v, run_scenario(scenario, v.generation))
        try:
            book.setup()  # the bell, then the test topic; A held with a Fetch parked at B
            assert book.bell is not None and book.bell.leads("B")
            a, b = cluster.host_pid("A"), cluster.host_pid("B")
            assert a is not None and b is not None
            # A's last Fetch went out before the pause and B holds it: nothing came back
            wait(lambda: tcp.answered(a, b) is False, "A's Fetch parked at B", 10.0)
            assert not book.bell.ring("A", 0, [], "test"), "A does not lead the bell"
            assert book.bell.not_leading == 1
            assert book._ring("B", ["A"], "test")
            # rung means appended: the record is in B's bell log when the ring returns (a
            # ring sent and not waited for was appended in the next step, docs/ci.md)
            assert book.bell.rings[-1]["appended"] is True
            bell_dir = cluster.partition_dir("B", book.bell.topic)
            assert sum(f.stat().st_size for f in bell_dir.glob("*.log")) > 0
            took = wait(lambda: tcp.answered(a, b) is True, "B's answer in A's socket", 5.0)
            assert took < TIMER_MS / 1000 / 3, took
            assert [r["at"] for r in book.bell.rings] == ["B"]
            assert book.finish()["leader"] == "B"
        finally:
            book.close()
        # the reused cluster's reset takes the bell with the run's topic
        bell = book.bell.topic
        done = reset(cluster, cluster.topic)
        assert f"deleted the doorbell {bell}" in done, done
        view = cluster.metadata()
        try:
            assert view.partition(bell) is None
        finally:
            view.close()
        assert not any(cluster.partition_dir(n, bell).exists() for n in cluster.brokers)
        assert dirty(cluster, [cluster.topic]) is None
    finally:
        cluster.close()
        assert jvms_under(tmp_path) == []


def test_a_ring_the_leader_did_not_acknowledge_is_noted_until_settled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ring whose wait gives up is no proof that nothing was appended: the leader, paused
    while the Produce sat in its socket, appends it when it runs again, in whatever step is
    playing then. Every step from that ring on says so (a harness note), so a HW that
    differs there is read as the harness's miss, not as evidence on the model."""
    monkeypatch.delenv("HWCHAOS_DOORBELL", raising=False)
    v = required("0.10.2.1")
    scenario = load_scenario(SCENARIO_DIR / "kip101-scenario1.yaml")  # B leads, A follows
    cluster = LocalCluster(v, ["A", "B"], tmp_path / "c")
    try:
        cluster.start()
        book = Playbook(cluster, scenario, v, run_scenario(scenario, v.generation))
        try:
            book.setup()
            bell = book.bell
            assert bell is not None and bell.leads("B")
            assert bell.ring("B", 1, [], "test")  # connected, metadata known, appended
            assert bell.unsettled(1) == ""
            bell_dir = cluster.partition_dir("B", bell.topic)

            def size() -> int:
                return sum(f.stat().st_size for f in bell_dir.glob("*.log"))

            before = size()
            cluster.signal("B", signal.SIGSTOP)
            try:
                assert not bell.ring("B", 2, ["A"], "test"), "a paused leader acknowledged"
                assert bell.rings[-1]["appended"] is False
                note = bell.unsettled(2)
                assert note.startswith("harness: doorbell ring 2 (step 2) at B not acknowledged")
                assert size() == before
            finally:
                cluster.signal("B", signal.SIGCONT)
            # the Produce waited in B's socket: B appends it now, after the ring gave up
            wait(lambda: size() > before, "the late ring in B's bell log", 10.0)
            later = bell.unsettled(3)
            assert "doorbell ring 2 (step 2)" in later and later.startswith("harness: "), later
            # and the checker reads such a note as the harness's own (missed_window's test)
            assert HARNESS_NOTE in later
        finally:
            book.close()
    finally:
        cluster.close()
        assert jvms_under(tmp_path) == []


def test_a_doorbell_not_led_in_time_is_declined_and_the_run_plays_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bell only shortens waits: when it is not led by the test partition's first leader
    within its bound (CI, 8 Dec 2026: the KRaft controller fenced that broker under load
    and moved the bell's leadership for good), the run goes on without it, says why in
    run.json, and still matches the model. Here the bound is 0 s, so the first look (right
    after the topic's creation, before any leader) decides."""
    import harness.generator.playbook as playbook
    from harness.trial import trial

    monkeypatch.delenv("HWCHAOS_DOORBELL", raising=False)
    monkeypatch.setattr(playbook, "BELL_SETUP", 0.0)
    v = required("0.10.2.1")
    scenario = load_scenario(SCENARIO_DIR / "kip101-scenario1.yaml")
    t = trial(scenario, v, "local", tmp_path / "run", "declined", lambda _m: None)
    assert t.info.verdict == "match", t.info.extra.get("failure")
    declined = t.record.doorbell.get("declined", "")
    assert "the run plays without a doorbell" in declined, t.record.doorbell
    assert "rings" not in t.record.doorbell
    assert jvms_under(tmp_path) == []
