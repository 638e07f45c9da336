"""Local backend pieces that need no Kafka: finding release trees, cleaning up leftovers."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from harness.db import BrokerUnavailable
from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.versions import resolve_version
from harness.db.runtime.local import kill_leftovers


def test_missing_release_tree_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(BrokerUnavailable) as err:
        find_tree(resolve_version("2.1.1"), tmp_path)
    assert str(err.value) == f"no kafka_2.11-2.1.1 under {tmp_path}"
    (tmp_path / "kafka_2.11-2.1.1" / "libs").mkdir(parents=True)
    with pytest.raises(
        BrokerUnavailable, match=r"lacks its core jar libs/kafka_2\.11-2\.1\.1\.jar"
    ):
        find_tree(resolve_version("2.1.1"), tmp_path)


def test_kill_leftovers_ends_processes_of_a_killed_harness(tmp_path: Path) -> None:
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    (tmp_path / "pids.json").write_text(json.dumps({"A": proc.pid}))
    assert kill_leftovers(tmp_path) == 1
    assert proc.wait(timeout=10) != 0
    assert not (tmp_path / "pids.json").exists()
    assert kill_leftovers(tmp_path) == 0


def test_free_port_never_hands_out_a_port_twice() -> None:
    """The ports of a cluster are chosen before anything binds them; the kernel may offer a
    just-released port again (a broker and ZooKeeper once got the same one)."""
    from harness.db.runtime.ports import free_port

    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
