"""The brokers' log configuration and the fetch fence's reading of the leader's record.

The fence waits for the leader's own line saying it recorded the follower's fetch position
(``kafka.cluster.Partition`` at DEBUG, added by ``harness.db.runtime.logconf``): the lines
below are copied from real brokers' server.log (local backend, 28 Nov 2026), one per format.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.db import BrokerUnavailable
from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.versions import CATALOGUE, resolve_version
from harness.db.runtime.logconf import log4j2_yaml, log4j_properties, with_harness_loggers
from harness.generator.playbook.fetch import RECORDED, FetchSteps

REAL = {
    "0.10.2.1": "[2026-11-28 15:14:45,977] DEBUG Partition [hwchaos,0] on broker 2: Recorded "
    "replica 1 log end offset (LEO) position 0 for partition hwchaos-0. (kafka.cluster.Partition)",
    "2.1.1": "[2026-11-28 15:14:57,823] DEBUG [Partition hwchaos-0 broker=2] Recorded replica 1 "
    "log end offset (LEO) position 0. (kafka.cluster.Partition)",
    "3.3.1": "[2026-11-28 15:15:11,825] DEBUG [Partition hwchaos-0 broker=2] Recorded replica 1 "
    "log end offset (LEO) position 1 and log start offset 0. (kafka.cluster.Partition)",
    "4.0.1": "[2026-11-28 15:11:39,468] DEBUG [Partition hwchaos-6-0 broker=1] Recorded replica "
    "3 log end offset (LEO) position 0 and log start offset 0. (kafka.cluster.Partition)",
}


@pytest.mark.parametrize("version", sorted(REAL))
def test_the_leaders_record_is_read_from_every_versions_line(version: str) -> None:
    m = RECORDED.search(REAL[version])
    assert m is not None
    assert (int(m.group(1)), int(m.group(2))) == {
        "0.10.2.1": (1, 0),
        "2.1.1": (1, 0),
        "3.3.1": (1, 1),
        "4.0.1": (3, 0),
    }[version]


def test_log4j_properties_adds_the_loggers_and_keeps_the_release_file() -> None:
    base = "log4j.rootLogger=INFO, stdout, kafkaAppender\nlog4j.logger.kafka=INFO"
    out = log4j_properties(base, fetcher_trace=False)
    assert out.startswith(base + "\n")
    assert "log4j.logger.kafka.cluster.Partition=DEBUG" in out
    assert "ReplicaFetcherThread" not in out
    assert "log4j.logger.kafka.server.ReplicaFetcherThread=TRACE" in log4j_properties(base, True)


def test_log4j2_yaml_puts_the_logger_in_the_logger_list_or_says_why_not() -> None:
    base = (
        "Configuration:\n  Loggers:\n    Root:\n      level: INFO\n    Logger:\n"
        "      - name: kafka\n        level: INFO\n"
    )
    out = log4j2_yaml(base)
    assert "      - name: kafka.cluster.Partition\n        level: DEBUG\n" in out
    assert out.index("kafka.cluster.Partition") < out.index("- name: kafka\n")
    with pytest.raises(ValueError, match="no 'Logger:' list"):
        log4j2_yaml("Configuration:\n  Loggers:\n    Root:\n      level: INFO\n")


def test_every_release_trees_own_configuration_takes_the_loggers() -> None:
    """On the release files themselves, every catalogue version this machine has a tree of:
    the result still parses and names the Partition logger at DEBUG."""
    checked = []
    for name in CATALOGUE:
        version = resolve_version(name)
        try:
            tree = find_tree(version)
        except BrokerUnavailable:
            continue
        file = "log4j2.yaml" if version.log4j2 else "log4j.properties"
        out = with_harness_loggers((tree / "config" / file).read_text(), version.log4j2)
        if version.log4j2:
            import yaml

            loggers = yaml.safe_load(out)["Configuration"]["Loggers"]["Logger"]
            assert {"name": "kafka.cluster.Partition", "level": "DEBUG"} in loggers, name
        else:
            assert re.search(r"^log4j\.logger\.kafka\.cluster\.Partition=DEBUG$", out, re.M)
        checked.append(name)
    if not checked:
        pytest.skip("no release tree on this machine (HWCHAOS_KAFKA_DISTS)")


def _steps(tmp_path: Path, lines: list[str], leader_hw: int = 0) -> Any:
    """A FetchSteps as far as the fence reads it: B follows A (ids 1, 2), A's server.log."""
    log = tmp_path / "A" / "logs" / "server.log"
    log.parent.mkdir(parents=True)
    log.write_text("".join(line + "\n" for line in lines))
    cluster = SimpleNamespace(
        topic="hwchaos", broker_log=lambda n: tmp_path / n / "logs" / "server.log"
    )
    s: Any = SimpleNamespace(
        cluster=cluster,
        ids={"A": 1, "B": 2},
        down=set(),
        leader=lambda: "A",
        gone=lambda _n: False,
        leo=lambda _n: 1,
        leader_hw=lambda: leader_hw,
    )
    s._log_since = lambda n, mark: FetchSteps._log_since(s, n, mark)
    s._recorded_leos = lambda lead, mark, topic: FetchSteps._recorded_leos(s, lead, mark, topic)
    return s


def test_the_fence_waits_for_the_followers_own_record_at_its_leo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.generator.playbook.fetch as fetch

    monkeypatch.setattr(fetch, "FETCH_WAIT_MAX_MS", 0)
    monkeypatch.setattr(fetch, "RECORD_GRACE", 0.2)
    line = "[x] DEBUG [Partition hwchaos-0 broker=1] Recorded replica {} log end offset (LEO) "
    line += "position {}. (kafka.cluster.Partition)"
    seen = _steps(tmp_path / "a", [line.format(2, 1)])
    assert FetchSteps._next_fetch_recorded(seen, "B", 0) == ""
    # not B's, not at its LEO, another topic's partition, or before the mark: not the record
    cases = [
        ([line.format(3, 1)], 0),
        ([line.format(2, 0)], 0),
        ([line.format(2, 1).replace("hwchaos-0", "hwchaos-1-0")], 0),
        ([line.format(2, 1)], len(line.format(2, 1)) + 1),
    ]
    for k, (lines, mark) in enumerate(cases):
        note = FetchSteps._next_fetch_recorded(_steps(tmp_path / str(k), lines), "B", mark)
        assert note.startswith("harness: A did not record B's Fetch at its LEO 1"), note
    # the leader's HW covering B's LEO says the same without the line
    assert FetchSteps._next_fetch_recorded(_steps(tmp_path / "hw", [], leader_hw=1), "B", 0) == ""
