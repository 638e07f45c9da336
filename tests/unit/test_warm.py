"""Which runs may share a warm cluster, and what a reused cluster's fences read (no JVM)."""

from __future__ import annotations

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
