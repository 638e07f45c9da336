"""Shared set-up: repo paths, the environment guard, and the tiers as markers.

The suite has three tiers, one folder each:
- ``tests/unit``: model, parsers, explorer, CLI; no JVM, no daemon (``make test-fast``);
- ``tests/integration``: real processes, network namespaces, Docker, Spark, mypyc builds;
- ``tests/system``: the catalogue and fault steps on real brokers.
Each item is marked with its tier, and with ``docker`` / ``netns`` / ``native`` where it needs
that infrastructure, so ``pytest -m`` selects what a machine can run. Nothing here starts a
daemon: ``scripts/setup.sh`` (``hwchaos docker up``) does, before the tests.

``make test`` runs the suite with pytest-xdist workers (``--dist loadgroup``): most of its
time is spent waiting on brokers (fences, timers), not computing. Some files are one work
unit each (:data:`SHARED_UNITS`): their module-scoped fixture (a Spark session, a mypyc
build, broker runs) then runs once instead of once per worker, and two Spark sessions or
two builds never overlap.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

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
# Test files whose tests run as one unit on one xdist worker (the unit's name). A
# module-scoped fixture runs once per worker that gets a test of its module, so a file whose
# fixture is costly is one unit: test_replay_brokers plays 9 scenarios per version in its
# fixture (spread over 3 workers: 54 broker runs instead of 18). The Spark and mypyc files
# also keep cores busy for long: never two Spark sessions or two builds at once.
SHARED_UNITS = {
    "test_native.py": "mypyc",
    "test_analysis.py": "spark",
    "test_spark_cds.py": "spark",
    "test_spark_standalone.py": "spark",
    "test_replay_brokers.py": "replay",
}


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


def shared_unit(nodeid: str) -> str | None:
    """The work unit a test shares with others under xdist (:data:`SHARED_UNITS`), None: a
    unit of its own."""
    return SHARED_UNITS.get(Path(nodeid.split("::", 1)[0]).name)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: unknown without it
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: xdist's own grouping, plus the :data:`SHARED_UNITS`.

    Why not ``xdist_group`` marks: pytest-xdist 3.8 groups by renaming the item's
    ``_nodeid``, which pytest 9 no longer reads, so marked tests were spread over all workers
    (three Spark sessions at once); the scheduler sees node ids, which name the file."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class CpuHeavyTogether(LoadGroupScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return shared_unit(nodeid) or str(super()._split_scope(nodeid))

    return CpuHeavyTogether(config, log)
