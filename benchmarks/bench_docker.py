"""The docker backend's cost: wall time of one scenario run in containers next to the same run
on the local backend (cluster start and teardown included, image already built), and the
image build times (the Kafka image from a release tree, and with --with-base the base JRE
image by debootstrap, which takes minutes on a busy 2-core machine).

Run: nice -n 10 .venv/bin/python benchmarks/bench_docker.py [--version 0.10.2.1]
     [--scenario kip101-scenario2] [--repeat 3] [--with-base]
Needs a Docker daemon (`hwchaos docker up`) and the release tree (HWCHAOS_KAFKA_DISTS).
Ends with ``BENCH {...}`` lines: figure, value, unit, target, met.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.versions import resolve_version
from harness.db.runtime import images
from harness.db.runtime.daemon import ensure_daemon
from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from harness.trial import trial

# What "cheap enough to run every broker test in containers too" means here.
TARGETS = {
    "docker_vs_local_run_ratio": 2.0,  # a docker run at most twice a local run
    "kafka_image_build_s": 60.0,  # from the release tree, base present
    "base_image_build_s": 180.0,  # debootstrap + JRE + docker import
}


def _bench(figure: str, value: float, unit: str) -> str:
    target = TARGETS[figure]
    return "BENCH " + json.dumps(
        {
            "figure": figure,
            "value": round(value, 2),
            "unit": unit,
            "target": target,
            "met": value <= target,
        }
    )


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--version", default="0.10.2.1")
    p.add_argument("--scenario", default="kip101-scenario2")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--with-base", action="store_true", help="also rebuild the base JRE image")
    args = p.parse_args()
    reason = ensure_daemon()
    if reason is not None:
        print(f"bench_docker: {reason}", file=sys.stderr)
        return 2
    version = resolve_version(args.version)
    tree = find_tree(version)
    say = lambda m: print(f"  {m}", file=sys.stderr)  # noqa: E731
    lines = []
    if args.with_base:
        t0 = time.perf_counter()
        images.ensure_base(say, force=True)
        base_s = time.perf_counter() - t0
        print(f"base image {images.BASE_IMAGE}: {base_s:.1f}s")
        lines.append(_bench("base_image_build_s", base_s, "s"))
    t0 = time.perf_counter()
    images.build_from_tree(version, tree, say, force=True)
    build_s = time.perf_counter() - t0
    print(f"kafka image {images.kafka_image(version)} from {tree}: {build_s:.1f}s")
    lines.append(_bench("kafka_image_build_s", build_s, "s"))

    sc = load_scenario(SCENARIO_DIR / f"{args.scenario}.yaml")
    root = Path(tempfile.mkdtemp(prefix="hwchaos-bench-docker-"))
    walls: dict[str, list[float]] = {"local": [], "docker": []}
    for k in range(args.repeat):
        for backend in ("local", "docker"):  # interleaved: the machine's load hits both
            folder = root / f"{backend}-{k}"
            t0 = time.perf_counter()
            info, _p, _v, _record = trial(
                sc, version, backend, folder, folder.name, lambda _m: None
            )
            wall = time.perf_counter() - t0
            walls[backend].append(wall)
            print(f"{backend:<6} run {k}: {wall:6.1f}s  verdict={info.verdict}", flush=True)
    local, docker = statistics.median(walls["local"]), statistics.median(walls["docker"])
    print(f"median wall: local {local:.1f}s, docker {docker:.1f}s ({args.scenario} {version.name})")
    lines.append(_bench("docker_vs_local_run_ratio", docker / local, "x"))
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
