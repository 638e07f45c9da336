"""Broker log text as incidents bring it -> one record per log event, with where it came from.

Why: an engineer rarely holds a broker's untouched ``server.log``. What comes with an
incident is a paste: lines copied from a terminal or a ticket (timestamps cut off, or
lines wrapped by the mail client or issue tracker), ``docker compose logs`` output
(``broker1  | [2026-...] INFO ...``), ``kubectl logs --prefix`` output
(``[pod/kafka-0/kafka] ...``), a JSON layout (log4j2 ``JsonLayout`` /
``JsonTemplateLayout`` ECS, logback's JSON encoder as container images can be configured
to emit), a gzip'd rotated file. Each becomes a :class:`Record` holding the log4j-style
text the line rules read, its timestamp when one was written (``None`` otherwise: the
order is kept, the time is unknown), the host prefix when one was written, and the file
and line number the record starts at, so that every claim can cite it.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

# A leading timestamp, as log4j's ``[%d]`` (ISO8601 with a comma) and the ``%d{ISO8601}``
# and ``yyyy-MM-dd'T'HH:mm:ss.SSSZ`` layouts of shipped log4j/log4j2 configurations write it.
TS = re.compile(
    r"^\[?(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:[,.](\d{1,9}))?\s*(Z|[+-]\d{2}:?\d{2})?\]?"
)
# ``docker compose logs``: ``name  | text`` (``name-1  | `` from Compose v2);
# ``kubectl logs --prefix``: ``[pod/name/container] text``; ``kubectl logs --timestamps``
# and ``docker logs -t`` put an RFC 3339 stamp first, which TS reads.
_COMPOSE = re.compile(r"^([A-Za-z0-9][\w.-]*)\s+\|\s?(.*)$")
_KUBECTL = re.compile(r"^\[pod/([\w.-]+)/[\w.-]+\]\s?(.*)$")
_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))\s+")
# What a log event's first line starts with (after the timestamp): a level, or a bracketed
# component name Kafka's loggers put first (``[ReplicaFetcher replicaId=2, ...]``).
_LEVEL_FIRST = re.compile(r"^\s*(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\b")
_COMPONENT_FIRST = re.compile(r"^\s*\[[A-Z][\w -]*[\w\]=,. -]*\]")
# log4j's default Kafka layout ends each event with ``(logger.name)``.
_LOGGER_END = re.compile(r"\([\w.$]+\)\s*$")
_STACK = re.compile(r"^\s+at |^\s*Caused by:|^\s*\.\.\. \d+ more|^[\w.$]+(?:Exception|Error)\b")
_CONFIG = re.compile(r"^\s*[a-z][\w.]+\s*=\s*\S*\s*$")


@dataclass(frozen=True)
class Record:
    """One log event: its log4j-style text, timestamp (None: not written), host prefix,
    and where it starts (file name and 1-based line number) for citations."""

    text: str
    ts: datetime | None
    file: str
    lineno: int
    host: str = ""
    config: bool = False  # a ``key = value`` line of the config dump at start-up


def read_text(path: Path) -> str:
    """A file's text; gzip'd rotated files (``server.log.1.gz``) are decompressed."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8", errors="replace")


def _from_json(line: str) -> tuple[str, str | None] | None:
    """A JSON log event as (log4j-style text, timestamp text), None if not one.

    Knows log4j2 ``JsonLayout`` (``instant``/``timeMillis``, ``level``, ``loggerName``,
    ``message``, ``thrown``), ``JsonTemplateLayout`` ECS (``@timestamp``, ``log.level``,
    ``log.logger``, ``message``) and logback's encoders (``@timestamp``/``timestamp``,
    ``level``, ``logger_name``/``logger``, ``message``/``msg``)."""
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None

    def get(*keys: str) -> object:
        for k in keys:
            cur: object = doc
            for part in (k,) if k in doc else tuple(k.split(".")):
                if not isinstance(cur, dict) or part not in cur:
                    cur = None
                    break
                cur = cur[part]
            if cur not in (None, ""):
                return cur
        return None

    msg = get("message", "msg", "@message", "log")
    if not isinstance(msg, str):
        return None
    level = get("level", "log.level", "severity", "levelname")
    logger = get("loggerName", "logger_name", "log.logger", "logger")
    stamp: str | None = None
    t = get("@timestamp", "timestamp", "time", "ts")
    if isinstance(t, str):
        stamp = t
    elif isinstance(t, int | float):
        stamp = _epoch(float(t) / (1000 if t > 1e11 else 1))
    inst = doc.get("instant")
    if stamp is None and isinstance(inst, dict) and "epochSecond" in inst:
        stamp = _epoch(float(inst["epochSecond"]) + float(inst.get("nanoOfSecond", 0)) / 1e9)
    if stamp is None and isinstance(doc.get("timeMillis"), int | float):
        stamp = _epoch(float(doc["timeMillis"]) / 1000)
    text = f"{str(level).upper()} " if level else ""
    text += msg.rstrip("\n")
    if logger and not _LOGGER_END.search(text):
        text += f" ({logger})"
    return text, stamp


def _epoch(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def parse_ts(line: str) -> datetime | None:
    """The leading timestamp (local to the broker, no zone applied), None if none."""
    m = TS.match(line)
    if not m:
        return None
    day, clock, frac, _tz = m.groups()
    micro = int((frac or "0").ljust(6, "0")[:6])
    try:  # by hand: strptime costs more than the regexes on a busy broker's log
        return datetime(
            int(day[0:4]),
            int(day[5:7]),
            int(day[8:10]),
            int(clock[0:2]),
            int(clock[3:5]),
            int(clock[6:8]),
            micro,
        )
    except ValueError:
        return None


def _strip(line: str) -> tuple[str, str]:
    """(host prefix, rest) with compose/kubectl prefixes and a leading RFC 3339 stamp of
    ``docker logs -t`` removed when a log4j stamp follows it."""
    host = ""
    m = _KUBECTL.match(line) or _COMPOSE.match(line)
    if m and not TS.match(line):
        host, line = m.group(1), m.group(2)
    m = _RFC3339.match(line)
    if m and (TS.match(line[m.end() :]) or line[m.end() :].lstrip().startswith("{")):
        line = line[m.end() :]
    return host, line


def _starts_event(text: str) -> bool:
    return bool(
        TS.match(text)
        or _LEVEL_FIRST.match(text)
        or _COMPONENT_FIRST.match(text)
        or text.lstrip().startswith("{")
    )


def records(text: str, file: str) -> list[Record]:
    """The log events in ``text`` (one file or one paste), in written order.

    Wrapped lines are joined to the event they belong to: a physical line that does not
    start an event (no timestamp, level or ``[Component ...]`` first), when the event so far
    has not reached its ``(logger)`` end. A tracker's hard wrap cuts at a fixed column
    (often mid-word): pieces of the paste's longest length are joined without a space;
    a mail client's wrap cuts at a space, which the join puts back."""
    phys = text.splitlines()
    width = max((len(p) for p in phys), default=0)
    ended = sum(1 for p in phys if _LOGGER_END.search(p))
    expect_logger = ended * 3 >= max(sum(1 for p in phys if _starts_event(_strip(p)[1])), 1)
    out: list[Record] = []
    cur: list[str] = []
    cur_host, cur_no, prev_len = "", 0, 0

    def flush() -> None:
        if not cur:
            return
        line = "".join(cur)
        js = _from_json(line) if line.lstrip().startswith("{") else None
        ts_text: str | None = None
        if js is not None:
            line, ts_text = js
        ts = parse_ts(ts_text) if ts_text else parse_ts(line)
        config = ts is None and js is None and bool(_CONFIG.match(line))
        if ts is not None and js is None:
            line = line[TS.match(line).end() :].lstrip()  # type: ignore[union-attr]
        out.append(Record(line, ts, file, cur_no, cur_host, config))
        cur.clear()

    for no, raw in enumerate(phys, 1):
        host, line = _strip(raw.rstrip("\r"))
        if not line.strip():
            flush()
            prev_len = 0
            continue
        joined = "".join(cur)
        cont = (
            cur
            and not _starts_event(line)
            and not _STACK.match(line)
            and not _CONFIG.match(line)
            and host == cur_host
            and not (joined.lstrip().startswith("{") and joined.rstrip().endswith("}"))
            and (not _LOGGER_END.search(joined) if expect_logger else not _CONFIG.match(joined))
        )
        if cont:
            hard = prev_len >= 60 and prev_len == width and not cur[-1].endswith(" ")
            if hard:
                cur.append(line)
            else:  # the wrap ate one space (or kept it at the end of the piece)
                cur[-1] = cur[-1].rstrip()
                cur.append(" " + line.lstrip())
        else:
            flush()
            cur.append(line)
            cur_host, cur_no = host, no
        prev_len = len(raw)
    flush()
    return out
