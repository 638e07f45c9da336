"""Real brokers: held-back LeaderAndIsr are queued (ZooKeeper mode), missed only on failover.

``controller-queue-two-leader-changes``: C, cut from the controller with its ZooKeeper
session kept, sits through two leader changes; at the heal it processes both LeaderAndIsr
in order (0.10.2.1: truncates to its HW as follower of B, m2 lost; 2.1.1/3.3.1: keeps m2).
KRaft brokers act on the final metadata. ``controller-failover-missed-change``: the
controller fails over before the heal and C hears only the current state (m2 kept).
Each run must end ``match`` against the model with the rule ``controller_queue``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.db.catalogue.versions import resolve_version
from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from harness.trial import trial
from tests.system.test_brokers import jvms_under, require
from tests.verdicts import trial_realised, why

pytestmark = pytest.mark.broker

# (scenario, version) -> acknowledged writes lost (observed on disk and predicted)
EXPECTED = {
    ("controller-queue-two-leader-changes", "0.10.2.1"): ["m2"],
    ("controller-queue-two-leader-changes", "2.1.1"): [],
    ("controller-queue-two-leader-changes", "3.3.1"): [],
    ("controller-queue-two-leader-changes", "3.3.1-kraft"): [],
    ("controller-queue-two-leader-changes", "4.0.0"): [],
    ("controller-failover-missed-change", "0.10.2.1"): [],
    ("controller-failover-missed-change", "2.1.1"): [],
    ("controller-failover-missed-change", "3.3.1-kraft"): [],
    ("controller-failover-missed-change", "4.0.0"): [],
}


@pytest.mark.parametrize(("scenario", "version"), list(EXPECTED))
def test_held_leader_and_isr_on_real_brokers(scenario: str, version: str, tmp_path: Path) -> None:
    require(version)
    from harness.db.runtime.netns import network_available

    reason = network_available()
    if reason is not None:
        pytest.skip(f"the scenario cuts links: {reason}")
    sc = load_scenario(SCENARIO_DIR / f"{scenario}.yaml")
    (info, prediction, verdict, _record), run = trial_realised(
        lambda folder: trial(
            sc, resolve_version(version), "local", folder, "t", progress=lambda _m: None
        ),
        tmp_path / "run",
        lambda t: t.verdict,
    )
    assert verdict is not None, why(info, verdict, run)
    assert info.model_match, why(info, verdict, run)
    assert verdict.lost_acked == EXPECTED[(scenario, version)]
    assert prediction.to_json()["lost_acked"] == EXPECTED[(scenario, version)]
    assert jvms_under(tmp_path) == []
