"""Wall time per scenario run on the local backend (cluster start included), and the flake
rate over repeated runs (identical per-replica logs every time?).

Run: .venv/bin/python benchmarks/bench_runs.py [--repeat 10] [--versions 0.10.2.1,3.3.1]
Needs Kafka release trees (HWCHAOS_KAFKA_DISTS, default /opt/kafka-dists).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyarrow.parquet as pq
from bench_catalogue import play


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--versions", default="0.10.2.1,2.1.1,3.3.1")
    p.add_argument("--scenarios", default="kip101-scenario1,kip101-scenario2")
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="hwchaos-runs-"))
    print(
        f"{'scenario':<20} {'version':<9} {'runs':>4} {'mean s':>7} {'min s':>6} {'max s':>6} "
        f"{'match':>5} {'distinct logs':>13}"
    )
    for version in args.versions.split(","):
        for name in args.scenarios.split(","):
            times, matches, logs = [], 0, set()
            for k in range(args.repeat):
                folder = root / f"{name}-{version}-{k}"
                t0 = time.perf_counter()
                info, _record = play(name, version, folder)
                times.append(time.perf_counter() - t0)
                matches += info.model_match
                df = pq.read_table(folder / "replicas.parquet").to_pandas()
                obs = df[df.source == "observed"].sort_values(["replica", "offset"])
                logs.add(tuple(zip(obs.replica, obs.offset, obs.record, strict=True)))
            print(
                f"{name:<20} {version:<9} {len(times):>4} {statistics.mean(times):>7.1f} "
                f"{min(times):>6.1f} {max(times):>6.1f} {matches:>5} {len(logs):>13}",
                flush=True,
            )


if __name__ == "__main__":
    main()
