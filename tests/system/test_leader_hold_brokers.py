"""A leader the next step kills is held (SIGSTOP) from the end of this step, on real brokers.

acks-all-min-isr2-one-crash plays ``fetch: followers`` then ``crash: leader``. The followers,
paused after their round, leave their next Fetch parked at the leader, which answers it
when ``replica.fetch.wait.max.ms`` (1 s) runs out; answered before the crash, the answer (HW
2) waits in each follower's socket and is applied when the follower next runs, where the
model loses the request with the leader (HW 1). Under load the crash step came after the
timer often enough to be the window CI missed most. Here the crash comes late on purpose:
the crash step first waits, bounded, for an answer of the leader to wait unread in a
follower's socket. With the hold none can (the run matches the model, with no harness
note); without it (the mutation) one does, and the run carries the harness's own note
"held A's answer to a parked Fetch unread". Skips with the reason when a tree is missing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from harness.db.catalogue.kafka_config import FETCH_WAIT_MAX_MS
from harness.db.catalogue.versions import resolve_version
from harness.generator.playbook import Playbook
from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from harness.readback import tcp
from harness.trial import trial
from tests.system.test_brokers import require
from tests.verdicts import why

pytestmark = pytest.mark.broker

LATE = FETCH_WAIT_MAX_MS / 1000 + 1.5
"""How long the crash step waits for an answer to wait unread: the follower's parked Fetch
is answered within ``replica.fetch.wait.max.ms`` of the round, which ended before."""
CRASH = 6  # acks-all-min-isr2-one-crash's ``crash: leader``
UNREAD = "answer to a parked Fetch unread"


def _late_crash(monkeypatch: pytest.MonkeyPatch, seen: list[bool]) -> None:
    """The crash step waits (bounded) until a paused follower holds an answer of the leader."""
    crash = Playbook.STEPS["crash"]

    def late(self: Playbook, k: int, ev: Any, name: str) -> str:
        lead_pid = self.cluster.host_pid(name)
        followers = [
            pid for n in self.held - {name} if (pid := self.cluster.host_pid(n)) is not None
        ]
        deadline = time.monotonic() + LATE
        waiting = False
        while lead_pid is not None and not waiting and time.monotonic() < deadline:
            waiting = any(tcp.answer_waiting(pid, lead_pid) for pid in followers)
            time.sleep(0.05)
        seen.append(waiting)
        return crash(self, k, ev, name)

    monkeypatch.setitem(Playbook.STEPS, "crash", late)


def _notes(folder: Path) -> dict[int, list[str]]:
    return {o["step"]: o["notes"] for o in json.loads((folder / "observations.json").read_text())}


def _play(version: str, where: Path) -> Any:
    sc = load_scenario(SCENARIO_DIR / "acks-all-min-isr2-one-crash.yaml")
    return trial(sc, resolve_version(version), "local", where, "hold", lambda _m: None)


@pytest.mark.parametrize("version", ["0.10.2.1", "4.0.0"])
def test_a_late_crash_of_a_held_leader_answers_no_parked_fetch(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(version)
    seen: list[bool] = []
    _late_crash(monkeypatch, seen)
    t = _play(version, tmp_path / "run")
    assert t.verdict is not None and t.info.model_match, why(t.info, t.verdict, tmp_path / "run")
    assert seen == [False]  # waited the whole bound: nothing answered
    notes = _notes(tmp_path / "run")
    assert any("held until the next step kills it" in n for n in notes[CRASH - 1]), notes
    assert not any(UNREAD in n for ns in notes.values() for n in ns), notes


def test_without_the_hold_the_late_crash_leaves_an_answer_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mutation: the leader runs until its crash, answers the parked Fetches, and the
    run carries the harness's note (a run the entry points play once more)."""
    require("0.10.2.1")
    monkeypatch.setattr(Playbook, "hold_leader_before_its_kill", lambda self, events: "")
    seen: list[bool] = []
    _late_crash(monkeypatch, seen)
    _play("0.10.2.1", tmp_path / "run")
    assert seen == [True]
    notes = _notes(tmp_path / "run")
    assert any(UNREAD in n for n in notes[CRASH]), notes
