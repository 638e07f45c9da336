"""The doorbell changes when parked Fetches are answered, not what a run observes.

Each scenario is played twice on real brokers, with the doorbell (the default) and without
(``HWCHAOS_DOORBELL=0``, every wait on the timer), and every step's observation must be
the same: leader, epoch, ISR, every replica's LEO and HW as its broker checkpointed it, the
leader's HW on the wire; then the verdict, the lost and divergent records and every
replica's final log. The run with the bell must have rung it (else this compares nothing),
and the one without must have no doorbell. Scenarios: a crash and restart of two brokers
(kip101-scenario2), a leader killed right after a two-follower fetch step
(acks-all-min-isr2-one-crash: the step where a ring could answer the other follower's
parked Fetch behind the script), on a ZooKeeper and a KRaft version. Skips with the reason
when a tree is missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.db.catalogue.versions import resolve_version
from harness.generator.playbook.bell import ENV
from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from harness.trial import Trial, trial
from tests.system.test_brokers import require
from tests.verdicts import trial_realised

pytestmark = pytest.mark.broker

CASES = [
    (scenario, version)
    for version in ("0.10.2.1", "4.0.0")
    for scenario in ("kip101-scenario2", "acks-all-min-isr2-one-crash")
]


def seen(t: Trial) -> list[tuple[Any, ...]]:
    """Every step as the harness observed it: leader, epoch, each replica's LEO and HW, the
    leader's HW on the wire. Not the ISR: a follower's return to it after its fetch round
    is asynchronous (AlterPartition, a ZooKeeper write), and where the scenario as written
    does not yet have it back (its next Fetch is the model's ``fetch_request``) the step
    does not wait for it, so it is seen either way from run to run, with or without the
    bell (acks-all-min-isr2-one-crash on 4.0.0, step 12); the verdict compares the ISR
    the model as played predicts."""
    return [
        (o.step, o.event, o.leader, o.leader_epoch, o.leo, o.hw, o.leader_hw_wire)
        for o in t.record.observations
    ]


def outcome(t: Trial) -> tuple[Any, ...]:
    logs = {n: [r for _o, _e, r in e] for n, e in sorted(t.record.logs.items())}
    info = t.info
    return (info.verdict, sorted(info.lost_acked), sorted(info.divergent_offsets), logs)


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{s}-{v}" for s, v in CASES])
def test_with_and_without_the_doorbell_every_step_is_observed_alike(
    name: str, version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(version)
    v = resolve_version(version)
    scenario = load_scenario(SCENARIO_DIR / f"{name}.yaml")

    def play(bell: str) -> Trial:
        monkeypatch.setenv(ENV, bell)
        t, _ = trial_realised(
            lambda f: trial(scenario, v, "local", f, name, lambda _m: None),
            tmp_path / f"bell-{bell}",
            lambda t: t.verdict,
        )
        return t

    rung, timer = play("1"), play("0")
    assert rung.record.doorbell.get("rings"), "the run with the doorbell never rang it"
    assert timer.record.doorbell == {}
    assert seen(rung) == seen(timer), (rung.record.folder, timer.record.folder)
    assert outcome(rung) == outcome(timer), (rung.record.folder, timer.record.folder)
    assert rung.info.verdict == "match", rung.record.folder
