"""``hwchaos doctor``: what this machine can run, and what to do about each missing piece.

One row per capability: Java, a release tree per catalogue version, the Docker daemon,
root and network namespaces (network partitions), Spark (analysis), gpg (signature checks
of ``hwchaos kafka install``) and chromium (report screenshots). Every check is real (it
runs ``java -version``, pings the daemon, creates and deletes a network namespace) and
bounded in time; ``--json`` prints the same rows as one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass

from harness.db import BrokerUnavailable, kafka_dists
from harness.db.catalogue.dists import cache_dir, java_major, java_need
from harness.db.catalogue.versions import CATALOGUE


@dataclass
class Check:
    name: str
    status: str  # ok | missing | warn
    detail: str
    fix: str = ""


def check_java() -> Check:
    major = java_major()
    if major is None:
        return Check(
            "java",
            "missing",
            "no java on PATH",
            "install a JRE 17 (apt-get install openjdk-17-jre-headless); brokers and Spark need it",
        )
    newest = max(java_need(v).broker for v in CATALOGUE.values())
    if major < newest:
        return Check(
            "java",
            "warn",
            f"Java {major}",
            f"Java {newest}+ is needed by the newest catalogue brokers; install JRE 17",
        )
    return Check("java", "ok", f"Java {major} ({shutil.which('java')})")


def check_trees() -> list[Check]:
    from harness.db.catalogue.dists import find_tree

    rows = []
    dists = kafka_dists()
    for v in CATALOGUE.values():
        try:
            tree = find_tree(v)
        except BrokerUnavailable as exc:
            rows.append(
                Check(
                    f"kafka {v.name}",
                    "missing",
                    "no release tree" if str(exc).startswith("no ") else str(exc),
                    f"hwchaos kafka install {v.release} (or put {v.dist_name}/ under "
                    f"HWCHAOS_KAFKA_DISTS)",
                )
            )
            continue
        where = "HWCHAOS_KAFKA_DISTS" if dists and tree.is_relative_to(dists) else "cache"
        rows.append(Check(f"kafka {v.name}", "ok", f"{tree} ({where})"))
    return rows


def check_docker() -> Check:
    from harness.db.runtime.docker import docker_available

    reason = docker_available()
    if reason is None:
        return Check("docker daemon", "ok", "answers (the docker backend can run)")
    fix = (
        "pip install '.[docker]'"
        if "not installed" in reason
        else "start it (dockerd >/var/log/dockerd.log 2>&1 &) or install docker.io"
    )
    return Check("docker daemon", "missing", reason, fix)


def check_netns() -> Check:
    """Network partitions need root and working ``ip netns``: create one and delete it."""
    if os.geteuid() != 0:
        return Check("root + netns", "missing", "not root", "run as root (network partitions only)")
    ip = shutil.which("ip")
    if ip is None:
        return Check("root + netns", "missing", "no `ip` command", "apt-get install iproute2")
    name = f"hwchaos-doctor-{os.getpid()}"
    try:
        res = subprocess.run([ip, "netns", "add", name], capture_output=True, text=True, timeout=10)
        if res.returncode != 0:
            first = (res.stderr.strip().splitlines() or ["failed"])[0]
            return Check(
                "root + netns",
                "missing",
                f"ip netns add: {first}",
                "run on a host (or a --privileged container) that allows network namespaces",
            )
        return Check("root + netns", "ok", "root; ip netns add/delete works")
    finally:
        with contextlib.suppress(Exception):
            subprocess.run([ip, "netns", "delete", name], capture_output=True, timeout=10)


def check_spark() -> Check:
    if importlib.util.find_spec("pyspark") is None:
        return Check("spark", "missing", "pyspark not importable", "pip install '.[spark]'")
    if java_major() is None:
        return Check("spark", "missing", "pyspark installed, no java", "install a JRE 17")
    import pyspark

    return Check("spark", "ok", f"pyspark {pyspark.__version__} + java")


def check_gpg() -> Check:
    gpg = shutil.which("gpg")
    if gpg is None:
        return Check(
            "gpg",
            "warn",
            "not installed: `hwchaos kafka install` checks only the pinned sha512",
            "apt-get install gnupg",
        )
    return Check("gpg", "ok", gpg)


def check_chromium() -> Check:
    for exe in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(exe)
        if path is not None:
            return Check("chromium", "ok", path)
    return Check(
        "chromium",
        "missing",
        "no chromium/chrome on PATH (report screenshots)",
        "apt-get install chromium",
    )


def run_checks() -> list[Check]:
    return [
        check_java(),
        *check_trees(),
        check_docker(),
        check_netns(),
        check_spark(),
        check_gpg(),
        check_chromium(),
    ]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the ``hwchaos`` parser or a parser of its own."""
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    rows = run_checks()
    if args.json:
        doc = {
            "checks": [asdict(r) for r in rows],
            "kafka_dists": str(kafka_dists() or ""),
            "kafka_cache": str(cache_dir()),
        }
        print(json.dumps(doc, indent=2))
        return 0
    w = max(len(r.name) for r in rows) + 2
    d = min(60, max(len(r.detail) for r in rows)) + 2
    print(f"{'check':<{w}}{'status':<9}{'detail':<{d}}what to do")
    for r in rows:
        detail = r.detail if len(r.detail) <= 60 else r.detail[:57] + "..."
        print(f"{r.name:<{w}}{r.status:<9}{detail:<{d}}{r.fix}".rstrip())
    missing = sum(r.status != "ok" for r in rows)
    print(f"\n{len(rows) - missing} of {len(rows)} ok", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hwchaos doctor", description=__doc__)
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
