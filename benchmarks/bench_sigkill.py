"""Nothing left behind: N ``hwchaos run``s in a row, every K-th SIGKILLed mid-run.

For a killed run, the harness is SIGKILLed when it prints a randomly chosen step (so the
cluster is up and the playbook is between fences), and the script measures how long until
no JVM of that run is alive (target: 0 alive one second after the kill). Every other run
must finish with exit code 0 or 1 (a verdict) and leave no JVM either.

Run: nice -n 10 .venv/bin/python benchmarks/bench_sigkill.py [--runs 100] [--every 10]
     [--versions 0.10.2.1,2.1.1,3.3.1] [--scenario kip101-scenario2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.db.runtime.process import jvms_under  # noqa: E402


def time_until_gone(path: Path, limit: float = 10.0) -> float:
    """Seconds until no JVM under ``path`` is alive (polled every 5 ms; ``limit`` cap)."""
    t0 = time.perf_counter()
    while jvms_under(path):
        if time.perf_counter() - t0 > limit:
            return float("inf")
        time.sleep(0.005)  # polling interval of a measurement, not a synchronisation
    return time.perf_counter() - t0


def one_run(scenario: str, version: str, out: Path, kill_at_step: int | None) -> dict[str, object]:
    cmd = [sys.executable, "-m", "harness.cli", "run", scenario, "--kafka", version]
    cmd += ["--out", str(out)]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stderr is not None
    t0 = time.perf_counter()
    row: dict[str, object] = {"version": version, "killed": kill_at_step is not None}
    if kill_at_step is not None:
        pattern = re.compile(rf"^step\s+{kill_at_step}/")
        for line in proc.stderr:
            if pattern.match(line):
                break
        jvms = len(jvms_under(out))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        at_one_second = 0
        gone = time_until_gone(out)
        if gone > 1.0:
            at_one_second = len(jvms_under(out)) or 1
        row.update(
            step=kill_at_step,
            jvms_at_kill=jvms,
            seconds_to_no_jvm=round(gone, 3),
            alive_after_1s=at_one_second,
        )
        for pid in jvms_under(out):  # never leave them, even if the property failed
            os.kill(pid, signal.SIGKILL)
    else:
        err = proc.stderr.read()
        rc = proc.wait()
        reaped = re.search(r"killed (\d+) JVMs left by an earlier run", err)
        row.update(
            rc=rc,
            left=len(jvms_under(out)),
            reaped_at_start=int(reaped.group(1)) if reaped else 0,
            tail=err.strip().splitlines()[-1:],
        )
    row["seconds"] = round(time.perf_counter() - t0, 2)
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--every", type=int, default=10, help="SIGKILL every K-th run")
    p.add_argument("--versions", default="0.10.2.1,2.1.1,3.3.1")
    p.add_argument("--scenario", default="kip101-scenario2")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", help="runs folder (default: a temporary one, removed)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = p.parse_args()
    rng = random.Random(args.seed)
    versions = [v for v in args.versions.split(",") if v]
    from harness.generator.scenarios import load_scenario

    n_steps = len(load_scenario(args.scenario).steps)
    tmp = tempfile.TemporaryDirectory(prefix="hwchaos-sigkill-")
    out = Path(args.out).resolve() if args.out else Path(tmp.name)
    rows = []
    t0 = time.perf_counter()
    for i in range(1, args.runs + 1):
        kill = rng.randint(1, n_steps) if i % args.every == 0 else None
        row = one_run(args.scenario, versions[(i - 1) % len(versions)], out, kill)
        rows.append(row)
        if not args.json:
            print(f"run {i:3}: {json.dumps(row)}", flush=True)
    killed = [r for r in rows if r["killed"]]
    normal = [r for r in rows if not r["killed"]]

    def total(rs: list[dict[str, object]], key: str) -> int:
        return sum(int(str(r[key])) for r in rs)

    times = [float(str(r["seconds_to_no_jvm"])) for r in killed]
    summary = {
        "runs": len(rows),
        "killed": len(killed),
        "killed_alive_after_1s": total(killed, "alive_after_1s"),
        "kill_to_no_jvm_max_s": max(times) if times else None,
        "kill_to_no_jvm_median_s": statistics.median(times) if times else None,
        "jvms_at_kill_min": min((int(str(r["jvms_at_kill"])) for r in killed), default=None),
        "completed_with_verdict": sum(1 for r in normal if r["rc"] in (0, 1)),
        "completed_other": [r for r in normal if r["rc"] not in (0, 1)],
        "left_after_normal_runs": total(normal, "left"),
        "reaped_at_next_start": total(normal, "reaped_at_start"),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    print(json.dumps(summary, indent=None if args.json else 2))
    tmp.cleanup()
    ok = summary["killed_alive_after_1s"] == 0 and summary["left_after_normal_runs"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
