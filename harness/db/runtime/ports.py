"""Local ports for the nodes of a cluster, whichever runtime publishes them.

Two harness processes on one machine (``matrix --jobs``) must never hand out the same port:
each keeps a record of its own, but not of the other's. A process given a range of its own
(``HWCHAOS_PORT_RANGE=lo-hi``, which ``matrix --jobs`` sets per job, below the kernel's
ephemeral range so that no ``bind(0)`` elsewhere lands in it) takes its ports from there.
Processes that start others of the same kind (``matrix --jobs``, pytest-xdist workers) give
each child one slice of their own range (:func:`share`), so nesting never overlaps.
"""

from __future__ import annotations

import os
import socket

_HANDED_OUT: set[int] = set()
_NEXT: list[int] = []  # the next candidate in HWCHAOS_PORT_RANGE
# Where parallel workers take their slices when no range was given: below the kernel's
# ephemeral ports (32768-60999), above matrix --jobs' own default slots (20000 + 400 a job).
WORKER_SPAN = (22000, 32767)


def port_range() -> tuple[int, int] | None:
    """``HWCHAOS_PORT_RANGE`` as (lo, hi), inclusive; None when unset."""
    value = os.environ.get("HWCHAOS_PORT_RANGE", "").strip()
    if not value:
        return None
    try:
        lo, hi = (int(x) for x in value.split("-", 1))
    except ValueError:
        msg = f"HWCHAOS_PORT_RANGE={value!r}: expected LO-HI, e.g. 21000-21399"
        raise ValueError(msg) from None
    if not 1024 <= lo <= hi <= 65535:
        raise ValueError(f"HWCHAOS_PORT_RANGE={value!r}: expected 1024 <= LO <= HI <= 65535")
    return lo, hi


def share(index: int, count: int, span: tuple[int, int]) -> tuple[int, int]:
    """Slice ``index`` of ``count`` equal, disjoint slices of ``span`` (inclusive bounds).

    A cluster takes 3-6 ports and a process never hands one out twice, so a slice must hold
    every port a worker's whole session hands out: too narrow a slice is an error here, not a
    "no free port left" an hour later.
    """
    lo, hi = span
    size = (hi - lo + 1) // count
    if not 0 <= index < count:
        raise ValueError(f"no slice {index} of {count}")
    if size < 64:
        raise ValueError(f"ports {lo}-{hi} are too few for {count} parallel jobs (64 each)")
    first = lo + index * size
    return first, first + size - 1


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port free now and not handed out before by this process.

    The ports of one cluster are all chosen before its nodes bind them, and the kernel may
    offer a just-released port again: ZooKeeper and a broker once got the same one (the
    broker died with "Address already in use"). Remembering what was handed out rules that
    out within a process; a port range of its own (module docstring) across processes.
    """
    span = port_range()
    if span is not None:
        lo, hi = span
        start = _NEXT[0] if _NEXT else lo
        for k in range(hi - lo + 1):
            port = lo + (start - lo + k) % (hi - lo + 1)
            if port not in _HANDED_OUT and _bindable(port):
                _HANDED_OUT.add(port)
                _NEXT[:] = [port + 1 if port < hi else lo]
                return port
        raise RuntimeError(f"no free port left in HWCHAOS_PORT_RANGE {lo}-{hi}")
    for _ in range(1000):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            got: int = s.getsockname()[1]
        if got not in _HANDED_OUT:
            _HANDED_OUT.add(got)
            return got
    raise RuntimeError("no free local port that was not already handed out")
