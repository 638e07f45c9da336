"""The catalogue through the pytest plugin, as a CI job runs it: with and without the
background start of the next item's cluster.

Why: the plugin is how CI plays scenario files (``pytest -p hwchaos --hwchaos-kafka V
scenarios/``, docs/ci.md), one version's items one after another on the session's warm
clusters. About half of them need a cluster of their own; the plugin has the next one
started while the item before it plays (docs/warm-cluster.md). This prints the session's
wall time per version both ways (``HWCHAOS_PRESTART=0`` the second), how many items
passed, and how many played on a cluster started ahead (JUnit
``hwchaos_cluster_started_after``).

Run: .venv/bin/python benchmarks/bench_plugin.py [--versions 0.10.2.1,4.0.0]
(skips a version without a release tree, saying so).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from table import bench_line

ROOT = Path(__file__).resolve().parents[1]
VERSIONS = "0.10.2.1,4.0.0"
"""One ZooKeeper and one KRaft profile: the two modes' clusters start differently."""


def session(version: str, prestart: bool, out: Path) -> tuple[float, int, int, int]:
    """One pytest session over the catalogue on ``version``: wall seconds, items passed,
    items in all, items that played on a cluster started ahead."""
    junit = out / "junit.xml"
    env = {**os.environ, "HWCHAOS_PRESTART": "1" if prestart else "0"}
    cmd = [
        sys.executable, "-m", "pytest", "-p", "hwchaos", "--hwchaos-kafka", version,
        f"--hwchaos-out={out / 'runs'}", f"--junitxml={junit}", "-q", "-p", "no:cacheprovider",
        str(ROOT / "scenarios"),
    ]  # fmt: skip
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=out, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    cases = list(ET.parse(junit).getroot().iter("testcase")) if junit.exists() else []
    passed = sum(
        1 for c in cases if c.find("failure") is None and c.find("error") is None
        and c.find("skipped") is None
    )  # fmt: skip
    ahead = sum(
        1 for c in cases
        for p in c.iter("property") if p.get("name") == "hwchaos_cluster_started_after"
    )  # fmt: skip
    return wall, passed, len(cases), ahead


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions", default=VERSIONS)
    args = ap.parse_args()
    from harness.db import BrokerUnavailable
    from harness.db.catalogue.dists import find_tree
    from harness.db.catalogue.versions import resolve_version

    print(f"load average at start: {os.getloadavg()}")
    for version in [v.strip() for v in args.versions.split(",") if v.strip()]:
        try:
            find_tree(resolve_version(version))
        except BrokerUnavailable as exc:
            print(f"{version}: skipped ({exc})")
            continue
        walls = {}
        for prestart in (True, False):
            with tempfile.TemporaryDirectory(prefix="hwchaos-bench-plugin-") as tmp:
                wall, passed, n, ahead = session(version, prestart, Path(tmp))
            how = "next cluster started ahead" if prestart else "HWCHAOS_PRESTART=0"
            print(f"{version} {how}: {wall:.1f} s, {passed}/{n} passed, {ahead} started ahead")
            walls[prestart] = wall
            print(bench_line(f"{version}: plugin catalogue, {how}", wall, "s", None, None))
            items = f"{passed}/{n}"
            print(bench_line(f"{version}: plugin items passing ({how})", items, "", None, None))
        print(
            bench_line(
                f"{version}: plugin catalogue, saved by the background start",
                walls[False] - walls[True], "s", "> 0 s", walls[False] > walls[True],
            )
        )  # fmt: skip
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
