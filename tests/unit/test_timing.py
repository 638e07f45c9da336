"""Where a run's time goes (harness.timing): fences land in the phase they ran in, a fence
that times out says so, nothing is recorded outside a run, and the report shows it."""

from __future__ import annotations

import pytest

from harness import timing
from harness.checker.report import _timings_section
from harness.generator.playbook.fences import FenceTimeout, wait_until


def test_fences_are_recorded_in_the_innermost_open_phase() -> None:
    t = timing.Timings()
    with timing.recording(t):
        with timing.phase("cluster_start"):
            timing.fence("ZooKeeper to listen", 0.5)
        with timing.phase("step 1"):
            wait_until(lambda: True, "the leader to answer", 1.0)
            with pytest.raises(FenceTimeout):
                wait_until(lambda: False, "something that never happens", 0.2)
    names = [p.name for p in t.phases]
    assert names == ["cluster_start", "step 1"]
    assert [f.what for f in t.phases[0].fences] == ["ZooKeeper to listen"]
    step = t.phases[1]
    assert [(f.what, f.ok) for f in step.fences] == [
        ("the leader to answer", True),
        ("something that never happens", False),
    ]
    # the failed fence waited its whole bound, and the phase holds it
    assert step.fences[1].seconds >= 0.2
    assert step.seconds >= step.fence_seconds() >= 0.2
    assert t.seconds("step 1") == step.seconds
    assert t.seconds("never") == 0.0


def test_nothing_is_recorded_outside_a_run() -> None:
    with timing.phase("orphan") as p:
        timing.fence("x", 1.0)
        wait_until(lambda: True, "y", 1.0)
    assert p is None
    t = timing.Timings()
    with timing.recording(t):
        timing.fence("outside any phase", 1.0)  # no open phase: dropped, not misfiled
    assert t.phases == []


def test_to_json_and_the_report_section_name_the_slowest_fence() -> None:
    t = timing.Timings()
    with timing.recording(t), timing.phase("step 10"):
        timing.fence("A to register", 4.153)
        timing.fence("A to rejoin the ISR", 0.2, ok=False)
    doc = t.to_json()
    (p,) = doc["phases"]
    assert p["name"] == "step 10" and p["fence_seconds"] == pytest.approx(4.353)
    html = _timings_section({**doc, "cpu_seconds": {"harness": 0.5, "jvms": 8.0}})
    assert "Where the time went" in html
    assert "A to register (4.15s)" in html
    assert "brokers 8.0s" in html
    assert _timings_section(None) == ""
    line = timing.summary(doc, 12.34)
    assert line.startswith("took 12.3s: cluster start 0.0s, steps 0.0s, stop 0.0s")
    assert line.endswith("slowest fence: step 10: A to register (4.2s)")


def test_a_fence_polls_soon_then_every_100_ms(monkeypatch: pytest.MonkeyPatch) -> None:
    """wait_until polls again after 10 ms, doubling to 100 ms (fences.POLL_FIRST/POLL_MAX):
    a fence reached a few ms after the step's action does not wait for a 100 ms tick."""
    import time

    naps: list[float] = []
    monkeypatch.setattr(time, "sleep", naps.append)  # tenacity's nap: record, do not sleep
    calls = iter([False] * 7 + [True])
    assert wait_until(lambda: next(calls), "the seventh poll", 5.0) is True
    assert naps == pytest.approx([0.01, 0.02, 0.04, 0.08, 0.1, 0.1, 0.1])


def test_a_fetch_steps_fence_polls_at_most_every_20_ms(monkeypatch: pytest.MonkeyPatch) -> None:
    """``poll_max`` caps the doubling: the fetch step's fences (``fetch.ROUND_POLL``) notice
    the end of a round within 20 ms, inside the window in which the follower is paused."""
    import time

    from harness.generator.playbook.fetch import ROUND_POLL

    naps: list[float] = []
    monkeypatch.setattr(time, "sleep", naps.append)
    calls = iter([False] * 5 + [True])
    assert wait_until(lambda: next(calls), "a round", 5.0, poll_max=ROUND_POLL) is True
    assert naps == pytest.approx([0.01, 0.02, 0.02, 0.02, 0.02])
