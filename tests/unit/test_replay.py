"""``hwchaos replay`` on broker logs cut from our own runs (tests/data/replay/, no brokers).

Each fixture folder holds the broker logs of one real run (only the lines that matter plus
some of the unrelated ones) and ``expected.json``: what the run observed on disk and
decided (lost acknowledged writes, divergent offsets, every replica's final log). The tests
replay the logs, and also the same logs made harder: other topics' lines mixed in, hours of
unrelated lines before, rotated files, a broker log cut off mid-line.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harness.cli import main as hwchaos
from harness.replay.parse import PartitionMatcher, broker_files, parse_broker, parse_ts

DATA = Path(__file__).resolve().parents[1] / "data" / "replay"
FIXTURES = sorted(p.name for p in DATA.iterdir() if (p / "expected.json").is_file())


def replay(logdir: Path, out: Path, *extra: str, acked: Path | None = None) -> dict[str, Any]:
    args = ["replay", str(logdir), "--topic", "hwchaos", "--partition", "0", "--json"]
    args += ["--out", str(out), *extra]
    if acked is not None:
        args += ["--acked", str(acked)]
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    out_json: dict[str, Any] = json.loads(proc.stdout)
    return out_json


def assert_matches_run(got: dict[str, Any], expected: dict[str, Any]) -> None:
    assert got["lost_acked"] == expected["lost_acked"]
    assert got["divergent_offsets"] == expected["divergent_offsets"]
    final = {n: [r["record"] for r in rows] for n, rows in got["replicas"].items()}
    # A record the producer saw fail that no fact places is read both ways (an ambiguity).
    readings = [final] + [a["replicas"] for a in got["alternatives"]]
    assert {n: expected["replicas"].get(n, []) for n in final} in readings
    assert got["version"] == expected["version"]


def copy_fixture(name: str, dest: Path) -> Path:
    shutil.copytree(DATA / name, dest / name)
    return dest / name


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_replays_to_the_runs_verdict(name: str, tmp_path: Path) -> None:
    expected = json.loads((DATA / name / "expected.json").read_text())
    got = replay(DATA / name, tmp_path / "out", acked=DATA / name / "expected.json")
    assert_matches_run(got, expected)
    assert set(got) >= {
        "replicas",
        "lost_acked",
        "divergent_offsets",
        "scenario",
        "version",
        "timeline",
        "ambiguities",
    }
    # The scenario file is in the catalogue's format: the model plays it to the same verdict.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "model",
            got["scenario_file"],
            "--protocol",
            got["protocol"],
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    model = json.loads(proc.stdout)
    assert model["lost_acked"] == expected["lost_acked"]
    assert model["divergent_offsets"] == expected["divergent_offsets"]
    timeline = pd.read_parquet(tmp_path / "out" / "timeline.parquet")
    assert {"ts", "broker", "kind", "offset", "epoch"} <= set(timeline.columns)
    assert (timeline.kind == "truncate").any() or (timeline.kind == "log_loaded").any()


def _shift(line: str, delta: timedelta) -> str:
    ts = parse_ts(line)
    if ts is None:
        return line
    new = (ts + delta).strftime("%Y-%m-%d %H:%M:%S,") + f"{(ts + delta).microsecond // 1000:03d}"
    return re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}", new, line, count=1)


NOISE_TEMPLATES = [
    "INFO [Partition {t}-{p} broker={b}] ISR updated to {b},9 and version updated to 7 "
    "(kafka.cluster.Partition)",
    "INFO [Log partition={t}-{p}, dir=/data] Truncating to offset 0 (kafka.log.Log)",
    "INFO Truncating log {t}-{p} to offset 3. (kafka.log.Log)",
    "INFO [Partition {t}-{p} broker={b}] {t}-{p} starts at Leader Epoch 9 from offset 77. "
    "Previous Leader Epoch was: 8 (kafka.cluster.Partition)",
    "INFO [Log partition={t}-{p}, dir=/data] Completed load of log with 1 segments, log start "
    "offset 0 and log end offset 99 in 3 ms (kafka.log.Log)",
    "INFO [GroupCoordinator {b}]: Member consumer-1-{p} in group g{p} has failed "
    "(kafka.coordinator.group.GroupCoordinator)",
    "INFO [ProducerStateManager partition={t}-{p}] Writing producer snapshot at offset 12 "
    "(kafka.log.ProducerStateManager)",
]


def _noise(ts: datetime, rng: random.Random, broker: int) -> str:
    topic = rng.choice(["orders", "hwchaos", "hwchaos-eu", "xhwchaos", "__consumer_offsets"])
    part = rng.choice([1, 2, 10, 17]) if topic == "hwchaos" else rng.choice([0, 1, 3])
    body = rng.choice(NOISE_TEMPLATES).format(t=topic, p=part, b=broker)
    return f"[{ts:%Y-%m-%d %H:%M:%S},{ts.microsecond // 1000:03d}] {body}"


def test_other_topics_and_hours_of_unrelated_lines(tmp_path: Path) -> None:
    """Lines of other partitions (same topic, look-alike topics) and 3 hours of unrelated
    lines before the incident leave the verdict unchanged."""
    rng = random.Random(7)
    for name in FIXTURES:
        src = copy_fixture(name, tmp_path)
        expected = json.loads((src / "expected.json").read_text())
        for f in src.glob("*/*.log"):
            lines = f.read_text().splitlines()
            stamped = [parse_ts(x) for x in lines if parse_ts(x) is not None]
            if not stamped:
                continue
            start = min(stamped)
            t = start - timedelta(hours=3)
            pre = []
            while t < start:
                pre.append(_noise(t, rng, 1))
                t += timedelta(seconds=rng.uniform(1, 30))
            mixed = []
            for line in lines:
                mixed.append(line)
                ts = parse_ts(line)
                if ts is not None and rng.random() < 0.7:
                    mixed.append(_noise(ts, rng, 2))
            f.write_text("\n".join(pre + mixed) + "\n")
        total = sum(len(f.read_text().splitlines()) for f in src.glob("*/*.log"))
        assert total > 2000  # hours of lines, not a handful
        got = replay(src, tmp_path / f"out-{name}", acked=src / "expected.json")
        assert_matches_run(got, expected)


def test_rotated_files_are_read_in_order(tmp_path: Path) -> None:
    """server.log split into server.log.2026-...-HH (log4j DailyRollingFileAppender) and
    server.log.N (RollingFileAppender) gives the same verdict as one file. 4.0's shipped
    log4j2.yaml rotates state-change.log to ``stage-change.log.<hour>`` (its typo): read too."""
    for k, name in enumerate(FIXTURES):
        src = copy_fixture(name, tmp_path)
        expected = json.loads((src / "expected.json").read_text())
        typo = expected["version"].startswith("4.")
        for f in list(src.glob("*/server.log")) + list(src.glob("*/state-change.log")):
            lines = f.read_text().splitlines(keepends=True)
            third = len(lines) // 3
            stem = "stage-change.log" if typo and f.name == "state-change.log" else f.name
            if k % 2 == 0 or typo:
                (f.parent / f"{stem}.2026-11-26-08").write_text("".join(lines[:third]))
                (f.parent / f"{stem}.2026-11-26-09").write_text("".join(lines[third : 2 * third]))
            else:
                (f.parent / f"{f.name}.2").write_text("".join(lines[:third]))
                (f.parent / f"{f.name}.1").write_text("".join(lines[third : 2 * third]))
            f.write_text("".join(lines[2 * third :]))
        if typo:  # read, not only tolerated (4.0 repeats state-change lines in server.log)
            listed = [p.name for p in broker_files(src / "B")]
            assert "stage-change.log.2026-11-26-08" in listed, listed
        got = replay(src, tmp_path / f"out-{name}", acked=src / "expected.json")
        assert_matches_run(got, expected)


def test_log_that_ends_abruptly(tmp_path: Path) -> None:
    """A broker killed mid-write leaves a torn last line: it is skipped, not fatal."""
    name = "kip101-s1-0.10.2.1"
    src = copy_fixture(name, tmp_path)
    expected = json.loads((src / "expected.json").read_text())
    f = src / "A" / "server.log"
    text = f.read_text()
    f.write_text(text + "[2026-11-26 09:52:20,446] INFO [ReplicaFetcherThread-0-2], Sto")
    b = parse_broker("A", [f], PartitionMatcher("hwchaos", 0))
    assert b.torn_tail
    # and one cut in the middle of a timestamp, with binary junk (a disk that lost a page)
    g = src / "B" / "server.log"
    g.write_bytes(g.read_bytes() + b"[2026-11-26 09:5\x00\x00\xff\xfe")
    got = replay(src, tmp_path / "out", acked=src / "expected.json")
    assert_matches_run(got, expected)


def test_without_acked_file_offsets_stand_for_records(tmp_path: Path) -> None:
    """Without --acked the records are named by offset and epoch and the loss is stated as
    offsets; the ambiguity is said."""
    got = replay(DATA / "kip101-s1-0.10.2.1", tmp_path / "out")
    assert got["lost_acked"] == ["o1e0"]
    assert any("no --acked" in a for a in got["ambiguities"])


def test_acked_text_file(tmp_path: Path) -> None:
    acked = tmp_path / "acked.txt"
    acked.write_text("# record offset\nm1 0\nm2 1 acked\n")
    got = replay(DATA / "kip101-s1-0.10.2.1", tmp_path / "out", "--acks", "1", acked=acked)
    assert got["lost_acked"] == ["m2"]
    bad = tmp_path / "bad.txt"
    bad.write_text("m1 zero\n")
    err = run_cli(
        [
            "replay",
            str(DATA / "kip101-s1-0.10.2.1"),
            "--topic",
            "hwchaos",
            "--acked",
            str(bad),
            "--out",
            str(tmp_path / "o2"),
        ]
    )
    assert err[0] == 2 and "line 1" in err[1] and err[1].count("\n") == 1


def run_cli(args: list[str]) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=60
    )
    return proc.returncode, proc.stderr


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", "no such directory"),
        ("empty", "no broker logs found"),
        ("empty-files", "every broker log is empty"),
        ("garbage", "no line is a Kafka broker log line about any partition"),
        ("file", "no line is a Kafka broker log line about any partition (no leader"),
    ],
)
def test_malformed_or_empty_logdir_is_one_line(setup: str, message: str, tmp_path: Path) -> None:
    d = tmp_path / "logs"
    if setup != "missing" and setup != "file":
        d.mkdir()
    if setup == "empty-files":
        (d / "A").mkdir()
        (d / "A" / "server.log").write_text("")
    if setup == "garbage":
        (d / "A").mkdir()
        (d / "A" / "server.log").write_bytes(bytes(range(256)) * 20)
    if setup == "file":
        d.write_text("not a folder")
    code, err = run_cli(["replay", str(d), "--topic", "t", "--out", str(tmp_path / "o")])
    assert code == 2
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_wrong_partition_is_one_line(tmp_path: Path) -> None:
    code, err = run_cli(
        ["replay", str(DATA / "kip279-2.1.1"), "--topic", "nosuch", "--out", str(tmp_path / "o")]
    )
    assert code == 2 and "no line names nosuch-0" in err and err.count("\n") == 1
    assert "try --topic hwchaos --partition 0" in err


def test_files_side_by_side_named_by_broker(tmp_path: Path) -> None:
    """An incident bundle with ``<broker>.server.log`` files in one folder."""
    name = "kip279-2.1.1"
    flat = tmp_path / "flat"
    flat.mkdir()
    for f in (DATA / name).glob("*/*.log"):
        shutil.copy(f, flat / f"{f.parent.name}.{f.name}")
    expected = json.loads((DATA / name / "expected.json").read_text())
    got = replay(flat, tmp_path / "out", acked=DATA / name / "expected.json")
    assert_matches_run(got, expected)


def test_unplaced_failed_record_is_an_ambiguity_with_both_readings(tmp_path: Path) -> None:
    """4.0.0: m3 failed (_MSG_TIMED_OUT) at the producer, but B had appended it; no broker
    line says so. Both readings are given; the run's final logs are the second."""
    name = "kip101-s2-4.0.0"
    got = replay(DATA / name, tmp_path / "out", acked=DATA / name / "expected.json")
    assert any("m3" in a and "never appended" in a for a in got["ambiguities"])
    assert [a["replicas"] for a in got["alternatives"]] == [{"A": ["m1", "m3"], "B": ["m1", "m3"]}]
    assert got["lost_acked"] == ["m2"]  # m2 is lost either way: B never had it


def test_in_process_entry_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = "kip101-s2-3.3.1"
    code = hwchaos(
        [
            "replay",
            str(DATA / name),
            "--topic",
            "hwchaos",
            "--acked",
            str(DATA / name / "expected.json"),
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "m2 (offset 1) can no longer be read" in text
    assert "Acknowledged writes lost: yes" in text
    assert "Kafka 3.3.1" in text


# ----------------------------------------------------------------------------- parser


@pytest.mark.parametrize(
    ("line", "kind", "offset", "epoch"),
    [
        # 0.10.2.1
        (
            "[2026-11-26 09:52:20,237] INFO Truncating log hwchaos-0 to offset 1. (kafka.log.Log)",
            "truncate",
            1,
            -1,
        ),
        (
            "[2026-11-26 09:52:19,799] INFO Completed load of log hwchaos-0 with 1 log segments "
            "and log end offset 2 in 29 ms (kafka.log.Log)",
            "log_loaded",
            2,
            -1,
        ),
        # 2.1.1
        (
            "[2026-11-26 09:53:31,660] INFO [Partition hwchaos-0 broker=1] hwchaos-0 starts at "
            "Leader Epoch 2 from offset 2. Previous Leader Epoch was: 1 (kafka.cluster.Partition)",
            "become_leader",
            2,
            2,
        ),
        # 3.3.1
        (
            "[2026-11-26 09:56:07,903] INFO [ReplicaFetcher replicaId=2, leaderId=1, fetcherId=0] "
            "Truncating partition hwchaos-0 with TruncationState(offset=1, completed=true) due to "
            "leader epoch and offset EpochEndOffset(errorCode=0, partition=0, leaderEpoch=0, "
            "endOffset=2) (kafka.server.ReplicaFetcherThread)",
            "truncate",
            1,
            -1,
        ),
        (
            "[2026-11-26 09:55:12,471] INFO [Broker id=2] Follower hwchaos-0 starts at leader "
            "epoch 0 from offset 0 with partition epoch 0 and high watermark 0. Current leader "
            "is 1. Previous leader epoch was -1. (state.change.logger)",
            "become_follower",
            0,
            0,
        ),
        (
            "[2026-11-26 09:55:58,287] INFO Completed load of Log(dir=/d/hwchaos-0, topicId=x, "
            "topic=hwchaos, partition=0, highWatermark=0, lastStableOffset=0, logStartOffset=0, "
            "logEndOffset=2) with 1 segments in 5ms (kafka.log.LogManager)",
            "log_loaded",
            2,
            -1,
        ),
    ],
)
def test_parser_versions(line: str, kind: str, offset: int, epoch: int, tmp_path: Path) -> None:
    f = tmp_path / "server.log"
    f.write_text(line + "\n")
    b = parse_broker("A", [f], PartitionMatcher("hwchaos", 0))
    assert [(x.kind, x.offset, x.epoch) for x in b.facts] == [(kind, offset, epoch)]
    other = tmp_path / "other" / "server.log"
    other.parent.mkdir()
    other.write_text(
        line.replace("hwchaos-0", "hwchaos-10").replace("partition=0", "partition=10") + "\n"
    )
    assert parse_broker("A", [other], PartitionMatcher("hwchaos", 0)).facts == []


@pytest.mark.parametrize(
    "stamp",
    [
        "[2026-11-26 09:52:20,237]",
        "2026-11-26 09:52:20,237",
        "[2026-11-26T09:52:20.237Z]",
        "2026-11-26T09:52:20.237+0000",
    ],
)
def test_log4j_timestamp_layouts(stamp: str) -> None:
    ts = parse_ts(f"{stamp} INFO something")
    assert ts == datetime(2026, 11, 26, 9, 52, 20, 237000)


def test_timeline_renders_in_a_headless_browser(tmp_path: Path) -> None:
    """The HTML timeline, opened by a real Chromium: the screenshot is not blank, and the
    lanes (green leader spans, red truncations) are drawn."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium not installed (apt-get install -y chromium)")
    image = pytest.importorskip("PIL.Image")
    name = "kip279-2.1.1"
    replay(DATA / name, tmp_path / "out", acked=DATA / name / "expected.json")
    page = tmp_path / "out" / "timeline.html"
    shot = tmp_path / "shot.png"
    proc = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1400,900",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.is_file(), proc.stderr[-500:]
    img = image.open(shot).convert("RGB")
    assert img.size == (1400, 900)
    raw = img.tobytes()
    pixels = list(zip(raw[0::3], raw[1::3], raw[2::3], strict=True))
    lum = [(r + g + b) / 3 for r, g, b in pixels]
    mean = sum(lum) / len(lum)
    variance = sum((v - mean) ** 2 for v in lum) / len(lum)
    assert variance > 100, f"blank screenshot (variance {variance:.1f})"
    green = sum(1 for r, g, b in pixels if (r, g, b) == (0x3A, 0x9D, 0x5D))
    red = sum(1 for r, g, b in pixels if r > 180 and g < 80 and b < 80)
    assert green > 500, "no leader span drawn"
    assert red > 20, "no truncation drawn"


def test_kafka_override_picks_the_model_generation(tmp_path: Path) -> None:
    """The same 0.10 logs judged as if written by 2.1.1: OffsetsForLeaderEpoch would have
    kept m2, so nothing acknowledged is lost; the version reported is the override."""
    name = "kip101-s1-0.10.2.1"
    acked = DATA / name / "expected.json"
    as_read = replay(DATA / name, tmp_path / "a", acked=acked)
    assert as_read["lost_acked"] == ["m2"]
    assert as_read["protocol"] == "0.10.2.1"
    as_2x = replay(DATA / name, tmp_path / "b", "--kafka", "2.1.1", acked=acked)
    assert as_2x["version"] == "2.1.1"
    assert as_2x["lost_acked"] == []


def test_a_shrink_line_places_a_record_the_producer_saw_fail() -> None:
    """B's ISR-shrink line states LEO 2 while the model's B holds 1 record: the timed-out m3
    was appended at offset 1 (kip320-zombie-follower on 3.3.1). Mutations: a leader already
    at the stated LEO, or an acknowledged record filling the gap, places nothing."""
    from harness.replay.steps import Acked, before_shrink

    m3 = Acked("m3", -1, "failed")
    assert before_shrink([m3], 1, 2) == ([Acked("m3", 1, "acked")], {"m3": "failed"})
    assert before_shrink([m3], 2, 2) == ([], {})
    m4 = Acked("m4", 1, "acked")
    assert before_shrink([m4, m3], 1, 2) == ([m4], {})
    assert before_shrink([m3, Acked("m5", 3, "acked")], 1, 4) == (
        [Acked("m3", 1, "acked"), Acked("m5", 3, "acked")],
        {"m3": "failed"},
    )
