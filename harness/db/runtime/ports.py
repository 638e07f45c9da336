"""Local ports for the nodes of a cluster, whichever runtime publishes them."""

from __future__ import annotations

import socket

_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A port free now and not handed out before by this process.

    The ports of one cluster are all chosen before its nodes bind them, and the kernel may
    offer a just-released port again: ZooKeeper and a broker once got the same one (the
    broker died with "Address already in use"). Remembering what was handed out rules that
    out within a process.
    """
    for _ in range(1000):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port
    raise RuntimeError("no free local port that was not already handed out")
