"""A fetch step ends once the leader recorded the follower's next Fetch, read in its own log.

The model's ``fetch`` ends with the follower's next request at the leader, which then knows
the follower's LEO. With a lagging third replica the leader's HW cannot show it, so the
fence reads the leader's ``kafka.cluster.Partition`` DEBUG line ("Recorded replica 2 log end
offset (LEO) position 1", harness.db.runtime.logconf). Seen without it in CI (4.0.1 on a
reused cluster): B paused before its Fetch at offset 1 left, A never learnt B's LEO, and
the next step waited 45 s for the HW the model as played reached. On real brokers, per
backend; skips with the reason when the tree (or daemon) is missing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.db.catalogue.versions import resolve_version
from harness.generator.scenarios import load_scenario
from harness.trial import trial
from tests.system.test_brokers import require

pytestmark = pytest.mark.broker

THREE = """\
name: fetch-recorded
brokers: [A, B, C]
leader: A
topic: {replication_factor: 3, min_insync_replicas: 2, unclean_leader_election: false}
producer: {acks: all}
steps:
  - produce: m1
  - fetch: B      # C lags: A's HW stays 0, only A's own record says B is at 1
"""


def _play(version: str, backend: str, tmp: Path) -> tuple[Any, list[dict[str, Any]], str]:
    path = tmp / "fetch-recorded.yaml"
    path.write_text(THREE)
    folder = tmp / "run"
    info, _p, _v, _r = trial(
        load_scenario(path), resolve_version(version), backend, folder, "rec", lambda _m: None
    )
    observations = json.loads((folder / "observations.json").read_text())
    log = (folder / "logs" / "A" / "server.log").read_text()
    return info, observations, log


@pytest.mark.parametrize(
    ("version", "backend"), [("3.3.1", "local"), ("4.0.1", "local"), ("4.0.0", "docker")]
)
def test_the_fetch_step_waits_for_the_leaders_record_of_the_next_fetch(
    version: str, backend: str, tmp_path: Path
) -> None:
    require(version, backend)
    info, observations, log = _play(version, backend, tmp_path)
    assert info.verdict == "match", info.extra.get("failure")
    step2 = observations[1]
    assert step2["leo"] == {"A": 1, "B": 1, "C": 0} and step2["hw"]["A"] == 0, step2
    assert not any("did not record" in n for n in step2["notes"]), step2["notes"]
    fences = [
        f
        for p in info.extra["timings"]["phases"]
        if p["name"] == "step 2"
        for f in p["fences"]
        if f["what"] == "A to record B's Fetch at its LEO 1"
    ]
    assert fences and fences[0]["ok"], info.extra["timings"]
    assert "Recorded replica 2 log end offset (LEO) position 1" in log


def test_without_the_leaders_record_the_step_says_the_harness_could_not_tell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mutation: brokers started without the Partition logger. A's HW is 0 (C lags), so
    nothing else shows B's position; the fence must not pass, and the step says why in the
    harness's words (which makes a HW difference there a missed window, played again)."""
    require("3.3.1")
    import harness.db.runtime.local as local
    import harness.generator.playbook.fetch as fetch

    monkeypatch.setattr(local, "with_harness_loggers", lambda base, *_a, **_k: base)
    monkeypatch.setattr(fetch, "RECORD_GRACE", 0.5)
    info, observations, log = _play("3.3.1", "local", tmp_path)
    assert "Recorded replica" not in log
    notes = observations[1]["notes"]
    assert any(
        n.startswith("harness: A did not record B's Fetch at its LEO 1") for n in notes
    ), notes
    assert info.verdict == "match"  # the run itself went as scripted: only the fence is blind
