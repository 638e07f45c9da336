"""One seam per mode: the playbook and the nemesis call Mode verbs and never ask which mode.

Why a test: the playbook once branched on ``self.kraft`` 17 times and wrote ZooKeeper znodes
itself. These checks read the source (a new branch on the mode fails them), instantiate both
modes (a verb one mode forgets is an abstract-method error), and drive the ZooKeeper fence
on real state-change log lines, as 0.10-2.x and 3.x brokers write them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.db import FenceTimeout
from harness.db.catalogue.versions import resolve_version
from harness.db.mode import KRaftMode, ZooKeeperMode, make_mode
from harness.db.mode.view import PartitionView
from harness.db.mode.zookeeper import LeaderAndIsrLog

ROOT = Path(__file__).resolve().parents[2]
CALLERS = [
    *sorted((ROOT / "harness/generator").rglob("*.py")),
    ROOT / "harness/nemesis/failover.py",
]
# What asking the mode looks like: its name, its classes, its views, its znodes.
ASKING = re.compile(
    r"\.kraft\b|mode\.name\b|ZooKeeperMode|KRaftMode|ZkView|KRaftView|kazoo|/admin/"
)


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """Source lines outside docstrings and comments (a docstring may name a mode)."""
    tree = ast.parse(path.read_text())
    doc_lines: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                doc_lines.update(range(body[0].lineno, (body[0].end_lineno or 0) + 1))
    lines = path.read_text().splitlines()
    return [
        (i, line.split("#", 1)[0]) for i, line in enumerate(lines, start=1) if i not in doc_lines
    ]


@pytest.mark.parametrize("path", CALLERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_playbook_never_asks_which_mode_it_is_in(path: Path) -> None:
    asked = [f"{i}: {line.strip()}" for i, line in _code_lines(path) if ASKING.search(line)]
    assert not asked, f"{path.name} asks which mode it runs in:\n" + "\n".join(asked)


def test_the_check_sees_a_branch_on_the_mode(tmp_path: Path) -> None:
    """Mutation: the check fails on the kind of line the playbook used to have."""
    f = tmp_path / "x.py"
    f.write_text('"""Docs may say KRaftMode."""\nif self.kraft:  # and comments ZkView\n    pass\n')
    assert [i for i, line in _code_lines(f) if ASKING.search(line)] == [2]


@pytest.mark.parametrize(
    ("version", "mode"), [("0.10.2.1", ZooKeeperMode), ("3.3.1-kraft", KRaftMode)]
)
def test_each_mode_implements_every_verb(version: str, mode: type) -> None:
    m = make_mode(resolve_version(version))
    assert isinstance(m, mode)  # an abstract verb left out would have raised TypeError
    assert m.hub_name and m.held_session_note
    assert m.controller_nodes() and m.liveness_hub()


def test_only_zookeeper_mode_shortens_sessions_and_allows_an_unnoticed_restart() -> None:
    zk, kraft = make_mode(resolve_version("2.1.1")), make_mode(resolve_version("4.0.0"))
    assert zk.short_session_props(6000) == {"zookeeper.session.timeout.ms": "6000"}
    assert kraft.short_session_props(6000) == {}
    assert zk.restart_before_detect(can_fail_over=True) is None
    assert zk.restart_before_detect(can_fail_over=False)
    assert "DuplicateBrokerRegistration" in (kraft.restart_before_detect(True) or "")


# ------------------------------------------------------------ the ZooKeeper fence

SENT_3X = "[2026-11-27 18:00:00,000] TRACE [Controller id=0 epoch=1] Sending LeaderAndIsr request to broker 2 with 1 become-leader and 0 become-follower partitions (state.change.logger)\n"  # noqa: E501
DONE_3X = "[2026-11-27 18:00:00,100] INFO [Broker id=2] Finished LeaderAndIsr request in 5ms correlationId 3 from controller 0 for 1 partitions (state.change.logger)\n"  # noqa: E501
SENT_0X = "[2026-11-27 18:00:00,000] TRACE Controller 0 epoch 1 sending become-follower LeaderAndIsr request (Leader:1,ISR:1,LeaderEpoch:1,ControllerEpoch:1) to broker 2 for partition hwchaos-0 (state.change.logger)\n"  # noqa: E501
DONE_0X = "[2026-11-27 18:00:00,100] TRACE Broker 2 completed LeaderAndIsr request correlationId 3 from controller 0 epoch 1 for the become-follower transition for partition hwchaos-0 (state.change.logger)\n"  # noqa: E501


def _cluster(tmp_path: Path) -> Any:
    for n in ("controller", "B"):
        (tmp_path / n).mkdir()
        (tmp_path / n / "state-change.log").write_text("")
    return SimpleNamespace(
        state_change_log=lambda n: tmp_path / n / "state-change.log",
        brokers={"B": SimpleNamespace(broker_id=2), "controller": SimpleNamespace(broker_id=0)},
    )


def _append(path: Path, line: str) -> None:
    with path.open("a") as fh:
        fh.write(line)


class _Timeout(Exception):
    pass


def _wait_once(check: Any, what: str) -> object:
    """A fence that looks once: the state is already on disk in these tests."""
    if not check():
        raise _Timeout(what)
    return True


@pytest.mark.parametrize(("sent", "done"), [(SENT_3X, DONE_3X), (SENT_0X, DONE_0X)])
def test_leader_and_isr_fence_waits_for_what_was_sent(tmp_path: Path, sent: str, done: str) -> None:
    c = _cluster(tmp_path)
    log = LeaderAndIsrLog(c, lambda: ["controller"])
    log.mark("B")
    log.settle("B", _wait_once)  # nothing sent: settled
    _append(c.state_change_log("controller"), sent)
    assert log.pending("B") == 1
    with pytest.raises(_Timeout, match="B to process the LeaderAndIsr requests sent to it"):
        log.settle("B", _wait_once)
    log.after_restart("B", _wait_once)  # the controller did send B its LeaderAndIsr
    _append(c.state_change_log("B"), done)
    assert log.pending("B") == 0
    log.settle("B", _wait_once)


def test_a_heal_after_an_expired_session_waits_for_a_new_leader_and_isr(tmp_path: Path) -> None:
    c = _cluster(tmp_path)
    log = LeaderAndIsrLog(c, lambda: ["controller"])
    log.mark("B")
    with pytest.raises(_Timeout, match="after registering again"):
        log.after_heal("B", True, _wait_once)
    _append(c.state_change_log("B"), DONE_3X)
    log.after_heal("B", True, _wait_once)
    assert log.base["B"] == (0, 1)  # marked again from the new registration


def test_fence_timeout_is_one_class_for_the_playbook_and_the_modes() -> None:
    from harness.generator.playbook.fences import FenceTimeout as PlaybookFenceTimeout

    assert PlaybookFenceTimeout is FenceTimeout


SENT_2X = "[2026-11-28 07:36:25,125] TRACE [Controller id=0 epoch=1] Sending become-follower LeaderAndIsr request PartitionState(controllerEpoch=1, leader=-1, leaderEpoch=3, isr=3, zkVersion=3, replicas=1,2,3, isNew=false) to broker 2 for partition hwchaos-3-0 (state.change.logger)\n"  # noqa: E501
REFUSED_2X = "[2026-11-28 07:36:25,125] WARN [Channel manager on controller 0]: Not sending request (type=LeaderAndIsRequest, controllerId=0, controllerEpoch=1, partitionStates={hwchaos-3-0=PartitionState(controllerEpoch=1, leader=-1, leaderEpoch=3, isr=3, zkVersion=3, replicas=1,2,3, isNew=false)}, liveLeaders=()) to broker {id}, since it is offline. (kafka.controller.ControllerChannelManager)\n"  # noqa: E501
STOP_REFUSED = "[2026-11-28 07:36:25,079] WARN [Channel manager on controller 0]: Not sending request (type=StopReplicaRequest, controllerId=0, controllerEpoch=1, deletePartitions=false, partitions=hwchaos-3-0) to broker 2, since it is offline. (kafka.controller.ControllerChannelManager)\n"  # noqa: E501


def test_a_leader_and_isr_the_controller_dropped_for_an_offline_broker_is_not_pending(
    tmp_path: Path,
) -> None:
    """Seen on 2.1.1 (power-loss-all-replicas, load 7): the controller handled the failures
    of A, B and C one after another and logged "Sending ... to broker 1" for decisions its
    channel then dropped ("Not sending request ... since it is offline"); A, restarted,
    handled the one it was sent, and the fence waited 45 s for the dropped one."""
    c = _cluster(tmp_path)
    log = LeaderAndIsrLog(c, lambda: ["controller"])
    log.mark("B")
    _append(c.state_change_log("controller"), SENT_2X)
    controller_log = tmp_path / "controller" / "controller.log"
    _append(controller_log, STOP_REFUSED + REFUSED_2X.replace("{id}", "3"))
    assert log.pending("B") == 1  # another broker's refusal, a StopReplica: still pending
    _append(controller_log, REFUSED_2X.replace("{id}", "2"))
    assert log.pending("B") == 0
    log.settle("B", _wait_once)


def test_a_dropped_request_of_two_partitions_takes_back_both_sends(tmp_path: Path) -> None:
    """0.10-2.x log "sending" once per partition and a dropped request once, naming each of
    its partitions: with the run's doorbell beside the test partition, a request the
    controller dropped took back one of two sends, and the fence waited 45 s (0.10.2.1,
    power-loss-all-replicas, 7 Dec CI trial)."""
    c = _cluster(tmp_path)
    log = LeaderAndIsrLog(c, lambda: ["controller"])
    log.mark("B")
    bell = SENT_2X.replace("hwchaos-3-0", "hwchaos-3-bell-0")
    _append(c.state_change_log("controller"), bell + SENT_2X)
    assert log.pending("B") == 2
    both = REFUSED_2X.replace("{id}", "2").replace(
        "partitionStates={", "partitionStates={hwchaos-3-bell-0=PartitionState(leader=-1) ,"
    )
    _append(tmp_path / "controller" / "controller.log", both)
    assert log.pending("B") == 0


def test_a_restart_waits_for_the_election_of_an_offline_partition_with_a_live_isr(
    tmp_path: Path,
) -> None:
    """Seen on 0.10.2.1 (kip101-scenario2 under ``matrix --jobs 3``): B restarted into an
    offline partition whose ISR is {B}. The controller first sent B a LeaderAndIsr naming
    no leader (the replica going online), then elected B 67 ms later; the fence had passed
    on the first request and the harness held B as a follower."""
    c = _cluster(tmp_path)
    state = {"view": PartitionView(leader=-1, leader_epoch=2, isr=(2,), live=(0, 2), controller=0)}
    log = LeaderAndIsrLog(c, lambda: ["controller"], lambda: state["view"])
    log.mark("B")
    _append(c.state_change_log("controller"), SENT_0X)  # the replica goes online: no leader
    with pytest.raises(_Timeout, match="the controller to elect a leader for the offline"):
        log.after_restart("B", _wait_once)
    state["view"] = PartitionView(leader=2, leader_epoch=3, isr=(2,), live=(0, 2), controller=0)
    log.after_restart("B", _wait_once)
    # Offline with every ISR member dead (unclean election off): nothing is coming.
    state["view"] = PartitionView(leader=-1, leader_epoch=3, isr=(1,), live=(0, 2), controller=0)
    log.after_restart("B", _wait_once)


def test_a_restart_waits_for_the_unclean_election_the_topic_allows(tmp_path: Path) -> None:
    """Seen on 3.3.1 (kip279-fast-leader-change on a warm cluster, the CI trial of 7 Dec
    2026): a broker restarted into an offline partition whose ISR is all dead, on a topic
    with ``unclean.leader.election.enable=true``. The controller elects it in the same
    startup event, after a first LeaderAndIsr naming no leader; the fence passed on that
    first request, the harness held the broker as a follower, and its HW stayed at its
    checkpoint."""
    c = _cluster(tmp_path)
    facts = {"replicas": "1,2", "unclean": "true"}
    offline = PartitionView(leader=-1, leader_epoch=2, isr=(1,), live=(2,), controller=0)
    state = {"view": replace(offline, extra=facts)}
    log = LeaderAndIsrLog(c, lambda: ["controller"], lambda: state["view"])
    log.mark("B")
    _append(c.state_change_log("controller"), SENT_0X)  # the replica goes online: no leader
    with pytest.raises(_Timeout, match="the controller to elect a leader for the offline"):
        log.after_restart("B", _wait_once)
    state["view"] = PartitionView(leader=2, leader_epoch=3, isr=(2,), live=(2,), controller=0)
    log.after_restart("B", _wait_once)
    # the same with unclean elections off (or not set on the topic): nothing is coming
    for off in ({"replicas": "1,2", "unclean": "false"}, {"replicas": "1,2"}):
        state["view"] = replace(offline, extra=off)
        log.after_restart("B", _wait_once)
    # nor when no replica of the assignment is live
    state["view"] = replace(offline, live=(3,), extra=facts)
    log.after_restart("B", _wait_once)
