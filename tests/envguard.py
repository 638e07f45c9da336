"""A pytest plugin that fails any test which leaves the HWCHAOS_* environment changed.

Why: a test that set ``HWCHAOS_KAFKA_DISTS`` and then deleted it made every broker test
collected after it skip ("no tree") on a machine whose trees sit outside the default path, so
CI passed green with most broker tests skipped. Tests change the environment with
``monkeypatch.setenv``/``delenv``, which restores it; anything else is caught here, at the
test that did it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


def _hwchaos_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith("HWCHAOS_")}


@pytest.fixture(autouse=True)
def _hwchaos_env_unchanged() -> Iterator[None]:
    """Set up before (so torn down after) monkeypatch: compares what the test left behind."""
    before = _hwchaos_env()
    yield
    after = _hwchaos_env()
    if after != before:
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        os.environ.update(before)
        for k in set(after) - set(before):
            del os.environ[k]
        pytest.fail(
            f"the test left {', '.join(changed)} changed in the environment "
            "(use monkeypatch.setenv/delenv); restored for the tests after it",
            pytrace=False,
        )
