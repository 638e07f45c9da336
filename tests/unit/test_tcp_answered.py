"""harness.readback.tcp on real sockets of real processes (no broker needed).

A child process plays the paused follower: it listens (as every broker does), connects to
this process's listener (the "leader") and sends one request, and is stopped with SIGSTOP.
Until this process answers, the follower's connection has nothing received: not answered.
Once the answer is written, its bytes wait in the stopped child's receive queue: answered.
"""

from __future__ import annotations

import os
import shutil
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
def _child_follower(script: str) -> Iterator[tuple[subprocess.Popen[str], socket.socket]]:
    """A child running ``script`` (the "follower") connected to this process's listener
    (the "leader") and sent its "fetch": (the child, this side's connection to it), after
    the request was read here. Killed and reaped afterwards."""
    leader = socket.socket()
    leader.bind(("127.0.0.1", 0))
    leader.listen()
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(leader.getsockname()[1])],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        conn, _ = leader.accept()
        assert conn.recv(5) == b"fetch"
        yield child, conn
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        leader.close()


@contextmanager
def _paused_follower() -> Iterator[tuple[int, socket.socket]]:
    """A child that listened, sent its "fetch" to this process's listener and was stopped:
    (its pid, this side's connection to it). Killed and reaped afterwards."""
    with _child_follower(CHILD) as (child, conn):
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        os.kill(child.pid, signal.SIGSTOP)
        yield child.pid, conn


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


# Two connections as ``ss -tinH state established`` printed them on this machine during a
# 0.10.2.1 run's first produce step (follower B, pid 28430, to leader A's listener 48129):
# B's fetcher had sent a request and read its answer 8 ms later, then was stopped.
SS_CAPTURED = (
    "0      0      127.0.0.1:54506 127.0.0.1:48129\n"
    "\t bbr wscale:1,1 rto:204 rtt:0.04/0.022 ato:40 mss:32742 pmtu:65535 rcvmss:536 "
    "advmss:65483 cwnd:11 bytes_sent:87 bytes_acked:88 bytes_received:47 segs_out:7 segs_in:6 "
    "data_segs_out:1 data_segs_in:4 send 72032400000bps lastsnd:192 lastrcv:184 lastack:184 "
    "pacing_rate 170125277072bps delivered:2 app_limited rcv_space:65495 minrtt:0.018\n"
    "0      0      [::ffff:127.0.0.1]:46342 [::ffff:127.0.0.1]:36537\n"
    "\t bbr wscale:1,10 rto:204 rtt:0.024/0.013 mss:32742 bytes_sent:68 bytes_acked:69 "
    "segs_out:3 segs_in:2 data_segs_out:1 send 120054000000bps lastsnd:84 lastack:84\n"
)


def test_parse_ss_info_reads_the_last_send_and_receive_per_connection() -> None:
    info = tcp.parse_ss_info(SS_CAPTURED)
    assert info[(("127.0.0.1", 54506), ("127.0.0.1", 48129))] == (192, 184)
    # ss leaves out a clock the kernel gives as 0: this tick, or (this one, a request never
    # answered) no data ever received; unknown either way
    assert info[(("127.0.0.1", 46342), ("127.0.0.1", 36537))] == (84, None)


CHILD_ANSWERED = """
import socket, sys, time
own = socket.socket(); own.bind(("127.0.0.1", 0)); own.listen()
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
c.sendall(b"fetch")
assert c.recv(6) == b"answer"
print("read", flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(
    not os.path.isdir("/proc/self/net") or shutil.which("ss") is None,
    reason="needs Linux /proc and iproute2's ss",
)
def test_nothing_in_flight_tells_a_follower_paused_between_two_requests() -> None:
    """Parked (request sent, no answer): not told free. Answered and read, the next request
    not sent yet (a fetcher backing off): nothing in flight, although the connection looks
    the same to ``answered`` (established, nothing in its receive queue)."""
    with _paused_follower() as (pid, _conn):
        assert tcp.nothing_in_flight(pid, os.getpid()) is False
    with _child_follower(CHILD_ANSWERED) as (child, conn):
        # the answer must come a clock tick after the request for the kernel's ms clocks
        # to tell them apart: wait until the request is seen a few ms old
        me = os.getpid()
        assert _until(lambda: _sent_ms_ago(child.pid) >= 20) is True
        conn.sendall(b"answer")
        assert child.stdout is not None and child.stdout.readline().strip() == "read"
        os.kill(child.pid, signal.SIGSTOP)
        assert tcp.answered(child.pid, me) is False  # what the old fence saw
        assert tcp.nothing_in_flight(child.pid, me) is True
    assert tcp.nothing_in_flight(2**22 + 12345, os.getpid()) is None


def _sent_ms_ago(pid: int) -> int:
    """The child's connection's ``lastsnd`` (0 until ss lists it)."""
    text = tcp._ss_info(pid) or ""
    conns = tcp._to_target(pid, os.getpid()) or []
    info = tcp.parse_ss_info(text)
    return max((info.get((s.local, s.remote), (0, 0))[0] or 0 for s in conns), default=0)


CHILD_MIXED = """
import socket, sys, time
four = socket.socket(); four.bind(("127.0.0.1", 0)); four.listen()
six = socket.socket(socket.AF_INET6); six.bind(("::1", 0)); six.listen()
pair = socket.socketpair()  # two Unix sockets, as a JVM holds one
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
c.sendall(b"fetch")
print(four.getsockname()[1], six.getsockname()[1], flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(
    not os.path.isdir("/proc/self/net") or not socket.has_ipv6, reason="needs /proc and IPv6"
)
def test_sockets_of_finds_ipv4_and_ipv6_sockets_of_processes_in_one_namespace() -> None:
    """The tables are read once for both processes, ``tcp`` first: a socket only ``tcp6``
    lists is still found (the Unix ones are not looked for), and each process gets its own."""
    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError as exc:
        pytest.skip(f"no IPv6 loopback here: {exc}")
    with _child_follower(CHILD_MIXED) as (child, _conn):
        assert child.stdout is not None
        four, six = (int(p) for p in child.stdout.readline().split())
        found = tcp.sockets_of([child.pid, os.getpid()])
        assert found is not None
        theirs, mine = found
        listening = sorted(s.local[1] for s in theirs if s.state == tcp.LISTEN)
        assert listening == sorted([four, six])
        assert any(s.state == tcp.ESTABLISHED for s in theirs)
        assert not {s.inode for s in theirs} & {s.inode for s in mine}
        assert tcp.process_sockets(child.pid) == theirs
