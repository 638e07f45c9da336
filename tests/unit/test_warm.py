"""Which runs may share a warm cluster, and what a reused cluster's fences read (no JVM)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.db.catalogue.versions import resolve_version
from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from harness.generator.warm import warm_key
from harness.readback.log4j import without_other_topics
from reference_model.run import run_scenario


def key(name: str, version: str, backend: str = "local", controllers: int = 1) -> str | None:
    s = load_scenario(SCENARIO_DIR / f"{name}.yaml")
    v = resolve_version(version)
    return warm_key(s, run_scenario(s, v.generation), v.name, backend, controllers)


def test_runs_of_one_configuration_share_a_key_and_others_do_not() -> None:
    # two brokers, no network steps: one cluster serves both
    assert key("kip101-scenario1", "3.3.1") == key("kip101-scenario2", "3.3.1")
    assert key("kip101-scenario1", "3.3.1") is not None
    # another version, backend, quorum or broker set: another cluster
    assert key("kip101-scenario1", "3.3.1") != key("kip101-scenario1", "2.1.1")
    assert key("kip101-scenario1", "3.3.1") != key("kip101-scenario1", "3.3.1", "docker")
    assert key("kip101-scenario1", "4.0.0") != key("kip101-scenario1", "4.0.0", controllers=3)
    assert key("kip101-scenario1", "3.3.1") != key("power-loss-all-replicas", "3.3.1")
    # network runs need the run network and their own broker settings (lag, session)
    assert key("power-loss-all-replicas", "3.3.1") != key("jepsen-2013-isr-shrink", "3.3.1")
    assert key("jepsen-2013-isr-shrink", "3.3.1") != key("kip320-zombie-follower", "3.3.1")


def test_a_run_that_needs_a_spare_controller_gets_a_fresh_cluster() -> None:
    assert key("controller-failover-missed-change", "0.10.2.1") is None
    assert key("kip101-scenario1-kip-text", "0.10.2.1") is None  # an unnoticed restart
    assert key("kip101-scenario1-kip-text", "4.0.0") is not None  # KRaft: no failover


LOG = """\
[t] INFO [Log partition=hwchaos-0, dir=/d/A/data] Truncating to offset 1
[t] INFO [LogLoader partition=hwchaos-1-0, dir=/d/A/data] Loading producer state
[t] INFO Deleted log /d/A/data/hwchaos-1-0.8f3a-delete/00000000000000000000.log.deleted.
[t] INFO [Log partition=hwchaos-2-0, dir=/runs/hwchaos-0/A/data] Truncating to offset 2
[t] INFO Truncating partition hwchaos-12-0 to local high watermark 0
[t] INFO [ReplicaFetcher replicaId=2] Shutting down"""


def test_a_reused_clusters_fences_read_only_lines_of_the_runs_own_partition() -> None:
    mine = without_other_topics(LOG, "hwchaos-2", "hwchaos")
    assert mine.splitlines() == [LOG.splitlines()[3], LOG.splitlines()[5]]
    assert mine.count("Truncating") == 1  # the earlier topics' truncations are not counted
    first = without_other_topics(LOG, "hwchaos", "hwchaos")
    assert first.splitlines() == [LOG.splitlines()[0], LOG.splitlines()[5]]


def test_the_matrix_plays_one_configurations_cells_one_after_another() -> None:
    from harness.cli.matrix import Cell, reuse_order

    def cell(name: str, target: str) -> Cell:
        return Cell(load_scenario(SCENARIO_DIR / f"{name}.yaml"), target, "1", 1, False, 2, 1)

    given = [
        cell("kip101-scenario1", "3.3.1"),
        cell("power-loss-all-replicas", "3.3.1"),
        cell("kip101-scenario2", "3.3.1"),
        cell("kip101-scenario1", "model:hw"),
        cell("kip101-scenario1", "2.1.1"),
        cell("kip966-last-replica-standing", "3.3.1"),
    ]
    got = [(c.scenario.name, c.target) for c in reuse_order(given, "local")]
    assert got[0] == ("kip101-scenario1", "model:hw")  # model cells first
    on_331 = [n for n, t in got if t == "3.3.1"]
    assert got.index(("kip101-scenario1", "2.1.1")) == 5  # versions in the order given
    # each configuration's cells adjacent
    two = {"kip101-scenario1", "kip101-scenario2"}
    three = {"power-loss-all-replicas", "kip966-last-replica-standing"}
    assert {*on_331[:2]} in (two, three) and {*on_331[2:]} in (two, three)


class _Closed:
    """A stand-in cluster: the pool only keeps, hands out and closes it here."""

    def __init__(self) -> None:
        self.topic = ""
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_the_reset_is_made_when_the_next_run_takes_the_cluster_and_never_for_the_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.generator import warm

    resets: list[str] = []
    checked: list[int] = []

    def fake_reset(cluster: object, topic: str) -> list[str]:
        resets.append(topic)
        return [f"deleted topic {topic}"]

    def fake_dirty(cluster: object, topics: list[str]) -> str | None:
        checked.append(len(resets))  # the clean check comes after the reset
        return None

    monkeypatch.setattr(warm, "reset", fake_reset)
    monkeypatch.setattr(warm, "dirty", fake_dirty)
    made: list[_Closed] = []

    def build(_where: Path) -> Any:
        made.append(_Closed())
        return made[-1]

    with warm.WarmClusters(tmp_path / "w") as pool:
        first, r1 = pool.acquire("k", build, "run1")
        pool.release(first, r1)
        assert resets == [] and not r1.reused and r1.reset[0].startswith("deferred")
        second, r2 = pool.acquire("k", build, "run2")
        assert second is first and r2.reused
        assert resets == ["hwchaos"] and r2.reset_before == ["deleted topic hwchaos"]
        assert checked == [1]
        pool.release(second, r2)
        # the next run needs another configuration: the kept cluster is closed unreset
        other, _r3 = pool.acquire("other", build, "run3")
        assert other is not first and first.closed and resets == ["hwchaos"]


def test_a_reset_that_fails_when_the_cluster_is_taken_gives_a_fresh_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.db import ClusterError
    from harness.generator import warm

    def failing(cluster: object, topic: str) -> list[str]:
        raise ClusterError("B did not come back")

    monkeypatch.setattr(warm, "reset", failing)
    monkeypatch.setattr(warm, "dirty", lambda c, t: None)

    def build(_where: Path) -> Any:
        return _Closed()

    with warm.WarmClusters(tmp_path / "w") as pool:
        first, r1 = pool.acquire("k", build, "run1")
        pool.release(first, r1)
        second, r2 = pool.acquire("k", build, "run2")
        assert second is not first and getattr(first, "closed", False)
        assert not r2.reused and "the reset after run1 failed" in r2.why_fresh
        assert "B did not come back" in r2.why_fresh
