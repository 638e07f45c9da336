"""A warm cluster reused across runs (harness.generator.warm), on real brokers.

Two claims, each able to fail:

- the clean check sees what a run leaves behind (a paused JVM, a crashed broker, a cut
  link, an earlier run's topic) and the reset puts each back: every kind of dirt is made
  on a real cluster, named by :func:`dirty`, then gone after :func:`reset`;
- the catalogue on one warm cluster per version gives the verdicts of fresh clusters:
  the scenarios that share a cluster configuration (the others start a fresh cluster
  wherever they run) are played grouped by configuration, by name within a group (not the
  matrix's tidiest-first order, harness.generator.warm.reuse_rank: here every reset the
  catalogue can need is made, 0.10.2.1's halted brokers after kip966 included); every run
  whose configuration an earlier run of its session had is played on the reused cluster (a
  refusal means the reset left it dirty, and fails the test), and each verdict equals a
  fresh run's. Fresh catalogue runs match the model (or stop where it predicts a
  prevention) on every version, so a warm run with that verdict has the fresh verdict; a
  warm run with any other verdict is played again on a fresh cluster and both must agree
  (verdict, lost and divergent records, every replica's log). Three scenarios (DIRECT) are
  compared with a fresh run directly, logs included, whatever their verdict: each opens a
  session on a new cluster (its fresh run) and is played again at the session's end on the
  reused one (:func:`sessions`).

Skips with the reason when a release tree is missing; the network parts need root.
``HWCHAOS_WARM_VERSIONS=0.10.2.1,4.0.0`` plays the catalogue part on those versions only.
"""

from __future__ import annotations

import os
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.db import BrokerUnavailable, TopicSpec
from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.versions import CATALOGUE, resolve_version
from harness.db.runtime.linkcuts import network_available
from harness.db.runtime.local import LocalCluster
from harness.db.runtime.process import jvms_under
from harness.generator.scenarios import SCENARIO_DIR, catalogue, load_scenario
from harness.generator.warm import NOT_REUSED, WarmClusters, warm_key
from harness.generator.warm_reset import dirty, reset
from harness.nemesis import faults
from harness.trial import Trial, trial
from reference_model.run import run_scenario
from tests.verdicts import trial_realised

pytest_plugins = ("pytester",)
pytestmark = pytest.mark.broker

# Scenarios compared with a fresh run directly on every version, logs and all: a crash and
# restart (kip101-scenario2), a power cut of every replica, a stale HW checkpoint.
DIRECT = ("kip101-scenario2", "power-loss-all-replicas", "stale-hw-checkpoint")


def require(version: str) -> None:
    try:
        find_tree(resolve_version(version))
    except BrokerUnavailable as exc:
        pytest.skip(str(exc))


def wait(check: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what} within {timeout:.0f}s"
        time.sleep(0.1)


@pytest.fixture
def started(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LocalCluster]:
    version, network = request.param
    require(version)
    if network and network_available() is not None:
        pytest.skip(str(network_available()))
    cluster = LocalCluster(resolve_version(version), ["A", "B"], tmp_path / "c", network=network)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()
        assert jvms_under(tmp_path) == []


def new_topic(cluster: LocalCluster, name: str) -> None:
    cluster.topic = name
    cluster.create_topic(TopicSpec(["A", "B"], 1, False, name=name))

    def led() -> bool:
        view = cluster.metadata()
        try:
            p = view.partition()
            return p is not None and p.leader >= 0 and len(p.isr) == 2
        finally:
            view.close()

    wait(led, f"topic {name} led with both replicas in sync")


CLEAN_CASES = [("0.10.2.1", True), ("3.3.1", False), ("4.0.0", True)]


@pytest.mark.parametrize(
    "started", CLEAN_CASES, ids=[f"{v}{'-net' if n else ''}" for v, n in CLEAN_CASES], indirect=True
)
def test_the_clean_check_names_each_kind_of_dirt_and_the_reset_removes_it(
    started: LocalCluster,
) -> None:
    cluster = started
    new_topic(cluster, "hwchaos")
    assert dirty(cluster, []) is None
    # an earlier run's topic still there
    assert "still has topic hwchaos" in str(dirty(cluster, ["hwchaos"]))
    dirts: list[tuple[str, Callable[[], Any], str]] = [
        ("pause", lambda: faults.pause(cluster, "B"), "B (pid"),
        ("crash", lambda: faults.crash(cluster, "A"), "A is not running"),
    ]
    if cluster.network is not None:
        dirts.append(("cut", lambda: cluster.network.partition("A", "B"), "DROP rule"))
    done = ["hwchaos"]
    for n, (what, make, said) in enumerate(dirts, start=1):
        make()
        why = dirty(cluster, [])
        assert why is not None and said in why, f"{what}: the clean check said {why!r}"
        actions = reset(cluster, cluster.topic)
        assert f"deleted topic {cluster.topic}" in actions, actions
        assert dirty(cluster, done) is None, f"after the reset of {what}: {dirty(cluster, done)}"
        topic = f"hwchaos-{n}"
        new_topic(cluster, topic)
        done.append(topic)


# ------------------------------------------------------------------ the catalogue


def outcome(t: Trial) -> tuple[Any, ...]:
    """What must be equal between a warm and a fresh run of one scenario."""
    info, record = t.info, t.record
    logs = {n: [r for _o, _e, r in entries] for n, entries in sorted(record.logs.items())}
    return (info.verdict, sorted(info.lost_acked), sorted(info.divergent_offsets), logs)


def where_it_differs(t: Trial) -> str:
    """A mismatching run's first differing step and what differs there, for the failure
    message: a CI failure's run folders are gone with the CI machine (7 Dec 2026: two warm
    mismatches nobody could read back)."""
    v = t.verdict
    if v is None or v.model_match:
        return "as the model predicts"
    hw = v.hw.get("mismatches", [])[:2] if v.hw else []
    return (
        f"first differing step {v.first_differing_step}, {v.differences[:3]}, "
        f"HW mismatches {hw}, reason {v.reason!r}, harness note {v.harness_note!r}"
    )


def catalogue_order(version: str) -> list[tuple[str, str]]:
    """The catalogue's scenarios that share their cluster configuration with another, with
    their warm keys, grouped by configuration and by name within a group (every reset
    made, the messiest included: see the module's docstring). A scenario alone in its
    configuration starts a fresh cluster wherever it is played: it tells nothing here."""
    v = resolve_version(version)
    keyed = []
    for path in catalogue():
        s = load_scenario(path)
        keyed.append((s.name, warm_key(s, run_scenario(s, v.generation), v.name, "local", 1)))
    keys = [k for _n, k in keyed]
    shared = [(n, k) for n, k in keyed if k is not None and keys.count(k) > 1]
    return sorted(shared, key=lambda x: (x[1], x[0]))


# Every version by default; CI's time budget can name fewer (``make test`` sets none).
WARM_VERSIONS = [
    v.strip()
    for v in (os.environ.get("HWCHAOS_WARM_VERSIONS") or ",".join(CATALOGUE)).split(",")
    if v.strip()
]


@pytest.mark.slow
@pytest.mark.parametrize("version", WARM_VERSIONS)
def test_the_catalogue_on_a_warm_cluster_gives_the_fresh_verdicts(
    version: str, tmp_path: Path
) -> None:
    require(version)
    v = resolve_version(version)
    if version in NOT_REUSED:
        # Reuse is off there: every run must get a fresh cluster, saying why.
        name = load_scenario(catalogue()[0]).name
        with WarmClusters(tmp_path / "warm") as pool:
            for k in range(2):
                t = trial(
                    load_scenario(catalogue()[0]),
                    v,
                    "local",
                    tmp_path / f"r{k}",
                    name,
                    lambda _m: None,
                    warm=pool,
                )
                assert not t.record.cluster.reused
                assert "fresh cluster" in t.record.cluster.why_fresh
        return
    by_name = {load_scenario(p).name: load_scenario(p) for p in catalogue()}
    warm_runs: dict[str, Trial] = {}
    fresh_runs: dict[str, Trial] = {}
    must_reuse: list[str] = []

    def say(_m: str) -> None:
        pass

    for k, session in enumerate(sessions(catalogue_order(version))):
        # One cluster per session: the pool starts it for the session's first run (a
        # fresh cluster: that run is the fresh reference of a DIRECT scenario, or plain),
        # and every later run of the session must take it as the last run left it.
        with WarmClusters(tmp_path / f"warm-{k}") as pool:
            for i, name in enumerate(session):
                if i == 0 and name in DIRECT:
                    fresh_runs[name] = fresh_reference(by_name[name], v, pool, tmp_path, say)
                    continue
                if i > 0:
                    must_reuse.append(name)
                warm_runs[name], _ = trial_realised(
                    lambda folder, name=name: trial(
                        by_name[name], v, "local", folder, name, say, warm=pool
                    ),
                    tmp_path / "warm-runs" / name,
                    lambda t: t.verdict,
                )
    assert jvms_under(tmp_path) == []
    refused = [
        f"{n}: {warm_runs[n].record.cluster.why_fresh}"
        for n in must_reuse
        if not warm_runs[n].record.cluster.reused
    ]
    assert not refused, "runs that should have reused the cluster did not:\n" + "\n".join(refused)
    assert must_reuse, "no scenario shares a configuration: nothing was reused"
    differ = []
    for name, warm in warm_runs.items():
        fresh = fresh_runs.get(name)
        if fresh is None:
            if warm.info.verdict in ("match", "prevented"):
                continue  # what a fresh run gives (the catalogue matches on every version)
            fresh, _ = trial_realised(
                lambda folder, name=name: trial(by_name[name], v, "local", folder, name, say),
                tmp_path / "fresh-runs" / name,
                lambda t: t.verdict,
            )
        if outcome(fresh) != outcome(warm):
            differ.append(
                f"{name}: warm {outcome(warm)} (reused={warm.record.cluster.reused}) "
                f"fresh {outcome(fresh)}; warm: {where_it_differs(warm)}; "
                f"folders {warm.record.folder} {fresh.record.folder}"
            )
    assert set(fresh_runs) == {n for n in DIRECT if n in warm_runs}, sorted(fresh_runs)
    assert not differ, "\n".join(differ)


def sessions(plan: list[tuple[str, str]]) -> list[list[str]]:
    """The runs of :func:`catalogue_order` cut into sessions of one cluster each.

    A DIRECT scenario is compared with a fresh run of itself; the fresh run costs nothing
    extra when it is the first run on a new cluster, which every configuration's first run
    is. So a configuration's first session opens with its first DIRECT scenario played
    fresh, then every other scenario of the configuration by name, then that DIRECT
    scenario again on the reused cluster; each further DIRECT scenario of the configuration
    gets a session of its own, fresh then reused. Two cluster starts fewer per version than
    a fresh cluster for each DIRECT run beside the warm ones, with the same runs compared.
    """
    groups: dict[str, list[str]] = {}
    for name, key in plan:
        groups.setdefault(key, []).append(name)
    out: list[list[str]] = []
    for names in groups.values():
        direct = [n for n in names if n in DIRECT]
        if not direct:
            out.append(names)
            continue
        rest = [n for n in names if n not in DIRECT]
        out.append([direct[0], *rest, direct[0]])
        out += [[d, d] for d in direct[1:]]
    return out


def fresh_reference(
    scenario: Any, v: Any, pool: WarmClusters, tmp_path: Path, say: Callable[[str], None]
) -> Trial:
    """``scenario`` played as the first run of ``pool`` (a cluster started for it, no run
    before it), or, when the harness flagged its own step and the run is played once more,
    on a fresh cluster of its own: never on the pool's cluster after it was used."""
    played: list[bool] = []

    def play(folder: Path) -> Trial:
        pooled = not played
        played.append(True)
        return trial(
            scenario, v, "local", folder, scenario.name, say, warm=pool if pooled else None
        )

    fresh, _ = trial_realised(play, tmp_path / "fresh-runs" / scenario.name, lambda t: t.verdict)
    assert not fresh.record.cluster.reused, fresh.record.cluster.to_json()
    return fresh


# ------------------------------------------------------------------ the pytest plugin


@pytest.mark.slow
def test_the_plugin_reuses_one_cluster_starts_the_next_ahead_and_stops_them(
    pytester: pytest.Pytester,
) -> None:
    """Three scenario files, two of one configuration (brokers A, B) and one of another (A,
    B, C): one item plays on the cluster of the item before it (JUnit
    ``hwchaos_cluster_reused``); the item of the other configuration plays on a cluster
    started in the background while the item before it played (``hwchaos_cluster_started_after``
    names that item's run); all three match the model, and no JVM outlives the session."""
    require("0.10.2.1")
    for name in ("kip101-scenario1", "kip101-scenario2", "acks-all-min-isr2-one-crash"):
        pytester.makefile(".yaml", **{name: (SCENARIO_DIR / f"{name}.yaml").read_text()})
    junit = pytester.path / "junit.xml"
    res = pytester.runpytest_subprocess(
        "-p", "hwchaos", "--hwchaos-kafka", "0.10.2.1", f"--junitxml={junit}", "-q"
    )
    res.assert_outcomes(passed=3)
    props = [
        {p.get("name"): p.get("value") for p in c.iter("property")}
        for c in ET.parse(junit).getroot().iter("testcase")
    ]
    assert sorted(p.get("hwchaos_cluster_reused", "") for p in props) == ["False", "False", "True"]
    ahead = [
        (k, p["hwchaos_cluster_started_after"])
        for k, p in enumerate(props)
        if "hwchaos_cluster_started_after" in p
    ]
    assert len(ahead) == 1, props
    k, after = ahead[0]
    assert k > 0 and props[k]["hwchaos_cluster_reused"] == "False", props
    assert after == Path(props[k - 1]["hwchaos_run_folder"]).name, props
    assert jvms_under(pytester.path) == []
    assert not list((pytester.path / "hwchaos-runs" / "warm-clusters").glob("cluster-*"))


# ------------------------------------------------------------------ started in the background


def _thread_nices(pid: int) -> set[int]:
    """Nice values of every thread of ``pid`` (/proc/<pid>/task/*/stat, field 19), and of
    its scheduler autogroup as a negative-free tag ``100 + n`` when the kernel has them (a
    JVM is a session, so an autogroup, of its own: threads' nice values alone do not move
    it against the others)."""
    nices = {
        int((t / "stat").read_text().rsplit(")", 1)[1].split()[16])
        for t in Path(f"/proc/{pid}/task").iterdir()
    }
    group = Path(f"/proc/{pid}/autogroup")
    if group.exists():
        nices.add(100 + int(group.read_text().split()[-1]))
    return nices


@pytest.mark.parametrize("version", ["0.10.2.1", "4.0.0"])
def test_a_cluster_started_in_the_background_is_the_next_runs_and_runs_at_full_priority(
    version: str, tmp_path: Path
) -> None:
    """While acks-all-min-isr2-one-crash plays (brokers A, B, C), the cluster of
    kip101-scenario2 (A, B: another configuration) starts in the background, at a lower
    priority when the harness may set it back; kip101-scenario2 then plays on it, says so
    in ``run.json``, matches the model, and its JVMs run at the harness's priority."""
    from harness.generator.runner import prestart_next

    require(version)
    v = resolve_version(version)
    first, second = (
        load_scenario(SCENARIO_DIR / f"{n}.yaml")
        for n in ("acks-all-min-isr2-one-crash", "kip101-scenario2")
    )
    seen: dict[str, set[int]] = {}

    def say(m: str) -> None:
        # the first run's steps: the second cluster is starting or up, at the lower priority
        starting = pool.starting
        if m.startswith("step ") and starting is not None and not seen:
            pids = [starting.host_pid(n) for n in starting.nodes]
            seen.update(
                {n: _thread_nices(p) for n, p in zip(starting.nodes, pids, strict=True) if p}
            )

    with WarmClusters(tmp_path / "warm") as pool:
        prestart_next(pool, second, v, "local", "second")
        a = trial(first, v, "local", tmp_path / "first", "first", say, warm=pool)
        assert a.info.verdict == "match", where_it_differs(a)
        assert not a.record.cluster.prestarted
        b = trial(second, v, "local", tmp_path / "second", "second", lambda _m: None, warm=pool)
        assert b.info.verdict == "match", where_it_differs(b)
        pre = b.record.cluster.prestarted
        assert pre.get("after") == "first", b.record.cluster
        assert pre["start_seconds"] > 0 and pre["waited_seconds"] >= 0, pre
        assert "started in the background while first played" in b.record.cluster.why_fresh
        phases = [p["name"] for p in b.info.extra["timings"]["phases"]]
        assert phases[0] == "cluster_start (background)" and "cluster_start" in phases, phases
        assert pool.prestarted == 1
        assert seen, "no step of the first run saw the second cluster starting"
        if os.geteuid() == 0:
            assert all(nices - {110} == {10} for nices in seen.values()), seen
            autogroups = Path("/proc/self/autogroup").exists()
            assert all((110 in nices) == autogroups for nices in seen.values()), seen
        kept = b.record.cluster  # the second cluster is kept for a next run: at full priority
        assert not kept.reused
        cluster = next(iter(pool._warm.values())).cluster
        for name in cluster.nodes:
            pid = cluster.host_pid(name)
            assert pid is not None
            assert _thread_nices(pid) - {100} == {os.getpriority(os.PRIO_PROCESS, 0)}
            assert 110 not in _thread_nices(pid)
    assert jvms_under(tmp_path) == []


def test_closing_the_pool_during_a_background_start_leaves_nothing(tmp_path: Path) -> None:
    """Ctrl-C while a cluster starts in the background: the pool's close stops it at once
    (its JVMs killed, the start ends) and no JVM is left."""
    from harness.generator.runner import prestart_next

    require("4.0.0")
    v = resolve_version("4.0.0")
    sc = load_scenario(SCENARIO_DIR / "kip101-scenario1.yaml")
    pool = WarmClusters(tmp_path / "warm")
    prestart_next(pool, sc, v, "local", "later")
    pool.kick("now")
    cluster = pool.starting
    assert cluster is not None
    wait(lambda: any(cluster.host_pid(n) for n in cluster.nodes), "a JVM of the start", 60)
    t0 = time.monotonic()
    pool.close()
    assert time.monotonic() - t0 < 30, "the close waited out the start"
    assert jvms_under(tmp_path) == []
    assert not list((tmp_path / "warm").glob("cluster-*"))
