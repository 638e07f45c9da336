"""Run every benchmark script and print one table of their figures, each beside its target.

Why one table: the project's speed claims (explorer states/s, segment parsing, Spark against
pandas, broker runs) live in separate scripts whose printed output differs; a reader of
``make bench`` wants to see at a glance which target is met and by how much one is missed.

Protocol: a script reports a figure by printing one line ``BENCH {json}`` on stdout, the
JSON object having the keys ``figure`` (name), ``value`` (number or text), ``unit``,
``target`` (text such as ``"<= 5 s"``, or null when the figure is informative only) and
``met`` (true, false, or null when there is no target or it could not be judged).
:func:`bench_line` builds such a line. Everything else a script prints goes to a log file
(its path is printed at the end), so the table stays readable. A script that prints no
``BENCH`` line shows as one row "no figures"; one that fails shows its exit status.

Run: .venv/bin/python benchmarks/table.py [--only NAME[,NAME]] [--timeout SECONDS]
[--logs DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# The order (explorer, segments, analysis, runs); any other bench_*.py after them.
ORDER = [
    "bench_explorer.py",
    "bench_segments.py",
    "bench_analysis.py",
    "bench_runs.py",
    "bench_catalogue.py",
]
KEYS = ("figure", "value", "unit", "target", "met")


def bench_line(
    figure: str, value: float | int | str, unit: str, target: str | None, met: bool | None
) -> str:
    """The ``BENCH {json}`` line a benchmark script prints for one figure."""
    if isinstance(value, float):
        value = round(value, 3)
    return "BENCH " + json.dumps(
        {"figure": figure, "value": value, "unit": unit, "target": target, "met": met}
    )


@dataclass
class Row:
    """One line of the table."""

    script: str
    figure: str
    value: str = ""
    target: str = ""
    met: str = ""


def parse(script: str, stdout: str) -> list[Row]:
    """The figures of one script's stdout; a malformed BENCH line becomes a row saying so."""
    rows = []
    for line in stdout.splitlines():
        if not line.startswith("BENCH "):
            continue
        try:
            d: Any = json.loads(line[len("BENCH ") :])
            if not isinstance(d, dict) or set(KEYS) - set(d):
                raise ValueError(f"needs keys {', '.join(KEYS)}")
        except ValueError as exc:
            rows.append(Row(script, f"bad BENCH line ({exc}): {line[6:60]}"))
            continue
        value = d["value"]
        if isinstance(value, float):
            value = f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
        elif isinstance(value, int):
            value = f"{value:,}"
        met = {True: "yes", False: "NO", None: "-"}.get(d["met"], str(d["met"]))
        rows.append(
            Row(script, str(d["figure"]), f"{value} {d['unit'] or ''}".strip(),
                str(d["target"] or "-"), met)
        )  # fmt: skip
    return rows


def scripts(only: list[str] | None) -> list[Path]:
    """The benchmark scripts to run, in the issue's order then by name."""
    found = {p.name: p for p in HERE.glob("bench_*.py")}
    names = [n for n in ORDER if n in found] + sorted(n for n in found if n not in ORDER)
    if only:
        wanted = {n if n.endswith(".py") else f"{n}.py" for n in only}
        wanted |= {f"bench_{n}" for n in list(wanted) if not n.startswith("bench_")}
        names = [n for n in names if n in wanted]
    return [found[n] for n in names]


def run(script: Path, timeout: float, logs: Path) -> list[Row]:
    """Run one script, keep its whole output in ``logs``, return its rows."""
    log = logs / f"{script.stem}.log"
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=HERE.parent,
        )
        out, err, status = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:

        def text(b: bytes | str | None) -> str:
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")

        out, err, status = text(exc.stdout), text(exc.stderr), -1
    took = time.perf_counter() - t0
    log.write_text(out + ("\n--- stderr ---\n" + err if err else ""))
    rows = parse(script.name, out)
    if status == -1:
        rows.append(Row(script.name, f"timed out after {timeout:.0f} s (log: {log})"))
    elif status != 0:
        last = err.strip().splitlines()[-1:] or ["?"]
        rows.append(Row(script.name, f"failed, exit {status}: {last[0][:80]}"))
    elif not rows:
        rows.append(Row(script.name, "no figures"))
    print(f"table: {script.name} done in {took:.0f} s ({len(rows)} rows)", file=sys.stderr)
    return rows


def render(rows: list[Row]) -> str:
    """The rows as a fixed-width text table, the script named once per group."""
    head = Row("script", "figure", "value", "target", "met")
    widths = [
        max(len(getattr(r, f)) for r in [head, *rows])
        for f in ("script", "figure", "value", "target", "met")
    ]

    def fmt(r: Row, script: str) -> str:
        cells = [script, r.figure, r.value, r.target, r.met]
        parts = [
            c.rjust(w) if i == 2 else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    lines = [fmt(head, head.script), "  ".join("-" * w for w in widths)]
    last = ""
    for r in rows:
        lines.append(fmt(r, r.script if r.script != last else ""))
        last = r.script
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--only", help="comma-separated script names (e.g. analysis,explorer)")
    p.add_argument("--timeout", type=float, default=3600.0, help="per script, seconds")
    p.add_argument("--logs", help="folder for the scripts' full output (default: a temp dir)")
    args = p.parse_args(argv)
    logs = Path(args.logs) if args.logs else Path(tempfile.mkdtemp(prefix="hwchaos-bench-logs-"))
    logs.mkdir(parents=True, exist_ok=True)
    todo = scripts(args.only.split(",") if args.only else None)
    if not todo:
        print(f"table: no benchmark script matches {args.only!r}", file=sys.stderr)
        return 2
    rows = [row for script in todo for row in run(script, args.timeout, logs)]
    print(render(rows))
    print(f"\nfull output of each script: {logs}/")
    missed = sum(r.met == "NO" for r in rows)
    print(f"{sum(r.met == 'yes' for r in rows)} targets met, {missed} missed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
