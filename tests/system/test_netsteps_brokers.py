"""Catalogue scenarios whose steps need network cuts, played on real brokers.

``isr_shrink`` (a follower cut from the leader until the leader shrinks it), a held-back
LeaderAndIsr (the controller cut from one broker), ``produce: {to: X}`` (the client cut
from every other broker) and ``partition``/``heal``: each run must end with per-replica logs
that match the model, or in a prevention the model predicted for that version; and leave no
namespace, veth or iptables rule behind. Root and release trees are needed: without them
every test skips with the reason. Plus model-only checks of what the runner decides from a
scenario (no root needed).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.db import BrokerUnavailable
from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.versions import resolve_version
from harness.db.runtime.linkcuts import network_available
from harness.generator.realise import ELECTED_LAG_MS, PRODUCE_TIMEOUT_MS, SHORT_LAG_MS, needs
from harness.generator.scenarios import load_scenario
from harness.trial import trial
from reference_model.run import run_scenario
from tests.verdicts import trial_realised, why

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"

# (scenario, version, backend): runs that play on real brokers and match the model. One
# per scenario and line, kept short (each is one cluster, 25-80 s).
PLAYED = [
    ("acks1-unclean-election", "0.10.2.1", "local"),
    ("jepsen-2013-isr-shrink", "0.10.2.1", "local"),
    ("jepsen-2013-isr-shrink", "3.3.1", "local"),
    ("jepsen-2013-isr-shrink", "4.0.0", "local"),
    ("kip320-zombie-follower", "0.10.2.1", "local"),
    ("kip320-zombie-follower", "2.1.1", "local"),
    ("kip320-zombie-follower", "3.3.1-kraft", "local"),
    ("kip320-zombie-follower", "4.0.0", "local"),
    ("jepsen-2013-zombie-leader", "0.10.2.1", "local"),
    ("jepsen-2013-zombie-leader", "3.3.1", "local"),
    ("jepsen-2013-zombie-leader", "3.3.1-kraft", "local"),
    ("jepsen-2013-zombie-leader", "4.0.0", "local"),
    ("jepsen-2013-zombie-leader", "3.3.1", "docker"),
    ("kip320-zombie-follower", "2.1.1", "docker"),
]


def _leftovers(run_dir: Path) -> list[str]:
    """What the run's own network (its ``network.json``) left on the machine: namespaces,
    links, iptables rules. Other runs on the machine are not ours to judge."""
    record = run_dir / "cluster" / "network.json"
    if not record.exists():
        return []
    namespaces = json.loads(record.read_text())["namespaces"].values()
    run = next(iter(namespaces)).split("-")[1] if namespaces else "?"
    found = []
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found += [line for line in ns.splitlines() if line.split()[0] in namespaces]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    found += [line for line in links.splitlines() if f": hwc{run}" in line]
    for tool in ("iptables", "iptables-legacy"):
        rules = subprocess.run([tool, "-S"], capture_output=True, text=True).stdout
        found += [line for line in rules.splitlines() if f"hwchaos:{run}" in line]
    return found


# ---------------------------------------------------------------------------- model only


def test_the_runner_decides_the_network_from_the_scenario() -> None:
    """Cuts only for scenarios that need them; the short lag only on the leader the model
    has at each isr_shrink; a short ZooKeeper session only for brokers cut from ZooKeeper."""
    plain = load_scenario(str(SCENARIOS / "kip101-scenario1.yaml"))
    assert not needs(plain).network
    shrink = load_scenario(str(SCENARIOS / "kip320-zombie-follower.yaml"))
    want = needs(shrink, run_scenario(shrink, "hw"))
    assert want.network and want.short_lag
    assert want.lag_on == {"B"}  # B leads at `isr_shrink: C`; A and C keep the long lag
    # B was elected at step 9: C, held back from the controller, never fetches from it and
    # must outlast steps 10-13 in its ISR, so B's lag is the longer one
    assert want.elected_lag_on == {"B"}
    jepsen = load_scenario(str(SCENARIOS / "jepsen-2013-isr-shrink.yaml"))
    first = needs(jepsen, run_scenario(jepsen, "hw"))
    assert first.lag_on == {"A"} and not first.elected_lag_on  # A leads from the start
    assert any("detect A hold C" in w for w in want.why)
    zombie = load_scenario(str(SCENARIOS / "jepsen-2013-zombie-leader.yaml"))
    want = needs(zombie)
    assert want.short_session == {"A"} and not want.short_lag
    assert any("produce m2 to A" in w for w in want.why)
    assert SHORT_LAG_MS < 10_000 < ELECTED_LAG_MS
    assert 1.5 * ELECTED_LAG_MS < PRODUCE_TIMEOUT_MS  # a write the shrink completes waits it


# ---------------------------------------------------------------------------- brokers


@pytest.mark.broker
@pytest.mark.parametrize(("scenario", "version", "backend"), PLAYED)
def test_network_steps_play_and_match_the_model(
    scenario: str, version: str, backend: str, tmp_path: Path
) -> None:
    v = resolve_version(version)
    if backend == "local":
        reason = network_available()
        if reason is not None:
            pytest.skip(reason)
        try:
            find_tree(v)
        except BrokerUnavailable as exc:
            pytest.skip(str(exc))
    else:
        from harness.db.runtime.docker import docker_available

        reason = docker_available()
        if reason is not None:
            pytest.skip(reason)
    sc = load_scenario(str(SCENARIOS / f"{scenario}.yaml"))
    try:
        (info, prediction, verdict, _record), run = trial_realised(
            lambda folder: trial(sc, v, backend, folder, f"ns{backend[0]}", lambda _m: None),
            tmp_path / "run",
            lambda t: t.verdict,
        )
    except BrokerUnavailable as exc:
        pytest.skip(str(exc))
    prevented = getattr(prediction, "prevented", None)
    if prevented is not None:
        assert info.verdict == "prevented", why(info, verdict, run)
        return
    assert info.verdict == "match", why(info, verdict, run)
    assert verdict is not None and verdict.model_match
    steps = json.loads((run / "observations.json").read_text())
    realised = [n for o in steps for n in o["notes"] if n.startswith("realised: ")]
    assert realised, "no step says how it was realised"
    if any(e.kind == "isr_shrink" for e in sc.steps):
        assert any("for the ISR shrink" in n or "already out" in n for n in realised)
    assert _leftovers(tmp_path / "run") == [] and _leftovers(run) == []


@pytest.mark.broker
def test_ctrl_c_during_a_partition_leaves_nothing(tmp_path: Path) -> None:
    """``hwchaos run`` interrupted (SIGINT) while a partition is in place: the JVMs, the
    namespaces, veths, bridge and iptables rules of the run are all gone when it exits."""
    import os
    import signal
    import sys

    reason = network_available()
    if reason is not None:
        pytest.skip(reason)
    try:
        find_tree(resolve_version("3.3.1"))
    except BrokerUnavailable as exc:
        pytest.skip(str(exc))
    out = tmp_path / "out"
    log = (tmp_path / "run.log").open("w")
    # SIGINT back to its default before exec: a background job inherits it ignored
    launcher = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
        "os.execv(sys.argv[1], sys.argv[1:])"
    )
    hwchaos = str(Path(sys.executable).parent / "hwchaos")
    scenario = str(SCENARIOS / "jepsen-2013-zombie-leader.yaml")
    cmd = [sys.executable, "-c", launcher, hwchaos, "run", scenario, "--kafka", "3.3.1"]
    proc = subprocess.Popen([*cmd, "--out", str(out)], stdout=log, stderr=log)
    try:
        from harness.generator.playbook.fences import wait_until

        def partitioned() -> bool:
            text = (tmp_path / "run.log").read_text()
            assert proc.poll() is None, text
            return "step  4/9 partition" in text

        wait_until(partitioned, "the run to cut A from B, the controller and ZooKeeper", 180)
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=120) != 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    run_dir = next(out.iterdir())
    assert "interrupted" in (tmp_path / "run.log").read_text()
    assert (run_dir / "cluster" / "network.json").exists()
    assert _leftovers(run_dir) == []
    java = subprocess.run(["pgrep", "-af", "java"], capture_output=True, text=True).stdout
    assert str(tmp_path) not in java


@contextlib.contextmanager
def _before_the_shrink(version: str, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """acks1-unclean-election played on ``version`` up to its ``isr_shrink B`` (step 4):
    the playbook and the model's prediction, the cluster closed after the block."""
    from harness.generator.playbook import Playbook
    from harness.generator.realise import configure
    from harness.generator.runner import make_cluster

    reason = network_available()
    if reason is not None:
        pytest.skip(reason)
    v = resolve_version(version)
    try:
        find_tree(v)
    except BrokerUnavailable as exc:
        pytest.skip(str(exc))
    sc = load_scenario(str(SCENARIOS / "acks1-unclean-election.yaml"))
    prediction = run_scenario(sc, v.generation)
    want = needs(sc, prediction)
    cluster = make_cluster(v, "local", list(sc.brokers), tmp_path, "t", network=want.network)
    configure(cluster, want)
    try:
        cluster.start()
        book = Playbook(cluster, sc, v, prediction)
        try:
            book.setup()
            for k, ev in enumerate(sc.steps[:3], start=1):
                book.step(k, ev)
            yield book, prediction
        finally:
            book.close()
    finally:
        cluster.close()


@pytest.mark.broker
def test_a_predicted_isr_shrink_prevention_is_checked_on_the_broker(tmp_path: Path) -> None:
    """acks1-unclean-election on 3.3.1: the model predicts `isr_shrink B` (B caught up)
    prevented by KAFKA-7152; with B cut from A for the check's window (1.5 lag + 3 s), A
    really keeps B."""
    with _before_the_shrink("3.3.1", tmp_path) as (book, prediction):
        prevented = getattr(prediction, "prevented", None)
        assert prevented is not None and prevented[0] == 4, prevented
        note = book.check_prevented(4, book.scenario.steps[3], prevented[1])
        assert note.startswith("refused as predicted: A kept B in the ISR"), note
        assert book.ids["B"] in book.view().isr
        assert book.cluster.network is not None and book.cluster.network.cuts() == []


def test_without_root_a_network_run_ends_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scenario that needs cuts on a machine that cannot make them: BrokerUnavailable with
    the reason in one line, before any JVM starts (``hwchaos run`` prints it; tests skip)."""
    import harness.generator.runner as runner

    # where make_cluster asks (it imports the check by name from harness.db.runtime.linkcuts)
    monkeypatch.setattr(runner, "network_available", lambda: "network namespaces need root")
    try:
        find_tree(resolve_version("3.3.1"))
    except BrokerUnavailable as exc:
        pytest.skip(str(exc))
    from harness.generator.runner import make_cluster

    with pytest.raises(BrokerUnavailable) as err:
        make_cluster(resolve_version("3.3.1"), "local", ["A", "B"], tmp_path, "t", network=True)
    assert str(err.value) == "the scenario needs network partitions: network namespaces need root"
    assert not (tmp_path / "pids.json").exists()


@pytest.mark.broker
def test_the_prevention_windows_length_sees_an_older_broker_shrink(tmp_path: Path) -> None:
    """The same check on 0.10.2.1, before KAFKA-7152, where a paused caught-up follower goes
    stale by time alone: within the window (1.5 lag + 3 s) A drops B, and the check says
    "NOT refused". A window too short for a real shrink would pass every version."""
    with _before_the_shrink("0.10.2.1", tmp_path) as (book, prediction):
        assert getattr(prediction, "prevented", None) is None  # the model lets B fall out
        note = book.check_prevented(4, book.scenario.steps[3], "asked by the test")
        assert note.startswith("NOT refused: A shrank B out of the ISR"), note
