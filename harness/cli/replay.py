"""``hwchaos replay LOGDIR --topic T --partition P``: explain an incident from broker logs.

Reads every broker's server.log, state-change.log and controller.log (rotated files too)
under LOGDIR, reconstructs the ordering of failures that leads to what they show, plays it
through the reference model for the Kafka version in the logs, and says which offsets each
replica truncated, which acknowledged writes can no longer be read and which offsets
diverge, with the step that caused each. Writes the scenario, a Parquet timeline and an
HTML page to --out.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from harness.replay.parse import ReplayError
from harness.replay.reconstruct import Acked

_ACKS = {"0": "0", "1": "1", "all": "all", "-1": "all"}


def read_acked(path: Path) -> tuple[list[Acked], dict[str, Any]]:
    """The producer's outcomes: JSON (a run's verdict.json, a deliveries mapping or a list
    of ``{record, offset, status}``) or text lines ``record offset [status]`` / ``offset``.

    Returns the records in produce order and settings found (``acks``, ``min_insync``).
    """
    if not path.is_file():
        raise ReplayError(f"{path}: acked file not found")
    text = path.read_text(encoding="utf-8", errors="replace")
    settings: dict[str, Any] = {}
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ReplayError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if isinstance(doc, dict):
            for key in ("acks", "min_insync"):
                if key in doc:
                    settings[key] = doc[key]
            doc = (doc.get("extra") or {}).get("deliveries", doc.get("deliveries", doc))
        items: list[Any]
        if isinstance(doc, dict):
            items = [
                {"record": k, **v} if isinstance(v, dict) else {"record": k, "offset": v}
                for k, v in doc.items()
                if k not in ("acks", "min_insync")
            ]
        elif isinstance(doc, list):
            items = doc
        else:
            raise ReplayError(f"{path}: expected a mapping or a list of records")
        out = []
        for k, it in enumerate(items, 1):
            if not isinstance(it, dict) or "record" not in it:
                raise ReplayError(f"{path}: entry {k}: expected {{record, offset, status}}")
            off = it.get("offset")
            out.append(
                Acked(
                    str(it["record"]),
                    int(off) if isinstance(off, int) and off >= 0 else -1,
                    str(it.get("status", "acked")),
                )
            )
        return out, settings
    out = []
    for k, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = [p for p in re.split(r"[\s,:;]+", line) if p]
        try:
            if len(parts) == 1:
                out.append(Acked(f"o{int(parts[0])}", int(parts[0])))
            else:
                status = parts[2] if len(parts) > 2 else "acked"
                out.append(Acked(parts[0], int(parts[1]), status))
        except ValueError:
            raise ReplayError(
                f"{path}: line {k}: expected 'record offset [status]' or 'offset', got {raw!r}"
            ) from None
    if not out:
        raise ReplayError(f"{path}: no records in the acked file")
    return out, settings


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the ``hwchaos`` parser or a parser of its own."""
    p.add_argument(
        "logdir",
        help="one folder per broker, <broker>.server.log files, one pasted file of one or "
        "several brokers' lines (compose/kubectl prefixes, JSON layouts, no timestamps: all "
        "fine), or - for stdin",
    )
    p.add_argument("--topic", help="default: the one partition the lines are about")
    p.add_argument("--partition", type=int, default=None)
    p.add_argument("--acked", help="producer's acknowledged records (JSON or 'record offset')")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--out", default="replay", help="folder for scenario, timeline, verdict")
    p.add_argument("--kafka", help="version the logs were written by (default: from the logs)")
    p.add_argument("--acks", choices=["0", "1", "all"], help="producer acks (default: 1)")
    p.add_argument("--min-insync", type=int, help="min.insync.replicas (default: from logs)")


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except ReplayError as exc:
        print(f"hwchaos replay: {exc}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hwchaos replay", description=__doc__)
    add_arguments(p)
    return run(p.parse_args(argv))


def _run(args: argparse.Namespace) -> int:
    from harness.replay.logdir import read_logdir
    from harness.replay.readings import explain
    from harness.replay.timeline import render_html, write_parquet
    from harness.replay.verdict import to_json, words
    from harness.replay.versions import detect_version
    from reference_model.scenario import to_document

    logdir = Path(args.logdir)
    if args.topic is None:
        from harness.replay.logdir import guess_partition

        args.topic, guessed, note = guess_partition(logdir, args.partition)
        args.partition = guessed if args.partition is None else args.partition
        print(f"hwchaos replay: {note}", file=sys.stderr)
    if args.partition is None:
        args.partition = 0
    brokers = read_logdir(logdir, args.topic, args.partition)
    acked = None
    settings: dict[str, Any] = {}
    if args.acked:
        acked, settings = read_acked(Path(args.acked))
    acks = args.acks or (_ACKS.get(str(settings["acks"]).lower()) if "acks" in settings else None)
    min_insync = args.min_insync
    if min_insync is None and isinstance(settings.get("min_insync"), int):
        min_insync = settings["min_insync"]
    version = detect_version(brokers, args.kafka)
    name = f"replay-{args.topic}-{args.partition}"
    rec = explain(brokers, version, acked, acks, min_insync, name=name)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    doc = to_document(rec.scenario)
    doc["description"] = (
        f"Reconstructed by hwchaos replay from {logdir} (Kafka {version.name}, "
        f"{args.topic}-{args.partition})."
    )
    scenario_path = out / "scenario.yaml"
    scenario_path.write_text(yaml.safe_dump(doc, sort_keys=False))
    write_parquet(rec, out / "timeline.parquet")
    text = words(rec)
    html_path = out / "timeline.html"
    render_html(rec, text, html_path, f"{args.topic}-{args.partition}: {logdir}")
    j = to_json(rec, str(html_path), str(scenario_path))
    j["scenario"] = doc
    j["scenario_file"] = str(scenario_path)
    (out / "verdict.json").write_text(json.dumps(j, indent=2, default=str))
    (out / "verdict.txt").write_text(text + "\n")
    if args.json:
        print(json.dumps(j, indent=2, default=str))
    else:
        print(text)
        print(f"scenario: {scenario_path}  timeline: {html_path}")
    return 0
