"""The environment guard catches a test that deletes HWCHAOS_KAFKA_DISTS (the isolation bug
that made every later broker test skip as "no tree")."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_a_test_that_deletes_the_trees_location_fails_and_later_tests_keep_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HWCHAOS_KAFKA_DISTS", "/opt/somewhere")
    pytester.makepyfile(
        """
        import os

        TREES = "HWCHAOS_KAFKA_DISTS"

        def test_deletes():
            del os.environ[TREES]  # what the old test_docker_backend did

        def test_after():
            assert os.environ["HWCHAOS_KAFKA_DISTS"] == "/opt/somewhere"

        def test_monkeypatched(monkeypatch):
            monkeypatch.delenv("HWCHAOS_KAFKA_DISTS")
        """
    )
    result = pytester.runpytest("-p", "tests.envguard", "-p", "no:hwchaos")
    result.assert_outcomes(passed=3, errors=1)  # the deleting test passes, its teardown errs
    result.stdout.fnmatch_lines(["*left HWCHAOS_KAFKA_DISTS changed*"])
