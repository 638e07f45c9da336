"""benchmarks/fence_table.py: fences of many run.json files summed per kind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from fence_table import kind, table_of  # noqa: E402


def test_kinds_fold_brokers_records_and_numbers() -> None:
    assert kind("B to complete a fetch round from A") == "X to complete a fetch round from X"
    assert kind("m12 to be acknowledged or appended") == "mN to be acknowledged or appended"
    assert kind("leader HW to reach 2") == "leader HW to reach N"
    # words with capitals and the ISR are not broker names
    shrink = "the leader C to shrink A out of the ISR"
    assert kind(shrink) == "the leader X to shrink X out of the ISR"


def _run(folder: Path, seconds: float, phases: list[dict[str, object]]) -> None:
    folder.mkdir(parents=True)
    doc = {"extra": {"seconds": seconds, "timings": {"phases": phases}}}
    (folder / "run.json").write_text(json.dumps(doc))


def test_table_sums_per_kind_and_keeps_time_outside_fences(tmp_path: Path) -> None:
    fetch = {"what": "A to complete a fetch round from B", "seconds": 0.5, "ok": True}
    _run(tmp_path / "r1", 5.0, [
        {"name": "cluster_start", "seconds": 2.0, "fences": []},
        {"name": "step 1", "seconds": 1.5, "fences": [fetch]},
    ])  # fmt: skip
    _run(tmp_path / "deeper" / "r2", 4.0, [
        {"name": "step 1", "seconds": 1.0,
         "fences": [{"what": "C to complete a fetch round from A", "seconds": 0.25, "ok": False}]},
        {"name": "cluster_reset", "seconds": 0.75, "fences": []},
    ])  # fmt: skip
    (tmp_path / "not-a-run").mkdir()
    t = table_of([tmp_path])
    assert t.runs == 2 and t.seconds == 9.0
    assert t.fences == {"X to complete a fetch round from X": [0.75, 2]}
    assert t.missed == {"X to complete a fetch round from X": 1}
    assert t.step_bodies == 1.0 + 0.75  # each step's time outside its fences
    assert t.phases == {"cluster_start": 2.0, "cluster_reset": 0.75}
    text = "\n".join(t.lines())
    assert "0.8      2  X to complete a fetch round from X  (1 not reached)" in text


def test_a_folder_without_runs_is_one_clear_line(tmp_path: Path) -> None:
    script = ROOT / "benchmarks" / "fence_table.py"
    p = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True)
    assert p.returncode != 0
    assert p.stderr.strip() == f"fence_table: no run.json with timings under {tmp_path}"
    p = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "nope")], capture_output=True, text=True
    )
    assert p.stderr.strip() == f"fence_table: not a folder: {tmp_path / 'nope'}"
