"""Link cuts between the nodes of a run: iptables DROP rules and their heal.

The nemesis's network faults (``partition``/``heal`` steps) on whichever runtime runs the
nodes: each node's namespace (local, :mod:`harness.db.runtime.netns`) or container
(docker). Also the helpers and names the namespaces share.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Literal, Protocol

from harness import locks

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
    with locks.exclusive(STATE_DIR / ".lock"):
        yield


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

    def rules_in_place(self) -> list[str]: ...

    def dropped(self) -> dict[tuple[str, str], int]: ...


class LinkCuts:
    """The partition rules of one run: one DROP per cut directed link, in a node's namespace.

    Backend-neutral, so containers can be cut the same way: ``enter(node)`` is the command
    prefix that runs a program in the node's network namespace (``ip netns exec NS`` here,
    ``nsenter -t PID -n`` for a container), ``addresses`` maps node -> IPv4 (read at each
    call, so nodes may be added later) and ``client`` is the address the harness's clients
    appear from. Each rule's comment is ``<tag>:<src>-><dst>``. ``gone(node)``, where a
    node's namespace can end with its process (a stopped container), says it has: the rules
    that lived there went with it, so healing them is only bookkeeping (and a restart must
    not put them back), and there is nothing to list or count there.
    """

    def __init__(
        self,
        addresses: Mapping[str, str],
        client: str,
        enter: Callable[[str], list[str]],
        tag: str,
        gone: Callable[[str], bool] | None = None,
    ) -> None:
        self._addresses = addresses
        self._client = client
        self._enter = enter
        self._tag = tag
        self._gone = gone or (lambda _node: False)
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
                if not self._gone(where):
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
            if self._gone(where):
                continue
            out = self._iptables(where, ["-L", rule[0], "-v", "-x", "-n"])
            comment = f"{self._tag}:{s}->{d}"
            for line in out.splitlines():
                if comment in line:
                    counts[(s, d)] = int(line.split()[0])
        return counts

    def rules_in_place(self) -> list[str]:
        """Every DROP rule of this network that iptables lists in the nodes' namespaces.

        What is really there, not :meth:`cuts` (the bookkeeping): a reused cluster's clean
        check (harness.generator.warm) must not trust the run that left it.
        """
        found = []
        for node in self._addresses:
            if self._gone(node):
                continue
            out = self._iptables(node, ["-S"])
            found += [f"{node}: {line}" for line in out.splitlines() if self._tag in line]
        return found

    def forget(self) -> None:
        """Drop the bookkeeping without touching rules (their namespaces are gone)."""
        self._cuts.clear()
