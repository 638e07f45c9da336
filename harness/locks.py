"""One exclusive lock between harness processes on this machine: ``flock`` on a path.

Why one helper: three places need "one of us at a time" across processes (test workers,
two terminals, a run beside a test session): the native build's cache, the Docker image
builder and the link-cut state (subnets, reaping). Each had its own copy of the same
``open`` / ``flock`` / unlock dance, and only one of them told the user it was waiting.
An ``flock`` dies with its process, so a killed holder (SIGKILL included) never leaves a
lock behind, and a lock on a directory leaves no file at all.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def exclusive(
    path: Path,
    waiting: Callable[[], None] | None = None,
    *,
    best_effort: bool = False,
) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (a directory, or a file made if absent).

    ``waiting`` is called once, before blocking, when another process holds the lock (so
    a user sees why nothing happens). ``best_effort``: a file system without ``flock``
    runs the block unlocked instead of failing (callers whose result is kept whole by an
    atomic rename anyway).
    """
    # read-only is enough for flock: a lock file another user made (0644 in /tmp) still locks
    fd = os.open(path, os.O_RDONLY if path.is_dir() else os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                waiting()
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            if not best_effort:
                raise
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock
