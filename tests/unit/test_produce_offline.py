"""A produce while the partition is observed offline waits for no parked Fetch.

``ProduceSteps._parked_fetches_answered`` waits, before a record goes to the leader, until no
paused follower's Fetch is parked there (a record would complete it behind the script). With
no leader (the controller's view names none) no broker takes the record, so nothing can be
completed; the wait then used to run the timer's 2 s out for nothing (kip279 on
3.3.1-kraft). With a leader, the fence is still waited for, at the leader the step read:
the step reads the controller's view once (a leader elected between a fence that saw none
and a send that saw one went unfenced).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from harness.generator.playbook import produce


def steps(*leaders: int) -> produce.ProduceSteps:
    """Steps whose controller view names ``leaders`` at successive reads (the last after)."""
    p = produce.ProduceSteps.__new__(produce.ProduceSteps)
    p.__dict__.update(
        {
            "by_id": {1: "A", 2: "B"},
            "names": ["A", "B"],
            "held": set(),
            "user_paused": {"B"},  # a paused follower that may have a Fetch parked
            "down": set(),
            "_paused_at": 0.0,
            "_answered_after_pause": {"A": 0.0},
            "cluster": SimpleNamespace(
                brokers={"A": SimpleNamespace(props={}), "B": SimpleNamespace(props={})},
                host_pid=lambda name: None,  # unknown: only the timer could end the wait
            ),
        }
    )
    reads = list(leaders)
    p.view = lambda: SimpleNamespace(  # type: ignore[method-assign]
        leader=reads.pop(0) if len(reads) > 1 else reads[0]
    )
    p._ring = lambda *a: None  # type: ignore[method-assign]
    for stub in ("_wake_leader", "_fresh_producer", "_uncut"):
        setattr(p, stub, lambda *a: None)
    p.client_cut_from_stale = lambda: ([], "")  # type: ignore[method-assign]
    p._produce_offline = lambda ev, note: "offline"  # type: ignore[method-assign]
    p._produce_to_leader = lambda ev, note: "to the leader"  # type: ignore[method-assign]
    p.producer = SimpleNamespace(leader_id=lambda: 1)
    p.timeout = 1.0
    p._seen = lambda *a: None  # type: ignore[method-assign]
    return p


EV = SimpleNamespace(replica=-1, record="m1")


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []

    def wait_until(check: Any, what: str, timeout: float, *a: Any) -> None:
        seen.append(what)

    monkeypatch.setattr(produce, "wait_until", wait_until)
    return seen


def test_offline_waits_for_nothing(waits: list[str]) -> None:
    assert steps(-1).do_produce(0, EV, "") == "offline"  # type: ignore[arg-type]
    assert waits == []


def test_with_a_leader_the_fence_is_waited_for(waits: list[str]) -> None:
    assert steps(1).do_produce(0, EV, "") == "to the leader"  # type: ignore[arg-type]
    assert "parked fetches to expire" in waits


def test_a_leader_elected_after_the_read_is_not_sent_to_unfenced(waits: list[str]) -> None:
    """Offline at the step's read, a leader at the next: the offline produce, no fence."""
    assert steps(-1, 1).do_produce(0, EV, "") == "offline"  # type: ignore[arg-type]
    assert "parked fetches to expire" not in waits


def test_the_fence_is_at_the_leader_read_once(waits: list[str]) -> None:
    """A leader at the step's read, offline after: still fenced (at the leader read)."""
    p = steps(1, -1)
    assert p.do_produce(0, EV, "") == "to the leader"  # type: ignore[arg-type]
    assert "parked fetches to expire" in waits
