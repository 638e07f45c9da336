"""Why a node exited: the last error its own logs give, for the one-line ClusterError.

Why: "controller exited with code 1" says that a JVM gave up, not why; the why is in the
node's logs (a bind on a port taken meanwhile, a ZooKeeper connection timeout, a log dir
lock, a JVM that could not start), which a CI run may not keep. The error names it, so the
one line a CI log prints is enough to tell a port race from a misconfiguration.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.readback.log4j import last_fatal

# The JVM's own start failures (stdout), before any logger exists
_JVM = re.compile(
    r"^(?:Error occurred during initialization of VM|Error: |Exception in thread).*$", re.M
)
_STAMP_LEVEL = re.compile(r"^\[[^]]*\] (?:FATAL|ERROR) ")
# an exception line under a log line: "java.net.BindException: Address already in use"
_EXCEPTION = re.compile(r"^\s*(?:Caused by: )?([\w.$]+(?:Exception|Error)(?::.*)?)$")
_NEXT_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d", re.M)  # where the stack trace ends
TAIL_BYTES = 64 * 1024
MAX_CHARS = 240


def _tail(path: Path) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - TAIL_BYTES))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _last_error(text: str) -> str | None:
    """The broker's last fatal line (:func:`harness.readback.log4j.last_fatal`, as a halt is
    read), else a JVM start failure, with the root cause of the stack trace under it: its
    deepest "Caused by:", else its first exception line (a KRaft controller's last error
    wraps "Unable to start acceptor", which wraps the BindException)."""
    found = last_fatal(text)
    if found is None:
        jvm = list(_JVM.finditer(text))
        if not jvm:
            return None
        found = jvm[-1].group(0).strip(), text[jvm[-1].end() :]
    line, below = found
    message = _STAMP_LEVEL.sub("", line)
    stop = _NEXT_LINE.search(below)
    trace = below[: stop.start()] if stop else below
    causes = [m.group(1) for m in map(_EXCEPTION.match, trace.splitlines()) if m]
    if causes and causes[-1] not in message:
        message = f"{message}: {causes[-1]}"
    return message


def exit_cause(logs: Path) -> str | None:
    """The node's last logged error (``server.log``, else ``stdout.log``), one short line;
    None when its logs hold none (or are not on this host)."""
    for name in ("server.log", "stdout.log"):
        found = _last_error(_tail(logs / name))
        if found:
            return found if len(found) <= MAX_CHARS else found[: MAX_CHARS - 3] + "..."
    return None
