"""Segment parser throughput, and Kafka's own DumpLogSegments on the same segments.

Why: after every run hwchaos reads back every replica's segments, so the parser must keep
up with real segment sizes; DumpLogSegments is the yardstick (and the tool it replaces).

Builds large v2 segments with the test encoder (small records, uncompressed and gzip),
times ``harness.readback.logformat.read_segment`` (best of ``--repeat``, with and without CRC
checks), and, when ``$HWCHAOS_KAFKA_DISTS`` (default /opt/kafka-dists) holds a Kafka
release tree with ``libs/kafka_*.jar``, times
``kafka.tools.DumpLogSegments --files SEG --print-data-log`` on the same files.

Run: .venv/bin/python benchmarks/bench_segments.py [--records 1000000] [--no-java]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.readback.dump import main as dump_main  # noqa: E402
from harness.readback.logformat import read_segment  # noqa: E402
from tests.unit.kafka_encoding import Rec, v2_batch  # noqa: E402

DEFAULT_DISTS = Path("/opt/kafka-dists")
# Newest first: DumpLogSegments got faster over the years, compare with the best.
TREE_PATTERNS = ("kafka_2.13-3.*", "kafka_2.12-*", "kafka_2.11-2.*", "kafka_2.11-*")


def build(path: Path, records: int, per_batch: int, codec: str) -> None:
    """``records`` records of ~10 bytes ("m<offset>"), ``per_batch`` per batch."""
    with path.open("wb") as fh:
        for base in range(0, records, per_batch):
            n = min(per_batch, records - base)
            recs = [Rec(b"k", b"m%d" % (base + i), timestamp_delta=i) for i in range(n)]
            fh.write(v2_batch(base, recs, epoch=base // 100_000, codec=codec))


def find_tree() -> Path | None:
    """A Kafka release tree with its core jar, or None (the comparison is then skipped)."""
    env = os.environ.get("HWCHAOS_KAFKA_DISTS")
    dists = Path(env) if env else DEFAULT_DISTS
    if not dists.is_dir():
        return None
    for pattern in TREE_PATTERNS:
        for tree in sorted(dists.glob(pattern), reverse=True):
            if any((tree / "libs").glob("kafka_*.jar")) and shutil.which("java"):
                return tree
    return None


def time_parser(seg: Path, n: int, repeat: int, verify: bool) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = read_segment(seg, verify=verify)
        best = min(best, time.perf_counter() - t0)
        assert len(res.records) == n and not res.torn_tail and res.crc_errors == 0
    return n / best


def time_hwchaos_dump(seg: Path, n: int) -> float:
    """records/s of ``hwchaos dump SEG`` writing its text to a file: the like-for-like
    figure next to DumpLogSegments, which also formats and prints every record."""
    out = seg.with_suffix(".hwchaos-dump.txt")
    with out.open("w") as fh, contextlib.redirect_stdout(fh):
        t0 = time.perf_counter()
        code = dump_main([str(seg)])
        dt = time.perf_counter() - t0
    out.unlink()
    if code != 0:
        raise RuntimeError(f"hwchaos dump exited {code}")
    return n / dt


def time_dumplogsegments(tree: Path, seg: Path, n: int) -> tuple[float, float]:
    """(records/s including JVM start, JVM start alone in s) for DumpLogSegments."""
    cmd = [
        "java",
        "-Xmx2g",
        "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
        "--add-opens=java.base/java.nio=ALL-UNNAMED",
        "-cp",
        str(tree / "libs" / "*"),
        "kafka.tools.DumpLogSegments",
        "--files",
        str(seg),
        "--print-data-log",
    ]
    out = seg.with_suffix(".dump.txt")  # a file, not a pipe: the output is ~100 B/record
    with out.open("wb") as fh:
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.PIPE, check=False)
        dt = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.decode(errors="replace").strip().splitlines()[-1])
    printed = 0
    with out.open("rb") as fh:
        for line in fh:
            printed += line.startswith(b"| offset: ") or line.startswith(b"offset: ")
    out.unlink()
    if printed != n:
        raise RuntimeError(f"DumpLogSegments printed {printed} of {n} records")
    t0 = time.perf_counter()
    subprocess.run([*cmd[:6], "kafka.tools.DumpLogSegments", "--help"], capture_output=True)
    return n / dt, time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=3, help="parser runs per segment (best)")
    p.add_argument("--no-java", action="store_true", help="skip DumpLogSegments")
    args = p.parse_args()
    tree = None if args.no_java else find_tree()
    tmp = Path(tempfile.mkdtemp(prefix="hwchaos-bench-seg-"))
    print(f"python {sys.version.split()[0]}, {args.records:,} records per segment")
    if tree is None and not args.no_java:
        print("DumpLogSegments: skipped (no Kafka tree with libs/kafka_*.jar, or no java)")
    try:
        for label, per_batch, codec in (
            ("v2 none, 1 record/batch", 1, "none"),
            ("v2 none, 100 records/batch", 100, "none"),
            ("v2 gzip, 100 records/batch", 100, "gzip"),
        ):
            seg = (
                tmp
                / label.replace(" ", "").replace(",", "_").replace("/", "-")
                / ("0" * 20 + ".log")
            )
            seg.parent.mkdir()
            build(seg, args.records, per_batch, codec)
            mb = seg.stat().st_size / 1e6
            checked = time_parser(seg, args.records, args.repeat, verify=True)
            fast = time_parser(seg, args.records, args.repeat, verify=False)
            print(
                f"{label:<28} {mb:7.1f} MB  read_segment: {checked:>10,.0f} records/s "
                f"(verify=False: {fast:,.0f})",
                flush=True,
            )
            print(
                f"{'':<28} {'':>10}  hwchaos dump (text): "
                f"{time_hwchaos_dump(seg, args.records):>10,.0f} records/s",
                flush=True,
            )
            if tree is not None:
                try:
                    rate, jvm = time_dumplogsegments(tree, seg, args.records)
                    print(
                        f"{'':<28} {'':>10}  DumpLogSegments ({tree.name}): {rate:>10,.0f} "
                        f"records/s (wall clock incl. ~{jvm:.1f} s JVM start)",
                        flush=True,
                    )
                except (RuntimeError, OSError) as exc:
                    print(f"{'':<28} DumpLogSegments failed: {exc}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
