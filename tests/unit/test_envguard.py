"""The environment guard catches a test that deletes HWCHAOS_KAFKA_DISTS (the isolation bug
that made every later broker test skip as "no tree")."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_a_test_that_deletes_the_trees_location_fails_and_later_tests_keep_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HWCHAOS_KAFKA_DISTS", "/opt/somewhere")
    ranges = pytester.mkdir("ranges")
    monkeypatch.setenv("RANGES_SEEN", str(ranges))
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


def test_under_xdist_each_worker_has_its_own_ports_and_the_guard_still_works(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make test`` runs with pytest-xdist workers: the guard must still catch a test that
    deletes a variable (in whichever worker ran it), and the hwchaos plugin must give every
    worker a port range of its own, inside the one the session was given."""
    pytest.importorskip("xdist", reason="pytest-xdist is not installed (pip install -e .[dev])")
    from tests.conftest import ROOT

    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("HWCHAOS_PORT_RANGE", "24000-24999")
    monkeypatch.setenv("HWCHAOS_KAFKA_DISTS", "/opt/somewhere")
    ranges = pytester.mkdir("ranges")
    monkeypatch.setenv("RANGES_SEEN", str(ranges))
    pytester.makepyfile(
        """
        import os
        import pytest

        @pytest.mark.parametrize("n", range(6))
        def test_range(n):
            out = os.path.join(os.environ["RANGES_SEEN"], f"range-{n}")
            who = os.environ["PYTEST_XDIST_WORKER"]
            open(out, "w").write(who + " " + os.environ["HWCHAOS_PORT_RANGE"])

        def test_changes():  # in this subprocess only: the guard must name it
            os.environ["HWCHAOS_KAFKA_DISTS"] = "/elsewhere"
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "tests.envguard", "-p", "hwchaos", "-n", "2", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=7, errors=1)
    result.stdout.fnmatch_lines(["*left HWCHAOS_KAFKA_DISTS changed*"])
    seen: dict[str, set[str]] = {}
    for f in ranges.glob("range-*"):
        worker, span = f.read_text().split()
        seen.setdefault(worker, set()).add(span)
    assert seen == {"gw0": {"24000-24499"}, "gw1": {"24500-24999"}}, seen
