"""A Docker daemon where there is none.

:func:`docker_available` is the probe (None, or the one-line reason tests skip with).
:func:`ensure_daemon` is what ``hwchaos docker up``, ``scripts/setup.sh``, ``hwchaos run
--backend docker`` and the test session start call: when no daemon answers and this is root
on a Debian-like machine, install ``docker.io`` through apt-get if ``dockerd`` is missing,
start ``dockerd`` in the background (its own session, log in /var/log/hwchaos-dockerd.log),
wait (bounded) until it answers, and say so on stderr. Anywhere else it only gives the
reason. The daemon is a system service: it is left running for the next run, like one
started by systemd would be.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tenacity import RetryError, retry, retry_if_result, stop_after_delay, wait_fixed

DOCKERD_LOG = Path("/var/log/hwchaos-dockerd.log")
START_TIMEOUT = 60.0


def _say(msg: str) -> None:
    print(f"hwchaos docker: {msg}", file=sys.stderr, flush=True)


def docker_available() -> str | None:
    """None when a Docker daemon answers, else a one-line reason."""
    try:
        import docker
    except ImportError:
        return "the docker Python package is not installed (pip install '.[docker]')"
    try:
        client = docker.from_env(timeout=3)  # type: ignore[attr-defined]
        client.ping()
        client.close()
    except Exception as exc:  # the SDK raises several unrelated types here
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"no Docker daemon: {first[:160]}"
    return None


def can_start_daemon() -> str | None:
    """None when this machine lets us install/start dockerd ourselves, else why not."""
    if os.geteuid() != 0:
        return "not root: start the Docker daemon yourself (or run `sudo hwchaos docker up`)"
    if shutil.which("dockerd") is None and shutil.which("apt-get") is None:
        return "no dockerd and no apt-get to install docker.io"
    return None


def ensure_daemon(say: Callable[[str], None] = _say, install: bool = True) -> str | None:
    """Make a daemon answer if we can; None when one answers, else the one-line reason."""
    reason = docker_available()
    if reason is None or "Python package" in reason:
        return reason
    why_not = can_start_daemon()
    if why_not is not None:
        return f"{reason} ({why_not})"
    if shutil.which("dockerd") is None:
        if not install:
            return f"{reason} (dockerd is not installed)"
        say("installing docker.io through apt-get (no dockerd on this machine)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for cmd in (
            ["apt-get", "update", "-qq"],
            ["apt-get", "install", "-y", "-qq", "docker.io"],
        ):
            res = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if res.returncode != 0:
                last = (res.stderr.strip().splitlines() or ["?"])[-1]
                return f"{reason} (apt-get install docker.io failed: {last[:120]})"
    say(f"no daemon answered; starting dockerd (log: {DOCKERD_LOG})")
    log = DOCKERD_LOG.open("ab")
    proc = subprocess.Popen(
        ["dockerd"],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # outlives this process, like a service; Ctrl-C stays ours
    )
    log.close()

    @retry(
        stop=stop_after_delay(START_TIMEOUT),
        wait=wait_fixed(0.5),
        retry=retry_if_result(lambda r: r is not None),
    )
    def answers() -> str | None:
        if proc.poll() is not None:
            return None  # exited: stop waiting, report below
        return docker_available()

    try:
        answers()
    except RetryError:
        return f"dockerd started but did not answer within {START_TIMEOUT:.0f}s (see {DOCKERD_LOG})"
    if proc.poll() is not None:
        again = docker_available()  # another dockerd may have won the race for the socket
        if again is None:
            return None
        return f"dockerd exited with code {proc.returncode} (see {DOCKERD_LOG})"
    say(f"dockerd is up (pid {proc.pid})")
    return None
