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
from harness.generator.playbook.fences import wait_until
from harness.nemesis import faults
from tests.metadata_log import broker_decisions

pytestmark = pytest.mark.broker


def fencing(view: KRaftView, broker_id: int, since: int) -> list[str]:
    """The controller's decisions on one broker after metadata offset ``since``, in order."""
    return [
        what
        for offset, broker, _epoch, what in broker_decisions(view.log_dir, view.schemas)
        if offset > since and broker == broker_id
    ]


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
        wait_until(lambda: mode.keeper_rounds >= rounds + 2, "two keeper rounds", 30)
        assert fencing(view, bid, since) == ["fenced"]
    finally:
        cluster.close()
    assert jvms_under(tmp_path) == []
