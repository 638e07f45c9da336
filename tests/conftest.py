"""Shared set-up: repo paths, the environment guard, and the tiers as markers.

The suite has three tiers, one folder each:
- ``tests/unit``: model, parsers, explorer, CLI; no JVM, no daemon (``make test-fast``);
- ``tests/integration``: real processes, network namespaces, Docker, Spark, mypyc builds;
- ``tests/system``: the catalogue and fault steps on real brokers.
Each item is marked with its tier, and with ``docker`` / ``netns`` / ``native`` where it needs
that infrastructure, so ``pytest -m`` selects what a machine can run. Nothing here starts a
daemon: ``scripts/setup.sh`` (``hwchaos docker up``) does, before the tests.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# CI replays the same property examples every run (a red CI names a change, not a draw);
# a developer's run draws new ones, which is how the model's own properties find bugs.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

pytest_plugins = ["tests.envguard"]

TIERS = ("unit", "integration", "system")
_NETNS_FILES = ("test_network.py", "test_netsteps_brokers.py")


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
