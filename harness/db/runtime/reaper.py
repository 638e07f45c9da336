"""The project's own reaper: no hwchaos container or network outlives its harness.

testcontainers' reaper (Ryuk) is a container whose image must be pulled from Docker Hub,
which these machines cannot reach, so it is disabled (``TESTCONTAINERS_RYUK_DISABLED``) and
replaced by labels:

- every container and network of a run carries ``hwchaos.run=<run id>`` and
  ``hwchaos.owner=<boot id>:<pid>:<process start time>`` of the harness process;
- at interpreter exit (atexit) and on SIGTERM/SIGHUP this process removes its own;
- a harness that was SIGKILLed runs no handler: the next start (:func:`reap_orphans`, called
  by every cluster start and by ``hwchaos docker reap``) removes everything whose owner
  process is gone (the start time guards against a reused pid). Containers of another live
  harness on the same machine are left alone.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

RUN_LABEL = "hwchaos.run"
OWNER_LABEL = "hwchaos.owner"

_lock = threading.Lock()
_closers: dict[int, Callable[[], None]] = {}
_installed = False


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    except OSError:
        return "noboot"


def _start_time(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat (start time in clock ticks), None if no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def owner_id(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{_boot_id()}:{pid}:{_start_time(pid) or '0'}"


def owner_alive(owner: str) -> bool:
    """Whether the harness process named by an owner label still runs."""
    try:
        boot, pid, start = owner.split(":")
    except ValueError:
        return False
    if boot != _boot_id():
        return False
    return _start_time(int(pid)) == start


def labels(run_id: str) -> dict[str, str]:
    return {RUN_LABEL: run_id, OWNER_LABEL: owner_id()}


def reap(client: Any, only_orphans: bool = True, run_id: str | None = None) -> tuple[int, int]:
    """Remove hwchaos containers, then networks; returns (containers, networks) removed.

    ``only_orphans``: only those whose owner process is gone. ``run_id``: only that run's.
    """
    flt = {"label": f"{RUN_LABEL}={run_id}" if run_id else RUN_LABEL}

    def doomed(lbls: dict[str, str]) -> bool:
        return not only_orphans or not owner_alive(lbls.get(OWNER_LABEL, ""))

    # The low-level list (one call, no inspect per container): containers that disappear
    # meanwhile, e.g. removed by their own harness, cannot make the reaper fail.
    n_c = n_n = 0
    for c in client.api.containers(all=True, filters=flt):
        if doomed(c.get("Labels") or {}):
            with contextlib.suppress(Exception):
                client.api.remove_container(c["Id"], force=True, v=True)
                n_c += 1
    for net in client.api.networks(filters=flt):
        if doomed(net.get("Labels") or {}):
            with contextlib.suppress(Exception):
                client.api.remove_network(net["Id"])
                n_n += 1
    return n_c, n_n


def reap_orphans(say: Callable[[str], None] | None = None) -> tuple[int, int]:
    """What every start does first: remove what SIGKILLed harnesses left behind."""
    import docker

    client = docker.from_env(timeout=60)  # type: ignore[attr-defined]
    try:
        n_c, n_n = reap(client, only_orphans=True)
    finally:
        client.close()
    if (n_c or n_n) and say is not None:
        say(f"removed {n_c} containers and {n_n} networks left by a killed hwchaos run")
    return n_c, n_n


def register(key: int, close: Callable[[], None]) -> None:
    """Have ``close`` run at interpreter exit and on SIGTERM/SIGHUP (until unregistered)."""
    with _lock:
        _closers[key] = close
    _install()


def install_exit_hooks() -> None:
    """Install the exit hooks now, from the calling (main) thread: a container started from
    another thread later (the warm pool's background start) is then covered by them."""
    _install()


def unregister(key: int) -> None:
    with _lock:
        _closers.pop(key, None)


def close_all() -> None:
    with _lock:
        closers = list(_closers.values())
        _closers.clear()
    for close in closers:
        with contextlib.suppress(Exception):
            close()


def _install() -> None:
    global _installed
    if _installed:
        return
    _installed = True
    atexit.register(close_all)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        previous = signal.getsignal(sig)

        def handler(signum: int, frame: FrameType | None, previous: Any = previous) -> None:
            close_all()
            if callable(previous):
                previous(signum, frame)
                return
            print(f"hwchaos: {signal.Signals(signum).name}, containers removed", file=sys.stderr)
            raise SystemExit(128 + signum)

        with contextlib.suppress(ValueError, OSError):
            signal.signal(sig, handler)
