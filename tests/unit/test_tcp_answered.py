"""harness.readback.tcp on real sockets of real processes (no broker needed).

A child process plays the paused follower: it listens (as every broker does), connects to
this process's listener (the "leader") and sends one request, and is stopped with SIGSTOP.
Until this process answers, the follower's connection has nothing received: not answered.
Once the answer is written, its bytes wait in the stopped child's receive queue: answered.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from harness.readback import tcp

CHILD = """
import socket, sys, time
own = socket.socket(); own.bind(("127.0.0.1", 0)); own.listen()
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
c.sendall(b"fetch")
print("ready", flush=True)
time.sleep(60)
"""


def _until(check: object, timeout: float = 5.0) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = check()  # type: ignore[operator]
        if v:
            return v
        time.sleep(0.02)
    return check()  # type: ignore[operator]


def test_parse_table_reads_addresses_queue_and_inode() -> None:
    text = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
        "timeout inode\n"
        "   0: 0100007F:2382 0100007F:D431 01 00000000:0000001A 00:00000000 00000000     0"
        "        0 4242 1 0000000000000000 20 4 30 10 -1\n"
    )
    (s,) = tcp.parse_table(text)
    assert s.local == ("127.0.0.1", 9090)
    assert s.remote == ("127.0.0.1", 54321)
    assert (s.state, s.rx_queue, s.inode) == (tcp.ESTABLISHED, 26, 4242)


@contextmanager
def _paused_follower() -> Iterator[tuple[int, socket.socket]]:
    """A child that listened, sent its "fetch" to this process's listener and was stopped:
    (its pid, this side's connection to it). Killed and reaped afterwards."""
    leader = socket.socket()
    leader.bind(("127.0.0.1", 0))
    leader.listen()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(leader.getsockname()[1])],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        conn, _ = leader.accept()
        assert conn.recv(5) == b"fetch"
        os.kill(child.pid, signal.SIGSTOP)
        yield child.pid, conn
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        leader.close()


@pytest.mark.skipif(not os.path.isdir("/proc/self/net"), reason="needs Linux /proc")
def test_answered_follows_the_paused_followers_receive_queue() -> None:
    with _paused_follower() as (pid, conn):
        me = os.getpid()
        assert tcp.answered(pid, me) is False  # parked: nothing came back yet
        conn.sendall(b"answer")
        assert _until(lambda: tcp.answered(pid, me)) is True
        conn.close()


def test_unreadable_or_listenerless_process_cannot_tell() -> None:
    """No such process, or one without a listener (not a broker's JVM): no verdict."""
    assert tcp.answered(2**22 + 12345, os.getpid()) is None
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        assert tcp.answered(sleeper.pid, os.getpid()) is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_parse_table_keeps_only_the_given_inodes() -> None:
    head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
    row = (
        "   {n}: 0100007F:2382 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0"
        "        0 {inode} 1 0000000000000000 20 4 30 10 -1\n"
    )
    text = head + row.format(n=0, inode=11) + row.format(n=1, inode=12)
    assert [s.inode for s in tcp.parse_table(text)] == [11, 12]
    assert [s.inode for s in tcp.parse_table(text, {12})] == [12]


@pytest.mark.skipif(not os.path.isdir("/proc/self/net"), reason="needs Linux /proc")
def test_answer_waiting_sees_unread_bytes_that_outlive_the_answering_side() -> None:
    """An answer in a paused follower's socket is still there after the leader's side is
    gone (a crashed leader's answer is applied when the follower next runs)."""
    with _paused_follower() as (pid, conn):
        me = os.getpid()
        assert tcp.answer_waiting(pid, me) is False  # parked, nothing sent back
        conn.sendall(b"answer")
        assert _until(lambda: tcp.answer_waiting(pid, me)) is True
        conn.close()  # the leader's side closes (a killed JVM's sockets do)
        assert tcp.answer_waiting(pid, me) is True  # the bytes are the follower's
    assert tcp.answer_waiting(2**22 + 12345, os.getpid()) is None
