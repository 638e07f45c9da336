"""Segment parser throughput against Kafka's own DumpLogSegments on the same segment.

Builds a large v2 segment (uncompressed and gzip batches) with the test encoder, times
harness.logformat.read_segment, and, when a Kafka release tree is configured
(HWCHAOS_KAFKA_DISTS, default /opt/kafka-dists), times
``kafka.tools.DumpLogSegments --print-data-log`` on the same file.
Run: .venv/bin/python benchmarks/bench_segments.py [--records 1000000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.backends.local import classpath  # noqa: E402
from harness.db import kafka_dists  # noqa: E402
from harness.logformat import read_segment  # noqa: E402
from tests.kafka_encoding import v2_batch  # noqa: E402


def build(path: Path, records: int, per_batch: int, gz: bool) -> None:
    with path.open("wb") as fh:
        for base in range(0, records, per_batch):
            n = min(per_batch, records - base)
            recs = [(b"k", f"m{base + i}".encode()) for i in range(n)]
            fh.write(v2_batch(base, base // 100_000, recs, gzip_it=gz))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--records", type=int, default=1_000_000)
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hwchaos-seg-"))
    dists = kafka_dists()
    tree = None
    if dists is not None:
        trees = sorted(dists.glob("kafka_2.13-3.*")) + sorted(dists.glob("kafka_2.11-2.*"))
        tree = trees[0] if trees else None
    for label, per_batch, gz in (
        ("v2 one record/batch", 1, False),
        ("v2 100 records/batch", 100, False),
        ("v2 gzip 100/batch", 100, True),
    ):
        n = args.records if per_batch > 1 else args.records // 4
        seg = tmp / f"{label.replace(' ', '_').replace('/', '-')}" / "00000000000000000000.log"
        seg.parent.mkdir()
        build(seg, n, per_batch, gz)
        t0 = time.perf_counter()
        res = read_segment(seg)
        dt = time.perf_counter() - t0
        assert len(res.records) == n
        line = (
            f"{label:<22} {n:>9,} records {seg.stat().st_size / 1e6:7.1f} MB  "
            f"hwchaos: {n / dt:>11,.0f} records/s"
        )
        if tree is not None:
            cmd = [
                "java",
                "-Xmx1g",
                "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
                "-cp",
                classpath(tree),
                "kafka.tools.DumpLogSegments",
                "--files",
                str(seg),
                "--print-data-log",
                "--deep-iteration",
            ]
            t0 = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            dj = time.perf_counter() - t0
            line += f"   DumpLogSegments ({tree.name}): {n / dj:>11,.0f} records/s"
        print(line, flush=True)


if __name__ == "__main__":
    main()
