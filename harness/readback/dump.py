"""``hwchaos dump DIR [--json]``: what a replica left on disk, printed like DumpLogSegments.

For looking at a broker's partition after a run without a JVM (and for brokers whose jars
are gone): every batch with its ``partitionLeaderEpoch``, every record, damage (torn tail,
CRC mismatches), then the checkpoints a restarting broker would read: the partition's
``leader-epoch-checkpoint`` and the log dir's HW / recovery-point / log-start checkpoints.

``DIR`` is a partition dir (``topic-0``) or one ``.log`` segment. Bad input is one line on
stderr and exit status 2. Runs as ``hwchaos dump`` and as ``python -m harness.readback.dump``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from harness.readback.checkpoints import (
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
)
from harness.readback.logformat import (
    BatchInfo,
    LogRecord,
    SegmentReadResult,
    UnsupportedCodec,
    read_segment,
    segment_base_offset,
)

PROG = "hwchaos dump"
LOG_DIR_CHECKPOINTS = (
    REPLICATION_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
)


class BadInput(Exception):
    """Input that is not a partition dir or segment: one line on stderr, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """argparse prints usage plus a message; the CLI contract is a single line."""
        raise BadInput(message)


def _segments(target: Path) -> list[Path]:
    if not target.exists():
        raise BadInput(f"{target}: no such file or directory")
    if target.is_file():
        if target.suffix != ".log":
            raise BadInput(f"{target}: not a .log segment")
        return [target]
    segs = [(b, p) for p in target.glob("*.log") if (b := segment_base_offset(p)) is not None]
    if not segs:
        raise BadInput(f"{target}: not a partition dir (no <base offset>.log segments)")
    return [p for _b, p in sorted(segs)]


def _partition_of(pdir: Path) -> tuple[str, int] | None:
    """(topic, partition) from a partition dir name such as ``chaos-1``."""
    topic, sep, number = pdir.name.rpartition("-")
    return (topic, int(number)) if sep and topic and number.isdigit() else None


def _checkpoints(pdir: Path) -> dict[str, Any]:
    """Checkpoints a broker restarting this partition would read; damage shown, not raised."""
    found: dict[str, Any] = {}
    lec = pdir / LEADER_EPOCH_CHECKPOINT
    if lec.is_file():
        try:
            found[LEADER_EPOCH_CHECKPOINT] = read_leader_epoch_checkpoint(lec)
        except ValueError as exc:
            found[LEADER_EPOCH_CHECKPOINT] = {"error": str(exc)}
    for name in LOG_DIR_CHECKPOINTS:
        path = pdir.parent / name
        if path.is_file():
            try:
                found[name] = {
                    f"{t}-{p}": o for (t, p), o in sorted(read_offset_checkpoint(path).items())
                }
            except ValueError as exc:
                found[name] = {"error": str(exc)}
    return found


def _text(b: bytes | None) -> str:
    return "null" if b is None else b.decode("utf-8", errors="replace")


def _size(b: bytes | None) -> int:
    return -1 if b is None else len(b)


def _grouped(res: SegmentReadResult) -> list[tuple[BatchInfo, list[LogRecord]]]:
    """Records under their batch: records come in batch order, control batches have none."""
    out: list[tuple[BatchInfo, list[LogRecord]]] = []
    i = 0
    recs = res.records
    for b in res.batches:
        members: list[LogRecord] = []
        while (
            not b.is_control
            and i < len(recs)
            and recs[i].batch_base_offset == b.base_offset
            and recs[i].offset <= b.last_offset
        ):
            members.append(recs[i])
            i += 1
        out.append((b, members))
    return out


def _batch_line(b: BatchInfo) -> str:
    return (
        f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.record_count} "
        f"partitionLeaderEpoch: {b.epoch} magic: {b.magic} compresscodec: {b.compression} "
        f"crcValid: {str(b.crc_ok).lower()} position: {b.position} size: {b.size} "
        f"producerId: {b.producer_id} isTransactional: {str(b.is_transactional).lower()} "
        f"isControl: {str(b.is_control).lower()}"
    )


def _record_line(r: LogRecord) -> str:
    stamp = f"CreateTime: {r.timestamp}" if r.magic > 0 else "NoTimestampType: -1"
    return (
        f"| offset: {r.offset} {stamp} keysize: {_size(r.key)} valuesize: {_size(r.value)} "
        f"key: {_text(r.key)} payload: {_text(r.value)}"
    )


def _checkpoint_line(name: str, value: Any, partition: tuple[str, int] | None) -> str:
    where = "partition dir" if name == LEADER_EPOCH_CHECKPOINT else "log dir"
    if isinstance(value, dict) and "error" in value:
        return f"{name} ({where}): unreadable: {value['error']}"
    if name == LEADER_EPOCH_CHECKPOINT:
        return f"{name} ({where}): " + (", ".join(f"{e} {o}" for e, o in value) or "empty")
    if partition is not None:
        key = f"{partition[0]}-{partition[1]}"
        own = f"{key} {value[key]}" if key in value else f"{key} not listed"
        return f"{name} ({where}): {own} ({len(value)} entries)"
    return f"{name} ({where}): " + (", ".join(f"{k} {o}" for k, o in value.items()) or "empty")


def _summary(results: list[SegmentReadResult]) -> dict[str, Any]:
    return {
        "records": sum(len(r.records) for r in results),
        "torn_tail": any(r.torn_tail for r in results),
        "crc_errors": sum(r.crc_errors for r in results),
        "errors": [e for r in results for e in r.errors],
    }


def _print_text(results: list[SegmentReadResult], checkpoints: dict[str, Any], pdir: Path) -> None:
    for res in results:
        print(f"Dumping {res.path}")
        print(f"Starting offset: {segment_base_offset(res.path) or 0}")
        for b, members in _grouped(res):
            print(_batch_line(b))
            for r in members:
                print(_record_line(r))
        for err in res.errors:
            print(f"damage: {err}")
    partition = _partition_of(pdir)
    for name, value in checkpoints.items():
        print(_checkpoint_line(name, value, partition))
    s = _summary(results)
    torn = [r for r in results if r.torn_tail]
    torn_text = "no"
    if torn:
        torn_text = "yes " + ", ".join(
            f"(valid bytes {r.valid_bytes} of {r.file_bytes} in {r.path.name})" for r in torn
        )
        if len(results) == 1:
            torn_text = f"yes (valid bytes {torn[0].valid_bytes} of {torn[0].file_bytes})"
    print(
        f"Summary: segments: {len(results)} records: {s['records']} torn tail: {torn_text} "
        f"crc errors: {s['crc_errors']} damaged batches: {len(s['errors']) - len(torn)}"
    )


def _json_doc(
    results: list[SegmentReadResult], checkpoints: dict[str, Any], target: Path
) -> dict[str, Any]:
    segments = []
    for res in results:
        batches = []
        for b, members in _grouped(res):
            batches.append(
                {
                    "base_offset": b.base_offset,
                    "last_offset": b.last_offset,
                    "count": b.record_count,
                    "partition_leader_epoch": b.epoch,
                    "magic": b.magic,
                    "compression": b.compression,
                    "crc_valid": b.crc_ok,
                    "position": b.position,
                    "size": b.size,
                    "producer_id": b.producer_id,
                    "is_transactional": b.is_transactional,
                    "is_control": b.is_control,
                    "records": [
                        {
                            "offset": r.offset,
                            "timestamp": r.timestamp,
                            "key": None if r.key is None else _text(r.key),
                            "value": None if r.value is None else _text(r.value),
                        }
                        for r in members
                    ],
                }
            )
        segments.append(
            {
                "path": str(res.path),
                "starting_offset": segment_base_offset(res.path) or 0,
                "file_bytes": res.file_bytes,
                "valid_bytes": res.valid_bytes,
                "torn_tail": res.torn_tail,
                "crc_errors": res.crc_errors,
                "errors": res.errors,
                "batches": batches,
            }
        )
    return {
        "path": str(target),
        "segments": segments,
        "checkpoints": checkpoints,
        "summary": _summary(results),
    }


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the ``hwchaos`` parser or a parser of its own."""
    p.add_argument("path", help="a partition dir (topic-0) or one .log segment")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    """Print the partition dir or segment ``args.path``; 0, or 2 on bad input (one line)."""
    target = Path(args.path)
    try:
        results = [read_segment(s) for s in _segments(target)]
    except (BadInput, UnsupportedCodec, OSError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    pdir = target if target.is_dir() else target.parent
    checkpoints = _checkpoints(pdir)
    try:
        if args.json:
            print(json.dumps(_json_doc(results, checkpoints, target), indent=2))
        else:
            _print_text(results, checkpoints, pdir)
        sys.stdout.flush()
    except BrokenPipeError:  # `hwchaos dump DIR | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``hwchaos dump`` on its own; returns the exit status (0, or 2)."""
    parser = _Parser(prog=PROG, description="Print a Kafka partition dir or segment.")
    add_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except BadInput as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
