"""``hwchaos image``: build and list the docker backend's images (no registry needed).

    hwchaos image build --kafka 0.10.2.1 [--from-tree DIR] [--force]
    hwchaos image build --base [--force]
    hwchaos image ls

``build`` makes ``hwchaos/kafka:<release>`` FROM the base JRE image (built first if
missing): from ``--from-tree DIR`` when given, else as ``hwchaos run --backend docker`` does
(the official tarball where Apache answers and its sha512 is pinned, else the release tree
under HWCHAOS_KAFKA_DISTS). An image whose inputs did not change is not rebuilt.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness.db.catalogue.versions import CATALOGUE, resolve_version


def _say(msg: str) -> None:
    print(f"hwchaos image: {msg}", file=sys.stderr, flush=True)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the ``hwchaos`` parser or a parser of its own."""
    sub = p.add_subparsers(dest="action", required=True)
    b = sub.add_parser("build", help="build hwchaos/kafka:VERSION (and the base JRE image)")
    b.add_argument("--kafka", help=f"version: {', '.join(CATALOGUE)}")
    b.add_argument("--from-tree", type=Path, help="a Kafka release tree (bin, config, libs)")
    b.add_argument("--base", action="store_true", help="only the base JRE image")
    b.add_argument("--force", action="store_true", help="rebuild even if the inputs match")
    sub.add_parser("ls", help="list hwchaos images with their source and input hash")


def run(args: argparse.Namespace) -> int:
    from harness.db.runtime.daemon import docker_available

    reason = docker_available()
    if reason is not None:
        print(f"hwchaos image: {reason} (try `hwchaos docker up`)", file=sys.stderr)
        return 2
    from harness.db.runtime import images

    if args.action == "ls":
        return _ls()
    if not args.base and not args.kafka:
        print("hwchaos image build: give --kafka VERSION or --base", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        if args.base:
            images.ensure_base(_say, force=args.force)
            print(images.BASE_IMAGE)
            return 0
        try:
            version = resolve_version(args.kafka)
        except ValueError as exc:
            print(f"hwchaos image build: {exc}", file=sys.stderr)
            return 2
        if args.from_tree is not None:
            tree = args.from_tree.resolve()
            if not (tree / "libs").is_dir():
                print(f"hwchaos image build: {tree} is not a Kafka release tree (no libs/)",
                      file=sys.stderr)  # fmt: skip
                return 2
            tag = images.build_from_tree(version, tree, _say, force=args.force)
        else:
            tag = images.ensure_image(version, _say, force=args.force)
    except images.ImageMissing as exc:
        print(f"hwchaos image: {exc}", file=sys.stderr)
        return 2
    _say(f"{tag} ready ({time.perf_counter() - t0:.1f}s)")
    print(tag)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hwchaos image", description=__doc__.splitlines()[0])
    add_arguments(p)
    return run(p.parse_args(argv))


def _ls() -> int:
    import docker
    from harness.db.runtime.images import INPUTS_LABEL, SOURCE_LABEL

    client = docker.from_env()  # type: ignore[attr-defined]
    for img in client.images.list():
        tags = [t for t in img.tags if t.startswith("hwchaos/")]
        if not tags:
            continue
        labels = (img.attrs.get("Config") or {}).get("Labels") or {}
        size = img.attrs.get("Size", 0) / 1e6
        print(
            f"{', '.join(tags):<28} {labels.get(SOURCE_LABEL, '?'):<12} "
            f"{labels.get(INPUTS_LABEL, '')[:12]:<12} {size:6.0f} MB"
        )
    return 0
