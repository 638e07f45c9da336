"""Real brokers: ``elect: B`` of a chosen replica, and ``elect: {broker: B, unclean: true}``.

The harness reorders the replica assignment (B first, same replica set) and runs a
preferred-replica election: ``/admin/reassign_partitions`` + ``/admin/preferred_replica_election``
in ZooKeeper mode (every release), ReassignPartitionsCommand + ElectLeaders PREFERRED in
KRaft. ``unclean: true`` is ElectLeaders UNCLEAN (2.4+) of an offline partition. Skips with
the reason when no Kafka tree is available.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from harness.db.versions import resolve_version
from harness.generator.runner import play
from harness.generator.scenarios import load_scenario
from tests.test_brokers import jvms_under, require

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

# A leads alone (B and C out of the ISR after they stopped fetching), dies; B elected unclean.
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
  - isr_shrink: B
  - produce: m2
  - crash: A
  - detect: A         # offline: A was the only ISR member, unclean election is off
  - elect: {broker: B, unclean: true}
  - produce: m3
"""


def scenario(tmp_path: Path, text: str, name: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def notes(run: Path) -> dict[int, list[str]]:
    return {o["step"]: o["notes"] for o in json.loads((run / "observations.json").read_text())}


@pytest.mark.broker
@pytest.mark.parametrize("version", ["0.10.2.1", "3.3.1", "4.0.0"])
def test_elect_chosen_replica_matches_the_model(version: str, tmp_path: Path) -> None:
    require(version)
    run = tmp_path / "run"
    info, prediction, verdict = play(
        load_scenario(scenario(tmp_path, ELECT_B, "elect-b")),
        resolve_version(version),
        "local",
        run,
        "t",
        lambda _m: None,
    )
    assert verdict is not None, info.extra.get("failure")
    assert prediction.prevented is None
    assert info.model_match, verdict.differences  # every replica's log as the model says
    assert verdict.lost_acked == [] == prediction.to_json()["lost_acked"]
    realised = [n for n in notes(run)[6] if n.startswith("realised: ")]
    assert realised and "B leads at epoch" in realised[0], notes(run)[6]
    assert info.extra["final"]["leader"] == "B"
    assert jvms_under(tmp_path) == []
