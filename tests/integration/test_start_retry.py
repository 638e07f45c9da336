"""A cluster start a node gave up on: the cause named, one more try on fresh ports.

Real brokers (0.10.2.1 and 3.3.1 in ZooKeeper mode, 4.0.0 in KRaft): the controller's port
is taken by another listener after the ports were chosen and before the JVM binds it, the
race a chosen-free port can lose to another process. The broker really exits ("Address already in
use"); the start keeps that attempt aside with its cause and comes up on fresh ports. When
every port it is given is taken, the error is one line naming the node and the cause, and
no JVM is left.
"""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.db import BrokerUnavailable, ClusterError
from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.versions import resolve_version
from harness.db.exits import exit_cause
from harness.db.names import CONTROLLER
from harness.db.runtime import local
from harness.db.runtime.local import LocalCluster
from harness.db.specs import NodeExited

VERSION = "3.3.1"


def _version(name: str) -> object:
    if shutil.which("java") is None:
        pytest.skip("no java on PATH")
    v = resolve_version(name)
    try:
        find_tree(v)
    except BrokerUnavailable as exc:
        pytest.skip(f"needs the Kafka {name} release tree: {exc}")
    return v


@pytest.fixture
def version() -> object:
    return _version(VERSION)


@pytest.fixture
def squatter() -> Iterator[socket.socket]:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    yield s
    s.close()


def _take(s: socket.socket, port: int) -> None:
    s.bind(("127.0.0.1", port))
    s.listen()


@pytest.mark.parametrize("name", ["0.10.2.1", "3.3.1", "4.0.0"])
def test_a_port_taken_before_the_broker_binds_it_is_retried_on_fresh_ports(
    name: str, tmp_path: Path, squatter: socket.socket
) -> None:
    cluster = LocalCluster(_version(name), ["A"], tmp_path / "run")  # type: ignore[arg-type]
    taken = cluster.nodes[CONTROLLER].port
    _take(squatter, taken)
    try:
        cluster.start()
        assert cluster.nodes[CONTROLLER].port != taken
        assert cluster.is_running(CONTROLLER) and cluster.is_running("A")
        why = (tmp_path / "run" / "failed-start" / "why.txt").read_text()
        assert why.startswith(f"{CONTROLLER} exited with code 1 while waiting for"), why
        assert "Address already in use" in why, why
        assert cluster.failed_starts == (why.strip(),)
        assert str(tmp_path / "run" / "failed-start" / CONTROLLER / "logs") in why
        # the first attempt's folders are kept for a post-mortem, the live ones are fresh
        assert (tmp_path / "run" / "failed-start" / CONTROLLER / "logs" / "server.log").exists()
        live = exit_cause(tmp_path / "run" / CONTROLLER / "logs") or ""
        assert "Address already in use" not in live
    finally:
        cluster.close()
    assert local.kill_leftovers(tmp_path / "run") == 0


def test_a_second_exit_is_the_error_naming_node_and_cause(
    version: object, tmp_path: Path, squatter: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = LocalCluster(version, ["A"], tmp_path / "run")  # type: ignore[arg-type]
    taken = cluster.nodes[CONTROLLER].port
    _take(squatter, taken)
    # the retry's ports, handed out in node order: the others keep theirs, the controller
    # gets the taken one again
    again = iter([s.port for s in cluster.nodes.values()])
    monkeypatch.setattr(local, "free_port", lambda: next(again))
    procs: list[object] = []
    with pytest.raises(NodeExited) as err:
        try:
            cluster.start()
        finally:
            procs = list(cluster._procs.values())
    message = str(err.value)
    assert isinstance(err.value, ClusterError) and "\n" not in message
    assert message.startswith(f"{CONTROLLER} exited with code 1 while waiting for"), message
    assert "Address already in use" in message, message
    assert err.value.node == CONTROLLER and err.value.code == 1
    assert all(p.poll() is not None for p in procs)  # type: ignore[attr-defined]
