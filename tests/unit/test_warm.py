"""Which runs may share a warm cluster, and what a reused cluster's fences read (no JVM)."""

from __future__ import annotations

import subprocess
import sys
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


def test_within_a_configuration_the_run_that_leaves_most_behind_is_played_last() -> None:
    """kip966-last-replica-standing leaves B and C halted on 0.10.2.1 (the model's last
    state): played last in its configuration, its reset (two restarts and a deletion the
    controller may stall on) is never made. On 3.3.1 it leaves nothing: names decide."""
    from harness.cli.matrix import reuse_order
    from harness.generator.warm import leftover

    three = [
        "kip966-last-replica-standing",
        "acks-all-min-isr2-one-crash",
        "power-loss-all-replicas",
        "kraft-isr-shrink-epoch",
    ]
    v0 = resolve_version("0.10.2.1")
    kip966 = load_scenario(SCENARIO_DIR / "kip966-last-replica-standing.yaml")
    assert leftover(run_scenario(kip966, v0.generation)) == 4
    stale = load_scenario(SCENARIO_DIR / "stale-hw-checkpoint.yaml")
    assert leftover(run_scenario(stale, v0.generation)) == 1  # A left down
    # on KRaft the kip-text run stops before restarting A, whose session still lives: its
    # reset waits for the session to lapse, so it weighs as much as a halt, and goes last
    text = load_scenario(SCENARIO_DIR / "kip101-scenario1-kip-text.yaml")
    v4 = resolve_version("4.0.0")
    assert leftover(run_scenario(text, v4.generation)) == 2
    assert leftover(run_scenario(stale, v4.generation)) == 1
    two = ["kip101-scenario1-kip-text", "stale-hw-checkpoint", "kip101-scenario1"]
    got = [c.scenario.name for c in reuse_order([_cell(n, "4.0.0") for n in two], "local")]
    assert got[-1] == "kip101-scenario1-kip-text", got
    for target, last in (("0.10.2.1", "kip966-last-replica-standing"),
                         ("3.3.1", "power-loss-all-replicas")):  # fmt: skip
        got = [c.scenario.name for c in reuse_order([_cell(n, target) for n in three], "local")]
        assert got[-1] == last, got
        assert sorted(got) == sorted(three)


def test_each_cluster_starts_while_a_run_waits_on_kafkas_clock() -> None:
    """On every catalogue version, as ``matrix`` plays the catalogue: a version starts with a
    run that waits on one of Kafka's timers (its cluster's start waits either way), each
    configuration's runs are adjacent, and a configuration whose first run is short follows
    a clock-bound run, but for as many as there are more such configurations than
    clock-bound ones (each can hide one start), and those with the most steps."""
    from harness.cli.matrix import reuse_order
    from harness.db.catalogue.versions import CATALOGUE
    from harness.generator.scenarios import catalogue
    from harness.generator.warm import clock_bound

    names = [load_scenario(p).name for p in catalogue()]
    for target in CATALOGUE:
        v = resolve_version(target)
        played = [c.scenario for c in reuse_order([_cell(n, target) for n in names], "local")]
        assert sorted(s.name for s in played) == sorted(names)
        runs = [(s, run_scenario(s, v.generation)) for s in played]
        keys = [warm_key(s, p, v.name, "local", 1) for s, p in runs]
        long = [clock_bound(s, p) for s, p in runs]
        assert long[0], (target, played[0].name)
        starts = [
            k for k in range(len(runs)) if keys[k] is None or keys[k] != keys[k - 1] or k == 0
        ]
        shared = [k for k in keys if k is not None]
        for k in set(shared):  # adjacent
            at = [i for i, x in enumerate(keys) if x == k]
            assert at == list(range(at[0], at[-1] + 1)), (target, k)
        unit_ends = [*(s - 1 for s in starts[1:]), len(runs) - 1]
        n_long = sum(long[e] for e in unit_ends)
        n_short = len(unit_ends) - n_long
        unhidden = [played[k].name for k in starts[1:] if not long[k] and not long[k - 1]]
        assert len(unhidden) == max(0, n_short - n_long), (target, unhidden)
    # 0.10.2.1: five short configurations, four clock-bound ones; the one left is the
    # single run with the most steps
    v = resolve_version("0.10.2.1")
    played = [c.scenario.name for c in reuse_order([_cell(n, v.name) for n in names], "local")]
    assert played[-1] == "controller-failover-missed-change", played


def test_play_order_keeps_versions_apart_and_alternates() -> None:
    from harness.generator.warm import Slot, play_order

    def s(group: int, key: str | None, name: str, long: bool, steps: int = 5) -> Slot:
        return Slot(group, key, (key or "~", 0, name), steps, long)

    given = {
        "a1": s(0, "a", "a1", False), "a2": s(0, "a", "a2", False),
        "x": s(0, None, "x", True), "y": s(0, None, "y", False, 9), "z": s(0, None, "z", False, 3),
        "w": s(1, None, "w", False), "v": s(1, None, "v", True),
    }  # fmt: skip
    got = play_order(list(given), lambda n: given[n])
    # version 0: the clock-bound x first, then the shared configuration a (first among the
    # short ones), then z and y by steps; version 1 after it, its clock-bound v first
    assert got == ["x", "a1", "a2", "z", "y", "v", "w"], got


def _cell(name: str, target: str) -> Any:
    from harness.cli.matrix import Cell

    return Cell(load_scenario(SCENARIO_DIR / f"{name}.yaml"), target, "1", 1, False, 2, 1)


def test_matrix_jobs_play_one_configurations_cells_in_batches_each_on_one_warm_pool() -> None:
    from harness.cli.matrix import cell_key, job_batches, reuse_order

    two = ["kip101-scenario1", "kip101-scenario2", "kip279-fast-leader-change"]
    three = ["power-loss-all-replicas", "kip966-last-replica-standing"]
    given = [_cell(n, "3.3.1") for n in [*two, *three, "controller-failover-missed-change"]]
    given += [_cell(n, "0.10.2.1") for n in two]
    batches = job_batches(reuse_order(given, "local"), "local", 2)
    played = [c.cell_id for b in batches for c in b]
    assert sorted(played) == sorted(c.cell_id for c in given)  # every cell once
    for b in batches:
        keys = {cell_key(c, "local") for c in b}
        assert len(keys) == 1, f"a batch mixes configurations: {[c.cell_id for c in b]}"
        assert len(b) <= 5  # at most a 1/2 share of the 9 cells
        if keys == {None}:
            assert len(b) == 1  # a cell that needs a fresh cluster is a batch alone
    assert [len(b) for b in batches] == sorted((len(b) for b in batches), reverse=True)
    names = {frozenset(c.scenario.name for c in b) for b in batches if len(b) > 1}
    assert frozenset(two) in names and frozenset(three) in names
    # one job: nothing split; many jobs: a configuration is cut into shares
    assert max(len(b) for b in job_batches(reuse_order(given, "local"), "local", 1)) == 3
    assert max(len(b) for b in job_batches(reuse_order(given, "local"), "local", 9)) == 1


def test_a_matrix_job_plays_its_batch_on_one_pool_each_cell_logging_to_its_folder(
    tmp_path: Path,
) -> None:
    """The child's side of a batch (harness.cli.matrix_jobs.main), run in a subprocess with
    the trial replaced: every cell gets the same warm pool, rooted where the matrix said,
    and its own matrix.log; without --warm, none."""
    from harness.cli.matrix_jobs import cell_command

    cells = []
    for n in ("kip101-scenario1", "kip101-scenario2"):
        folder = tmp_path / n
        folder.mkdir()
        (folder / "scenario.yaml").write_text((SCENARIO_DIR / f"{n}.yaml").read_text())
        cells.append((folder, "3.3.1", n))
    shim = tmp_path / "shim.py"
    shim.write_text(
        "import sys, harness.trial as t\n"
        "from harness.cli import matrix_jobs\n"
        "def fake(scenario, target, backend, folder, cell_id, warm=None, aside=None):\n"
        "    print(f'played {cell_id} aside={aside} pool={id(warm) if warm else None} "
        'root={getattr(warm, "root", None)}\', flush=True)\n'
        "    return True\n"
        "t.run_on_brokers = fake\n"
        "sys.exit(matrix_jobs.main(sys.argv[1:]))\n"
    )
    for warm_root in (tmp_path / "warm-clusters", None):
        cmd = cell_command(cells, "local", warm_root)
        assert cmd[1:3] == ["-m", "harness.cli.matrix_jobs"]
        res = subprocess.run([sys.executable, str(shim), *cmd[3:]], capture_output=True)
        assert res.returncode == 0, res.stderr.decode()
        lines = [(f / "matrix.log").read_text().splitlines()[-1] for f, _t, _i in cells]
        assert [ln.split()[1] for ln in lines] == ["kip101-scenario1", "kip101-scenario2"]
        # a first run the harness did not play as scripted goes beside cells/, not in it
        assert {ln.split()[2] for ln in lines} == {f"aside={tmp_path.parent / 'played-again'}"}
        pools = {ln.split()[3] for ln in lines}
        if warm_root is None:
            assert pools == {"pool=None"}
        else:
            assert len(pools) == 1 and pools != {"pool=None"}, lines
            assert all(ln.endswith(f"root={warm_root}") for ln in lines)


class _FakeCluster:
    """Enough of a Cluster for WarmClusters' bookkeeping: it records its close."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.topic = ""
        self.closed = False

    def close(self) -> None:
        self.closed = True


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


def test_the_last_run_on_a_cluster_closes_it_instead_of_resetting_it(tmp_path: Path) -> None:
    from harness.generator.warm import WarmClusters

    with WarmClusters(tmp_path / "warm") as pool:
        first, reuse = pool.acquire("k", _FakeCluster, "run-1")  # type: ignore[arg-type]
        pool.last_run()
        pool.release(first, reuse)
        assert first.closed and reuse.reset == ["closed, not reset: no run follows on this cluster"]
        # the hint is used up: the next run is fresh, and its release keeps the cluster for
        # a reset when the next run takes it; closing the pool closes it unreset
        second, reuse2 = pool.acquire("k", _FakeCluster, "run-2")  # type: ignore[arg-type]
        assert second is not first and not reuse2.reused
        pool.release(second, reuse2)
        assert not second.closed and reuse2.reset[0].startswith("deferred")
    assert second.closed


class _View:
    def __init__(self, pending: tuple[str, ...]) -> None:
        self.pending = pending

    def live_brokers(self) -> tuple[int, ...]:
        return (1, 2)

    def partition(self, topic: str | None = None, partition: int = 0) -> None:
        return None  # the partition's state znode is gone: what the old check looked at

    def pending_deletions(self) -> tuple[str, ...]:
        return self.pending

    def close(self) -> None:
        pass


def test_the_clean_check_refuses_an_earlier_topics_deletion_still_pending(
    tmp_path: Path,
) -> None:
    """ZooKeeper mode deletes a topic asynchronously: its partition state znode goes before
    ``/admin/delete_topics/<topic>`` (TopicDeletionManager.completeDeleteTopic). A cluster
    in between is not clean; another topic's pending deletion is not this pool's business."""
    from types import SimpleNamespace

    from harness.generator.warm_reset import dirty

    def cluster(pending: tuple[str, ...]) -> Any:
        nodes = {
            n: SimpleNamespace(broker_id=i, data_dir=tmp_path / n) for n, i in [("A", 1), ("B", 2)]
        }
        return SimpleNamespace(
            nodes=nodes,
            brokers=nodes,
            network=None,
            workdir=tmp_path,
            is_running=lambda _n: True,
            host_pid=lambda _n: None,
            broker_log=lambda n: tmp_path / n / "server.log",
            metadata=lambda: _View(pending),
            mode=SimpleNamespace(unexpected_controller=lambda _c: None),
            partition_dir=lambda n, t: tmp_path / n / f"{t}-0",
        )

    assert dirty(cluster(()), ["hwchaos"]) is None
    assert dirty(cluster(("someone-else",)), ["hwchaos"]) is None
    why = dirty(cluster(("hwchaos",)), ["hwchaos", "hwchaos-1"])
    assert why == "the deletion of topic hwchaos of an earlier run is not complete"


def test_a_deletion_the_controller_halted_is_seen_in_its_log_for_that_topic_only(
    tmp_path: Path,
) -> None:
    """The reset restarts the brokers that still hold a topic as soon as the ZooKeeper-mode
    controller logged that it halted the topic's deletion (instead of after 15 s); the
    line is TopicDeletionManager's, in the formats of 0.10 and of 2.x on."""
    from types import SimpleNamespace

    from harness.generator.warm_reset import _deletion_halted

    logs = tmp_path / "controller" / "logs"
    logs.mkdir(parents=True)
    (tmp_path / "A" / "logs").mkdir(parents=True)
    cluster: Any = SimpleNamespace(nodes={"A": None, "controller": None}, workdir=tmp_path)
    log = logs / "controller.log"
    log.write_text(
        "[2026-11-28 06:43:45,331] INFO [delete-topics-thread-0], Deletion of topic "
        "hwchaos-1 (re)started (kafka.controller.TopicDeletionManager$DeleteTopicsThread)\n"
        "[2026-11-28 06:43:45,400] INFO [delete-topics-thread-0], Halted deletion of topics "
        "hwchaos-10 (kafka.controller.TopicDeletionManager)\n"
    )
    assert not _deletion_halted(cluster, "hwchaos-1")  # another run's topic
    assert _deletion_halted(cluster, "hwchaos-10")  # 0.10.2.1
    with log.open("a") as f:
        f.write(
            "[2026-11-28 06:43:46,001] INFO [Topic Deletion Manager 0] Halted deletion of "
            "topics other,hwchaos-1 due to offline replicas "
            "(kafka.controller.TopicDeletionManager)\n"
        )
    assert _deletion_halted(cluster, "hwchaos-1")  # 2.x on: a set, and a reason
    assert not _deletion_halted(cluster, "hwchaos-2")
