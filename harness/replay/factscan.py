"""What the facts say, read without the model: their order, the first leader, the topic
configuration the brokers logged, and who heard of a leader change."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from harness.replay.parse import PARTITION_KINDS, BrokerLogs, Fact

_HEARD = (
    "become_follower",
    "become_leader",
    "leader_and_isr",
    "become_follower_010",
    "become_leader_010",
    "truncate",
)


def unheard(
    facts: list[Fact],
    pos: int,
    failed: str,
    replicas: list[str],
    st: Any,
    idx: dict[str, int],
    logged: set[str],
    names: dict[int, str],
) -> frozenset[int]:
    """Live followers whose own logs never show the leader change that follows ``failed``'s
    failure (no follower/leader line, no truncation, up to its own next start) and that the
    controller never sees fail: the LeaderAndIsr was held back from them (the KIP-320
    zombie follower)."""
    ids = {n: i for i, n in names.items()}
    out = set()
    for r in replicas:
        i = idx[r]
        if r == failed or r not in logged or not st.replicas[i].alive:
            continue
        heard = False
        for f in facts[pos + 1 :]:
            if f.kind == "broker_failure" and f.broker_id == ids.get(r, -9):
                heard = True  # it died before it could log the change: not a zombie
                break
            if f.broker != r:
                continue
            if f.kind == "start":
                break
            if f.kind in _HEARD:
                heard = True
                break
        if not heard:
            out.add(i)
    return frozenset(out)


def silent_after(facts: list[Fact], pos: int, x: str) -> bool:
    """``x`` logs nothing about the partition or itself after ``pos`` until it starts again."""
    for f in facts[pos + 1 :]:
        if f.broker != x:
            continue
        return f.kind == "start"
    return True


def restart_truncation(facts: list[Fact], pos: int, x: str) -> int | None:
    """The offset ``x`` truncated to as a follower right after (re)starting, if logged."""
    for f in facts[pos + 1 :]:
        if f.broker != x:
            continue
        if f.kind in ("start", "become_leader", "become_leader_010"):
            return None
        if f.kind == "truncate":
            return f.offset
    return None


def order_facts(brokers: Sequence[BrokerLogs], order: Sequence[str] | None) -> list[Fact]:
    """All brokers' facts in time order; with ``order`` (broker names), the facts of brokers
    whose lines carry no timestamp are played as blocks in that order (a gap the logs leave:
    each ordering that fits is played by :func:`explain`)."""
    key = lambda f: (f.ts, f.broker, f.seq)  # noqa: E731
    facts = sorted((f for b in brokers for f in b.facts), key=key)
    if order is None:
        return facts
    rank = {n: k for k, n in enumerate(order)}
    timed = [f for f in facts if f.timed]
    untimed = sorted(
        (f for f in facts if not f.timed), key=lambda f: (rank.get(f.broker, 99), f.seq)
    )
    return timed + untimed


def initial_leader(facts: list[Fact], names: dict[int, str], replicas: list[str]) -> str:
    for f in facts:
        if f.kind == "fatal_truncation" and f.leader >= 0 and names.get(f.leader) in replicas:
            return names[f.leader]
        if f.kind in ("leader_and_isr", "election", "become_follower") and f.leader >= 0:
            n = names.get(f.leader)
            if n in replicas:
                return n
        if f.kind == "become_leader" and f.broker in replicas:
            return f.broker
    return replicas[0]


_UNCLEAN_CONF = re.compile(r"unclean\.leader\.election\.enable\s*(?:->|=)\s*(true|false)")
_MIN_ISR_CONF = re.compile(r"min\.insync\.replicas\s*(?:->|=)\s*(\d+)")


def unclean_from_config(facts: Sequence[Fact]) -> bool | None:
    """unclean.leader.election.enable as the broker logged it when creating the log."""
    for f in facts:
        if f.kind == "log_created":
            m = _UNCLEAN_CONF.search(f.detail)
            if m:
                return m.group(1) == "true"
    return None


def min_insync_from_logs(facts: Sequence[Fact]) -> int | None:
    for f in facts:
        if f.kind == "log_created":
            m = _MIN_ISR_CONF.search(f.detail)
            if m:
                return int(m.group(1))
    return None


_RUNNING = PARTITION_KINDS | {"started", "shutdown_begin", "shutdown_complete", "session_expired"}
"""Fact kinds a broker logs only while it runs, after its start line (a start-up logs its
config dump before the start line, its logs' loading after it)."""


def running_at_start(facts: list[Fact]) -> set[str]:
    """The brokers whose input begins mid-life: each logs a partition or lifecycle line
    before its first start line, so that start line is a restart (a crash, or a stop, in
    between), not the broker's first start.

    Why: an SRE's logs of a long-running cluster rarely reach back to each broker's first
    start; a slice that does not (a reused cluster's run, 8 Dec 2026: 0.10.2.1
    kip101-scenario1, A crashed and restarted mid-slice) read the restart as A's first start
    and A's lines after its crash as "cut off, not dead", so its log was kept where the
    restart truncated it: the wrong lost records and final logs.
    """
    first_start: dict[str, int] = {}
    first_running: dict[str, int] = {}
    for pos, f in enumerate(facts):
        if not f.broker:
            continue
        if f.kind == "start":
            first_start.setdefault(f.broker, pos)
        elif f.kind in _RUNNING:
            first_running.setdefault(f.broker, pos)
    return {b for b, p in first_start.items() if first_running.get(b, p) < p}
