"""Whether a paused broker's last request to another broker has been answered, from ``/proc``.

Why: a follower paused right after a fetch round leaves its next Fetch parked in the
leader's purgatory for ``replica.fetch.wait.max.ms``; a record produced before the leader
answers it completes it, and the follower applies that answer whenever it next runs (see
``harness.generator.playbook.produce``). The answer is observable from outside: a paused
process reads nothing, so once the leader has answered, the answer's bytes wait in the
follower's socket receive queue (``rx_queue`` of ``/proc/<pid>/net/tcp``), and a Kafka
fetcher has at most one request in flight per connection (``AbstractFetcherThread`` sends the
next Fetch only after it processed the last answer). So: no connection of the follower to
the leader's listener with an empty receive queue means no Fetch of the follower is parked
there.

What is read, all written by the kernel for the brokers' own processes: the follower's
sockets (``/proc/<pid>/fd`` links ``socket:[inode]``), its network namespace's TCP table
(``/proc/<pid>/net/tcp`` and ``tcp6``), and the leader's listening sockets the same way. The
answer is ``None`` (cannot tell; the caller falls back on the broker's timer) whenever one of
them cannot be read, or the follower's own listener is not among the sockets found for its
process id (the process id is not the JVM's, so its sockets would be missed).
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ESTABLISHED = 0x01
LISTEN = 0x0A


@dataclass(frozen=True)
class TcpSocket:
    """One line of ``/proc/<pid>/net/tcp[6]``."""

    local: tuple[str, int]
    remote: tuple[str, int]
    state: int
    rx_queue: int
    inode: int


def _address(field: str) -> tuple[str, int]:
    """``0100007F:2382`` (IPv4, 32-bit words in host byte order) or the IPv6 form."""
    hexip, hexport = field.split(":")
    raw = bytes.fromhex(hexip)
    # Each 32-bit word is in the host's (little-endian) order.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(words)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip), int(hexport, 16)


def parse_table(text: str, inodes: set[int] | None = None) -> list[TcpSocket]:
    """The sockets of one ``/proc/net/tcp``-format table (header line skipped); with
    ``inodes``, only those sockets (the table is the whole network namespace's: on a shared
    host, every other cluster's sockets too, and decoding their addresses cost ~3 ms a
    table, polled every few ms by the produce step's fence)."""
    out = []
    for line in text.splitlines()[1:]:
        f = line.split()
        if len(f) < 10 or (inodes is not None and int(f[9]) not in inodes):
            continue
        out.append(
            TcpSocket(
                local=_address(f[1]),
                remote=_address(f[2]),
                state=int(f[3], 16),
                rx_queue=int(f[4].split(":")[1], 16),
                inode=int(f[9]),
            )
        )
    return out


def _socket_inodes(pid: int) -> set[int]:
    """The inodes of the sockets process ``pid`` holds open (``/proc/<pid>/fd`` links
    ``socket:[inode]``); raises OSError when ``/proc`` cannot tell."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if link.startswith("socket:["):
            inodes.add(int(link[8:-1]))
    return inodes


def _unix_inodes(net: Path) -> set[int]:
    """The inodes of the Unix sockets of one network namespace (``net/unix``, last column
    the inode); empty when the table cannot be read (then ``tcp6`` is read too)."""
    try:
        lines = (net / "unix").read_text().splitlines()[1:]
    except OSError:
        return set()
    return {int(f[6]) for f in (line.split() for line in lines) if len(f) >= 7}


def sockets_of(pids: list[int]) -> list[list[TcpSocket]] | None:
    """The TCP sockets each of ``pids`` holds open; None if ``/proc`` cannot tell.

    Each network namespace's tables are read once for all the processes in it, ``tcp``
    first, and ``tcp6`` only when a socket that is not a Unix one is not found there. Why:
    a read of ``tcp`` or ``tcp6`` costs ~3.4 ms of CPU however few sockets it lists (the
    kernel walks its whole connection hash table, sized by the machine's memory: 24 GiB
    here; ``unix`` costs 0.05 ms; 7 Dec 2026), and the produce step's fence asks for a
    follower's and its leader's sockets every few ms; the brokers' JVMs run with
    ``java.net.preferIPv4Stack`` (their sockets are in ``tcp``, beside one Unix socket), so
    one read serves both processes where four did.
    """
    try:
        inodes = [_socket_inodes(pid) for pid in pids]
        spaces: dict[int, list[int]] = {}
        for k, pid in enumerate(pids):
            spaces.setdefault(os.stat(f"/proc/{pid}/ns/net").st_ino, []).append(k)
        out: list[list[TcpSocket]] = [[] for _ in pids]
        for members in spaces.values():
            net = Path(f"/proc/{pids[members[0]]}/net")
            wanted = set().union(*(inodes[k] for k in members)) - _unix_inodes(net)
            rows: list[TcpSocket] = []
            for table in ("tcp", "tcp6"):
                if (net / table).exists():
                    rows += parse_table((net / table).read_text(), wanted)
                if {r.inode for r in rows} >= wanted:
                    break  # every socket found: the other table cannot hold one
            for k in members:
                out[k] = [r for r in rows if r.inode in inodes[k]]
    except (OSError, ValueError):
        return None
    return out


def process_sockets(pid: int) -> list[TcpSocket] | None:
    """The TCP sockets process ``pid`` holds open; None if ``/proc`` cannot tell."""
    found = sockets_of([pid])
    return None if found is None else found[0]


def _wildcard(ip: str) -> bool:
    return ipaddress.ip_address(ip).is_unspecified


def _to_target(follower_pid: int, target_pid: int) -> list[TcpSocket] | None:
    """The follower's connections to one of the target's listening addresses (None: cannot
    tell, see the module docstring). A listener bound to a wildcard address matches every
    connection to its port."""
    both = sockets_of([follower_pid, target_pid])
    if both is None:
        return None
    mine, theirs = both
    if not any(s.state == LISTEN for s in mine):
        return None  # not the JVM's sockets: nothing here can be trusted
    listeners = [s.local for s in theirs if s.state == LISTEN]
    if not listeners:
        return None
    return [
        s
        for s in mine
        if s.state != LISTEN
        and any(
            s.remote[1] == port and (s.remote[0] == ip or _wildcard(ip)) for ip, port in listeners
        )
    ]


def answered(follower_pid: int, target_pid: int) -> bool | None:
    """Whether no request of process ``follower_pid`` (paused) to process ``target_pid``'s
    listeners is still unanswered.

    True: every connection from the follower to one of the target's listening addresses
    has bytes waiting in the follower's receive queue (the answer came) or is no longer
    established (no answer can come), or there is none. False: one is established with
    nothing received. None: cannot tell (see the module docstring). A wildcard listener
    only ever makes the answer False where it could have been True.
    """
    conns = _to_target(follower_pid, target_pid)
    if conns is None:
        return None
    return all(s.rx_queue > 0 or s.state != ESTABLISHED for s in conns)


def answer_waiting(follower_pid: int, target_pid: int) -> bool | None:
    """Whether an answer of ``target_pid`` waits unread in paused ``follower_pid``'s socket.

    True: a connection from the follower to one of the target's listening addresses has
    bytes in its receive queue (the follower applies them when it next runs, even after the
    target died: the bytes are the follower's kernel's). False: none has. None: cannot tell.
    """
    conns = _to_target(follower_pid, target_pid)
    if conns is None:
        return None
    return any(s.rx_queue > 0 for s in conns)


_SS_ENDPOINT = re.compile(r"^\s*\d+\s+\d+\s+(\S+)\s+(\S+)")
_SS_LASTSND = re.compile(r"\blastsnd:(\d+)")
_SS_LASTRCV = re.compile(r"\blastrcv:(\d+)")


def _endpoint(text: str) -> tuple[str, int] | None:
    """``127.0.0.1:54506`` or ``[::ffff:127.0.0.1]:54506`` (as ``ss`` prints them)."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]").split("%")[0]
    try:
        ip = ipaddress.ip_address(host)
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return str(ip), int(port)
    except ValueError:
        return None


def parse_ss_info(
    text: str,
) -> dict[tuple[tuple[str, int], tuple[str, int]], tuple[int | None, int | None]]:
    """``ss -tinH state established`` output: per (local, remote), the milliseconds since
    the connection last sent data and last received data (``lastsnd``, ``lastrcv``).

    ``ss`` leaves either out when the kernel's figure is 0, which is data moved in this
    clock tick but also, seen here, a connection that never received any: a missing one is
    None (unknown), never taken for an older or a newer one.
    """
    out: dict[tuple[tuple[str, int], tuple[str, int]], tuple[int | None, int | None]] = {}
    key: tuple[tuple[str, int], tuple[str, int]] | None = None
    for line in text.splitlines():
        m = _SS_ENDPOINT.match(line)
        if m and not line.startswith(("\t", " \t")):
            local, remote = _endpoint(m.group(1)), _endpoint(m.group(2))
            key = (local, remote) if local and remote else None
            continue
        if key is None:
            continue
        snd, rcv = _SS_LASTSND.search(line), _SS_LASTRCV.search(line)
        out[key] = (int(snd.group(1)) if snd else None, int(rcv.group(1)) if rcv else None)
        key = None
    return out


def _ss_info(pid: int) -> str | None:
    """``ss -tinH state established`` in process ``pid``'s network namespace (``nsenter``
    when it is not this process's); None when it cannot be run."""
    ss = shutil.which("ss")
    if ss is None:
        return None
    cmd = [ss, "-tinH", "state", "established"]
    try:
        if os.stat(f"/proc/{pid}/ns/net").st_ino != os.stat("/proc/self/ns/net").st_ino:
            nsenter = shutil.which("nsenter")
            if nsenter is None:
                return None
            cmd = [nsenter, "-t", str(pid), "-n", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=5.0, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def nothing_in_flight(follower_pid: int, target_pid: int) -> bool | None:
    """Whether paused ``follower_pid`` has no request to ``target_pid``'s listeners that
    its peer has yet to answer, read from the kernel's own clocks of each connection.

    Why: a follower paused *between* two Fetches (it read an answer and had not sent the
    next one: a fetcher backing off after an error answer, as a follower does right after
    its LeaderAndIsr on 0.10.2.1) has nothing parked at the leader, but its connection looks
    like one with a Fetch parked (established, nothing in the receive queue), so
    :func:`answered` says False until the produce step's timer runs out (2 x
    ``replica.fetch.wait.max.ms``, seen at the first produce of most catalogue runs).

    True: every such connection received data strictly later than it last sent data
    (``tcpi_last_data_recv`` < ``tcpi_last_data_sent``, in ms ago): the last request was
    answered, and a fetcher has one request in flight per connection, and a stopped process
    sends nothing. Received and sent in the same clock tick, or a clock ``ss`` does not show,
    is taken as in flight (the fetcher sends its next Fetch right after reading an answer;
    a new connection whose first request is parked shows no ``lastrcv``). False: one connection's
    last request is unanswered or cannot be told. None: cannot tell (no ``ss``, unreadable
    ``/proc``).
    """
    conns = _to_target(follower_pid, target_pid)
    if conns is None:
        return None
    established = [s for s in conns if s.state == ESTABLISHED and s.rx_queue == 0]
    if not established:
        return True
    text = _ss_info(follower_pid)
    if text is None:
        return None
    info = parse_ss_info(text)
    for s in established:
        times = info.get((s.local, s.remote))
        if times is None:
            return False  # not listed (closed meanwhile, or unparsed): not told answered
        lastsnd, lastrcv = times
        if lastsnd is None or lastrcv is None or not lastrcv < lastsnd:
            return False  # sent as late as received, or a clock not shown: maybe in flight
    return True
