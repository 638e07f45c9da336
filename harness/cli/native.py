"""``hwchaos native build|status``: the mypyc-compiled reference model (``harness.native``).

``build`` compiles the model's current sources into the user cache (or says it is already
there); ``status`` says which build ``hwchaos explore`` would use, or why it would run the
pure model. Both exit 0 when a build for the current sources exists afterwards, else 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from harness import native


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the ``hwchaos`` parser or a parser of its own."""
    sub = p.add_subparsers(dest="action", required=True)
    sub.add_parser("build", help="compile the current model sources (reused when up to date)")
    sub.add_parser("status", help="the build explore would use, or why there is none")


def run(args: argparse.Namespace) -> int:
    if args.action == "status":
        build, line = native.status()
        print(line)
        return 0 if build is not None else 1

    def say(line: str) -> None:
        print(f"hwchaos native: {line}", file=sys.stderr, flush=True)

    existing = native.current()
    if existing is not None:
        print(f"up to date: build {existing.short} in {existing.path}")
        return 0
    t0 = time.perf_counter()
    try:
        build = native.build(say=say)
    except native.NativeError as exc:
        print(f"hwchaos native: {exc}; the explorer runs the pure model", file=sys.stderr)
        return 1
    print(f"built {build.short} in {time.perf_counter() - t0:.1f} s: {build.path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="hwchaos native",
        description="Compile the reference model with mypyc for a faster explorer "
        "(same source; `hwchaos explore --pure` forces the pure model).",
    )
    add_arguments(p)
    return run(p.parse_args(argv))
