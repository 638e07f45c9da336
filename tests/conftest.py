"""Shared fixtures: repo paths and the Kafka availability probe."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_collection_finish(session: object) -> None:
    """Start a Docker daemon (root, Debian-like) when broker tests are about to run.

    So the docker twins of the broker tests run for real wherever a daemon can exist (CI
    runs as root); elsewhere they skip with the one-line reason. HWCHAOS_NO_DOCKERD=1 opts
    out.
    """
    import os

    items = getattr(session, "items", [])
    if os.environ.get("HWCHAOS_NO_DOCKERD") or not any(
        i.get_closest_marker("broker") for i in items
    ):
        return
    try:
        from harness.db.daemon import ensure_daemon
    except ImportError:  # docker extra not installed: the tests say so when they skip
        return
    ensure_daemon()
