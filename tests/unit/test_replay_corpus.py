"""Every incident in tests/data/replay/corpus/ reaches its expected verdict.

Cases are logs as they come with incidents: cut from our own real-broker runs and pasted
the way operators paste them (one broker, no timestamps, compose/kubectl prefixes, JSON
layouts, wrapped, gzip'd, around the incident), and verbatim excerpts from public incident
reports (source URL in ``case.json``). ``expected`` holds what the humans (or the run's
read-back of the brokers' segments) concluded:

- ``lost``: ``yes`` / ``no`` / ``possible`` / ``unknown``; ``lost_not``: a value it must not
  be (a paste that cannot show the producer's outcomes never says ``no``);
- ``lost_acked`` and ``divergent_offsets``: as the run read them back; ``replicas``: every
  replica's final log, as the run read it back from the segments;
- ``patterns``: patterns the verdict must name; ``version``: the version replay must find
  (or guess); ``brokers``: broker names replay must know (peers named by lines included).

Every claim in the verdict must cite a ``file:line`` of the input.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.cli.replay import main as replay_main

CORPUS = Path(__file__).resolve().parents[1] / "data" / "replay" / "corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "case.json").is_file())


def run_case(name: str, out: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    case = json.loads((CORPUS / name / "case.json").read_text())
    args = case["args"]
    inp = CORPUS / name / "input"
    files = sorted(inp.iterdir())
    target = files[0] if len(files) == 1 and files[0].is_file() else inp
    argv = [str(target), "--json", "--out", str(out)]
    if args.get("topic"):
        argv += ["--topic", args["topic"]]
    if args.get("partition") is not None:
        argv += ["--partition", str(args["partition"])]
    if args.get("acked"):
        argv += ["--acked", str(CORPUS / name / "acked.json")]
    if args.get("kafka"):
        argv += ["--kafka", args["kafka"]]
    code = replay_main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    got: dict[str, Any] = json.loads(captured.out)
    return got


@pytest.mark.parametrize("name", CASES)
def test_corpus_case(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = json.loads((CORPUS / name / "case.json").read_text())
    exp = case["expected"]
    got = run_case(name, tmp_path / "out", capsys)
    why = json.dumps({k: got[k] for k in ("lost", "diverged", "findings", "ambiguities")})[:3000]
    if "lost" in exp:
        assert got["lost"] == exp["lost"], why
    if "diverged" in exp:
        assert got["diverged"] == exp["diverged"], why
    if "lost_not" in exp:
        assert got["lost"] != exp["lost_not"], why
    if "lost_acked" in exp:
        readings = [sorted(got["lost_acked"])] + [
            sorted(a["lost_acked"]) for a in got["alternatives"]
        ]
        assert sorted(exp["lost_acked"]) in readings, why
    if "divergent_offsets" in exp:
        readings = [got["divergent_offsets"]] + [
            a["divergent_offsets"] for a in got["alternatives"]
        ]
        assert exp["divergent_offsets"] in readings, why
    if "replicas" in exp:
        finals = [got["replicas"]] + [a.get("replicas") or {} for a in got["alternatives"]]
        readings = [{n: [e["record"] for e in log] for n, log in f.items()} for f in finals]
        assert exp["replicas"] in readings, why
    for p in exp.get("patterns", []):
        assert p in got["patterns"], why
    if "version" in exp:
        assert got["version"] == exp["version"], got["version_how"]
    for b in exp.get("brokers", []):
        assert b in got["scenario"]["brokers"], got["scenario"]["brokers"]
    # Every finding rests on lines of the input, cited as file:line.
    for f in got["findings"]:
        assert f["cites"], f
        for c in f["cites"]:
            assert re.fullmatch(r"[\w./-]+:\d+", c), c


def test_corpus_covers_every_form_and_version() -> None:
    """The corpus spans the input forms and Kafka versions the issue asks for."""
    cases = [json.loads((CORPUS / n / "case.json").read_text()) for n in CASES]
    forms = {c["form"] for c in cases}
    assert {"folders", "compose-untimed", "kubectl-one-broker", "json-ecs", "wrapped"} <= forms
    assert {"gzip-rotated", "no-controller", "public-excerpt", "mid-life"} <= forms
    versions = {c["kafka"] for c in cases}
    assert {"0.10.2.1", "2.1.1", "3.3.1", "3.3.1-kraft", "4.0.0", "4.0.0-elr"} <= versions
    public = [c for c in cases if c["form"] == "public-excerpt"]
    assert all(c["source"].startswith("https://") for c in public)
