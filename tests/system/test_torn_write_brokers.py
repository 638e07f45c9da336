"""Real brokers: ``torn_write: A`` (a fault added through the step-kind registry).

While A is down the harness cuts A's last batch mid-way on disk (``nemesis.torn_write``,
listed in writes.json). A's restart runs Kafka's log recovery, which drops the torn batch
(``LogSegment.recover``; the file shrinks back to its complete batches): A comes back
one record shorter, as the model says, and with
acks=1 and A the only in-sync replica the acknowledged m2 is lost. Played on the local
backend; skips with the reason when no Kafka tree of the version is available.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.db.catalogue.versions import resolve_version
from harness.generator.scenarios import load_scenario
from harness.readback.logformat import read_segment
from harness.trial import trial
from tests.system.test_brokers import jvms_under, require
from tests.verdicts import trial_realised, why

DATA = Path(__file__).resolve().parents[1] / "data"
SCENARIO = DATA / "scenarios" / "torn-write-only-isr-copy.yaml"


def _quiet(_m: str) -> None:
    pass


@pytest.mark.broker
@pytest.mark.parametrize("version", ["0.10.2.1", "2.1.1", "3.3.1-kraft", "4.0.0"])
def test_torn_write_restarts_one_record_shorter_as_the_model_says(
    version: str, tmp_path: Path
) -> None:
    require(version)
    (info, prediction, verdict, _record), run = trial_realised(
        lambda folder: trial(
            load_scenario(SCENARIO), resolve_version(version), "local", folder, "t", _quiet
        ),
        tmp_path / "run",
        lambda t: t.verdict,
    )
    assert verdict is not None, why(info, verdict, run)
    assert prediction.prevented is None
    assert info.model_match, why(info, verdict, run)
    assert verdict.lost_acked == ["m2"] == prediction.to_json()["lost_acked"]
    obs = {o["step"]: o for o in json.loads((run / "observations.json").read_text())}
    assert any(n.startswith("fault: A's batch at offset 1 torn") for n in obs[8]["notes"]), obs[8]
    assert obs[7]["leo"]["A"] == 2  # crashed with m2 on disk
    assert obs[10]["leo"]["A"] == 1  # the complete batches left after the restart
    # Kafka's own log recovery ran and cut the torn batch: the file A's broker left holds
    # complete batches only (the harness's reader would stop at a tear, its file would not
    # shrink). 3.3+ also logs "Corruption found in segment 0"; 0.10.2.1 cuts it while it
    # rebuilds the index a SIGKILL left (LogSegment.recover from Log.loadSegments), silently.
    assert "Recovering unflushed segment 0" in (run / "logs" / "A" / "server.log").read_text()
    segments = sorted((run / "cluster" / "A").rglob("hwchaos-0/*.log"))
    assert segments and not read_segment(segments[0], verify=True).torn_tail
    writes = json.loads((run / "writes.json").read_text())
    torn = [w for w in writes if w["why"].startswith("torn_write")]
    assert [(w["broker"], w["value"], w["source"], w["step"]) for w in torn] == [
        ("A", 1, "fault", 8)
    ]
    assert jvms_under(tmp_path) == []
