"""``hwchaos kafka install``: download, sha512, GPG signature, unpack, found by --kafka.

Real all the way except the tarball's content: a python http.server on 127.0.0.1 plays
the Apache mirror (HWCHAOS_KAFKA_MIRROR), serving a small release-shaped tree we build, its
detached signature made with a throwaway GPG key, and that key as ``KEYS``.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.db.catalogue.dists import (
    InstallError,
    check_java,
    find_tree,
    install,
    java_need,
    normalise_sha512,
)
from harness.db.catalogue.versions import resolve_version

VERSION = resolve_version("2.1.1")
DIST = VERSION.dist_name  # kafka_2.11-2.1.1


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No release tree from this machine (/opt/kafka-dists) and a cache of our own."""
    (tmp_path / "no-dists").mkdir()
    monkeypatch.setenv("HWCHAOS_KAFKA_DISTS", str(tmp_path / "no-dists"))
    monkeypatch.setenv("HWCHAOS_KAFKA_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An HTTP mirror on 127.0.0.1 serving ``tmp_path/mirror``; yields that folder."""
    root = tmp_path / "mirror"
    (root / VERSION.release).mkdir(parents=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("HWCHAOS_KAFKA_MIRROR", f"http://127.0.0.1:{server.server_address[1]}")
    try:
        yield root
    finally:
        server.shutdown()
        server.server_close()


def release_tarball(dest: Path, top: str = DIST, evil: bool = False) -> str:
    """A release-shaped .tgz (bin/, config/, libs/<dist>.jar); returns its sha512."""
    jar = io.BytesIO()
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("kafka/Kafka.class", b"\xca\xfe\xba\xbe not really")
    files = {
        f"{top}/bin/kafka-server-start.sh": b"#!/bin/sh\necho fake\n",
        f"{top}/config/log4j.properties": b"log4j.rootLogger=INFO\n",
        f"{top}/libs/{DIST}.jar": jar.getvalue(),
    }
    if evil:
        files[f"{top}/../../escaped.txt"] = b"outside"
    with tarfile.open(dest, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755 if "/bin/" in name else 0o644
            tar.addfile(info, io.BytesIO(data))
    return hashlib.sha512(dest.read_bytes()).hexdigest()


def gpg(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GNUPGHOME": str(home)}
    return subprocess.run(
        ["gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", "", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )


def sign(mirror: Path, tarball: Path, tmp: Path, name: str = "release") -> None:
    """Make a throwaway key, publish it as KEYS, and sign ``tarball`` with it."""
    home = tmp / f"gpg-{name}"
    home.mkdir(mode=0o700)
    gpg(home, "--quick-gen-key", f"hwchaos {name} <{name}@example.invalid>", "ed25519", "sign")
    keys = gpg(home, "--armor", "--export").stdout
    (mirror / "KEYS").write_text(keys)
    gpg(home, "--yes", "--armor", "--detach-sign", "--output", f"{tarball}.asc", str(tarball))
    subprocess.run(
        ["gpgconf", "--kill", "all"],
        env={**os.environ, "GNUPGHOME": str(home)},
        capture_output=True,
    )


needs_gpg = pytest.mark.skipif(shutil.which("gpg") is None, reason="gpg is not installed")


@needs_gpg
def test_install_verifies_unpacks_and_is_found_by_kafka(mirror: Path, tmp_path: Path) -> None:
    tgz = mirror / VERSION.release / f"{DIST}.tgz"
    digest = release_tarball(tgz)
    sign(mirror, tgz, tmp_path)
    done = install("2.1.1", sha512=digest.upper(), java=17)
    assert done.signature == "verified" and not done.already
    assert done.tree == tmp_path / "cache" / DIST
    assert find_tree(VERSION) == done.tree  # what --kafka 2.1.1 now runs
    assert (done.tree / "bin" / "kafka-server-start.sh").stat().st_mode & 0o111
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [DIST]  # no leftovers
    assert install("2.1.1", sha512=digest, java=17).already


def test_wrong_checksum_installs_nothing(mirror: Path, tmp_path: Path) -> None:
    tgz = mirror / VERSION.release / f"{DIST}.tgz"
    digest = release_tarball(tgz)
    wrong = ("0" if digest[0] != "0" else "1") + digest[1:]
    with pytest.raises(InstallError) as err:
        install("2.1.1", sha512=wrong, java=17, check_signature=False)
    msg = str(err.value)
    assert msg.startswith(f"sha512 mismatch for {DIST}.tgz from http://127.0.0.1:")
    assert f"got {digest[:16]}..., pinned {wrong[:16]}...; not installed" in msg
    assert "\n" not in msg
    assert list((tmp_path / "cache").iterdir()) == []  # the download went with the temp dir


@needs_gpg
def test_bad_signature_installs_nothing(mirror: Path, tmp_path: Path) -> None:
    tgz = mirror / VERSION.release / f"{DIST}.tgz"
    digest = release_tarball(tgz)
    sign(mirror, tgz, tmp_path, "release")
    keys = (mirror / "KEYS").read_text()
    sign(mirror, tgz, tmp_path, "impostor")  # signed by another key...
    (mirror / "KEYS").write_text(keys)  # ...than the one KEYS publishes
    with pytest.raises(InstallError, match=rf"^bad GPG signature on {DIST}\.tgz: .*not installed"):
        install("2.1.1", sha512=digest, java=17)
    assert list((tmp_path / "cache").iterdir()) == []


def test_tarball_escaping_its_folder_is_refused(mirror: Path, tmp_path: Path) -> None:
    tgz = mirror / VERSION.release / f"{DIST}.tgz"
    digest = release_tarball(tgz, evil=True)
    with pytest.raises(InstallError):
        install("2.1.1", sha512=digest, java=17, check_signature=False)
    assert not (tmp_path / "escaped.txt").exists()
    assert not (tmp_path / "cache" / DIST).exists()


def test_offline_is_one_line_pointing_at_dists(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on: connection refused, like offline
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(InstallError) as err:
        install(
            "2.1.1",
            sha512="a" * 128,
            base=f"http://127.0.0.1:{port}",
            cache=tmp_path / "cache",
            java=17,
        )
    msg = str(err.value)
    assert msg.startswith(f"cannot download http://127.0.0.1:{port}/2.1.1/{DIST}.tgz (")
    assert "set HWCHAOS_KAFKA_DISTS" in msg and "\n" not in msg


def test_unpinned_release_needs_an_explicit_sha512(tmp_path: Path) -> None:
    with pytest.raises(InstallError, match=r"^no pinned sha512 for kafka_2\.11-0\.10\.2\.1\.tgz"):
        install("0.10.2.1", cache=tmp_path, java=17)


def test_java_requirement_checked_up_front() -> None:
    four = replace(resolve_version("3.3.1"), name="4.0.0", release="4.0.0")  # a 4.x stand-in
    assert java_need(four).broker == 17 and java_need(four).client == 11
    assert java_need(resolve_version("0.10.2.1")).broker == 8
    with pytest.raises(InstallError, match=r"Kafka 4\.0\.0 brokers need Java 17\+ .* has Java 11"):
        check_java(four, 11)
    with pytest.raises(InstallError, match="no java on PATH"):
        check_java(four, None)
    check_java(four, 17)


def test_apache_grouped_checksum_form_is_accepted() -> None:
    grouped = " ".join(["D14D9CC9"] * 16)
    assert normalise_sha512(grouped) == "d14d9cc9" * 16
    with pytest.raises(InstallError, match="not a sha512"):
        normalise_sha512("abc")


def test_cli_install_and_list(mirror: Path, tmp_path: Path) -> None:
    tgz = mirror / VERSION.release / f"{DIST}.tgz"
    digest = release_tarball(tgz)
    env = dict(os.environ)
    cmd = [sys.executable, "-m", "harness.cli", "kafka"]
    res = subprocess.run(
        [*cmd, "install", "2.1.1", "--sha512", digest, "--skip-signature"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"2.1.1: installed {tmp_path / 'cache' / DIST} (sha512 ok")
    res = subprocess.run([*cmd, "list"], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    row = next(line for line in res.stdout.splitlines() if line.startswith("2.1.1 "))
    assert row.split()[:3] == ["2.1.1", DIST, "cache"]
    res = subprocess.run(
        [*cmd, "install", "9.9"], capture_output=True, text=True, env=env, timeout=120
    )
    assert res.returncode == 2
    assert res.stderr.startswith("hwchaos kafka install: unknown Kafka version '9.9'")
    assert len(res.stderr.strip().splitlines()) == 1
