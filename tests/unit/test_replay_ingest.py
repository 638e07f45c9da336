"""Input as incidents bring it: stdin, JSON layouts, prefixes, wrapping, untimed lines; and
proof that the corpus checks can fail (mutations of the parser and of the model's version).
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import harness.replay.logdir as logdir_mod
import harness.replay.rules as rules
from harness.cli.replay import main as replay_main
from harness.replay.ingest import records
from harness.replay.parse import self_id

DATA = Path(__file__).resolve().parents[1] / "data" / "replay"
CORPUS = DATA / "corpus"

HALT_010 = (
    "[2017-03-01 10:00:00,000] FATAL [ReplicaFetcherThread-0-1], Exiting because log truncation "
    "is not allowed for partition orders-3, Current leader 1's latest offset 100 is less than "
    "replica 2's latest offset 105 (kafka.server.ReplicaFetcherThread)"
)


def _replay(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code = replay_main([*argv, "--json"])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    out: dict[str, Any] = json.loads(cap.out)
    return out


def test_stdin_paste(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-`` reads stdin once, for the partition guess and the replay."""
    monkeypatch.setattr("sys.stdin", io.StringIO(HALT_010 + "\n"))
    monkeypatch.setattr(logdir_mod, "_STDIN", [])
    got = _replay(["-", "--out", str(tmp_path / "o")], capsys)
    assert got["lost"] == "possible" and "follower-ahead-halt" in got["patterns"]
    assert got["findings"][0]["cites"] == ["stdin:1"]
    assert set(got["scenario"]["brokers"]) == {"broker1", "broker2"}


@pytest.mark.parametrize(
    "layout",
    [
        # log4j2 JsonLayout (compact, eventEol): instant + loggerName.
        lambda msg: json.dumps(
            {
                "instant": {"epochSecond": 1488362400, "nanoOfSecond": 0},
                "thread": "ReplicaFetcherThread-0-1",
                "level": "FATAL",
                "loggerName": "kafka.server.ReplicaFetcherThread",
                "message": msg,
            }
        ),
        # logback's LogstashEncoder (Confluent/Bitnami-style images can be set to it).
        lambda msg: json.dumps(
            {
                "@timestamp": "2017-03-01T10:00:00.000Z",
                "@version": "1",
                "message": msg,
                "logger_name": "kafka.server.ReplicaFetcherThread",
                "level": "ERROR",
            }
        ),
        # JsonTemplateLayout ECS (Strimzi can be configured to it), docker logs -t prefix.
        lambda msg: (
            "2017-03-01T10:00:00.123456789Z "
            + json.dumps(
                {
                    "@timestamp": "2017-03-01T10:00:00.000Z",
                    "log.level": "FATAL",
                    "message": msg,
                    "log.logger": "kafka.server.ReplicaFetcherThread",
                }
            )
        ),
    ],
)
def test_json_layouts(layout: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    msg = HALT_010.split("] ", 1)[1].split(" ", 1)[1].rsplit(" (", 1)[0]
    f = tmp_path / "kafka-2.json"
    f.write_text(layout(msg) + "\n")
    got = _replay(
        [str(f), "--topic", "orders", "--partition", "3", "--out", str(tmp_path / "o")], capsys
    )
    assert got["diverged"] == "yes" and got["version"] == "0.10.2.1", got["version_how"]


def test_prefixes_wrapping_and_missing_timestamps() -> None:
    """compose and kubectl prefixes name the host; a hard wrap is joined without a space,
    a mail wrap with one; untimed lines keep their order."""
    text = (
        "kafka-1  | [2026-01-01 00:00:00,000] INFO [Partition t-0 broker=1] t-0 starts at leader "
        "epoch 2 from offset 7 with high watermark 5 ISR [1,2] addingReplicas [] removingRe\n"
        "kafka-1  | plicas []. Previous leader epoch was 1. (state.change.logger)\n"
        "[pod/kafka-2/kafka] INFO [ReplicaFetcher replicaId=2, leaderId=1, fetcherId=0] "
        "Truncating partition t-0 with TruncationState(offset=5, completed=true) due to leader\n"
        "[pod/kafka-2/kafka] epoch and offset EpochEndOffset(errorCode=0, partition=0, "
        "leaderEpoch=1, endOffset=5) (kafka.server.ReplicaFetcherThread)\n"
    )
    recs = records(text, "paste.log")
    assert [r.host for r in recs] == ["kafka-1", "kafka-2"]
    assert "removingReplicas []" in recs[0].text and recs[0].ts is not None
    assert "due to leader epoch and offset" in recs[1].text and recs[1].ts is None
    assert [r.lineno for r in recs] == [1, 3]
    assert self_id(recs[1].text) == 2


def test_gzip_rotated_and_one_follower_line(tmp_path: Path) -> None:
    """A gzip'd rotation is read before the current file; a 2.8 follower line is a
    follower, not a leader; 1.0's no-effect truncation is no truncation."""
    d = tmp_path / "b"
    d.mkdir()
    old = (
        "[2021-01-01 00:00:00,000] INFO [Broker id=2] Follower t-0 starts at leader epoch 3 "
        "from offset 7 with high watermark 5. Previous leader epoch was 2. (state.change.logger)\n"
    )
    (d / "kafka-2.server.log.1.gz").write_bytes(gzip.compress(old.encode()))
    (d / "kafka-2.server.log").write_text(
        "[2021-01-01 00:00:01,000] INFO [Log partition=t-0, dir=/d] Truncating to 7 has no "
        "effect as the largest offset in the log is 6 (kafka.log.Log)\n"
    )
    brokers = logdir_mod.read_logdir(d, "t", 0)
    kinds = [(f.kind, f.detail[:9]) for b in brokers for f in b.facts]
    assert kinds == [("become_follower", ""), ("truncate", "no effect")]
    assert {b.name for b in brokers} == {"kafka-2", "broker1"} or {b.name for b in brokers} == {
        "kafka-2"
    }


def test_refusal_names_lines_and_options(tmp_path: Path) -> None:
    f = tmp_path / "paste.txt"
    f.write_text(HALT_010 + "\n")
    code = replay_main([str(f), "--topic", "payments", "--out", str(tmp_path / "o")])
    assert code == 2
    d = tmp_path / "n"
    d.mkdir()
    (d / "x.log").write_text("hello\nworld\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "replay",
            str(d),
            "--topic",
            "t",
            "--out",
            str(tmp_path / "o2"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "x.log:1: hello" in proc.stderr, proc.stderr


def test_mutation_halt_numbers_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the halt line's offsets unread, the Appian case no longer reaches its verdict:
    the corpus check depends on the numbers, not on the mere presence of a FATAL line."""
    case = CORPUS / "public-appian-kb1589-halt"
    argv = [str(case / "input" / "server.log"), "--out", str(tmp_path / "o")]
    assert _replay(argv, capsys)["diverged"] == "yes"
    monkeypatch.setattr(rules, "_HALT_OFFSETS", rules.re.compile(r"(?!x)x"))
    assert _replay(argv, capsys)["diverged"] != "yes"


def test_mutation_wrong_version_changes_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--kafka is used: the 0.10.2.1 run replayed with 2.1.1's rules (leader epochs) keeps
    m2; with its own rules it loses it. A check that passed both ways would test nothing."""
    case = CORPUS / "kip101-s1-text-0.10.2.1-no-controller"
    base = [str(case / "input"), "--topic", "hwchaos", "--acked", str(case / "acked.json")]
    own = _replay([*base, "--out", str(tmp_path / "a")], capsys)
    other = _replay([*base, "--kafka", "2.1.1", "--out", str(tmp_path / "b")], capsys)
    assert own["lost_acked"] == ["m2"] and other["lost_acked"] == []
    assert other["version_how"] == "--kafka"


def test_timeline_marks_inferred_apart_from_logged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In a real Chromium's DOM: the broker only other lines name is an inferred lane, the
    logged halt mark carries its file:line, and the model's steps are classed."""
    import shutil

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium not installed (apt-get install -y chromium)")
    case = CORPUS / "public-yolean-98-halt-1.0"
    _replay([str(case / "input" / "kafka-2.log"), "--out", str(tmp_path / "o")], capsys)
    page = tmp_path / "o" / "timeline.html"
    proc = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    dom = proc.stdout
    assert 'class="lane inferred"' in dom and "broker1: no logs" in dom, proc.stderr[-300:]
    assert 'class="lane logged"' in dom
    assert '<li class="logged">' in dom and "kafka-2.log:4" in dom
    assert '<tr class="logged">' in dom or '<tr class="inferred">' in dom


def test_halt_of_08_names_only_the_topic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """0.8/0.9's halt line (ReplicaFetcherThread, 0.8.2.2 text) names the topic only."""
    f = tmp_path / "server.log"
    f.write_text(
        "[2015-03-02 10:00:00,000] FATAL [ReplicaFetcherThread-0-1], Halting because log "
        "truncation is not allowed for topic orders, Current leader 1's latest offset 40 is "
        "less than replica 3's latest offset 42 (kafka.server.ReplicaFetcherThread)\n"
    )
    got = _replay([str(f), "--topic", "orders", "--out", str(tmp_path / "o")], capsys)
    assert got["lost"] == "possible" and got["diverged"] == "yes"
    assert "offsets 40..41" in got["findings"][0]["claim"]
    assert set(got["scenario"]["brokers"]) == {"broker1", "broker3"}


def test_kafka_7164_missed_epoch_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 1.1 follower told of the same leader two epochs later: KAFKA-7164's shape."""
    lai = (
        "[2018-07-01 10:00:0{s},000] TRACE [Broker id=3] Received LeaderAndIsr request "
        "PartitionState(controllerEpoch=1, leader=1, leaderEpoch={e}, isr=[1, 3], zkVersion=1, "
        "replicas=[1, 2, 3], isNew=false) correlation id 1 from controller 0 epoch 1 for "
        "partition t-0 (state.change.logger)\n"
    )
    f = tmp_path / "state-change.log"
    f.write_text(lai.format(s=1, e=0) + lai.format(s=2, e=2))
    got = _replay(
        [str(f), "--topic", "t", "--kafka", "1.1.1", "--out", str(tmp_path / "o")], capsys
    )
    assert "kafka-7164" in got["patterns"], got["findings"]
    # The same lines from 2.1.1, where the fix is in, name no such pattern.
    got = _replay(
        [str(f), "--topic", "t", "--kafka", "2.1.1", "--out", str(tmp_path / "p")], capsys
    )
    assert "kafka-7164" not in got["patterns"]
