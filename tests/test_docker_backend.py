"""The docker backend's parts that run without a daemon; the rest share test_brokers.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from harness.db.containers import docker_available, image_for
from harness.db.versions import resolve_version

DOCKER = Path(__file__).resolve().parent.parent / "docker"


def fake_home(tmp: Path) -> Path:
    home = tmp / "kafka"
    (home / "libs").mkdir(parents=True)
    for jar in ("kafka_2.11-0.10.2.1.jar", "kafka_2.11-0.10.2.1-sources.jar", "zookeeper.jar"):
        (home / "libs" / jar).write_bytes(b"")
    return home


@pytest.mark.parametrize(
    ("role", "main"), [("broker", "kafka.Kafka"), ("zookeeper", "QuorumPeerMain")]
)
def test_entrypoint_builds_the_jvm_command(role: str, main: str, tmp_path: Path) -> None:
    home = fake_home(tmp_path)
    cfg = Path("/config/server.properties" if role == "broker" else "/config/zookeeper.properties")
    if not cfg.exists():
        # the script insists on its mounted config; give it one through a private root
        script = (DOCKER / "kafka-entrypoint.sh").read_text().replace("/config/", f"{tmp_path}/")
        (tmp_path / cfg.name).write_text("x=1\n")
        entry = tmp_path / "entry.sh"
        entry.write_text(script)
    else:
        entry = DOCKER / "kafka-entrypoint.sh"
    out = subprocess.run(
        ["sh", str(entry)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "KAFKA_HOME": str(home), "ROLE": role, "HWCHAOS_DRY_RUN": "1"},
    ).stdout
    assert main in out and "-Xmx256m" in out
    assert "sources.jar" not in out and "zookeeper.jar" in out
    assert "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED" in out  # Java 17 on this machine


def test_entrypoint_rejects_unknown_role(tmp_path: Path) -> None:
    res = subprocess.run(
        ["sh", str(DOCKER / "kafka-entrypoint.sh")],
        capture_output=True,
        text=True,
        env={**os.environ, "KAFKA_HOME": str(fake_home(tmp_path)), "ROLE": "client"},
    )
    assert res.returncode == 2 and "unknown ROLE 'client'" in res.stderr


def test_dockerfile_verifies_pinned_checksum_and_signature() -> None:
    text = (DOCKER / "Dockerfile.kafka").read_text()
    assert "sha512sum -c /tmp/pinned.sha512" in text
    assert 'gpg --batch --verify "${f}.asc" "${f}"' in text
    assert "no pinned sha512" in text


def test_daemon_probe_and_image_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    reason = docker_available()
    assert reason is None or ("\n" not in reason and reason)
    v = resolve_version("0.10.2.1")
    assert image_for(v) == "hwchaos/kafka:0.10.2.1"
    monkeypatch.setenv("HWCHAOS_DOCKER_IMAGE_0_10_2_1", "registry/kafka:old")
    assert image_for(v) == "registry/kafka:old"
