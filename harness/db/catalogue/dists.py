"""Kafka release trees obtained by the tool: download, verify, unpack into a user cache.

``hwchaos kafka install VERSION`` fetches the official binary tarball
(``<mirror>/<release>/kafka_<scala>-<release>.tgz``), checks its sha512 against a value
pinned here (never against a checksum fetched from the same server), checks its GPG
signature against the mirror's ``KEYS`` when ``gpg`` is installed, and unpacks it into
``$HWCHAOS_KAFKA_CACHE`` (default ``~/.cache/hwchaos/kafka``), where
:func:`harness.db.runtime.local.find_tree` looks after ``$HWCHAOS_KAFKA_DISTS``.

Pinned values: the sha512 Apache publishes next to each tarball. Only the releases whose
value could be checked against a second source are pinned; for any other, pass the value
yourself (``--sha512``) after checking it against Apache's ``.sha512`` and ``.asc``.
Everything fails in one line: offline, wrong checksum, bad signature, a Java too old for
the release.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.db.catalogue.versions import CATALOGUE, KafkaVersion, resolve_version
from harness.db.specs import BrokerUnavailable, kafka_dists

DEFAULT_MIRROR = "https://archive.apache.org/dist/kafka"

# sha512 of official binary tarballs, as Apache publishes them in <tarball>.sha512 (the
# same values are pinned by Strimzi's kafka-versions.yaml, a second, independent source).
PINNED_SHA512: dict[str, str] = {
    "kafka_2.13-3.3.1.tgz": (
        "d14d9cc97d1702649b33378f38060c4a6220850a3d7182d1af20e905cb98728e"
        "51f2aeec63121f5773a389d6b66891b7508e5d23584dd1a4e424825e3d54e3e0"
    ),
    "kafka_2.13-4.0.0.tgz": (
        "00722ab0a6b954e0006994b8d589dcd8f26e1827c47f70b6e820fb45aa35945c"
        "19163b0f188caf0caf976c11f7ab005fd368c54e5851e899d2de687a804a5eb9"
    ),
}

DOWNLOAD_TIMEOUT = 60.0  # seconds without a byte before a download is abandoned


class InstallError(RuntimeError):
    """Installing a release failed; the message is one line saying what to do."""


def cache_dir() -> Path:
    """Where installed release trees live: $HWCHAOS_KAFKA_CACHE, else the user cache."""
    env = os.environ.get("HWCHAOS_KAFKA_CACHE")
    if env:
        return Path(env).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(base).expanduser() / "hwchaos" / "kafka").resolve()


def mirror() -> str:
    return os.environ.get("HWCHAOS_KAFKA_MIRROR", DEFAULT_MIRROR).rstrip("/")


def core_jar(version: KafkaVersion) -> str:
    """The jar every usable release tree has under libs/ (what find_tree checks)."""
    return f"{version.dist_name}.jar"


def tarball_name(version: KafkaVersion) -> str:
    return f"{version.dist_name}.tgz"


def tarball_url(version: KafkaVersion, base: str | None = None) -> str:
    return f"{base or mirror()}/{version.release}/{tarball_name(version)}"


# ---------------------------------------------------------------- Java


@dataclass(frozen=True)
class JavaNeed:
    broker: int  # minimum Java major version for brokers (and ZooKeeper)
    client: int  # minimum for the clients and tools in the tree


def java_need(version: KafkaVersion) -> JavaNeed:
    """Kafka 4.0 (KIP-750, KIP-1013): brokers need Java 17, clients 11; earlier: Java 8."""
    major = int(version.release.split(".")[0])
    return JavaNeed(17, 11) if major >= 4 else JavaNeed(8, 8)


def java_major(java: str = "java") -> int | None:
    """The major version of ``java`` on PATH (8 for 1.8.0_x), or None if there is none."""
    exe = shutil.which(java)
    if exe is None:
        return None
    try:
        res = subprocess.run([exe, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', res.stderr + res.stdout)
    if m is None:
        return None
    first = int(m.group(1))
    return int(m.group(2) or 0) if first == 1 else first


def check_java(version: KafkaVersion, found: int | None) -> None:
    """Refuse, in one line, a release this machine's Java cannot run as a broker."""
    need = java_need(version)
    if found is None:
        raise InstallError(
            f"Kafka {version.release} brokers need Java {need.broker}+ and there is no java on "
            f"PATH: install a JRE (e.g. apt-get install openjdk-17-jre-headless)"
        )
    if found < need.broker:
        raise InstallError(
            f"Kafka {version.release} brokers need Java {need.broker}+ (clients "
            f"{need.client}+), this machine has Java {found}: install a newer JRE or pass "
            f"--skip-java-check"
        )


# ---------------------------------------------------------------- download and verify


def _download(url: str, dest: Path) -> None:
    """Stream ``url`` into ``dest``; a network failure is one line naming the way out."""
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as resp, dest.open("wb") as f:
            shutil.copyfileobj(resp, f, 1 << 20)
    except urllib.error.HTTPError as exc:
        raise InstallError(f"cannot download {url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise InstallError(
            f"cannot download {url} ({reason}); offline? unpack release trees into a folder "
            f"and set HWCHAOS_KAFKA_DISTS to it (or HWCHAOS_KAFKA_MIRROR to a reachable mirror)"
        ) from None


def sha512_of(path: Path) -> str:
    h = hashlib.sha512()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def normalise_sha512(value: str) -> str:
    """Accept Apache's grouped upper-case form ('D14D9CC9 7D170264 ...') or plain hex."""
    hexed = re.sub(r"\s+", "", value).lower()
    if not re.fullmatch(r"[0-9a-f]{128}", hexed):
        raise InstallError(f"not a sha512 (128 hex digits): {value[:40]!r}")
    return hexed


def verify_signature(tarball: Path, asc: Path, keys: Path) -> None:
    """gpg --verify against a keyring made of ``keys`` only (a throwaway GNUPGHOME)."""
    gpg = shutil.which("gpg")
    if gpg is None:
        raise InstallError("gpg is not installed")
    with tempfile.TemporaryDirectory(prefix="hwchaos-gpg-") as home:
        env = {**os.environ, "GNUPGHOME": home}
        imp = subprocess.run(
            [gpg, "--batch", "--quiet", "--import", str(keys)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        if imp.returncode != 0:
            raise InstallError(f"cannot import {keys.name}: {_first_line(imp.stderr)}")
        res = subprocess.run(
            [gpg, "--batch", "--verify", str(asc), str(tarball)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        with contextlib.suppress(Exception):  # gpg-agent started for the throwaway home
            subprocess.run(["gpgconf", "--kill", "all"], env=env, capture_output=True, timeout=30)
    if res.returncode != 0:
        raise InstallError(
            f"bad GPG signature on {tarball.name}: {_first_line(res.stderr)}; not installed"
        )


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


# ---------------------------------------------------------------- unpack and install


def _unpack(tarball: Path, into: Path, top: str) -> Path:
    """Extract into ``into`` (a fresh dir on the cache's file system); no path escapes."""
    try:
        return _extract(tarball, into, top)
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise InstallError(f"cannot unpack {tarball.name}: {exc}; not installed") from None


def _extract(tarball: Path, into: Path, top: str) -> Path:
    with tarfile.open(tarball, "r:gz") as tar:
        names = tar.getnames()
        if not names or any(n.split("/")[0] != top for n in names):
            raise InstallError(f"{tarball.name} does not unpack to {top}/ as a release does")
        if hasattr(tarfile, "data_filter"):
            tar.extractall(into, filter="data")
        else:  # Python < 3.11.4: check by hand what the data filter would refuse
            for m in tar.getmembers():
                target = (into / m.name).resolve()
                if not target.is_relative_to(into.resolve()) or m.issym() or m.islnk():
                    raise InstallError(f"{tarball.name}: unsafe member {m.name}")
            tar.extractall(into)
    return into / top


@dataclass(frozen=True)
class Installed:
    version: KafkaVersion
    tree: Path
    sha512: str
    signature: str  # "verified", "skipped: <why>"
    already: bool = False


def install(
    name: str,
    *,
    sha512: str | None = None,
    base: str | None = None,
    cache: Path | None = None,
    check_signature: bool = True,
    java: int | Literal["detect", "skip"] | None = "detect",
    force: bool = False,
) -> Installed:
    """Download, verify and unpack one catalogue version into the cache; idempotent."""
    try:
        version = resolve_version(name)
    except ValueError as exc:
        raise InstallError(str(exc)) from None
    if java == "detect":
        check_java(version, java_major())
    elif java != "skip":
        check_java(version, java)
    root = cache or cache_dir()
    tree = root / version.dist_name
    if not force:
        for have in (kafka_dists(), root):
            found = have / version.dist_name if have is not None else None
            if found is not None and (found / "libs" / core_jar(version)).is_file():
                return Installed(version, found, "", "", already=True)
    fname = tarball_name(version)
    pinned = sha512 or PINNED_SHA512.get(fname)
    if pinned is None:
        raise InstallError(
            f"no pinned sha512 for {fname}: check {tarball_url(version, DEFAULT_MIRROR)}.sha512 "
            f"and its .asc signature, then pass --sha512 <128 hex digits>"
        )
    want = normalise_sha512(pinned)
    root.mkdir(parents=True, exist_ok=True)
    url = tarball_url(version, base)
    with tempfile.TemporaryDirectory(prefix=".install-", dir=root) as tmp:
        work = Path(tmp)
        tgz = work / fname
        _download(url, tgz)
        got = sha512_of(tgz)
        if got != want:
            raise InstallError(
                f"sha512 mismatch for {fname} from {url}: got {got[:16]}..., pinned "
                f"{want[:16]}...; not installed"
            )
        signature = "skipped: --skip-signature"
        if check_signature:
            if shutil.which("gpg") is None:
                signature = "skipped: gpg not installed"
            else:
                asc, keys = work / f"{fname}.asc", work / "KEYS"
                _download(f"{url}.asc", asc)
                _download(f"{(base or mirror())}/KEYS", keys)
                verify_signature(tgz, asc, keys)
                signature = "verified"
        unpacked = _unpack(tgz, work / "tree", version.dist_name)
        if not (unpacked / "libs" / f"{version.dist_name}.jar").is_file():
            raise InstallError(f"{fname} lacks libs/{version.dist_name}.jar; not installed")
        if tree.exists():
            shutil.rmtree(tree)
        unpacked.rename(tree)  # same file system: the tree appears whole or not at all
    return Installed(version, tree, want, signature)


def installed_trees(cache: Path | None = None) -> dict[str, Path]:
    """Catalogue versions whose release tree is in the cache."""
    root = cache or cache_dir()
    out = {}
    for v in CATALOGUE.values():
        tree = root / v.dist_name
        if (tree / "libs" / f"{v.dist_name}.jar").is_file():
            out[v.name] = tree
    return out


def find_tree(version: KafkaVersion, dists: Path | None = None) -> Path:
    """The release tree for ``version``, or BrokerUnavailable with a one-line reason.

    Looks in ``dists`` if given, else in $HWCHAOS_KAFKA_DISTS and then in the cache
    ``hwchaos kafka install`` fills. The path is absolute: JVMs run with another cwd.
    """
    roots = [dists] if dists is not None else [r for r in (kafka_dists(), cache_dir()) if r]
    roots = list(dict.fromkeys(r for r in roots if r.is_dir())) or roots[:1]
    if not roots:
        raise BrokerUnavailable(
            "no Kafka release trees: set HWCHAOS_KAFKA_DISTS (default /opt/kafka-dists) "
            "or run `hwchaos kafka install VERSION`"
        )
    for root in roots:
        tree = root / version.dist_name
        if tree.is_dir():
            break
    else:
        where = " or ".join(str(r) for r in roots)
        raise BrokerUnavailable(f"no {version.dist_name} under {where}")
    core = tree / "libs" / f"{version.dist_name}.jar"
    if not core.is_file():
        raise BrokerUnavailable(f"{tree} lacks its core jar libs/{core.name}")
    return tree.resolve()
