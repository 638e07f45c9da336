"""The pytest plugin on real brokers: scenario items, the diff in failures, the fixtures.

Skipped with a one-line reason when no release tree is configured. Scenario items run in a
pytest subprocess (pytester), so their JVMs and any injected model rule stay there.
"""

from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from confluent_kafka import Producer

from harness.db import BrokerUnavailable
from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.versions import resolve_version
from harness.db.runtime.process import jvms_under
from harness.generator.scenarios import SCENARIO_DIR
from harness.pytest_plugin import HwchaosCluster, HwchaosNemesis, Readback

pytest_plugins = ("pytester",)
pytestmark = pytest.mark.broker

SCENARIO2 = (SCENARIO_DIR / "kip101-scenario2.yaml").read_text()


def require(version: str) -> None:
    try:
        find_tree(resolve_version(version))
    except BrokerUnavailable as exc:
        pytest.skip(str(exc))


@pytest.mark.slow
def test_wrong_expect_fails_with_the_diff_and_junit_carries_the_run_folder(
    pytester: pytest.Pytester,
) -> None:
    require("0.10.2.1")
    pytester.makefile(
        ".yaml",
        right=SCENARIO2.replace("name: kip101-scenario2", "name: right")
        + "expect: {lost_acked: [m2], divergent_offsets: [1], replicas: {A: [m1, m2]}}\n",
        wrong=SCENARIO2.replace("name: kip101-scenario2", "name: wrong")
        + "expect: {lost_acked: [], replicas: {A: [m1, m2], B: [m1, m2]}}\n",
    )
    junit = pytester.path / "junit.xml"
    res = pytester.runpytest_subprocess(
        "-p", "hwchaos", "--hwchaos-kafka", "0.10.2.1", f"--junitxml={junit}", "-q"
    )
    res.assert_outcomes(passed=1, failed=1)
    out = res.stdout.str()
    for line in (
        "wrong on Kafka 0.10.2.1 (0.10.2.1): expect: does not hold "
        "(the model agrees with the brokers)",
        "  replica  predicted   observed    expected",
        "  B        m1 m3       m1 m3       m1 m2       <- differs at offset 1",
        "  lost_acked: expected [], got ['m2']",
        "  replicas.B: expected ['m1', 'm2'], got ['m1', 'm3'] (first differs at offset 1)",
    ):
        assert line in out, line
    cases = ET.parse(junit).getroot().iter("testcase")
    folders = {
        c.get("name"): [
            p.get("value") for p in c.iter("property") if p.get("name") == "hwchaos_run_folder"
        ]
        for c in cases
    }
    assert set(folders) == {"right[0.10.2.1]", "wrong[0.10.2.1]"}
    for name, (folder,) in folders.items():
        assert (Path(str(folder)) / "verdict.json").is_file(), name
        assert f"run folder: {folder}" in out or name.startswith("right")
    assert jvms_under(pytester.path) == []


@pytest.mark.slow
def test_a_wrong_model_rule_fails_with_the_per_replica_diff(pytester: pytest.Pytester) -> None:
    """Inject a wrong rule: 0.10.2.1 predicted as kip320 (epoch truncation it lacks)."""
    require("0.10.2.1")
    pytester.makeconftest(
        textwrap.dedent(
            """
            from dataclasses import replace
            import harness.db.catalogue.versions as versions

            versions.CATALOGUE["0.10.2.1"] = replace(
                versions.CATALOGUE["0.10.2.1"], generation="kip320"
            )
            """
        )
    )
    pytester.makefile(".yaml", scenario2=SCENARIO2)
    res = pytester.runpytest_subprocess("-p", "hwchaos", "--hwchaos-kafka", "0.10.2.1", "-q")
    res.assert_outcomes(failed=1)
    out = res.stdout.str()
    assert "kip101-scenario2 on Kafka 0.10.2.1 (kip320): MODEL MISMATCH, first differing" in out
    assert "  replica  predicted   observed" in out
    assert "  A        m1 m3       m1 m2       <- differs at offset 1" in out
    assert "  A offset 1: predicted m3 observed m2 (different)" in out
    assert "run folder: " in out
    assert jvms_under(pytester.path) == []


# The README's example: an application team's producer settings under a leader crash.
@pytest.mark.slow
@pytest.mark.hwchaos(version="3.3.1", brokers=3)
def test_acks_all_keeps_every_acknowledged_write_through_a_leader_crash(
    hwchaos_cluster: HwchaosCluster, hwchaos_nemesis: HwchaosNemesis, hwchaos_readback: Readback
) -> None:
    leader = hwchaos_cluster.create_topic("orders", min_insync=2)
    producer = Producer({"bootstrap.servers": hwchaos_cluster.bootstrap, "acks": "all"})
    acked: list[str] = []
    for i in range(200):
        producer.produce("orders", f"o{i}", on_delivery=lambda e, m: e or acked.append(m.value()))
        if i == 100:
            hwchaos_nemesis.crash(leader)
    producer.flush(60)
    survivor = hwchaos_readback("orders")[hwchaos_cluster.wait_for_leader("orders", not_=leader)]
    assert len(acked) == 200 and {a.decode() for a in acked} <= {r for _, _, r in survivor}


@pytest.mark.hwchaos(version="3.3.1", brokers=2, network=True)
def test_fixture_partitions_and_heals_links_between_brokers(
    hwchaos_cluster: HwchaosCluster, hwchaos_nemesis: HwchaosNemesis
) -> None:
    """network=True: every node in its own namespace (root); skipped with the reason if not."""
    leader = hwchaos_cluster.create_topic("t")
    cut = hwchaos_nemesis.partition("A", "B")
    assert ("A", "B") in cut and ("B", "A") in cut, cut
    assert sorted(hwchaos_nemesis.heal()) == sorted(cut)
    assert hwchaos_cluster.leader("t") == leader


@pytest.mark.slow
def test_a_lost_write_is_red_named_and_fails_under_fail_on_loss(
    pytester: pytest.Pytester,
) -> None:
    """KIP-101 scenario 1 on real 0.10.2.1 loses the acknowledged m2, as the model predicts:
    agreement green, safety red in the report, named in the CLI line and the JUnit XML, and
    the item fails under --hwchaos-fail-on-loss (issue 21's "green read as safe")."""
    import json

    from harness.checker.verdicts import two_verdicts

    require("0.10.2.1")
    pytester.makefile(".yaml", s1=(SCENARIO_DIR / "kip101-scenario1.yaml").read_text())
    junit = pytester.path / "junit.xml"
    res = pytester.runpytest_subprocess(
        "-p",
        "hwchaos",
        "--hwchaos-kafka",
        "0.10.2.1",
        "--hwchaos-fail-on-loss",
        f"--junitxml={junit}",
        "-q",
    )
    out = res.stdout.str()
    res.assert_outcomes(failed=1)
    assert "kip101-scenario1 on Kafka 0.10.2.1 (0.10.2.1): acknowledged writes LOST: m2" in out
    (case,) = ET.parse(junit).getroot().iter("testcase")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["lost_acked"] == "m2" and props["hwchaos_safety"] == "lost"
    assert props["hwchaos_agreement"] == "match", out  # lost exactly as predicted
    folder = Path(str(props["hwchaos_run_folder"]))
    doc = json.loads((folder / "verdict.json").read_text())
    assert doc["safety"] == "lost" and doc["agreement"] == "match"
    line = two_verdicts(doc).last_line()
    assert line.startswith("agreement: match") and "acknowledged writes LOST: m2" in line
    page = (folder / "report.html").read_text()
    assert "class='verdict ok' id='agreement'" in page
    assert "class='verdict loss' id='safety'>safety: lost" in page
    assert jvms_under(pytester.path) == []
