"""A leader the ZooKeeper-mode controller elected is read only once it serves, on real brokers.

The controller writes its election to ZooKeeper before it logs the LeaderAndIsr it sends the
new leader; a fence that counted "sent" against "handled" in that gap saw nothing pending
and passed (a CI run of kip101-scenario1 on 0.10.2.1 at load 24: the consumer read after
``detect B`` found A answering NOT_LEADER_FOR_PARTITION, 3 ms before its become-leader
transition, and the oracle reported the HW regression the model predicts there as "NOT as
the model predicts"). Here the gap is made wide on purpose at that step: the fence reads
the controllers' logs as they were before the election, and A, released, runs only
:data:`LATE` seconds later. The fence waits until A serves (its Fetch answer), so the read
finds A leading with the HW the model says; without that wait (the mutation) the read
fails. Skips with the reason when the 0.10.2.1 tree is missing.
"""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from harness.db.catalogue.versions import resolve_version
from harness.db.mode.zookeeper import LeaderAndIsrLog
from harness.generator.playbook import Playbook
from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from harness.nemesis import faults
from harness.trial import trial
from tests.system.test_brokers import require
from tests.verdicts import trial_realised, why

pytestmark = pytest.mark.broker

LATE = 10.0
"""Seconds between the harness resuming the elected A and A running: longer than the
consumer read's own timeout (3 s) plus what the observation does before the read (the HW
readings), so a read sent before A leads cannot be answered. At 4 s, under the load of
three test workers, the read waited in A's socket and A answered it on waking, as leader."""
DETECT = 13  # kip101-scenario1's ``detect: B``: the controller elects A


def _widen_the_gap(monkeypatch: pytest.MonkeyPatch, stepping: list[int]) -> None:
    """At step :data:`DETECT`: the controllers' logs are counted as they were before the
    election (nothing it sends counts), and A's resume comes :data:`LATE` seconds after the
    harness asked for it."""
    step = Playbook.step
    sent = LeaderAndIsrLog.sent
    resume = faults.resume
    frozen: dict[str, int] = {}

    def stepping_step(self: Playbook, k: int, ev: Any) -> Any:
        stepping.append(k)
        if k == DETECT and isinstance(self.decisions, LeaderAndIsrLog):
            frozen.update({n: sent(self.decisions, n) for n in self.names})  # before the election
        return step(self, k, ev)

    def sent_before(self: LeaderAndIsrLog, name: str) -> int:
        if stepping and stepping[-1] == DETECT and name in frozen:
            return frozen[name]
        return sent(self, name)

    def late_resume(cluster: Any, name: str) -> None:
        if not (stepping and stepping[-1] == DETECT and name == "A"):
            resume(cluster, name)
            return

        def later() -> None:
            with contextlib.suppress(Exception):  # the run ended, its cluster closed
                resume(cluster, name)

        threading.Timer(LATE, later).start()

    monkeypatch.setattr(Playbook, "step", stepping_step)
    monkeypatch.setattr(LeaderAndIsrLog, "sent", sent_before)
    monkeypatch.setattr(faults, "resume", late_resume)


def _read_at_detect(folder: Path) -> dict[str, Any]:
    reads = json.loads((folder / "reads.json").read_text())
    return next(r for r in reads if r["step"] == DETECT and r["replica"] == "A")


@pytest.fixture
def stepping(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The steps played so far, with the gap made wide at :data:`DETECT`."""
    require("0.10.2.1")
    played: list[int] = []
    _widen_the_gap(monkeypatch, played)
    return played


def _play(where: Path) -> Any:
    """kip101-scenario1 on 0.10.2.1 into ``where``."""
    sc = load_scenario(SCENARIO_DIR / "kip101-scenario1.yaml")
    return trial(sc, resolve_version("0.10.2.1"), "local", where, "gap", lambda _m: None)


def test_the_elected_leader_is_read_once_it_serves(tmp_path: Path, stepping: list[int]) -> None:
    def play(where: Path) -> Any:
        stepping.clear()
        return _play(where)

    (info, _p, verdict, _r), folder = trial_realised(play, tmp_path / "run", lambda t: t.verdict)
    assert verdict is not None and info.model_match, why(info, verdict, folder)
    read = _read_at_detect(folder)
    assert read["error"] == "" and read["role"] == "leader" and read["hw"] == 1, read
    cons = verdict.consumer
    # the regression the model predicts (B's HW 2, then A's 1) is now seen by a consumer
    assert cons["observed"]["hw_regression"] == cons["predicted"]["hw_regression"] != []
    assert cons["anomalies_as_predicted"], cons["summary"]
    fences = [
        f["what"]
        for phase in json.loads((folder / "run.json").read_text())["extra"]["timings"]["phases"]
        if phase["name"] == f"step {DETECT}"
        for f in phase["fences"]
    ]
    assert "A to serve as the leader the controller elected" in fences, fences


def test_without_the_wait_the_read_finds_no_leader(
    tmp_path: Path, stepping: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mutation: the fence without its Fetch check passes in the gap, and the read fails."""
    monkeypatch.setattr(LeaderAndIsrLog, "_elected", lambda self, name: False)
    t = _play(tmp_path / "run")
    assert t.verdict is not None, why(t.info, t.verdict, tmp_path / "run")
    read = _read_at_detect(tmp_path / "run")
    assert read["error"] != "", read
    assert "refused by the broker" in t.verdict.consumer["summary"]
