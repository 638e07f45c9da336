"""Shared set-up: repo paths, the environment guard, and the tiers as markers.

The suite has three tiers, one folder each:
- ``tests/unit``: model, parsers, explorer, CLI; no JVM, no daemon (``make test-fast``);
- ``tests/integration``: real processes, network namespaces, Docker, Spark, mypyc builds;
- ``tests/system``: the catalogue and fault steps on real brokers.
Each item is marked with its tier, and with ``docker`` / ``netns`` / ``native`` where it needs
that infrastructure, so ``pytest -m`` selects what a machine can run. Nothing here starts a
daemon: ``scripts/setup.sh`` (``hwchaos docker up``) does, before the tests.

``make test`` runs the suite with pytest-xdist workers (``--dist loadgroup``): most of its
time is spent waiting on brokers (fences, timers), not computing. The tests that keep whole
cores busy for long (the mypyc build, Spark sessions) share one ``xdist_group``, so they run
one after another on one worker instead of starving each other and the brokers' timers.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

pytest_plugins = ["tests.envguard"]

TIERS = ("unit", "integration", "system")
_NETNS_FILES = ("test_network.py", "test_netsteps_brokers.py")
CPU_GROUP = "cpu-heavy"  # the xdist_group of the tests that keep cores busy for long


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every item with its tier (its folder) and the infrastructure its id names."""
    for item in items:
        parts = Path(str(item.fspath)).parts
        tier = next((t for t in TIERS if t in parts), None)
        if tier:
            item.add_marker(getattr(pytest.mark, tier))
        name = Path(str(item.fspath)).name
        if "docker" in item.nodeid:
            item.add_marker(pytest.mark.docker)
        if name in _NETNS_FILES:
            item.add_marker(pytest.mark.netns)
        if name == "test_native.py":
            item.add_marker(pytest.mark.native)
        if name == "test_native.py" or item.get_closest_marker("spark") is not None:
            item.add_marker(pytest.mark.xdist_group(CPU_GROUP))
