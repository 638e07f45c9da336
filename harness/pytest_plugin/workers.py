"""pytest-xdist workers: each takes ports of its own.

Why: a cluster's ports are chosen before its nodes bind them, and a process remembers only
the ports it handed out itself (:mod:`harness.db.runtime.ports`). Two workers choosing from
the kernel's free ports at once can pick the same one for two clusters; the second broker
then dies with "Address already in use". So each worker (``gwN`` of ``config.workerinput``) sets
``HWCHAOS_PORT_RANGE`` to its own slice: of the range the session was given, else of
:data:`~harness.db.runtime.ports.WORKER_SPAN`. A ``matrix --jobs`` inside a worker slices
the worker's range again. Without xdist nothing changes.
"""

from __future__ import annotations

import os

import pytest

from harness.db.runtime.ports import WORKER_SPAN, port_range, share

ENV = "HWCHAOS_PORT_RANGE"
_BEFORE = pytest.StashKey[str | None]()


def worker_ports(worker: str, count: int, span: tuple[int, int] | None) -> tuple[int, int]:
    """The slice of ``span`` (default :data:`WORKER_SPAN`) for xdist worker ``worker``
    ("gw0".."gwN"; a replaced worker's higher number wraps round) of ``count``."""
    index = int(worker.removeprefix("gw")) % max(count, 1)
    return share(index, max(count, 1), span or WORKER_SPAN)


def claim_ports(config: pytest.Config) -> None:
    """In an xdist worker: set this worker's ``HWCHAOS_PORT_RANGE`` (restored at the end).

    A worker is told by ``config.workerinput``, not by ``PYTEST_XDIST_WORKER``: a pytest run
    started from inside a worker (a test of a pytest plugin) inherits that variable and
    would take a slice of the slice, in the same place as its worker's.
    """
    workerinput = getattr(config, "workerinput", None)
    if not isinstance(workerinput, dict):
        return
    worker = str(workerinput.get("workerid", ""))
    try:
        count = int(workerinput.get("workercount", 1))
        lo, hi = worker_ports(worker, count, port_range())
    except ValueError as exc:
        raise pytest.UsageError(f"{ENV} for xdist worker {worker}: {exc}") from None
    config.stash[_BEFORE] = os.environ.get(ENV)
    os.environ[ENV] = f"{lo}-{hi}"


def release_ports(config: pytest.Config) -> None:
    """Put ``HWCHAOS_PORT_RANGE`` back as the worker found it."""
    if _BEFORE not in config.stash:
        return
    before = config.stash[_BEFORE]
    if before is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = before
