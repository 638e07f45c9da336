"""Nothing of hwchaos outlives its runs: N docker runs in a row through the CLI, one of them
with the harness SIGKILLed mid-run (no handler runs), then what `docker ps -a` and
`docker network ls` still show of hwchaos.

Run: nice -n 10 .venv/bin/python benchmarks/soak_docker.py [--runs 20] [--kill-at 10]
     [--version 0.10.2.1] [--scenario kip101-scenario2]
Ends with ``BENCH {...}`` lines (leftovers: target 0).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.db.runtime.reaper import RUN_LABEL

ROOT = Path(__file__).resolve().parent.parent


def hwchaos_objects() -> tuple[list[str], list[str]]:
    """What the docker CLI itself lists of hwchaos (by name or label), not our SDK view."""
    ps = subprocess.run(
        ["docker", "ps", "-a", "--format", "{{.Names}} {{.Labels}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    nets = subprocess.run(
        ["docker", "network", "ls", "--format", "{{.Name}} {{.Labels}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    pick = [ln for ln in ps if "hwchaos" in ln]
    return pick, [ln for ln in nets if "hwchaos" in ln or RUN_LABEL in ln]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--kill-at", type=int, default=10, help="which run is SIGKILLed (1-based)")
    p.add_argument("--version", default="0.10.2.1")
    p.add_argument("--scenario", default="kip101-scenario2")
    args = p.parse_args()
    out = Path(tempfile.mkdtemp(prefix="hwchaos-soak-"))
    cmd = [
        sys.executable,
        "-m",
        "harness.cli",
        "run",
        str(ROOT / "scenarios" / f"{args.scenario}.yaml"),
        "--kafka",
        args.version,
        "--backend",
        "docker",
        "--out",
        str(out),
        "--json",
    ]
    verdicts: dict[str, int] = {}
    t0 = time.perf_counter()
    for k in range(1, args.runs + 1):
        t = time.perf_counter()
        if k == args.kill_at:
            proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT
            )
            deadline = time.monotonic() + 120
            mine = f"hwchaos-{args.scenario}__{args.version}__"
            while time.monotonic() < deadline and (
                len([c for c in hwchaos_objects()[0] if c.startswith(mine)]) < 3
            ):
                time.sleep(0.2)  # polling a bounded wait for the cluster to be up
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            left = hwchaos_objects()
            print(f"run {k:>2}: SIGKILLed mid-run; left behind {len(left[0])} containers, "
                  f"{len(left[1])} networks (the next start reaps them)", flush=True)  # fmt: skip
            verdicts["killed"] = verdicts.get("killed", 0) + 1
            continue
        res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        reaped = "removed" in res.stderr and "left by a killed hwchaos run" in res.stderr
        try:
            verdict = json.loads(res.stdout)["verdict"]
        except (ValueError, KeyError):
            verdict = f"exit {res.returncode}"
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
        print(f"run {k:>2}: {verdict:<15} {time.perf_counter() - t:6.1f}s"
              f"{'  (reaped the killed run first)' if reaped else ''}", flush=True)  # fmt: skip
    containers, networks = hwchaos_objects()
    print(f"{args.runs} runs in {time.perf_counter() - t0:.0f}s: {verdicts}")
    print(f"docker ps -a: {containers or 'nothing of hwchaos'}")
    print(f"docker network ls: {networks or 'nothing of hwchaos'}")
    n = len(containers) + len(networks)
    print("BENCH " + json.dumps({"figure": "hwchaos_leftovers_after_soak", "value": n,
                                 "unit": "objects", "target": 0, "met": n == 0}))  # fmt: skip
    return 0 if n == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
