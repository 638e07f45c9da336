"""A Ctrl-C during a ZooKeeper request ends as KeyboardInterrupt ("hwchaos: interrupted"), not
as kazoo's ConnectionClosedError (harness.db.mode.zk_view.ctrl_c_after_the_call).

The signal is raised where a CI trial caught it: inside the socket send with which kazoo's
``_call`` wakes its connection thread, under a bare ``except:``. The ZooKeeper is real (the
3.3.1 tree's), so the request really goes through kazoo's queue and comes back.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.db import BrokerUnavailable
from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.kafka_config import render, zookeeper_properties
from harness.db.catalogue.versions import resolve_version
from harness.db.mode.zk_view import ZkView
from harness.db.runtime.local import HEAP, classpath
from harness.db.runtime.ports import free_port
from harness.generator.playbook.fences import wait_until

VERSION = "3.3.1"


def _session_opens(connect: str) -> bool:
    """The harness's own test that ZooKeeper serves (``ZooKeeperMode.start``'s ``zk_up``): a
    session opens within 2 s. It listens before it serves, and a session opened in between
    timed out (seen once in ten runs of the test when it waited for the port alone)."""
    try:
        with ZkView(connect, timeout=2.0):
            return True
    except Exception:
        return False


@pytest.fixture
def zookeeper(tmp_path: Path) -> Iterator[str]:
    if shutil.which("java") is None:
        pytest.skip("no java on PATH")
    try:
        tree = find_tree(resolve_version(VERSION))
    except BrokerUnavailable as exc:
        pytest.skip(f"needs the Kafka {VERSION} release tree for its ZooKeeper: {exc}")
    port = free_port()
    conf = tmp_path / "zk.properties"
    conf.write_text(render(zookeeper_properties(str(tmp_path / "data"), port)))
    main = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
    proc = subprocess.Popen(
        ["java", *HEAP, "-cp", classpath(tree), main, str(conf)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        connect = f"127.0.0.1:{port}"
        wait_until(
            lambda: proc.poll() is None and _session_opens(connect), "ZooKeeper to serve", 60
        )
        yield connect
    finally:
        proc.kill()
        proc.wait(30)


@pytest.fixture
def python_ctrl_c() -> Iterator[None]:
    """Python's own SIGINT handler (KeyboardInterrupt), whatever this process inherited.

    A process started in the background by a shell without job control inherits SIGINT
    ignored, and Python then leaves it ignored: a CI trial launched that way (``nohup ...
    &``) failed both tests here on their premise, not on the hold. What is tested is the
    handler a user's ``hwchaos run`` in a terminal has."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


class _SignalledSend:
    """kazoo's wake-up socket, with SIGINT sent to this process during the first ``send``
    and its Python handler run before ``send`` returns (as it runs at the next bytecode)."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self.fired = False

    def send(self, data: bytes) -> int:
        if not self.fired:
            self.fired = True
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # bytecodes: the handler runs at one of these
                pass
        sent: int = self._sock.send(data)
        return sent

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def test_ctrl_c_inside_a_request_is_a_keyboard_interrupt(
    zookeeper: str, python_ctrl_c: None
) -> None:
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with ZkView(zookeeper, timeout=10.0) as view:
        assert view.live_brokers() == ()
        connection = view._zk._client._connection
        wake = _SignalledSend(connection._write_sock)
        connection._write_sock = wake
        with pytest.raises(KeyboardInterrupt):
            view.controller()
        assert wake.fired
        connection._write_sock = wake._sock
        # the request itself completed and the client still serves the next one
        assert view.controller() == -1
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_without_the_hold_kazoo_turns_it_into_connection_closed(
    zookeeper: str, python_ctrl_c: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mutation: the same signal with the hold taken out is the CI trial's traceback, so
    the test above checks the hold and not the way the signal is sent."""
    from kazoo.exceptions import ConnectionClosedError

    from harness.db.mode import zk_view

    monkeypatch.setattr(zk_view._Calls, "REQUESTS", frozenset())
    with ZkView(zookeeper, timeout=10.0) as view:
        connection = view._zk._client._connection
        wake = _SignalledSend(connection._write_sock)
        connection._write_sock = wake
        with pytest.raises(ConnectionClosedError, match="Connection has been closed"):
            view.controller()
        assert wake.fired
        connection._write_sock = wake._sock
        # the request sits in kazoo's queue with its wake-up byte never sent: send it, so
        # the connection thread serves the queue and the client can close
        wake._sock.send(b"\0")
