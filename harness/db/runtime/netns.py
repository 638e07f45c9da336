"""Network partitions for the local backend: one network namespace per node, cut by iptables.

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
import fcntl
import ipaddress
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Literal, Protocol

CLIENT = "client"
"""The harness's clients (root namespace, the bridge's address) as a partition peer."""

STATE_DIR = Path("/run/hwchaos")
POOL = ipaddress.IPv4Network("10.213.0.0/16")
COMMENT_PREFIX = "hwchaos:"

Direction = Literal["both", "one-way"]

_RUN_ID = re.compile(r"^[0-9a-f]{6}$")
_NS_NAME = re.compile(r"^hwc-([0-9a-f]{6})-[A-Za-z0-9_.-]+$")
_LINK_NAME = re.compile(r"^hwc([0-9a-f]{6})(br|v\d+)$")
_NODE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$")
_CMD_TIMEOUT = 30.0

CAP_NET_ADMIN = 12
CAP_SYS_ADMIN = 21


class NetworkError(RuntimeError):
    """A namespace, link or rule could not be set up; the message is one line."""


# ---------------------------------------------------------------------------- helpers


def _run(args: list[str], check: bool = True, stdin: str | None = None) -> str:
    """Run one command of iproute2/iptables; a failure becomes a one-line NetworkError."""
    try:
        res = subprocess.run(
            args,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=_CMD_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        if not check:
            return ""
        raise NetworkError(f"{shlex.join(args)}: {exc}") from None
    if check and res.returncode != 0:
        why = (res.stderr.strip() or res.stdout.strip() or f"exit {res.returncode}").splitlines()
        raise NetworkError(f"{shlex.join(args)}: {why[0]}")
    return res.stdout


def network_available() -> str | None:
    """None when this process can build run networks, else the one-line reason it cannot."""
    if os.name != "posix" or not Path("/proc/self/ns/net").exists():
        return "network partitions need Linux network namespaces"
    if os.geteuid() != 0:
        return "network partitions need root (network namespaces, veth pairs, iptables)"
    for tool in ("ip", "iptables"):
        if shutil.which(tool) is None:
            return f"network partitions need `{tool}` on PATH"
    caps = _effective_caps()
    for bit, name in ((CAP_NET_ADMIN, "CAP_NET_ADMIN"), (CAP_SYS_ADMIN, "CAP_SYS_ADMIN")):
        if caps is not None and not caps >> bit & 1:
            return f"network partitions need {name}, which this process lacks"
    return None


def _effective_caps() -> int | None:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return None


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks (field 22 of /proc/PID/stat), None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _alive(pid: int, start_time: int) -> bool:
    return _start_time(pid) == start_time


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """Serialise subnet choice and reaping between concurrent harness processes."""
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with (STATE_DIR / ".lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _iptables_backends() -> list[str]:
    """The iptables front-ends whose FORWARD chain bridged frames traverse.

    ``iptables`` always; ``iptables-legacy`` too when ``iptables`` is the nf_tables one and
    a legacy filter table is loaded (a Docker using legacy iptables), since a DROP policy in
    either drops the frame. Reading /proc keeps the legacy modules from being loaded.
    """
    backends = ["iptables"]
    version = _run(["iptables", "--version"], check=False)
    if "nf_tables" in version and shutil.which("iptables-legacy"):
        with contextlib.suppress(OSError):
            if "filter" in Path("/proc/net/ip_tables_names").read_text().split():
                backends.append("iptables-legacy")
    return backends


def _bridge_nf_call_iptables() -> bool:
    try:
        return Path("/proc/sys/net/bridge/bridge-nf-call-iptables").read_text().strip() == "1"
    except OSError:
        return False


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


def _install_exit_hooks() -> None:
    """atexit always; SIGTERM/SIGHUP only where nobody handles them yet (main thread)."""
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


# ---------------------------------------------------------------------------- the network


def _names(x: str | Iterable[str]) -> list[str]:
    return [x] if isinstance(x, str) else list(x)


class Partitions(Protocol):
    """The partition capability of a cluster (``Cluster.network``): cut and heal links.

    Peers are node names (brokers, ``controller``, ``zookeeper``) and :data:`CLIENT`.
    :class:`RunNetwork` (local backend) and :class:`LinkCuts` (any namespaces one can enter,
    containers included) implement it.
    """

    def partition(
        self, src: str | Iterable[str], dst: str | Iterable[str], direction: Direction = "both"
    ) -> list[tuple[str, str]]: ...

    def heal(
        self,
        src: str | Iterable[str] | None = None,
        dst: str | Iterable[str] | None = None,
        direction: Direction = "both",
    ) -> list[tuple[str, str]]: ...

    def isolate(self, node: str, keep: Iterable[str] = ...) -> list[tuple[str, str]]: ...

    def cuts(self) -> list[tuple[str, str]]: ...

    def dropped(self) -> dict[tuple[str, str], int]: ...


class LinkCuts:
    """The partition rules of one run: one DROP per cut directed link, in a node's namespace.

    Backend-neutral, so containers can be cut the same way: ``enter(node)`` is the command
    prefix that runs a program in the node's network namespace (``ip netns exec NS`` here,
    ``nsenter -t PID -n`` for a container), ``addresses`` maps node -> IPv4 (read at each
    call, so nodes may be added later) and ``client`` is the address the harness's clients
    appear from. Each rule's comment is ``<tag>:<src>-><dst>``.
    """

    def __init__(
        self,
        addresses: Mapping[str, str],
        client: str,
        enter: Callable[[str], list[str]],
        tag: str,
    ) -> None:
        self._addresses = addresses
        self._client = client
        self._enter = enter
        self._tag = tag
        self._cuts: dict[tuple[str, str], tuple[str, list[str]]] = {}

    def address(self, node: str) -> str:
        if node == CLIENT:
            return self._client
        if node not in self._addresses:
            known = ", ".join([*self._addresses, CLIENT])
            raise NetworkError(f"unknown node {node!r} (known: {known})")
        return self._addresses[node]

    def cuts(self) -> list[tuple[str, str]]:
        """Every directed link currently cut, as (src, dst): packets src -> dst are dropped."""
        return sorted(self._cuts)

    def _iptables(self, node: str, args: list[str]) -> str:
        return _run([*self._enter(node), "iptables", "-w", *args])

    def _links_of(
        self, src: str | Iterable[str], dst: str | Iterable[str], direction: Direction
    ) -> list[tuple[str, str]]:
        if direction not in ("both", "one-way"):
            raise NetworkError(f"direction must be 'both' or 'one-way', not {direction!r}")
        srcs, dsts = _names(src), _names(dst)
        for n in [*srcs, *dsts]:
            self.address(n)
        links = []
        for s in srcs:
            for d in dsts:
                if s == d:
                    raise NetworkError(f"cannot cut {s} from itself")
                links.append((s, d))
                if direction == "both":
                    links.append((d, s))
        return links

    def _rule(self, src: str, dst: str) -> tuple[str, list[str]]:
        """Where the DROP for packets src -> dst lives: dst's INPUT, or src's OUTPUT."""
        tag = ["-m", "comment", "--comment", f"{self._tag}:{src}->{dst}", "-j", "DROP"]
        if dst != CLIENT:
            return dst, ["INPUT", "-s", self.address(src), *tag]
        return src, ["OUTPUT", "-d", self.address(dst), *tag]

    def partition(
        self,
        src: str | Iterable[str],
        dst: str | Iterable[str],
        direction: Direction = "both",
    ) -> list[tuple[str, str]]:
        """Cut ``src -> dst`` (and ``dst -> src`` unless one-way); returns the new cuts.

        Takes effect for every packet from the moment it returns, established connections
        included. Cutting a link already cut does nothing.
        """
        new = []
        for s, d in self._links_of(src, dst, direction):
            if (s, d) in self._cuts:
                continue
            where, rule = self._rule(s, d)
            self._iptables(where, ["-I", *rule])
            self._cuts[(s, d)] = (where, rule)
            new.append((s, d))
        return new

    def isolate(self, node: str, keep: Iterable[str] = (CLIENT,)) -> list[tuple[str, str]]:
        """Cut ``node`` from every other node both ways, except the peers in ``keep``.

        The harness's clients are kept by default: a zombie leader is one the clients
        still reach; pass ``keep=()`` to cut them too.
        """
        self.address(node)
        kept = set(keep)
        others = [n for n in [*self._addresses, CLIENT] if n != node and n not in kept]
        return self.partition(node, others, "both") if others else []

    def heal(
        self,
        src: str | Iterable[str] | None = None,
        dst: str | Iterable[str] | None = None,
        direction: Direction = "both",
    ) -> list[tuple[str, str]]:
        """Restore cut links; returns the healed ones.

        ``heal()`` heals everything, ``heal("A")`` every link of A (either direction),
        ``heal("A", "B")`` both directions between them, ``direction="one-way"`` only
        ``src -> dst``.
        """
        srcs = None if src is None else set(_names(src))
        dsts = None if dst is None else set(_names(dst))

        def matches(s: str, d: str) -> bool:
            fwd = (srcs is None or s in srcs) and (dsts is None or d in dsts)
            back = (srcs is None or d in srcs) and (dsts is None or s in dsts)
            return fwd or (direction == "both" and back)

        healed = []
        for (s, d), (where, rule) in sorted(self._cuts.items()):
            if matches(s, d):
                self._iptables(where, ["-D", *rule])
                del self._cuts[(s, d)]
                healed.append((s, d))
        return healed

    def reapply(self, node: str) -> int:
        """Insert again the rules that live in ``node``'s namespace; returns how many.

        For a backend whose restart gives the node a fresh namespace (a restarted
        container); the local backend's namespaces outlive the JVMs, so it never needs it.
        """
        n = 0
        for where, rule in self._cuts.values():
            if where == node:
                self._iptables(where, ["-I", *rule])
                n += 1
        return n

    def dropped(self) -> dict[tuple[str, str], int]:
        """Packets each cut has dropped so far (its rule's counter): proof a cut was hit."""
        counts: dict[tuple[str, str], int] = {}
        for (s, d), (where, rule) in self._cuts.items():
            out = self._iptables(where, ["-L", rule[0], "-v", "-x", "-n"])
            comment = f"{self._tag}:{s}->{d}"
            for line in out.splitlines():
                if comment in line:
                    counts[(s, d)] = int(line.split()[0])
        return counts

    def forget(self) -> None:
        """Drop the bookkeeping without touching rules (their namespaces are gone)."""
        self._cuts.clear()


class RunNetwork:
    """One run's private network: a bridge, the harness on it, one namespace per node.

    Use as a context manager or call :meth:`close`. ``nodes`` are the scenario's broker
    names plus ``controller``/``zookeeper``; more can be added with :meth:`add_node`.
    """

    def __init__(self, nodes: Iterable[str] = (), run_dir: Path | None = None) -> None:
        reason = network_available()
        if reason is not None:
            raise NetworkError(reason)
        _install_exit_hooks()
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
