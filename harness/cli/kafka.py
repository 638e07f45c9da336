"""``hwchaos kafka install VERSION`` / ``hwchaos kafka list``: Kafka release trees for --kafka.

``install`` downloads the official tarball into the user cache (``$HWCHAOS_KAFKA_CACHE``,
default ``~/.cache/hwchaos/kafka``), checks its pinned sha512 and, with gpg, its signature,
and unpacks it where ``--kafka`` finds it. ``list`` shows every catalogue version, where its
tree was found, whether its checksum is pinned and which Java it needs.
"""

from __future__ import annotations

import argparse
import sys

from harness.db import kafka_dists
from harness.db.catalogue.dists import (
    PINNED_SHA512,
    InstallError,
    cache_dir,
    install,
    java_major,
    java_need,
    mirror,
    tarball_name,
)
from harness.db.catalogue.versions import CATALOGUE


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the ``hwchaos`` parser or a parser of its own."""
    sub = p.add_subparsers(dest="action", required=True)
    i = sub.add_parser("install", help="download, verify and unpack a release into the cache")
    i.add_argument("versions", nargs="+", metavar="VERSION", help=", ".join(CATALOGUE))
    i.add_argument("--sha512", help="the tarball's sha512, for a release not pinned here")
    i.add_argument("--skip-signature", action="store_true", help="do not run gpg --verify")
    i.add_argument("--skip-java-check", action="store_true")
    i.add_argument("--force", action="store_true", help="reinstall over an installed tree")
    sub.add_parser("list", help="catalogue versions and where their trees are")


def run(args: argparse.Namespace) -> int:
    if args.action == "list":
        return _list()
    if args.sha512 and len(args.versions) > 1:
        print("hwchaos kafka: --sha512 applies to one VERSION at a time", file=sys.stderr)
        return 2
    for name in args.versions:
        try:
            done = install(
                name,
                sha512=args.sha512,
                check_signature=not args.skip_signature,
                java="skip" if args.skip_java_check else "detect",
                force=args.force,
            )
        except InstallError as exc:
            print(f"hwchaos kafka install: {exc}", file=sys.stderr)
            return 2
        if done.already:
            print(f"{done.version.name}: already installed at {done.tree}")
        else:
            print(
                f"{done.version.name}: installed {done.tree} (sha512 ok, signature "
                f"{done.signature})"
            )
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hwchaos kafka", description=__doc__)
    add_arguments(p)
    return run(p.parse_args(argv))


def _list() -> int:
    dists = kafka_dists()
    cache = cache_dir()
    java = java_major()
    print(f"HWCHAOS_KAFKA_DISTS: {dists or '(none)'}   cache: {cache}   mirror: {mirror()}")
    print(f"java on PATH: {java if java is not None else 'none'}")
    print(f"{'version':<16}{'release tree':<26}{'found in':<12}{'sha512':<9}{'java':<6}")
    for v in CATALOGUE.values():
        where = "-"
        for label, root in (("dists", dists), ("cache", cache)):
            if root is not None and (root / v.dist_name / "libs" / f"{v.dist_name}.jar").is_file():
                where = label
                break
        pinned = "pinned" if tarball_name(v) in PINNED_SHA512 else "-"
        need = java_need(v)
        ok = "" if java is not None and java >= need.broker else " (!)"
        print(f"{v.name:<16}{v.dist_name:<26}{where:<12}{pinned:<9}{need.broker}+{ok}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
