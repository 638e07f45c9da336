"""A produce while the partition is observed offline waits for no parked Fetch.

``ProduceSteps._parked_fetches_answered`` waits, before a record goes to the leader, until no
paused follower's Fetch is parked there (a record would complete it behind the script). With
no leader (the controller's view names none) no broker takes the record, so nothing can be
completed; the wait then used to run the timer's 2 s out for nothing (kip279 on
3.3.1-kraft). With a leader, the fence is still waited for.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from harness.generator.playbook import produce


def steps(leader: int) -> produce.ProduceSteps:
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
    p.view = lambda: SimpleNamespace(leader=leader)  # type: ignore[method-assign]
    p._ring = lambda *a: None  # type: ignore[method-assign]
    return p


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []

    def wait_until(check: Any, what: str, timeout: float, *a: Any) -> None:
        seen.append(what)

    monkeypatch.setattr(produce, "wait_until", wait_until)
    return seen


def test_offline_waits_for_nothing(waits: list[str]) -> None:
    steps(leader=-1)._parked_fetches_answered()
    assert waits == []


def test_with_a_leader_the_fence_is_waited_for(waits: list[str]) -> None:
    steps(leader=1)._parked_fetches_answered()
    assert waits == ["parked fetches to expire"]
