"""The class-data archive of a release tree (harness.db.runtime.cds): built from the class list a
SIGKILLed JVM left, then really mapped by the next JVM; a torn one is never passed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness.db import BrokerUnavailable
from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.versions import resolve_version
from harness.db.runtime.cds import TreeArchive
from harness.db.runtime.local import HEAP, classpath

VERSION = "3.3.1"


@pytest.fixture
def tree() -> Path:
    if shutil.which("java") is None:
        pytest.skip("no java on PATH")
    try:
        return find_tree(resolve_version(VERSION))
    except BrokerUnavailable as exc:
        pytest.skip(f"needs the Kafka {VERSION} release tree: {exc}")


def _wait_for(check: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def test_archive_built_from_a_killed_jvm_is_mapped_by_the_next(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HWCHAOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HWCHAOS_BROKER_CDS", raising=False)
    version = resolve_version(VERSION)
    options = [*HEAP, *version.jvm_flags]
    cp = classpath(tree)
    cds = TreeArchive(cp, options)
    assert cds.archive() is None
    node = tmp_path / "zookeeper"
    node.mkdir()
    flags = cds.java_options(node, "org.apache.zookeeper.server.quorum.QuorumPeerMain")
    assert flags and flags[0].startswith("-XX:DumpLoadedClassList=")
    conf = node / "zk.properties"
    conf.write_text(f"dataDir={node / 'data'}\nclientPort=0\nadmin.enableServer=false\n")
    cmd = ["java", *options, *flags, "-cp", cp]
    proc = subprocess.Popen(
        [*cmd, "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(conf)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        listed = node / "classes-QuorumPeerMain.lst"
        # ZooKeeperServer is loaded once ZooKeeper serves: the list has grown past start-up
        assert _wait_for(
            lambda: listed.is_file()
            and "org/apache/zookeeper/server/ZooKeeperServer\n" in listed.read_text(),
            60,
        )
    finally:
        proc.send_signal(signal.SIGKILL)  # as the harness ends its JVMs: no exit hooks run
        proc.wait(30)
    built = cds.build([node])
    assert built is not None and built == TreeArchive(cp, options).archive()
    assert built.stat().st_size == int(built.stem.rsplit("-", 1)[1])

    # -Xshare:on makes a JVM fail when it cannot map the archive: this one maps it
    mapped = TreeArchive(cp, options).java_options(node, "x")
    assert f"-XX:SharedArchiveFile={built}" in mapped
    on = [f if f != "-Xshare:auto" else "-Xshare:on" for f in mapped]
    out = subprocess.run(
        ["java", *options, *on, "-Xlog:cds=info", "-cp", cp, "-version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr

    # a torn archive (size differs from its name) is removed, never handed to a JVM
    with built.open("r+b") as f:
        f.truncate(1000)
    assert TreeArchive(cp, options).archive() is None
    assert not built.exists()


def test_off_switch_and_other_options_get_no_archive(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HWCHAOS_CACHE", str(tmp_path / "cache"))
    cp = classpath(tree)
    a, b = TreeArchive(cp, ["-Xmx256m"]), TreeArchive(cp, ["-Xmx512m"])
    assert a.key != b.key  # an archive is only valid for the options it was dumped with
    monkeypatch.setenv("HWCHAOS_BROKER_CDS", "0")
    assert TreeArchive(cp, ["-Xmx256m"]).java_options(tmp_path, "kafka.Kafka") == []
    assert os.environ["HWCHAOS_BROKER_CDS"] == "0"
