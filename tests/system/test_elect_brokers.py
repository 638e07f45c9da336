"""Real brokers: ``elect: B`` of a chosen replica, and ``elect: {broker: B, unclean: true}``.

The harness reorders the replica assignment (B first, same replica set) and runs a
preferred-replica election: ``/admin/reassign_partitions`` + ``/admin/preferred_replica_election``
in ZooKeeper mode (every release), AlterPartitionReassignments + ElectLeaders PREFERRED to the
KRaft controller. ``unclean: true`` is ElectLeaders UNCLEAN (2.4+) of an offline partition
(the scenario's isr_shrink needs root for network namespaces). Skips with the reason when
no Kafka tree is available.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from harness.db.catalogue.versions import resolve_version
from harness.generator.scenarios import load_scenario
from harness.trial import trial
from tests.system.test_brokers import jvms_under, require
from tests.verdicts import trial_realised, why

# m1 replicated to B and C, B elected while A leads, m2 written by B; A fetches from B.
ELECT_B = """
name: elect-chosen-replica
brokers: [A, B, C]
leader: A
topic: {replication_factor: 3, min_insync_replicas: 1, unclean_leader_election: false}
producer: {acks: 1}
steps:
  - produce: m1
  - fetch: B
  - fetch: C
  - fetch: B
  - fetch: C
  - elect: B          # B in the ISR: clean, B first in the assignment, preferred election
  - produce: m2
  - fetch: A
  - fetch: C
"""

# A acknowledges m2 alone (acks=1), B falls out of the ISR without it, A dies: the partition
# is offline (unclean election off), then B is elected on demand. isr_shrink needs root
# (network namespaces); the run skips with the reason otherwise.
UNCLEAN_B = """
name: elect-unclean
brokers: [A, B]
leader: A
topic: {replication_factor: 2, min_insync_replicas: 1, unclean_leader_election: false}
producer: {acks: 1}
steps:
  - produce: m1
  - fetch: B
  - fetch: B
  - produce: m2
  - isr_shrink: B     # B cut from A: the leader drops it from the ISR (short lag)
  - crash: A
  - detect: A         # offline: A was the only ISR member
  - elect: {broker: B, unclean: true}
  - produce: m3
"""


def scenario(tmp_path: Path, text: str, name: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def play_text(tmp_path: Path, text: str, name: str, version: str) -> tuple[Any, Path]:
    """Play a scenario given as text on local JVMs of ``version``: the trial and its folder
    (``run``, or ``run-again`` when the harness flagged its own step: tests/verdicts.py)."""
    path = scenario(tmp_path, text, name)
    return trial_realised(
        lambda f: trial(load_scenario(path), resolve_version(version), "local", f, "t", _quiet),
        tmp_path / "run",
        lambda t: t.verdict,
    )


def _quiet(_m: str) -> None:
    pass


def notes(run: Path) -> dict[int, list[str]]:
    return {o["step"]: o["notes"] for o in json.loads((run / "observations.json").read_text())}


@pytest.mark.broker
@pytest.mark.parametrize("version", ["0.10.2.1", "2.1.1", "3.3.1", "4.0.0"])
def test_elect_chosen_replica_matches_the_model(version: str, tmp_path: Path) -> None:
    require(version)
    (info, prediction, verdict, _record), run = play_text(tmp_path, ELECT_B, "elect-b", version)
    assert verdict is not None, why(info, verdict, run)
    assert prediction.prevented is None
    assert info.model_match, why(info, verdict, run)  # every replica's log as the model says
    assert verdict.lost_acked == [] == prediction.to_json()["lost_acked"]
    realised = [n for n in notes(run)[6] if n.startswith("realised: ")]
    assert realised and "B leads at epoch" in realised[0], notes(run)[6]
    assert info.extra["final"]["leader"] == "B"
    assert jvms_under(tmp_path) == []


@pytest.mark.broker
@pytest.mark.parametrize(
    ("version", "verdict_is"),
    [("3.3.1", "match"), ("4.0.0", "match"), ("0.10.2.1", "prevented")],
)
def test_unclean_elect_on_demand(version: str, verdict_is: str, tmp_path: Path) -> None:
    """ElectLeaders UNCLEAN from 2.4 loses m2 as the model says; before 2.4 both prevent it."""
    require(version)
    from harness.db.runtime.linkcuts import network_available

    reason = network_available()
    if reason is not None:
        pytest.skip(reason)
    (info, prediction, verdict, _record), run = play_text(
        tmp_path, UNCLEAN_B, "elect-unclean", version
    )
    assert verdict is not None, why(info, verdict, run)
    assert info.model_match, why(info, verdict, run)
    assert verdict.verdict == verdict_is
    if verdict_is == "prevented":
        assert verdict.prevented_step == 8
        assert "elect_leaders_unclean" in (verdict.prevented_reason or "")
        assert 8 not in notes(run)
    else:
        assert verdict.lost_acked == ["m2"] == prediction.to_json()["lost_acked"]
        assert any("ElectLeaders UNCLEAN" in n for n in notes(run)[8]), notes(run)[8]
        assert info.extra["final"]["leader"] == "B"
    assert jvms_under(tmp_path) == []
