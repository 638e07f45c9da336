"""The KRaft storage format kept as a template: ``kafka-storage format`` once per tree.

Why: formatting a node is a JVM (``kafka.tools.StorageTool``, seconds of CPU on a loaded
machine), once per node per run: three per run. What it writes is the same for every node
of a tree, role and feature set but for the ids in ``meta.properties`` (node, cluster,
directory); ``bootstrap.checkpoint`` (the metadata.version and feature records) is the
same. So the tool really runs for the first node of each (tree, role, features), its output
is kept in the cache (``${HWCHAOS_CACHE:-~/.cache/hwchaos}/kraft-format/<key>/``), and
every later node gets its ``bootstrap.checkpoint`` and a ``meta.properties`` with its own
ids. ``HWCHAOS_KRAFT_FORMAT_CACHE=0`` runs the tool for every node.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import threading
import uuid
from pathlib import Path

from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.versions import KafkaVersion


def random_cluster_id() -> str:
    """What ``kafka-storage random-uuid`` prints: a base64url UUID without padding.

    Like ``Uuid.randomUuid`` it never starts with ``-``, which the tool's argument parser
    would take for an option.
    """
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


FORMAT_FILES = ("meta.properties", "bootstrap.checkpoint")


def format_template(version: KafkaVersion, role: str, features: dict[str, int]) -> Path | None:
    """Where the storage tool's output for (tree, role, features) is kept; None: not kept
    (``HWCHAOS_KRAFT_FORMAT_CACHE=0``, or no usable cache folder)."""
    if os.environ.get("HWCHAOS_KRAFT_FORMAT_CACHE", "1").strip().lower() in ("0", "false", "no"):
        return None
    try:
        tree = find_tree(version)
        stamp = (tree / "libs" / f"{version.dist_name}.jar").stat().st_mtime_ns
    except Exception:  # no tree on this machine (docker backend from its image): no template
        return None
    text = "\n".join([str(tree), str(stamp), version.name, role, repr(sorted(features.items()))])
    base = os.environ.get("HWCHAOS_CACHE") or str(Path.home() / ".cache" / "hwchaos")
    return Path(base).expanduser() / "kraft-format" / hashlib.sha256(text.encode()).hexdigest()[:20]


def keep_format(data: Path, template: Path) -> None:
    """Keep what the storage tool wrote in ``data`` as ``template`` (atomic; best effort)."""
    if template.is_dir() or not all((data / f).is_file() for f in FORMAT_FILES):
        return
    tmp = template.with_name(f"{template.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        tmp.mkdir(parents=True, exist_ok=True)
        for f in FORMAT_FILES:
            shutil.copy2(data / f, tmp / f)
        os.rename(tmp, template)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


def copy_format(template: Path, data: Path, node_id: int, cluster_id: str) -> bool:
    """Format ``data`` from ``template``: its bootstrap.checkpoint, and its meta.properties
    with this node's id, this run's cluster id and a new directory id. False: no template."""
    try:
        lines = (template / "meta.properties").read_text().splitlines()
        shutil.copy2(template / "bootstrap.checkpoint", data / "bootstrap.checkpoint")
    except OSError:
        return False
    own = {"node.id": str(node_id), "cluster.id": cluster_id, "directory.id": random_cluster_id()}
    out = []
    for line in lines:
        key = line.split("=", 1)[0]
        out.append(f"{key}={own[key]}" if key in own and "=" in line else line)
    (data / "meta.properties").write_text("\n".join(out) + "\n")
    return True
