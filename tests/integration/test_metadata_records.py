"""The KRaft metadata-record reader against Kafka's own decoder, on logs our brokers wrote.

Fixtures (``tests/data/metadata/<version>/``) are the ``__cluster_metadata`` segments of the
controllers of two of our own KRaft runs (kip101-scenario1 on 3.3.1-kraft and 4.0.0), with
``kafka-dump-log.sh --cluster-metadata-decoder`` output of the same files beside them. The
schemas are read from the release tree, so these tests need it and skip without it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.db import kafka_dists
from harness.db.mode.kraft_view import replay
from harness.readback.metadata_records import (
    MetadataRecord,
    read_metadata_log,
    schemas_for_tree,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "metadata"
TREES = {"3.3.1": "kafka_2.13-3.3.1", "4.0.0": "kafka_2.13-4.0.0"}


def _tree(version: str) -> Path:
    root = kafka_dists()
    tree = root / TREES[version] if root else None
    if tree is None or not (tree / "libs").is_dir():
        pytest.skip(f"no {TREES[version]} release tree (set HWCHAOS_KAFKA_DISTS)")
    return tree


def _records(version: str, tmp: Path) -> list[MetadataRecord]:
    staged = tmp / "__cluster_metadata-0"  # read_metadata_log reads <log dir>/<that>/
    staged.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / version / "00000000000000000000.log", staged)
    return read_metadata_log(tmp, schemas_for_tree(_tree(version)))


def _dump_payloads(version: str) -> dict[int, dict[str, Any]]:
    out = {}
    for line in (DATA / version / "00000000000000000000.log.dump.txt").read_text().splitlines():
        m = re.search(r"offset: (\d+) .*payload: (\{.*\})$", line)
        if m:
            out[int(m.group(1))] = json.loads(m.group(2))
    return out


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def _camel(name: str) -> str:
    return name[0].lower() + name[1:]


def _same(ours: Any, theirs: Any, where: str) -> None:
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), where
        lowered = {_camel(k): v for k, v in ours.items()}
        for key, value in theirs.items():
            assert key in lowered, f"{where}: field {key} missing from our decoding"
            _same(lowered[key], value, f"{where}.{key}")
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _same(a, b, f"{where}[{i}]")
    else:
        assert ours == theirs, f"{where}: ours {ours!r} != Kafka's {theirs!r}"


@pytest.mark.parametrize("version", sorted(TREES))
def test_every_record_decodes_as_kafka_decodes_it(version: str, tmp_path: Path) -> None:
    ours = {r.offset: r for r in _records(version, tmp_path)}
    theirs = _dump_payloads(version)
    assert len(theirs) > 20
    assert set(ours) == set(theirs)
    for offset, payload in theirs.items():
        rec = ours[offset]
        assert _snake(rec.name) == payload["type"], offset
        assert rec.version == payload["version"], offset
        _same(rec.data, payload["data"], f"offset {offset} {rec.name}")


@pytest.mark.parametrize("version", sorted(TREES))
def test_replay_gives_the_final_partition_state(version: str, tmp_path: Path) -> None:
    """kip101-scenario1's controller: B led, A was fenced and came back, then B was fenced.

    The two releases differ exactly where the KRaft controller changed: 3.3 bumps the
    leader epoch when a fenced follower leaves the ISR (KAFKA-15021 removed that in 3.6)
    and ignores ``unclean.leader.election.enable`` (honoured from 3.9, KAFKA-12670).
    """
    img = replay(_records(version, tmp_path))
    p = img.partition("hwchaos", 0)
    assert p is not None
    assert p.replicas == [2, 1]
    assert img.brokers[2].fenced  # B was declared dead last
    if version == "4.0.0":
        # one bump: the unclean election of A; the partition is RECOVERING (KIP-704)
        assert (p.leader, p.leader_epoch, p.isr, p.recovery_state) == (1, 1, [1], 1)
    else:
        # shrink of A bumped to 1, B's fencing left it offline at 2
        assert (p.leader, p.leader_epoch, p.isr) == (-1, 2, [2])


def test_dump_tool_agrees_live(tmp_path: Path) -> None:
    """Kafka's decoder run now on the 4.0.0 fixture prints what the stored dump says."""
    tree = _tree("4.0.0")
    java = shutil.which("java")
    if java is None:
        pytest.skip("no java on PATH")
    seg = DATA / "4.0.0" / "00000000000000000000.log"
    res = subprocess.run(
        [java, "-cp", f"{tree}/libs/*", "kafka.tools.DumpLogSegments",
         "--cluster-metadata-decoder", "--files", str(seg)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    payloads = [ln for ln in res.stdout.splitlines() if "payload:" in ln]
    stored = [
        ln
        for ln in (DATA / "4.0.0" / f"{seg.name}.dump.txt").read_text().splitlines()
        if "payload:" in ln
    ]
    assert payloads == stored
