"""Real brokers: a restart the ZooKeeper-mode controller did not notice, by controller failover.

``restart F`` with no ``detect F`` before it: the controller broker is frozen while F's
registration goes and F registers again, then killed, and controllership moves to the spare
broker (id 92), which has no memory of the bounce (harness.nemesis.failover). F is still in
the ISR, truncates as its version does and can later be elected cleanly. Skips with the
reason when no Kafka tree (or Docker daemon) is available.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from harness.db.catalogue.versions import resolve_version
from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from harness.nemesis.failover import unnoticed_restarts
from harness.trial import trial
from reference_model.run import run_scenario
from tests.system.test_brokers import hwchaos_containers, jvms_under, require
from tests.verdicts import trial_realised, why

KIP_TEXT = SCENARIO_DIR / "kip101-scenario1-kip-text.yaml"
FOUND_HW = SCENARIO_DIR / "found" / "found-hw-acked-lost.yaml"
FAILED_OVER = "realised: controller 0 frozen, {f} re-registered, controller failed over to 92"


def notes(run: Path) -> dict[int, list[str]]:
    return {o["step"]: o["notes"] for o in json.loads((run / "observations.json").read_text())}


def isr_at(run: Path, step: int) -> list[str]:
    obs = json.loads((run / "observations.json").read_text())
    return list(next(o for o in obs if o["step"] == step)["isr"])


def test_unnoticed_restarts_follow_the_model() -> None:
    """Only a restart the model's controller still counts live asks for a failover."""
    assert unnoticed_restarts(run_scenario(load_scenario(KIP_TEXT), "hw")) == [9]
    assert unnoticed_restarts(run_scenario(load_scenario(FOUND_HW), "hw")) == [6]
    scenario1 = load_scenario(SCENARIO_DIR / "kip101-scenario1.yaml")  # detect A first
    assert unnoticed_restarts(run_scenario(scenario1, "hw")) == []


def test_a_spare_controller_broker_only_when_the_run_needs_a_failover(tmp_path: Path) -> None:
    """ZooKeeper mode gets the spare (and bootstraps from both); KRaft and plain runs do not."""
    from harness.db.runtime.local import LocalCluster
    from harness.nemesis.failover import has_spare, prepare

    require("0.10.2.1")
    kip_text, scenario1 = (
        load_scenario(KIP_TEXT),
        load_scenario(SCENARIO_DIR / "kip101-scenario1.yaml"),
    )
    v = resolve_version("0.10.2.1")
    cluster = LocalCluster(v, ["A", "B"], tmp_path / "zk")
    try:
        assert prepare(cluster, run_scenario(kip_text, v.generation))
        assert cluster.brokers["controller2"].broker_id == 92 and has_spare(cluster)
        assert len(cluster.bootstrap().split(",")) == 2
    finally:
        cluster.close()
    plain = LocalCluster(v, ["A", "B"], tmp_path / "plain")
    try:
        assert not prepare(plain, run_scenario(scenario1, v.generation))
        assert "controller2" not in plain.brokers and len(plain.bootstrap().split(",")) == 1
    finally:
        plain.close()
    kraft_v = resolve_version("4.0.0")
    require("4.0.0")
    kraft = LocalCluster(kraft_v, ["A", "B"], tmp_path / "kraft")
    try:  # KRaft refuses the restart itself: no failover to arrange
        assert not prepare(kraft, run_scenario(kip_text, kraft_v.generation))
        assert "controller2" not in kraft.nodes
    finally:
        kraft.close()


def _quiet(_m: str) -> None:
    pass


@pytest.mark.broker
@pytest.mark.parametrize(
    ("version", "backend", "lost"),
    [
        ("0.10.2.1", "local", ["m2"]),  # truncated to its HW, then elected: m2 lost
        ("2.1.1", "local", []),  # OffsetsForLeaderEpoch (KIP-101): m2 kept
        ("3.3.1", "local", []),
        ("0.10.2.1", "docker", ["m2"]),
    ],
)
def test_kip_text_plays_with_a_clean_election(
    version: str, backend: str, lost: list[str], tmp_path: Path
) -> None:
    require(version, backend)
    before = hwchaos_containers() if backend == "docker" else []
    (info, prediction, verdict, _record), run = trial_realised(
        lambda folder: trial(
            load_scenario(KIP_TEXT), resolve_version(version), backend, folder, "t", _quiet
        ),
        tmp_path / "run",
        lambda t: t.verdict,
    )
    assert verdict is not None, why(info, verdict, run)
    assert info.model_match, why(info, verdict, run)  # every replica's log as the model says
    assert verdict.lost_acked == lost == prediction.to_json()["lost_acked"]
    assert FAILED_OVER.format(f="A") in notes(run)[9]
    assert "controller 0 frozen, A re-registered" in (run / "report.html").read_text()
    # A came back in the ISR, and B's death elected it from the ISR (unclean is off)
    assert isr_at(run, 9) == ["A", "B"] and isr_at(run, 11) == ["A", "B"]
    assert info.extra["final"]["leader"] == "A" and info.extra["final"]["isr"] == ["A"]
    assert (run / "logs" / "controller2" / "server.log").is_file()
    assert jvms_under(tmp_path) == []
    if backend == "docker":
        assert set(hwchaos_containers()) - set(before) == set()


@pytest.mark.broker
def test_explorer_hw_counterexample_is_confirmed_on_0_10(tmp_path: Path) -> None:
    """The explorer's hw counterexample: B restarts unnoticed, truncates to 0, is elected."""
    require("0.10.2.1")
    (info, _p, verdict, _record), run = trial_realised(
        lambda folder: trial(
            load_scenario(FOUND_HW), resolve_version("0.10.2.1"), "local", folder, "t", _quiet
        ),
        tmp_path / "run",
        lambda t: t.verdict,
    )
    assert verdict is not None, why(info, verdict, run)
    assert info.model_match, why(info, verdict, run)
    # As written the ordering loses m1 (B restarts from a checkpoint that never saw HW 1); as
    # played, Kafka writes B's own HW checkpoint (every 10 ms) before the crash and the
    # harness writes no model value into it, so B keeps m1: the model run on the events as
    # played says so too, and the run agrees with it.
    assert verdict.lost_acked == [] and _p.to_json()["lost_acked"] == ["m1"]
    assert FAILED_OVER.format(f="B") in notes(run)[6]
    assert info.extra["final"]["leader"] == "B"
    assert jvms_under(tmp_path) == []


TWO_BOUNCES = """
name: two-unnoticed-bounces
brokers: [A, B]
leader: A
topic: {replication_factor: 2, min_insync_replicas: 1, unclean_leader_election: false}
producer: {acks: 1}
steps:
  - produce: m1
  - fetch: B
  - fetch: B
  - crash: B
  - restart: B        # unnoticed: controller 0 -> 92; B truncates to its HW (0)
  - fetch: B
  - fetch: B
  - crash: B
  - restart: B        # unnoticed again: 92 -> 0, the old controller restarted as the spare
  - crash: A
  - detect: A         # B, still in the ISR, is elected with an empty log
"""


@pytest.mark.broker
def test_second_failover_goes_back_to_the_restarted_controller(tmp_path: Path) -> None:
    require("0.10.2.1")
    path = tmp_path / "two-unnoticed-bounces.yaml"
    path.write_text(textwrap.dedent(TWO_BOUNCES))
    (info, prediction, verdict, _record), run = trial_realised(
        lambda folder: trial(
            load_scenario(path), resolve_version("0.10.2.1"), "local", folder, "t", _quiet
        ),
        tmp_path / "run",
        lambda t: t.verdict,
    )
    assert verdict is not None, why(info, verdict, run)
    assert info.model_match, why(info, verdict, run)
    # as written m1 is lost; as played Kafka's own HW checkpoint keeps it (see above)
    assert verdict.lost_acked == [] and prediction.to_json()["lost_acked"] == ["m1"]
    seen = notes(run)
    assert FAILED_OVER.format(f="B") in seen[5]
    assert "realised: controller 92 frozen, B re-registered, controller failed over to 0" in seen[9]
    assert jvms_under(tmp_path) == []
