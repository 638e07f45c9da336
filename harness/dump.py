"""``hwchaos dump DIR``: a partition dir (or one segment) printed like DumpLogSegments.

For reading what a broker left on disk without a JVM: every batch with its leader epoch,
every record, the partition's leader-epoch-checkpoint and the log dir's offset checkpoints.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from harness.checkpoints import read_leader_epoch_checkpoint, read_offset_checkpoint
from harness.logformat import SegmentReadResult, UnsupportedCodec, read_segment

CHECKPOINTS = (
    "replication-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
)


def _segments(target: Path) -> list[Path]:
    if target.is_file():
        return [target]
    return sorted(target.glob("*.log"), key=lambda p: int(p.stem) if p.stem.isdigit() else -1)


def _text(res: SegmentReadResult) -> list[str]:
    lines = [f"Dumping {res.path}", f"Starting offset: {int(res.path.stem or 0)}"]
    by_batch: dict[int, list[Any]] = {}
    for r in res.records:
        by_batch.setdefault(r.batch_base_offset, []).append(r)
    for b in res.batches:
        lines.append(
            f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.record_count} "
            f"partitionLeaderEpoch: {b.epoch} magic: {b.magic} compresscodec: "
            f"{b.compression.upper()} crcValid: {str(b.crc_ok).lower()} isControl: "
            f"{str(b.is_control).lower()} position: {b.position} size: {b.size}"
        )
        key = b.base_offset if b.magic == 2 else b.last_offset
        members = by_batch.get(key, []) or [
            r for r in res.records if b.base_offset <= r.offset <= b.last_offset
        ]
        for r in members:
            k = r.key.decode(errors="replace") if r.key is not None else "null"
            v = r.value.decode(errors="replace") if r.value is not None else "null"
            lines.append(
                f"| offset: {r.offset} CreateTime: {r.timestamp} keysize: "
                f"{len(r.key) if r.key is not None else -1} valuesize: "
                f"{len(r.value) if r.value is not None else -1} key: {k} payload: {v}"
            )
    lines.append(
        f"records: {len(res.records)}  valid bytes: {res.valid_bytes}/{res.file_bytes}  "
        f"torn tail: {str(res.torn_tail).lower()}  crc errors: {res.crc_errors}"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hwchaos dump", description=__doc__)
    p.add_argument("path", help="a partition dir (topic-0) or a .log segment")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    target = Path(args.path)
    if not target.exists():
        print(f"hwchaos dump: {target}: no such file or directory", file=sys.stderr)
        return 2
    segs = _segments(target)
    if not segs:
        print(f"hwchaos dump: {target}: no .log segments (not a partition dir)", file=sys.stderr)
        return 2
    try:
        results = [read_segment(s) for s in segs]
    except (UnsupportedCodec, ValueError) as exc:
        print(f"hwchaos dump: {exc}", file=sys.stderr)
        return 2
    pdir = target if target.is_dir() else target.parent
    checkpoints: dict[str, Any] = {}
    lec = pdir / "leader-epoch-checkpoint"
    if lec.exists():
        checkpoints["leader-epoch-checkpoint"] = read_leader_epoch_checkpoint(lec)
    for name in CHECKPOINTS:
        f = pdir.parent / name
        if f.exists():
            try:
                checkpoints[name] = {
                    f"{t}-{part}": o for (t, part), o in read_offset_checkpoint(f).items()
                }
            except ValueError as exc:  # show a damaged checkpoint, do not hide the log
                checkpoints[name] = f"unreadable: {exc}"
    if args.json:
        print(
            json.dumps(
                {
                    "segments": [
                        {
                            "path": str(r.path),
                            "records": [
                                {
                                    "offset": x.offset,
                                    "epoch": x.epoch,
                                    "magic": x.magic,
                                    "record": x.record_id,
                                    "compression": x.compression,
                                }
                                for x in r.records
                            ],
                            "torn_tail": r.torn_tail,
                            "valid_bytes": r.valid_bytes,
                            "crc_errors": r.crc_errors,
                        }
                        for r in results
                    ],
                    "checkpoints": checkpoints,
                },
                indent=2,
            )
        )
        return 0
    for r in results:
        print("\n".join(_text(r)))
    for name, value in checkpoints.items():
        print(f"{name}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
