"""KRaft's session keeper on real brokers (harness.db.mode.kraft.KRaftMode).

The keeper heartbeats for brokers the script keeps alive but that cannot heartbeat
themselves; ``detect`` fences one with ``BrokerHeartbeat(WantFence)``. A keeper heartbeat
that reached the controller after that fence undid it: 3.3.1's controller unfenced the
crashed broker at once ("has caught up with the offset of its register broker record") and
fenced it again only when the session lapsed. A crash followed at once by its ``detect``
(the keeper is woken by the crash) is where the two met. Skips with the reason when a
tree is missing.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from harness.db import BrokerUnavailable, TopicSpec
from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.versions import resolve_version
from harness.db.mode.kraft import KRaftMode
from harness.db.mode.kraft_view import KRaftView
from harness.db.runtime.local import LocalCluster
from harness.db.runtime.process import jvms_under
from harness.nemesis import faults
from harness.readback.metadata_records import read_metadata_log

pytestmark = pytest.mark.broker


def wait(check: object, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{what} within {timeout:.0f}s"
        time.sleep(0.02)


def fencing(view: KRaftView, broker_id: int, since: int) -> list[str]:
    """The controller's decisions on one broker's fencing after metadata offset ``since``,
    in order, read from its metadata log (every KRaft version writes them there)."""
    out = []
    for rec in read_metadata_log(view.log_dir, view.schemas):
        d = rec.data
        if rec.offset <= since or broker_id not in (d.get("BrokerId"), d.get("Id")):
            continue
        if rec.name == "FenceBrokerRecord" or (
            rec.name == "BrokerRegistrationChangeRecord" and d.get("Fenced") == 1
        ):
            out.append("fenced")
        elif rec.name == "UnfenceBrokerRecord" or (
            rec.name == "BrokerRegistrationChangeRecord" and d.get("Fenced") == -1
        ):
            out.append("unfenced")
        elif rec.name == "RegisterBrokerRecord":
            out.append("registered")
    return out


@pytest.mark.parametrize("version", ["3.3.1-kraft", "4.0.0"])
def test_a_crash_detected_while_the_keeper_beats_stays_fenced(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Crash B and keep its session as the playbook does; ``detect`` B while the keeper is
    inside its heartbeat for B (held there until the detect returns, or 0.5 s if the detect
    waits for it): the controller's one decision on B is the fence, and nothing unfences
    it while the keeper goes on for two more rounds."""
    try:
        find_tree(resolve_version(version))
    except BrokerUnavailable as exc:
        pytest.skip(str(exc))
    cluster = LocalCluster(resolve_version(version), ["A", "B"], tmp_path / "c")
    mode = cluster.mode
    assert isinstance(mode, KRaftMode)
    bid = cluster.brokers["B"].broker_id
    in_beat, detected = threading.Event(), threading.Event()
    heartbeat = mode._heartbeat

    def keeper_beat_held(c: Any, broker_id: int, epoch: int, offset: int, want_fence: bool) -> Any:
        if broker_id == bid and not want_fence and not in_beat.is_set():
            in_beat.set()
            detected.wait(0.5)
        return heartbeat(c, broker_id, epoch, offset, want_fence)

    monkeypatch.setattr(mode, "_heartbeat", keeper_beat_held)
    try:
        cluster.start()
        cluster.create_topic(TopicSpec(["A", "B"], 1, False))
        view = mode.view(cluster)
        assert isinstance(view, KRaftView)
        since = view.image().offset
        faults.crash(cluster, "B")
        mode.keep_alive(cluster, {"B"})  # what _sync_sessions does after a crash
        assert in_beat.wait(10), "the keeper to beat for B"
        assert cluster.declare_dead("B")
        detected.set()
        rounds = mode.keeper_rounds
        wait(lambda: mode.keeper_rounds >= rounds + 2, "two keeper rounds")
        assert fencing(view, bid, since) == ["fenced"]
    finally:
        cluster.close()
    assert jvms_under(tmp_path) == []
