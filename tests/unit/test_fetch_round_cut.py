"""The fetch step's fence accepts a truncated follower's round only once the cut is seen done.

Kafka logs "Truncating to offset T" before it cuts the log. The fence once took a follower
whose log stayed divergent at the leader's length for 0.1 s after such a line as done,
which lets a follower paused between the line and the cut through (at load ~36, CI of 7 Dec
2026, kip101-scenario2 on a reused 2.1.1 cluster ended with A [m1, m2] beside B [m1, m3]). Now
the follower's records from the lowest offset cut to must be the leader's, however long
the line and the cut lie apart.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from harness.generator.playbook import fetch


class _Done(Exception):
    pass


def fence_done(
    monkeypatch: pytest.MonkeyPatch,
    logs: dict[str, list[tuple[int, int, str]]],
    server_log: list[str],
    epoch_on_disk: bool = True,
) -> Callable[[], bool]:
    """The ``done`` check ``_caught_up`` waits on, for follower A and leader B, reading
    ``logs`` and ``server_log`` as they are when it is called; nothing cut before."""
    caught: list[Callable[[], bool]] = []

    def wait_until(check: Callable[[], bool], *a: Any, **kw: Any) -> None:
        caught.append(check)
        raise _Done

    monkeypatch.setattr(fetch, "wait_until", wait_until)
    f = fetch.FetchSteps.__new__(fetch.FetchSteps)
    f.__dict__.update(
        {"down": set(), "timeout": 1.0, "version": SimpleNamespace(epoch_on_disk=epoch_on_disk)}
    )
    f._seen = lambda *a: None  # type: ignore[method-assign]
    f._settled = lambda name: None  # type: ignore[method-assign]
    f.leader = lambda: "B"  # type: ignore[method-assign]
    f.gone = lambda name: False  # type: ignore[method-assign]
    f.log = lambda name: list(logs[name])  # type: ignore[method-assign]
    f._server_log = lambda name: "\n".join(server_log)  # type: ignore[method-assign]
    with pytest.raises(_Done):
        f._caught_up("A", 0, 0)
    return caught[0]


def test_a_logged_truncation_counts_only_once_the_cut_is_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    logs = {"A": [(0, 0, "m1"), (1, 0, "m2")], "B": [(0, 0, "m1"), (1, 3, "m3")]}
    server_log: list[str] = []
    done = fence_done(monkeypatch, logs, server_log)
    assert not done()  # divergent, nothing logged: OffsetsForLeaderEpoch to come
    server_log.append("INFO [Log partition=hwchaos-0, dir=/d] Truncating to offset 1 (x)")
    for _ in range(3):  # logged, not cut: however long (the old rule took it after 0.1 s)
        assert not done()
    logs["A"] = [(0, 0, "m1")]
    assert not done()  # cut, m3 not fetched yet
    logs["A"] = [(0, 0, "m1"), (1, 3, "m3")]
    assert done()


def test_a_divergence_below_the_cut_is_an_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before KIP-279 a follower could truncate to an offset above where the logs part
    ("Truncating to 2 has no effect") and keep its record: the round is over."""
    logs = {"A": [(0, 0, "m1"), (1, 0, "m2")], "B": [(0, 0, "m1"), (1, 1, "m3")]}
    line = "[Log partition=hwchaos-0, dir=/d] Truncating to 2 has no effect as the largest"
    done = fence_done(monkeypatch, logs, [line])
    assert done()


def test_before_0_11_equal_lengths_end_the_round(monkeypatch: pytest.MonkeyPatch) -> None:
    logs = {"A": [(0, 0, "m1"), (1, 0, "m2")], "B": [(0, 0, "m1"), (1, 0, "m3")]}
    assert fence_done(monkeypatch, logs, [], epoch_on_disk=False)()
