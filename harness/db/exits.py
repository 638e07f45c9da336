"""Why a node exited: the last error its own logs give, for the one-line ClusterError.

Why: "controller exited with code 1" says that a JVM gave up, not why; the why is in the
node's logs (a bind on a port taken meanwhile, a ZooKeeper connection timeout, a log dir
lock, a JVM that could not start), which a CI run may not keep. The error names it, so the
one line a CI log prints is enough to tell a port race from a misconfiguration.
"""

from __future__ import annotations

import re
from pathlib import Path

# log4j's "[2026-11-28 09:00:05,602] ERROR text (logger)" and log4j2's variants
_LEVEL = re.compile(r"\b(FATAL|ERROR)\b\s*(.*)")
_STAMP = re.compile(r"^\[?\d{4}-\d\d-\d\d[ T][\d:,.]+\]?\s*")
# The JVM's own start failures (stdout), before any logger exists
_JVM = ("Error occurred during initialization of VM", "Error: ", "Exception in thread")
# an exception line that follows a log line: "java.net.BindException: Address already in use"
_EXCEPTION = re.compile(r"^\s*(?:Caused by: )?([\w.$]+(?:Exception|Error)(?::.*)?)$")
TAIL_BYTES = 64 * 1024
STACK_LINES = 200  # how far below a log line its stack trace is read
MAX_CHARS = 240


def _tail(path: Path) -> list[str]:
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - TAIL_BYTES))
            return f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []


def _last_error(lines: list[str]) -> str | None:
    """The last FATAL/ERROR (else JVM start failure) line, with the root cause of the stack
    trace under it (its deepest "Caused by:", else its first exception line): a KRaft
    controller's last error wraps "Unable to start acceptor" wraps the BindException."""
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        m = _LEVEL.search(line)
        if m is None and not line.startswith(_JVM):
            continue
        text = _STAMP.sub("", line if m is None else m.group(2)).strip()
        causes: list[str] = []
        for below in lines[i + 1 : i + 1 + STACK_LINES]:
            if _STAMP.match(below):
                break  # the next log line: the trace is over
            ex = _EXCEPTION.match(below)
            if ex is not None:
                causes.append(ex.group(1))
        if causes:
            root = causes[-1]
            if root not in text:
                text = f"{text}: {root}"
        return text
    return None


def exit_cause(logs: Path) -> str | None:
    """The node's last logged error (``server.log``, else ``stdout.log``), one short line;
    None when its logs hold none (or are not on this host)."""
    for name in ("server.log", "stdout.log"):
        found = _last_error(_tail(logs / name))
        if found:
            return found if len(found) <= MAX_CHARS else found[: MAX_CHARS - 3] + "..."
    return None
