"""Network partitions for the local backend: one network namespace per node, cut by iptables
(the cuts themselves, shared with the docker runtime, are in :mod:`harness.db.runtime.linkcuts`).

Why: several orderings need a *link* to fail while both ends stay alive. A follower cut
from the leader (but not from the controller or ZooKeeper) stops fetching and is shrunk out
of the ISR after ``replica.lag.time.max.ms`` without being declared dead; a controller cut
from one broker holds back that broker's LeaderAndIsr; a leader cut from everything but the
harness's clients keeps acknowledging acks=1 writes as a zombie. Pausing or killing a
process cannot express any of these.

How (root only; :func:`network_available` says why not in one line):

- a private /24 from 10.213.0.0/16, chosen per run so that concurrent runs never share one,
  and used by nothing else: only these namespaces ever carry traffic on it;
- one Linux bridge in the root namespace (``hwc<run>br``) carrying the harness's own
  address (``.1``): the harness and its clients stay in the root namespace and reach every
  node, and count as the peer ``client`` for partitions;
- per node (broker, controller, ZooKeeper) a namespace ``hwc-<run>-<node>`` with a veth pair
  into the bridge and its own address; :meth:`RunNetwork.wrap` prefixes a command so a JVM
  starts inside it;
- a cut link ``src -> dst`` is one ``DROP`` rule inside a node's namespace: ``INPUT -s src``
  in ``dst`` (or ``OUTPUT -d client`` in ``src`` when ``dst`` is the harness). Every packet
  is dropped, established connections included, and nothing answers (no RST), as in a real
  partition. Every rule carries the comment ``hwchaos:<run>``;
- when bridged frames traverse the root firewall (``br_netfilter``; Docker sets
  ``FORWARD`` to ``DROP``) one ``ACCEPT`` rule for the bridge, with the same comment.

After a heal, an open TCP connection carries data again only at its next retransmission:
TCP's backoff doubles while the link is cut (measured: 0.4 s after a 0.5 s cut, 1.3 s after
2 s, 5.5 s after 8 s; ``benchmarks/bench_network.py``). Fences after a heal wait on the
state they need (the ISR back, a LeaderAndIsr handled), never on a fixed delay; a short
``replica.socket.timeout.ms`` / ``controller.socket.timeout.ms`` bounds it further.

Nothing is left behind: the owner's pid (with its start time, against pid reuse) and every
name are written to ``/run/hwchaos/<run>.json`` *before* anything is created;
:meth:`RunNetwork.close` (also run at interpreter exit and on SIGTERM/SIGHUP) kills what
still runs in the namespaces and removes veths, namespaces, bridge and rules; and
:func:`reap_leftovers`, called whenever a network is created, removes everything of runs
whose owner is dead (a SIGKILLed harness), plus any ``hwc`` object no live run claims.
"""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import json
import os
import re
import secrets
import shlex
import signal
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from harness.db.runtime.linkcuts import (
    _LINK_NAME,
    _NODE_NAME,
    _NS_NAME,
    CLIENT,
    COMMENT_PREFIX,
    POOL,
    STATE_DIR,
    Direction,
    LinkCuts,
    NetworkError,
    _alive,
    _bridge_nf_call_iptables,
    _iptables_backends,
    _locked,
    _run,
    _start_time,
    network_available,
)

# ---------------------------------------------------------------------------- state


@dataclass
class _State:
    """What one run network owns; written before anything is created so a reaper finds it."""

    run: str
    pid: int
    start_time: int
    subnet: str
    bridge: str
    nodes: dict[str, str]  # node -> address
    namespaces: dict[str, str]  # node -> namespace name
    veths: dict[str, str]  # node -> root-side veth name
    root_rules: list[list[str]]  # full iptables argv of each rule in the root namespace

    @property
    def path(self) -> Path:
        return STATE_DIR / f"{self.run}.json"

    def save(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.__dict__, indent=1, sort_keys=True))
        tmp.replace(self.path)

    @classmethod
    def load(cls, path: Path) -> _State | None:
        try:
            data: dict[str, Any] = json.loads(path.read_text())
            return cls(**data)
        except (OSError, ValueError, TypeError):
            return None


def _live_runs() -> dict[str, _State]:
    """State of every run whose owner process still lives."""
    live: dict[str, _State] = {}
    for path in sorted(STATE_DIR.glob("*.json")) if STATE_DIR.is_dir() else []:
        st = _State.load(path)
        if st is not None and _alive(st.pid, st.start_time):
            live[st.run] = st
    return live


# ---------------------------------------------------------------------------- teardown


def _kill_namespace_processes(ns: str) -> None:
    """SIGKILL what still runs inside ``ns`` (a JVM the harness could not stop)."""
    for tok in _run(["ip", "netns", "pids", ns], check=False).split():
        with contextlib.suppress(ProcessLookupError, ValueError, PermissionError):
            os.kill(int(tok), signal.SIGCONT)
            os.kill(int(tok), signal.SIGKILL)


def _remove_root_rules(run: str) -> list[str]:
    """Delete every root-namespace iptables rule commented ``hwchaos:<run>``."""
    removed = []
    tag = re.compile(rf"{COMMENT_PREFIX}{run}\b")
    for backend in _iptables_backends():
        for line in _run([backend, "-w", "-S", "FORWARD"], check=False).splitlines():
            if line.startswith("-A ") and tag.search(line):
                _run([backend, "-w", "-D", *shlex.split(line)[1:]], check=False)
                removed.append(f"{backend} {line}")
    return removed


def _teardown(st: _State) -> list[str]:
    """Remove everything ``st`` names; never raises; returns what existed and was removed."""
    removed: list[str] = []
    existing_ns = _namespaces()
    existing_links = _links()
    for node, ns in st.namespaces.items():
        if ns in existing_ns:
            _kill_namespace_processes(ns)
        veth = st.veths.get(node)
        if veth and veth in existing_links:
            _run(["ip", "link", "del", veth], check=False)
            removed.append(f"veth {veth}")
        if ns in existing_ns:
            _run(["ip", "netns", "del", ns], check=False)
            removed.append(f"netns {ns}")
    if st.bridge in existing_links:
        _run(["ip", "link", "del", st.bridge], check=False)
        removed.append(f"bridge {st.bridge}")
    removed += _remove_root_rules(st.run)
    with contextlib.suppress(OSError):
        st.path.unlink()
    return removed


def _namespaces() -> set[str]:
    out = _run(["ip", "netns", "list"], check=False)
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _links() -> set[str]:
    out = _run(["ip", "-o", "link", "show"], check=False)
    names = set()
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            names.add(parts[1].strip().split("@", 1)[0])
    return names


def reap_leftovers() -> list[str]:
    """Remove every namespace, veth, bridge and rule of hwchaos runs whose owner is dead.

    Runs with a state file and a dead owner are torn down from it; ``hwc`` namespaces,
    links and ``hwchaos:`` rules that no live run claims (a state file lost) go too.
    Returns one line per removed object. Needs root; without it, does nothing.
    """
    if network_available() is not None:
        return []
    removed: list[str] = []
    with _locked():
        for path in sorted(STATE_DIR.glob("*.json")):
            st = _State.load(path)
            if st is None:
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            if not _alive(st.pid, st.start_time):
                removed += _teardown(st)
        live = set(_live_runs())
        for ns in sorted(_namespaces()):
            m = _NS_NAME.match(ns)
            if m and m.group(1) not in live:
                _kill_namespace_processes(ns)
                _run(["ip", "netns", "del", ns], check=False)
                removed.append(f"netns {ns}")
        for link in sorted(_links()):
            m = _LINK_NAME.match(link)
            if m and m.group(1) not in live:
                _run(["ip", "link", "del", link], check=False)
                removed.append(f"link {link}")
        for backend in _iptables_backends():
            for line in _run([backend, "-w", "-S", "FORWARD"], check=False).splitlines():
                m = re.search(rf"{COMMENT_PREFIX}([0-9a-f]{{6}})", line)
                if m and m.group(1) not in live:
                    removed += _remove_root_rules(m.group(1))
    return removed


# ---------------------------------------------------------------------------- exit hooks

_OPEN: dict[str, RunNetwork] = {}
_HOOKS_LOCK = threading.Lock()
_hooks_installed = False


def _close_all() -> None:
    """At exit: close this process's networks, then reap what killed owners left."""
    for net in list(_OPEN.values()):
        net.close()
    with contextlib.suppress(Exception):
        reap_leftovers()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """SIGTERM/SIGHUP: unwind the main thread (finally blocks stop the JVMs), then atexit."""
    raise SystemExit(128 + signum)


def install_exit_hooks() -> None:
    """atexit always; SIGTERM/SIGHUP only where nobody handles them yet (main thread).

    Public for a caller about to start a cluster on another thread (the warm pool's
    background start, harness.generator.warm): called first from the main thread, the
    signal handlers are in place for it too."""
    global _hooks_installed
    with _HOOKS_LOCK:
        if _hooks_installed:
            return
        _hooks_installed = True
        atexit.register(_close_all)
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) is signal.SIG_DFL:
                signal.signal(sig, _on_signal)


class RunNetwork:
    """One run's private network: a bridge, the harness on it, one namespace per node.

    Use as a context manager or call :meth:`close`. ``nodes`` are the scenario's broker
    names plus ``controller``/``zookeeper``; more can be added with :meth:`add_node`.
    """

    def __init__(self, nodes: Iterable[str] = (), run_dir: Path | None = None) -> None:
        reason = network_available()
        if reason is not None:
            raise NetworkError(reason)
        install_exit_hooks()
        reap_leftovers()
        self.run_dir = run_dir
        self._closed = False
        run = secrets.token_hex(3)
        with _locked():
            subnet = self._free_subnet()
            start = _start_time(os.getpid())
            assert start is not None
            self._state = _State(
                run=run,
                pid=os.getpid(),
                start_time=start,
                subnet=str(subnet),
                bridge=f"hwc{run}br",
                nodes={},
                namespaces={},
                veths={},
                root_rules=[],
            )
            self._state.save()
        _OPEN[run] = self
        self._hosts = subnet.hosts()
        self._prefix = subnet.prefixlen
        self._harness_addr = str(next(self._hosts))
        self._links = LinkCuts(self._state.nodes, self._harness_addr, self._enter, self._comment())
        try:
            self._create_bridge()
            for node in nodes:
                self.add_node(node)
        except BaseException:
            self.close()
            raise

    # -------------------------------------------------------------- set-up

    @staticmethod
    def _free_subnet() -> ipaddress.IPv4Network:
        """The first /24 of the pool that no live run and no route or address of the host uses."""
        taken = [ipaddress.IPv4Network(s.subnet) for s in _live_runs().values()]
        routes = _run(["ip", "-4", "-o", "route", "show", "table", "all"], check=False)
        for line in routes.splitlines():
            dest = (line.split() or [""])[0]
            if dest[:1].isdigit():
                with contextlib.suppress(ValueError):
                    taken.append(ipaddress.IPv4Network(dest, strict=False))
        for line in _run(["ip", "-4", "-o", "addr", "show"], check=False).splitlines():
            parts = line.split()
            if "inet" in parts:
                with contextlib.suppress(ValueError, IndexError):
                    taken.append(ipaddress.IPv4Interface(parts[parts.index("inet") + 1]).network)
        for cand in POOL.subnets(new_prefix=24):
            if cand.network_address.packed[2] == 0:
                continue
            if not any(cand.overlaps(t) for t in taken if t.prefixlen > 0):
                return cand
        raise NetworkError(f"no free /24 left in {POOL} for a run network")

    def _create_bridge(self) -> None:
        br = self._state.bridge
        for backend in _iptables_backends() if _bridge_nf_call_iptables() else []:
            if _run([backend, "-w", "-S", "FORWARD"], check=False).strip() == "-P FORWARD ACCEPT":
                continue  # nothing there could drop the bridge's frames
            rule = [
                backend,
                "-w",
                "-I",
                "FORWARD",
                "1",
                "-i",
                br,
                "-o",
                br,
                "-m",
                "comment",
                "--comment",
                self._comment(),
                "-j",
                "ACCEPT",
            ]
            self._state.root_rules.append(rule)
        self._state.save()
        _run(["ip", "link", "add", br, "type", "bridge"])
        _run(["ip", "addr", "add", f"{self._harness_addr}/{self._prefix}", "dev", br])
        _run(["ip", "link", "set", br, "up"])
        for rule in self._state.root_rules:
            _run(rule)

    def add_node(self, node: str) -> str:
        """Create ``node``'s namespace, veth pair and address; returns the address."""
        self._check_open()
        if not _NODE_NAME.match(node) or node == CLIENT:
            raise NetworkError(f"bad node name {node!r} (letters, digits, _.-; not {CLIENT!r})")
        if node in self._state.nodes:
            raise NetworkError(f"node {node} already has a namespace")
        try:
            addr = str(next(self._hosts))
        except StopIteration:
            raise NetworkError(f"no address left in {self._state.subnet}") from None
        ns = f"hwc-{self.run}-{node}"
        veth = f"hwc{self.run}v{len(self._state.veths)}"
        self._state.nodes[node] = addr
        self._state.namespaces[node] = ns
        self._state.veths[node] = veth
        self._state.save()
        _run(["ip", "netns", "add", ns])
        _run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns])
        _run(["ip", "link", "set", veth, "master", self._state.bridge, "up"])
        _run(
            ["ip", "-n", ns, "-batch", "-"],
            stdin=f"addr add {addr}/{self._prefix} dev eth0\nlink set eth0 up\nlink set lo up\n",
        )
        self._save_record()
        return addr

    def _save_record(self) -> None:
        """The run folder's copy: which node has which address (the report shows it)."""
        if self.run_dir is None:
            return
        with contextlib.suppress(OSError):
            self.run_dir.mkdir(parents=True, exist_ok=True)
            record = {
                "subnet": self._state.subnet,
                "client": self._harness_addr,
                "nodes": self._state.nodes,
                "namespaces": self._state.namespaces,
                "cuts": [f"{s}->{d}" for s, d in self._links.cuts()],
            }
            (self.run_dir / "network.json").write_text(json.dumps(record, indent=1))

    # -------------------------------------------------------------- addressing

    @property
    def run(self) -> str:
        return self._state.run

    @property
    def nodes(self) -> list[str]:
        return list(self._state.nodes)

    def _comment(self) -> str:
        return f"{COMMENT_PREFIX}{self.run}"

    def address(self, node: str) -> str:
        """The node's IPv4 address; ``client`` is the harness's own address on the bridge."""
        if node == CLIENT:
            return self._harness_addr
        self._check_node(node)
        return self._state.nodes[node]

    def namespace(self, node: str) -> str:
        self._check_node(node)
        return self._state.namespaces[node]

    def _enter(self, node: str) -> list[str]:
        return ["ip", "netns", "exec", self.namespace(node)]

    def wrap(self, node: str, cmd: list[str]) -> list[str]:
        """``cmd`` run inside ``node``'s namespace (``ip netns exec`` execs it: same pid)."""
        if node == CLIENT:
            return list(cmd)
        return ["ip", "netns", "exec", self.namespace(node), *cmd]

    def _check_node(self, node: str) -> None:
        if node not in self._state.nodes:
            known = ", ".join([*self._state.nodes, CLIENT])
            raise NetworkError(f"unknown node {node!r} (known: {known})")

    def _check_open(self) -> None:
        if self._closed:
            raise NetworkError(f"run network {self.run} is closed")

    # -------------------------------------------------------------- partitions

    def cuts(self) -> list[tuple[str, str]]:
        """Every directed link currently cut, as (src, dst): packets src -> dst are dropped."""
        return self._links.cuts()

    def partition(
        self,
        src: str | Iterable[str],
        dst: str | Iterable[str],
        direction: Direction = "both",
    ) -> list[tuple[str, str]]:
        """Cut ``src -> dst`` (and back unless one-way); see :meth:`LinkCuts.partition`."""
        self._check_open()
        new = self._links.partition(src, dst, direction)
        self._save_record()
        return new

    def isolate(self, node: str, keep: Iterable[str] = (CLIENT,)) -> list[tuple[str, str]]:
        """Cut ``node`` from every other node; see :meth:`LinkCuts.isolate`."""
        self._check_open()
        new = self._links.isolate(node, keep)
        self._save_record()
        return new

    def heal(
        self,
        src: str | Iterable[str] | None = None,
        dst: str | Iterable[str] | None = None,
        direction: Direction = "both",
    ) -> list[tuple[str, str]]:
        """Restore cut links; see :meth:`LinkCuts.heal`. After close, nothing is left to heal."""
        if self._closed:
            return []
        healed = self._links.heal(src, dst, direction)
        self._save_record()
        return healed

    def rules_in_place(self) -> list[str]:
        """The DROP rules iptables lists; see :meth:`LinkCuts.rules_in_place`."""
        self._check_open()
        return self._links.rules_in_place()

    def dropped(self) -> dict[tuple[str, str], int]:
        """Packets each cut has dropped so far; see :meth:`LinkCuts.dropped`."""
        self._check_open()
        return self._links.dropped()

    # -------------------------------------------------------------- teardown

    def close(self) -> None:
        """Kill what runs in the namespaces, remove veths, namespaces, bridge and rules.

        Idempotent, never raises.
        """
        if self._closed:
            return
        self._closed = True
        _OPEN.pop(self.run, None)
        self._links.forget()
        with contextlib.suppress(Exception):
            _teardown(self._state)

    def __enter__(self) -> RunNetwork:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RunNetwork({self.run}, {self._state.subnet}, nodes={self.nodes})"
