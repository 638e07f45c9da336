"""Fences read a broker's log4j files across the hourly rotation Kafka's own configs do.

Every shipped configuration rolls ``server.log`` and ``state-change.log`` on the hour (log4j
1 ``DatePattern='.'yyyy-MM-dd-HH`` up to 3.x, log4j2 ``%d{yyyy-MM-dd-HH}`` in 4.0). A CI run
of ``elect: B`` on 4.0.0 crossed the hour right after B had logged "Follower hwchaos-0
starts at leader epoch 0": the new ``state-change.log`` no longer had that line, the fence
"B applied the controller's latest decision" never saw epoch 0 again and timed out after
45 s. These tests lay out files under the names the release trees' own configurations give
(read from the trees when ``HWCHAOS_KAFKA_DISTS`` has them) and check the fences' readers.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.db import BrokerUnavailable
from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.versions import resolve_version
from harness.db.mode.kraft import replica_epoch
from harness.generator.playbook.fetch import FetchSteps
from harness.readback.log4j import read_rotated, rotated_files, split_name

HOUR = datetime(2026, 11, 26, 18, 59)
STARTS = (
    "[2026-11-26 18:59:59,636] INFO [Broker id=2] Follower hwchaos-0 starts at leader epoch {e}"
    " from offset 0 with partition epoch 0 and high watermark 0. Current leader is 1."
    " (state.change.logger)\n"
)
FETCHERS = (
    "[2026-11-26 19:00:00,041] INFO [Broker id=2] Started fetchers as part of become-follower"
    " for 1 partitions (state.change.logger)\n"
)


def rotated_name(tree: Path | str, kind: str) -> str:
    """The name the tree's shipped config gives ``kind`` rotated at 18:00-19:00 on HOUR's day.

    Without a tree (a label instead): the names 0.10-3.x (log4j 1) and 4.0.0 (log4j2, with
    its ``stage-change`` typo) are known to give.
    """
    stamp = HOUR.strftime("%Y-%m-%d-%H")
    if isinstance(tree, str):
        typo = tree == "known-4.0" and kind == "state-change.log"
        return f"{'stage-change.log' if typo else kind}.{stamp}"
    yaml = tree / "config" / "log4j2.yaml"
    if yaml.is_file():
        for m in re.finditer(
            r'filePattern:\s*"\$\{sys:kafka\.logs\.dir\}/([^"%]+)%d\{([^}]+)\}"', yaml.read_text()
        ):
            if m.group(1).replace("stage-change", "state-change") == kind + ".":
                return m.group(1) + HOUR.strftime(_java_to_strftime(m.group(2)))
        raise AssertionError(f"{yaml}: no filePattern for {kind}")
    props = (tree / "config" / "log4j.properties").read_text()
    appender = re.search(
        rf"log4j\.appender\.(\w+)\.File=\$\{{kafka\.logs\.dir\}}/{re.escape(kind)}\n", props
    )
    assert appender is not None, f"no appender writes {kind}"
    pattern = re.search(rf"log4j\.appender\.{appender.group(1)}\.DatePattern='\.'(\S+)", props)
    assert pattern is not None
    return f"{kind}." + HOUR.strftime(_java_to_strftime(pattern.group(1)))


def _java_to_strftime(p: str) -> str:
    return p.replace("yyyy", "%Y").replace("MM", "%m").replace("dd", "%d").replace("HH", "%H")


def trees() -> list[tuple[str, Path | str]]:
    """(label, tree) for every release tree found, plus the two layouts known without one."""
    out: list[tuple[str, Path | str]] = [
        ("known-log4j1", "known-log4j1"),
        ("known-4.0", "known-4.0"),
    ]
    for v in ("0.10.2.1", "2.1.1", "3.3.1", "4.0.0"):
        try:
            out.append((v, find_tree(resolve_version(v))))
        except BrokerUnavailable:
            continue
    return out


def rotate(logs: Path, kind: str, rotated: str) -> None:
    """What log4j does at the first line after the hour: rename, then a new empty file."""
    (logs / kind).rename(logs / rotated)
    (logs / kind).write_text("")


@pytest.mark.parametrize(("label", "tree"), trees(), ids=[t[0] for t in trees()])
def test_replica_epoch_survives_the_hourly_rotation(
    label: str, tree: Path | str, tmp_path: Path
) -> None:
    """The fence's "epoch B's Partition last started at" is still 0 after the hour rolled."""
    logs = tmp_path / "B" / "logs"
    logs.mkdir(parents=True)
    (logs / "state-change.log").write_text(STARTS.format(e=0))
    fence = SimpleNamespace(
        cluster=SimpleNamespace(
            state_change_log=lambda n: tmp_path / n / "logs" / "state-change.log",
            topic="hwchaos",
        )
    )
    assert replica_epoch(fence.cluster, "B") == 0
    rotate(logs, "state-change.log", rotated_name(tree, "state-change.log"))
    with (logs / "state-change.log").open("a") as fh:
        fh.write(FETCHERS)
    assert replica_epoch(fence.cluster, "B") == 0
    with (logs / "state-change.log").open("a") as fh:  # a later epoch wins, whichever file
        fh.write(STARTS.format(e=3))
    assert replica_epoch(fence.cluster, "B") == 3


@pytest.mark.parametrize(("label", "tree"), trees(), ids=[t[0] for t in trees()])
def test_counts_do_not_drop_when_server_log_rolls(
    label: str, tree: Path | str, tmp_path: Path
) -> None:
    """Truncation and fenced-fetch counts read from server.log never go backwards at the hour
    (a drop would make "truncated since the resume" true or false at random)."""
    logs = tmp_path / "B" / "logs"
    logs.mkdir(parents=True)
    line = (
        "[2026-11-26 18:59:58,001] INFO [ReplicaFetcher] Truncating partition hwchaos-0"
        " to local high watermark 2\n"
    )
    (logs / "server.log").write_text(line * 2)
    fence = SimpleNamespace(
        cluster=SimpleNamespace(
            broker_log=lambda n: tmp_path / n / "logs" / "server.log", topic="hwchaos"
        ),
        bell=None,
    )
    fence._server_log = lambda n: FetchSteps._server_log(fence, n)  # type: ignore[arg-type]
    assert len(FetchSteps._truncated_to(fence, "B")) == 2  # type: ignore[arg-type]
    rotate(logs, "server.log", rotated_name(tree, "server.log"))
    assert len(FetchSteps._truncated_to(fence, "B")) == 2  # type: ignore[arg-type]
    with (logs / "server.log").open("a") as fh:
        fh.write(line)
    assert len(FetchSteps._truncated_to(fence, "B")) == 3  # type: ignore[arg-type]


def test_4_0_state_change_typo_and_order(tmp_path: Path) -> None:
    """4.0.0's log4j2.yaml rotates state-change.log as ``stage-change.log.<hour>``; both
    spellings are one file family, hour-stamped before numbered-less current, ``.2`` < ``.1``."""
    for name in (
        "state-change.log",
        "stage-change.log.2026-11-26-09",
        "state-change.log.2026-11-26-08",
        "server.log.1",
        "server.log.2",
        "server.log",
        "state-change.log.3.gz",
    ):
        (tmp_path / name).write_text(name + "\n")
    assert [p.name for p in rotated_files(tmp_path / "state-change.log")] == [
        "state-change.log.2026-11-26-08",
        "stage-change.log.2026-11-26-09",
        "state-change.log",
    ]
    assert [p.name for p in rotated_files(tmp_path / "server.log")] == [
        "server.log.2",
        "server.log.1",
        "server.log",
    ]
    assert read_rotated(tmp_path / "server.log") == "server.log.2\nserver.log.1\nserver.log\n"
    assert read_rotated(tmp_path / "controller.log") == ""  # nothing yet: empty, no error
    kinds = ("server.log", "state-change.log", "controller.log")
    assert split_name("broker-1.stage-change.log.2026-11-26-08", kinds) == (
        "broker-1.",
        "state-change.log",
    )
    assert split_name("server.log.1", kinds) == ("", "server.log")
    assert split_name("kafka-request.log", kinds) is None
