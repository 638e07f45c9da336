"""``hwchaos doctor``: one row per capability, each real, with what to do when missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from harness.db.catalogue.dists import java_major
from harness.db.catalogue.versions import CATALOGUE


def doctor(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", "doctor", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_json_rows_follow_this_machine(tmp_path: Path) -> None:
    dists = tmp_path / "dists"
    tree = dists / "kafka_2.11-2.1.1" / "libs"
    tree.mkdir(parents=True)
    (tree / "kafka_2.11-2.1.1.jar").write_bytes(b"PK")
    res = doctor(
        "--json",
        env={"HWCHAOS_KAFKA_DISTS": str(dists), "HWCHAOS_KAFKA_CACHE": str(tmp_path / "c")},
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    rows = {r["name"]: r for r in doc["checks"]}
    assert all(r["status"] in ("ok", "missing", "warn") for r in rows.values())
    assert all(r["fix"] for r in rows.values() if r["status"] != "ok")  # always a way out
    assert set(rows) >= {"java", "docker daemon", "root + netns", "spark", "gpg", "chromium"}
    assert {n for n in rows if n.startswith("kafka ")} == {f"kafka {v}" for v in CATALOGUE}
    assert rows["kafka 2.1.1"]["status"] == "ok"
    assert rows["kafka 2.1.1"]["detail"] == f"{dists / 'kafka_2.11-2.1.1'} (HWCHAOS_KAFKA_DISTS)"
    assert rows["kafka 0.10.2.1"]["status"] == "missing"
    assert rows["kafka 0.10.2.1"]["fix"].startswith("hwchaos kafka install 0.10.2.1")
    major = java_major()
    if major is None:
        assert rows["java"]["status"] == "missing"
    else:
        assert rows["java"]["detail"].startswith(f"Java {major}")
    assert doc["kafka_cache"] == str(tmp_path / "c")


def test_table_has_one_line_per_check_and_leaves_no_namespace() -> None:
    res = doctor()
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split()[:3] == ["check", "status", "detail"]
    names = [ln.split()[0] for ln in lines[1:]]
    assert names[0] == "java" and names[-1] == "chromium"
    assert len(lines) == 1 + 6 + len(CATALOGUE)
    if shutil.which("ip"):
        ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
        assert "hwchaos-doctor" not in ns.stdout
