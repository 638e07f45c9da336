"""How the run-produced corpus cases were made from our own real-broker runs.

Each case is a folder ``<name>/`` with ``case.json`` (where it comes from, the input form,
the replay arguments and the expected verdict) and ``input/`` (what is handed to
``hwchaos replay``). A run's logs are first cut to the lines replay reads for the partition
(plus each broker's id/version lines), then transformed the way operators paste them:

- ``folders``: one folder per broker, as collected;
- ``no-controller``: the controller brokers' logs left out;
- ``compose-untimed``: one paste of every broker, ``docker compose logs`` prefixes, no
  timestamps (cut off by the terminal);
- ``kubectl-one-broker``: one broker only, ``kubectl logs --prefix`` prefixes;
- ``json-ecs``: log4j2 JsonTemplateLayout ECS lines, one file per broker;
- ``wrapped``: each broker's lines hard-wrapped at 100 columns by a tracker;
- ``gzip-rotated``: ``<broker>.server.log.1.gz`` + ``<broker>.server.log`` per broker;
- ``around-incident``: per broker, only the lines from 3 s before the first truncation.

The expected verdict is the run's (lost acknowledged writes, divergent offsets, read back
from the brokers' segments), or, for inputs that cannot carry it (one broker, no producer
outcomes), the weaker statement the evidence allows: never ``no`` loss.

    python tests/data/replay/corpus/make_corpus.py RUN_FOLDER NAME FORM [BROKER]
"""

from __future__ import annotations

import gzip
import json
import sys
import textwrap
from datetime import datetime, timedelta
from pathlib import Path

from harness.replay.ingest import parse_ts
from harness.replay.parse import LOG_KINDS
from harness.replay.rules import PartitionMatcher, facts

HERE = Path(__file__).resolve().parent
KEEP = ("broker.id =", "node.id =", "inter.broker.protocol.version =", "process.roles =")


def cut(run: Path, skip: tuple[str, ...] = ()) -> dict[str, dict[str, list[str]]]:
    """broker -> kind -> the lines replay reads (and the id/version lines)."""
    match = PartitionMatcher("hwchaos", 0)
    out: dict[str, dict[str, list[str]]] = {}
    for broker in sorted((run / "logs").iterdir()):
        if broker.name == "zookeeper" or broker.name in skip:
            continue
        for kind in LOG_KINDS:
            src = broker / kind
            if not src.is_file():
                continue
            kept = []
            for line in src.read_text(errors="replace").splitlines():
                ts = parse_ts(line)
                if ts is None:
                    if line.strip().startswith(KEEP):
                        kept.append(line)
                    continue
                if (
                    "Kafka version" in line
                    or "eligible.leader.replicas.version=1" in line
                    or facts(line, ts, 0, broker.name, kind, match)
                ):
                    kept.append(line[:600])
            if kept:
                out.setdefault(broker.name, {})[kind] = kept
        console = broker / "stdout.log"
        if console.is_file() and broker.name in out:
            for line in console.read_text(errors="replace").splitlines():
                if "Kafka version" in line:
                    out[broker.name].setdefault("server.log", []).insert(0, line)
                    break
    return out


def _untimed(line: str) -> str:
    ts = parse_ts(line)
    return line.split("] ", 1)[1] if ts is not None and "] " in line else line


def _ecs(line: str) -> str:
    ts = parse_ts(line)
    if ts is None:
        return line
    body = line.split("] ", 1)[1]
    level, _, msg = body.partition(" ")
    logger = ""
    if msg.endswith(")") and " (" in msg:
        msg, _, logger = msg.rpartition(" (")
        logger = logger[:-1]
    doc = {
        "@timestamp": ts.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "log.level": level,
        "message": msg,
        "ecs.version": "1.2.0",
        "process.thread.name": "main",
        "log.logger": logger,
    }
    return json.dumps(doc)


def make(run: Path, name: str, form: str, broker: str = "") -> None:
    verdict = json.loads((run / "verdict.json").read_text())
    dest = HERE / name
    inp = dest / "input"
    inp.mkdir(parents=True, exist_ok=True)
    skip = ("controller", "controller2") if form == "no-controller" else ()
    logs = cut(run, skip)
    if form in ("folders", "no-controller"):
        for b, kinds in logs.items():
            (inp / b).mkdir(exist_ok=True)
            for kind, lines in kinds.items():
                (inp / b / kind).write_text("\n".join(lines) + "\n")
    elif form == "compose-untimed":
        merged = _merged(logs)
        width = max(len(b) for b in logs)
        text = "\n".join(f"{b.ljust(width)}  | {_untimed(line)}" for _, b, line in merged)
        (inp / "compose.log").write_text(text + "\n")
    elif form == "kubectl-one-broker":
        lines = [line for kind in LOG_KINDS for line in logs[broker].get(kind, [])]
        lines.sort(key=lambda s: parse_ts(s) or datetime.min)
        pod = f"[pod/kafka-{broker.lower()}/kafka] "
        (inp / "kubectl.log").write_text("\n".join(pod + line for line in lines) + "\n")
    elif form == "json-ecs":
        for b, kinds in logs.items():
            lines = [_ecs(line) for kind in LOG_KINDS for line in kinds.get(kind, [])]
            (inp / f"{b}.server.log").write_text("\n".join(lines) + "\n")
    elif form == "wrapped":
        # Each broker's lines as a ticket attachment, hard-wrapped at 100 columns.
        for b, kinds in logs.items():
            lines = [line for kind in LOG_KINDS for line in kinds.get(kind, [])]
            lines.sort(key=lambda s: parse_ts(s) or datetime.min)
            text = "\n".join(
                "\n".join(textwrap.wrap(line, 100, break_long_words=True, drop_whitespace=False))
                for line in lines
            )
            (inp / f"{b}.server.log").write_text(text + "\n")
    elif form == "gzip-rotated":
        for b, kinds in logs.items():
            for kind, lines in kinds.items():
                half = len(lines) // 2
                old = ("\n".join(lines[:half]) + "\n").encode()
                (inp / f"{b}.{kind}.1.gz").write_bytes(gzip.compress(old, mtime=0))
                (inp / f"{b}.{kind}").write_text("\n".join(lines[half:]) + "\n")
    elif form == "around-incident":
        # Per broker, only the lines from 3 s before the first truncation any broker logged
        # (and the id/version lines): what an engineer greps around the alert.
        merged = _merged(logs)
        t0 = next((t for t, _, s in merged if "runcat" in s and t > datetime.min), None)
        for b, kinds in logs.items():
            (inp / b).mkdir(exist_ok=True)
            for kind, lines in kinds.items():
                keep = [
                    s
                    for s in lines
                    if parse_ts(s) is None
                    or "Kafka version" in s
                    or t0 is None
                    or (parse_ts(s) or t0) >= t0 - timedelta(seconds=3)
                ]
                (inp / b / kind).write_text("\n".join(keep) + "\n")
    else:
        raise SystemExit(f"unknown form {form}")
    acked = {
        "acks": verdict["acks"],
        "min_insync": verdict["min_insync"],
        "deliveries": verdict["extra"]["deliveries"],
    }
    with_acked = form != "kubectl-one-broker"
    if with_acked:
        (dest / "acked.json").write_text(json.dumps(acked, indent=1) + "\n")
    expected: dict[str, object]
    if with_acked:
        expected = {
            "lost_acked": verdict["lost_acked"],
            "divergent_offsets": verdict["divergent_offsets"],
            "lost": "yes" if verdict["lost_acked"] else "no",
        }
    else:
        expected = {"lost_not": "no"}
    case = {
        "source": f"hwchaos run {verdict.get('scenario', name)} --kafka {verdict['version']} "
        f"(real brokers, {run.name})",
        "kafka": verdict["version"],
        "form": form,
        "args": {"topic": "hwchaos", "partition": 0, "acked": with_acked},
        "expected": expected,
    }
    (dest / "case.json").write_text(json.dumps(case, indent=1) + "\n")


def _merged(logs: dict[str, dict[str, list[str]]]) -> list[tuple[datetime, str, str]]:
    out = []
    for b, kinds in logs.items():
        for kind in LOG_KINDS:
            for k, line in enumerate(kinds.get(kind, [])):
                ts = parse_ts(line) or datetime.min.replace(microsecond=k)
                out.append((ts, b, line))
    out.sort(key=lambda t: (t[0], t[1]))
    return out


if __name__ == "__main__":
    make(Path(sys.argv[1]), sys.argv[2], sys.argv[3], *sys.argv[4:])
