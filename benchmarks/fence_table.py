"""Where the time of many broker runs went: every fence summed per kind, from ``run.json``.

Why: one run's ``extra.timings`` (harness/timing.py) names its slowest fence, but a speed-up
is chosen over a whole catalogue: which kind of wait costs the most seconds in all, how
often it is waited on, and what is left outside every fence (step bodies, cluster start and
reset). Fence names carry the broker, record and offset they waited on ("B to complete a
fetch round from A", "m2 to be acknowledged or appended", "leader HW to reach 2"); they are
folded into one kind each ("X to complete a fetch round from X", "mN ...", "... reach N").

Run: .venv/bin/python benchmarks/fence_table.py FOLDER [FOLDER...] [--top N]
A FOLDER is a run folder (with ``run.json``) or any folder above run folders (searched
recursively). ``bench_catalogue.py`` prints this table for its runs at the end.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

# A broker name (one capital letter), a record (m1, m12), any other number.
_BROKER = re.compile(r"\b[A-Z]\b")
_RECORD = re.compile(r"\bm\d+\b")
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")


def kind(what: str) -> str:
    """A fence's name with its broker names, records and numbers folded (``X``, ``mN``, ``N``)."""
    return _NUMBER.sub("N", _RECORD.sub("mN", _BROKER.sub("X", what)))


@dataclass
class Table:
    """Seconds and counts per fence kind, and the time outside fences, over many runs."""

    runs: int = 0
    seconds: float = 0.0  # the runs' wall seconds (run.json extra.seconds)
    fences: dict[str, list[float]] = field(default_factory=dict)  # kind -> [seconds, count]
    missed: dict[str, int] = field(default_factory=dict)  # kind -> fences not reached
    step_bodies: float = 0.0  # step time outside every fence
    phases: dict[str, float] = field(default_factory=dict)  # non-step phases' wall seconds

    def add(self, doc: dict[str, object]) -> None:
        """One run's ``run.json``."""
        extra = doc.get("extra")
        if not isinstance(extra, dict) or not isinstance(extra.get("timings"), dict):
            return
        self.runs += 1
        self.seconds += float(extra.get("seconds", 0.0))
        for p in extra["timings"].get("phases", []):
            name = str(p["name"])
            fenced = 0.0
            for f in p.get("fences", []):
                k = kind(str(f["what"]))
                row = self.fences.setdefault(k, [0.0, 0])
                row[0] += float(f["seconds"])
                row[1] += 1
                fenced += float(f["seconds"])
                if not f.get("ok", True):
                    self.missed[k] = self.missed.get(k, 0) + 1
            if name.startswith("step "):
                self.step_bodies += max(0.0, float(p["seconds"]) - fenced)
            else:
                key = "prevention check" if name.startswith("prevention check") else name
                self.phases[key] = self.phases.get(key, 0.0) + float(p["seconds"])

    def lines(self, top: int = 25) -> list[str]:
        """The table, largest total first."""
        out = [f"{self.runs} runs, {self.seconds:.1f} s in all", "  seconds  count  fence"]
        rows = sorted(self.fences.items(), key=lambda kv: -kv[1][0])
        for k, (secs, n) in rows[:top]:
            miss = f"  ({self.missed[k]} not reached)" if k in self.missed else ""
            out.append(f"  {secs:7.1f}  {int(n):5d}  {k}{miss}")
        if len(rows) > top:
            rest = rows[top:]
            out.append(
                f"  {sum(r[1][0] for r in rest):7.1f}  {int(sum(r[1][1] for r in rest)):5d}  "
                f"({len(rest)} other kinds)"
            )
        outside = [f"step bodies {self.step_bodies:.1f} s"]
        outside += [f"{n} {s:.1f} s" for n, s in sorted(self.phases.items(), key=lambda x: -x[1])]
        out.append("  not in a fence: " + ", ".join(outside))
        return out


def run_files(folders: Iterable[Path]) -> list[Path]:
    """Every ``run.json`` in or under ``folders``."""
    found: list[Path] = []
    for f in folders:
        if (f / "run.json").is_file():
            found.append(f / "run.json")
        else:
            found += sorted(f.rglob("run.json"))
    return found


def table_of(folders: Iterable[Path]) -> Table:
    t = Table()
    for path in run_files(folders):
        try:
            t.add(json.loads(path.read_text()))
        except (OSError, ValueError) as exc:
            print(f"{path}: skipped ({exc})", file=sys.stderr)
    return t


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folders", nargs="+", type=Path)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args()
    missing = [str(f) for f in args.folders if not f.is_dir()]
    if missing:
        sys.exit(f"fence_table: not a folder: {', '.join(missing)}")
    t = table_of(args.folders)
    if t.runs == 0:
        sys.exit(f"fence_table: no run.json with timings under {', '.join(map(str, args.folders))}")
    print("\n".join(t.lines(args.top)))


if __name__ == "__main__":
    main()
