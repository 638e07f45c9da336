"""A broker's log4j files as one text: the current file and the ones rotated out of it.

Why: every release's shipped logging configuration rolls ``server.log``,
``state-change.log`` and ``controller.log`` every hour (log4j 1
``DailyRollingFileAppender`` with ``DatePattern='.'yyyy-MM-dd-HH`` up to 3.x, log4j2
``TimeBasedTriggeringPolicy`` with ``%d{yyyy-MM-dd-HH}`` from 4.0, KIP-653). At the first
line written after the hour the current file is renamed and a new, empty one started. A
fence that reads only ``state-change.log`` then loses every line written before the hour:
"the last leader epoch the Partition started at" disappears until the next state change,
and counts of LeaderAndIsr requests drop. A run that crosses an hour boundary stalled on
such a fence (seen on 4.0.0 in CI), so fences and replay read the rotated files too.

4.0.0's ``config/log4j2.yaml`` rotates ``state-change.log`` to
``stage-change.log.%d{yyyy-MM-dd-HH}`` (a typo in the shipped file), so that spelling is
one of the state-change log's rotated names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

ROTATED_AS: dict[str, tuple[str, ...]] = {
    "state-change.log": ("state-change.log", "stage-change.log"),
}
"""Log kind -> the stems its rotated files carry (4.0.0's ``stage-change`` typo)."""


def split_name(name: str, kinds: tuple[str, ...]) -> tuple[str, str] | None:
    """A (possibly prefixed, possibly rotated) file name as (prefix, kind), ``kinds`` tried
    in order: ``broker-1.stage-change.log.2026-11-26-08`` -> (``broker-1.``,
    ``state-change.log``); None when it is none of them."""
    for kind in kinds:
        for stem in ROTATED_AS.get(kind, (kind,)):
            at = name.find(stem)
            rest = name[at + len(stem) :] if at >= 0 else None
            if rest is not None and (rest == "" or rest.startswith(".")):
                return name[:at], kind
    return None


def rotation_key(path: Path) -> tuple[int, str]:
    """Oldest first: ``server.log.2026-11-26-08`` < ``...-09`` < ``server.log``; ``.2`` < ``.1``.

    Hour-stamped names (DailyRollingFileAppender, log4j2 ``%d``) sort as text; numbered
    ones (RollingFileAppender ``MaxBackupIndex``: ``.1`` is the newest) sort backwards; the
    current file comes last.
    """
    _base, _, suffix = path.name.partition(".log")
    suffix = suffix.lstrip(".")
    if not suffix:
        return (2, "")
    if suffix.isdigit():
        return (0, f"{1_000_000 - int(suffix):08d}")
    return (1, suffix)


def rotated_files(current: Path) -> list[Path]:
    """``current`` and the files rotated out of it, oldest first (compressed ones skipped).

    ``current`` itself is listed only when it exists: between log4j's rename and the new
    file's creation there is no current file.
    """
    folder = current.parent
    if not folder.is_dir():
        return []
    stems: tuple[str, ...] = (current.name,)
    for kind, alts in ROTATED_AS.items():
        if current.name.endswith(kind):  # also ``broker-1.state-change.log`` (a bundle)
            prefix = current.name[: -len(kind)]
            stems = tuple(prefix + a for a in alts)
    found = [
        p
        for p in folder.iterdir()
        if p.is_file()
        and any(p.name == s or p.name.startswith(s + ".") for s in stems)
        and not p.name.endswith((".gz", ".zip"))
    ]
    return sorted(found, key=rotation_key)


def read_rotated(current: Path) -> str:
    """The text of ``current`` and of every file rotated out of it, oldest first.

    If the broker rotates while this reads, the listing taken before and after differ and
    the read is repeated: otherwise the lines just renamed would be missed once, and a
    count read from them (LeaderAndIsr requests sent) would go backwards.
    """
    for _ in range(5):
        files = rotated_files(current)
        try:
            text = _join(p.read_text(errors="replace") for p in files)
        except FileNotFoundError:  # renamed under us
            continue
        if rotated_files(current) == files:
            return text
    raise OSError(f"{current}: still rotating after five reads")


def _join(texts: Iterable[str]) -> str:
    """One text, each file's last line ended (a killed broker can leave a torn tail)."""
    return "".join(t if not t or t.endswith("\n") else t + "\n" for t in texts)


def without_other_topics(text: str, topic: str, family: str, partition: int = 0) -> str:
    """``text`` less the lines naming partition ``partition`` of another topic of
    ``family`` (``hwchaos``, ``hwchaos-1``, ...) than ``topic``.

    A reused cluster (harness.generator.warm) plays each run on a new topic and deletes the
    last one; its brokers still load and remove the renamed ``-delete`` dirs of an earlier
    run's partition while the next one plays (after a restart, say), and a fence counting
    lines such as ``Truncating`` must not count theirs, nor those of an earlier run's
    doorbell (``hwchaos-bell``, ``hwchaos-1-bell``: harness.generator.playbook.bell), or of
    this run's. Lines naming no such partition stay.
    """
    mine = f"{topic}-{partition}"
    named = re.compile(
        rf"(?<![\w.-]){re.escape(family)}(?:-\d+)?(?:-bell)?-{partition}(?![\w/])"
    )
    return "\n".join(
        line
        for line in text.splitlines()
        if all(m.group(0) == mine for m in named.finditer(line))
    )


def without_partition(text: str, topic: str, partition: int = 0) -> str:
    """``text`` less the lines naming partition ``partition`` of ``topic``, either way
    brokers name it (``hwchaos-bell-0``; 0.10's ``[hwchaos-bell,0]``).

    Why: the run's doorbell (harness.generator.playbook.bell) truncates and fetches beside
    the test partition, and a fence counting ``Truncating`` lines must not count its lines.
    """
    t = re.escape(topic)
    named = re.compile(rf"(?<![\w.-]){t}-{partition}(?![\w-])|\[{t},{partition}\]")
    return "\n".join(line for line in text.splitlines() if not named.search(line))


# log4j lines that say why a broker stopped: 0.10-1.x log at FATAL; from 2.x Logging.fatal
# logs at ERROR (with a FATAL marker), so an ERROR line that says it exits comes next, and
# the last ERROR line last.
FATAL_LINE = re.compile(r"^\[[^]]*\] FATAL .*$", re.M)
ERROR_EXIT_LINE = re.compile(
    r"^\[[^]]*\] ERROR (?:\S+ )*?(?:Exiting|Halting|exiting|halting)\b.*$", re.M
)
ERROR_LINE = re.compile(r"^\[[^]]*\] ERROR .*$", re.M)
# Each broker start logs its configuration first: what follows is the current incarnation.
START_MARK = re.compile(r"KafkaConfig values:")


def incarnation(text: str) -> str:
    """The part of a broker's server.log written since its last start."""
    starts = list(START_MARK.finditer(text))
    return text[starts[-1].start() :] if starts else text


def last_fatal(text: str, patterns: tuple[re.Pattern[str], ...] = (
    FATAL_LINE, ERROR_EXIT_LINE, ERROR_LINE)) -> tuple[str, str] | None:  # fmt: skip
    """The last line of the current incarnation matching the first of ``patterns`` that
    matches at all, and the text below it (its stack trace, and whatever follows)."""
    tail = incarnation(text)
    for pattern in patterns:
        found = list(pattern.finditer(tail))
        if found:
            return found[-1].group(0).strip(), tail[found[-1].end() :]
    return None
