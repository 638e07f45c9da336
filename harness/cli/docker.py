"""``hwchaos docker``: the Docker daemon and what hwchaos left on it.

hwchaos docker up       start a daemon if none answers (root on Debian: apt-get + dockerd)
hwchaos docker status   one line: the daemon, hwchaos containers and networks
hwchaos docker reap [--all]   remove containers/networks of dead runs (--all: of every run)
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the ``hwchaos`` parser or a parser of its own."""
    sub = p.add_subparsers(dest="action", required=True)
    sub.add_parser("up", help="start dockerd when no daemon answers (root, Debian-like)")
    sub.add_parser("status", help="daemon and hwchaos leftovers")
    r = sub.add_parser("reap", help="remove containers and networks of dead hwchaos runs")
    r.add_argument("--all", action="store_true", help="also those of live runs")


def run(args: argparse.Namespace) -> int:
    from harness.db.runtime.daemon import docker_available, ensure_daemon

    if args.action == "up":
        reason = ensure_daemon()
        if reason is not None:
            print(f"hwchaos docker: {reason}", file=sys.stderr)
            return 2
        print("hwchaos docker: a daemon answers", file=sys.stderr)
        return 0
    reason = docker_available()
    if reason is not None:
        print(f"hwchaos docker: {reason}", file=sys.stderr)
        return 2
    import docker
    from harness.db.runtime.reaper import RUN_LABEL, reap

    client = docker.from_env()  # type: ignore[attr-defined]
    if args.action == "reap":
        n_c, n_n = reap(client, only_orphans=not args.all)
        print(f"hwchaos docker: removed {n_c} containers and {n_n} networks", file=sys.stderr)
        return 0
    cs = client.api.containers(all=True, filters={"label": RUN_LABEL})
    ns = client.api.networks(filters={"label": RUN_LABEL})
    print(f"daemon {client.version().get('Version')}: {len(cs)} hwchaos containers, "
          f"{len(ns)} hwchaos networks")  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hwchaos docker", description=__doc__.splitlines()[0])
    add_arguments(p)
    return run(p.parse_args(argv))
