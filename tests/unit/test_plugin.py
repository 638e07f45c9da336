"""The pytest plugin, run inside pytest (pytester): collection, model items, expect: blocks.

Items on brokers are in test_plugin_brokers.py; these need only the model.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.generator.scenarios import SCENARIO_DIR

# The model's rule modules, imported before pytester snapshots sys.modules: an in-process run
# that imported them for the first time would have them dropped at its end, and the next
# run's import would register every @handles rule twice ("produce already handles it"),
# which is what running this file alone did.
from reference_model import transitions  # noqa: F401

pytest_plugins = ("pytester",)

# KIP-101 scenario 2 as the harness plays it, with what the hw generation predicts.
SCENARIO2 = (SCENARIO_DIR / "kip101-scenario2.yaml").read_text()
RIGHT = (
    "expect:\n  lost_acked: [m2]\n  divergent_offsets: [1]\n"
    "  replicas: {A: [m1, m2], B: [m1, m3]}\n"
)
WRONG = "expect:\n  lost_acked: []\n  replicas: {A: [m1, m2], B: [m1, m2]}\n"


def scenario(pytester: pytest.Pytester, name: str, expect: str) -> Path:
    text = SCENARIO2.replace("name: kip101-scenario2", f"name: {name}") + expect
    path: Path = pytester.makefile(".yaml", **{name: text})
    return path


def test_expect_block_checked_against_the_model(pytester: pytest.Pytester) -> None:
    scenario(pytester, "right", RIGHT)
    scenario(pytester, "wrong", WRONG)
    res = pytester.runpytest("-p", "hwchaos", "--hwchaos-protocol", "hw", "-q")
    res.assert_outcomes(passed=1, failed=1)
    out = res.stdout.str()
    # The failure is the diff: which part of expect: broke, per-replica logs side by side,
    # the first differing offset, and the step the model blames for the loss.
    for line in (
        "wrong under the model (hw): expect: does not hold",
        "  lost_acked: expected [], got ['m2']",
        "  replicas.B: expected ['m1', 'm2'], got ['m1', 'm3'] (first differs at offset 1)",
        "  replica  predicted   expected",
        "  A        m1 m2       m1 m2",
        "  B        m1 m3       m1 m2       <- differs at offset 1",
        "model: m2 lost at step 12: power_loss B",
    ):
        assert line in out, line
    assert "Traceback" not in out and "def runtest" not in out


def test_one_item_per_scenario_and_target(pytester: pytest.Pytester) -> None:
    scenario(pytester, "one", "")
    pytester.makefile(".yaml", other="not: a scenario\n")  # YAML without steps: not ours
    res = pytester.runpytest(
        "-p", "hwchaos", "--hwchaos-protocol", "hw,kip320", "--collect-only", "-q"
    )
    res.stdout.fnmatch_lines(["*one.yaml::one[[]model:hw[]]", "*one.yaml::one[[]model:kip320[]]"])
    assert "other.yaml" not in res.stdout.str()


def test_hwchaos_profile_is_the_word_and_protocol_its_alias(pytester: pytest.Pytester) -> None:
    scenario(pytester, "one", "")
    res = pytester.runpytest("-p", "hwchaos", "--hwchaos-profile", "kip320", "--collect-only", "-q")
    res.stdout.fnmatch_lines(["*one.yaml::one[[]model:kip320[]]"])


def test_a_broken_scenario_file_fails_with_the_loader_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", broken="brokers: [A]\nsteps:\n  - crash: Z\n")
    res = pytester.runpytest("-p", "hwchaos", "--hwchaos-protocol", "hw", "-q")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["*broken.yaml: step 1: unknown broker 'Z' (brokers: A*"])


def test_without_options_nothing_is_collected(pytester: pytest.Pytester) -> None:
    scenario(pytester, "quiet", "")
    res = pytester.runpytest("-q")
    assert res.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_unknown_version_is_a_one_line_usage_error(pytester: pytest.Pytester) -> None:
    res = pytester.runpytest("-p", "hwchaos", "--hwchaos-kafka", "9.9")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*--hwchaos-kafka: unknown Kafka version '9.9' (known: *"])


def test_missing_release_tree_skips_with_one_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario(pytester, "needs_tree", "")
    empty = pytester.mkdir("no-dists")
    monkeypatch.setenv("HWCHAOS_KAFKA_DISTS", str(empty))
    monkeypatch.setenv("HWCHAOS_KAFKA_CACHE", str(empty))
    res = pytester.runpytest("-p", "hwchaos", "--hwchaos-kafka", "2.1.1", "-rs", "-q")
    res.assert_outcomes(skipped=1)
    res.stdout.fnmatch_lines([f"*no kafka_2.11-2.1.1 under {empty}*hwchaos kafka install 2.1.1*"])


def test_fixture_marker_validation(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        textwrap.dedent(
            """
            import pytest

            @pytest.mark.hwchaos(version="9.9", brokers=2)
            def test_x(hwchaos_cluster):
                pass
            """
        )
    )
    res = pytester.runpytest("-q")
    res.stdout.fnmatch_lines(["*@pytest.mark.hwchaos: unknown Kafka version '9.9'*"])


def _properties(junit: Path) -> dict[str, dict[str, str]]:
    import xml.etree.ElementTree as ET

    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        props = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        out[case.get("name", "")] = props
    return out


def test_fail_on_loss_fails_a_predicted_loss_and_expect_still_wins(
    pytester: pytest.Pytester,
) -> None:
    """KIP-101 scenario 2 under hw loses m2 exactly as the model predicts: green by default,
    red under --hwchaos-fail-on-loss, green again where expect: accepts that loss."""
    scenario(pytester, "noexpect", "")
    scenario(pytester, "accepted", RIGHT)
    safe = (SCENARIO_DIR / "acks-all-min-isr2-one-crash.yaml").read_text()
    pytester.makefile(".yaml", safe=safe)
    base = ("-p", "hwchaos", "--hwchaos-protocol", "hw", "-q")
    pytester.runpytest(*base).assert_outcomes(passed=3)
    junit = pytester.path / "junit.xml"
    res = pytester.runpytest(*base, "--hwchaos-fail-on-loss", f"--junitxml={junit}")
    res.assert_outcomes(passed=2, failed=1)
    out = res.stdout.str()
    assert "noexpect under the model (hw): acknowledged writes LOST: m2" in out
    assert "noexpect under the model (hw): replicas DIVERGE at offsets 1" in out
    assert "model: m2 lost at step 12: power_loss B" in out
    props = _properties(junit)
    lossy = props["noexpect[model:hw]"]
    assert lossy["lost_acked"] == "m2" and lossy["divergent_offsets"] == "1"
    assert lossy["hwchaos_safety"] == "lost" and lossy["hwchaos_agreement"] == "model only"
    clean = next(v for k, v in props.items() if k.startswith("acks-all-min-isr2"))
    assert clean["lost_acked"] == "" and clean["hwchaos_safety"] == "no loss"
