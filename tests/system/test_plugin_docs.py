"""docs/pytest-plugin.md's fixture example runs as written, on real brokers.

Each ```python block of the page is written to a test file and run by pytest with the
plugin in a subprocess (its JVMs stay there); the example must pass, which it does only if
the acks=1 writes the leader acknowledged alone are lost, as the page says.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.db import BrokerUnavailable
from harness.db.catalogue.versions import resolve_version
from harness.db.runtime.local import find_tree
from harness.db.runtime.process import jvms_under

pytest_plugins = ("pytester",)
pytestmark = [pytest.mark.broker, pytest.mark.slow]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "pytest-plugin.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", PAGE.read_text(), re.S | re.M)


def test_the_page_has_an_example() -> None:
    assert BLOCKS and all("import" in b for b in BLOCKS)  # runnable as written


@pytest.mark.parametrize("k", range(len(BLOCKS)))
def test_docs_example_runs_as_written(pytester: pytest.Pytester, k: int) -> None:
    try:
        find_tree(resolve_version("3.3.1"))
    except BrokerUnavailable as exc:
        pytest.skip(str(exc))
    pytester.makepyfile(**{f"test_example_{k}": BLOCKS[k]})
    junit = pytester.path / "junit.xml"
    res = pytester.runpytest_subprocess("-p", "hwchaos", "-q", f"--junitxml={junit}")
    res.assert_outcomes(passed=1)
    assert 'name="lost_acked" value="' in junit.read_text()
    assert jvms_under(pytester.path) == []
