"""harness.locks.exclusive between real processes: the second waits and says so, and a
holder killed with SIGKILL frees the lock (the point of ``flock`` over a lock file)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import locks

HOLD = """
import sys, time
from pathlib import Path
from harness import locks
with locks.exclusive(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""


def holder(path: Path) -> subprocess.Popen[str]:
    """A process holding the lock on ``path``, returned once it says it holds it."""
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "held"  # blocks until the lock is taken
    return p


def try_lock(path: Path) -> bool:
    """Whether this process gets the lock without waiting (``waiting`` not called)."""
    waited: list[bool] = []

    def waiting() -> None:
        waited.append(True)
        raise TimeoutError("held by another process")

    try:
        with locks.exclusive(path, waiting):
            pass
    except TimeoutError:
        return False
    return not waited


@pytest.mark.parametrize("kind", ["file", "directory"])
def test_a_second_process_waits_and_a_killed_holder_frees_the_lock(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "lockdir" if kind == "directory" else tmp_path / "lockfile"
    if kind == "directory":
        path.mkdir()
    assert try_lock(path)  # nobody holds it
    p = holder(path)
    try:
        assert not try_lock(path)  # held by the other process: waiting() was called
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=10)
        deadline = time.monotonic() + 10
        while not try_lock(path):  # freed with its holder's death
            assert time.monotonic() < deadline, "lock still held after its holder died"
            time.sleep(0.05)
    finally:
        p.kill()
        p.wait(timeout=10)
        if p.stdout is not None:
            p.stdout.close()
    if kind == "directory":
        assert list(path.iterdir()) == []  # a directory lock leaves no file behind


def test_the_same_process_waits_for_nobody_once_released(tmp_path: Path) -> None:
    path = tmp_path / "lockfile"
    with locks.exclusive(path):
        pass
    with locks.exclusive(path):  # released on exit: taken again at once
        pass
    assert try_lock(path)
