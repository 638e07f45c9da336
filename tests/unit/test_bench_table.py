"""benchmarks/table.py: BENCH lines from real script runs become one table."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from table import bench_line, parse, render, run  # noqa: E402


def script(tmp: Path, name: str, body: str) -> Path:
    path = tmp / name
    path.write_text(body)
    return path


def test_figures_failures_and_silent_scripts_each_show(tmp_path: Path) -> None:
    good = script(
        tmp_path,
        "bench_good.py",
        "print('warming up')\n"
        f"print({bench_line('states/s', 123456.7, 'states/s', '>= 100,000', True)!r})\n"
        f"print({bench_line('matrix', 7.25, 's', '<= 5 s', False)!r})\n"
        f"print({bench_line('rows', 12, 'rows', None, None)!r})\n",
    )
    silent = script(tmp_path, "bench_silent.py", "print('no figures here')\n")
    broken = script(
        tmp_path, "bench_broken.py", "print('BENCH {\"figure\": 1}')\nraise SystemExit('boom')\n"
    )
    logs = tmp_path / "logs"
    logs.mkdir()
    rows = [r for s in (good, silent, broken) for r in run(s, 60, logs)]
    table = render(rows)
    lines = table.splitlines()
    assert lines[0].split() == ["script", "figure", "value", "target", "met"]
    assert any("states/s" in ln and "123,457" in ln and ">= 100,000" in ln and ln.endswith("yes")
               for ln in lines)  # fmt: skip
    assert any("matrix" in ln and "7.25 s" in ln and ln.endswith("NO") for ln in lines)
    assert any("bench_silent.py" in ln and "no figures" in ln for ln in lines)
    assert any("bad BENCH line" in ln for ln in lines)
    assert any("failed, exit 1: boom" in ln for ln in lines)
    assert "warming up" in (logs / "bench_good.log").read_text()
    assert "warming up" not in table


def test_parse_ignores_other_lines() -> None:
    assert parse("x.py", "BENCHMARK done\nfigure 3\n") == []
