"""Images for the docker backend, built here when no registry can give them.

Two layers, each labelled with a hash of its inputs (``hwchaos.inputs``) so it is rebuilt
only when an input changes:

- the base JRE image ``hwchaos/jre:17``: an official JRE image where a registry answers
  (``eclipse-temurin:17-jre``, retagged with our label), otherwise a minimal Debian root file
  system made by ``debootstrap --variant=minbase`` from the machine's own configured mirror
  with ``openjdk-17-jre-headless`` (plus iproute2, iptables, procps for poking at a broker by
  hand), imported with ``docker import``. About a minute on a 2-core machine.
- ``hwchaos/kafka:<release>``: FROM the base, the release tree (``bin``, ``config``, ``libs``)
  and ``docker/kafka-entrypoint.sh``. From the official tarball (``docker/Dockerfile.kafka``,
  sha512 pinned in ``docker/checksums.txt`` and GPG-checked) where archive.apache.org answers
  and the sha512 is pinned, else from the release tree on disk (``HWCHAOS_KAFKA_DISTS``).
  Inputs: tree file list + sizes + mtimes (or the pinned tarball sha512), the entrypoint,
  the Dockerfile text and the base image id.

Nothing here ever pulls a ``hwchaos/*`` tag: those exist in no registry. A missing image that
cannot be built raises :class:`ImageMissing` with one line naming the image and the command
that builds it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from harness import locks
from harness.db import BrokerUnavailable, kafka_dists
from harness.db.catalogue.versions import KafkaVersion

DOCKER_DIR = Path(__file__).resolve().parents[3] / "docker"  # harness/db/runtime/images.py
ENTRYPOINT = DOCKER_DIR / "kafka-entrypoint.sh"
KAFKA_HOME = "/opt/kafka"  # where the images hold the release (the Dockerfile's COPY)
CHECKSUMS = DOCKER_DIR / "checksums.txt"
BASE_IMAGE = "hwchaos/jre:17"
OFFICIAL_JRE = "eclipse-temurin:17-jre"
INPUTS_LABEL = "hwchaos.inputs"
SOURCE_LABEL = "hwchaos.source"
APACHE_ARCHIVE = "https://archive.apache.org/dist/kafka"
BASE_PACKAGES = ("openjdk-17-jre-headless", "iproute2", "iptables", "procps")
# What a broker needs from a release tree; site-docs and source jars stay out of the image.
TREE_PARTS = ("bin", "config", "libs")
_EXCLUDED = ("-sources.jar", "-javadoc.jar", "-scaladoc.jar", "-test-sources.jar")

TREE_DOCKERFILE = """\
# hwchaos/kafka from a release tree on disk (harness/db/images.py writes this file).
FROM {base}
COPY kafka /opt/kafka
COPY kafka-entrypoint.sh /usr/local/bin/kafka-entrypoint.sh
ENV KAFKA_HOME=/opt/kafka
VOLUME ["/data", "/logs"]
ENTRYPOINT ["/usr/local/bin/kafka-entrypoint.sh"]
LABEL {inputs_label}="{inputs}" {source_label}="tree"
"""

Say = Callable[[str], None]
LOCK_FILE = Path(tempfile.gettempdir()) / "hwchaos-images.lock"
_lock_depth = 0


@contextlib.contextmanager
def build_lock() -> Iterator[None]:
    """One image builder at a time on this machine (two test sessions, a run and a test...).

    Re-entrant within a process; the second process waits, then finds the image current.
    """
    global _lock_depth
    if _lock_depth:
        _lock_depth += 1
        try:
            yield
        finally:
            _lock_depth -= 1
        return
    with locks.exclusive(LOCK_FILE):
        _lock_depth = 1
        try:
            yield
        finally:
            _lock_depth = 0


class ImageMissing(BrokerUnavailable):
    """An image is absent and cannot be built here; the message is one line."""


F = TypeVar("F", bound=Callable[..., Any])


def _locked(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with build_lock():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _client(timeout: int = 900) -> Any:
    import docker

    return docker.from_env(timeout=timeout)  # type: ignore[attr-defined]


def _sha(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:32]


def image_label(client: Any, ref: str, label: str = INPUTS_LABEL) -> str | None:
    """The label of a local image, '' if unlabelled, None if the image is absent."""
    import docker.errors

    try:
        img = client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None
    labels = (img.attrs.get("Config") or {}).get("Labels") or {}
    return str(labels.get(label, ""))


def image_id(client: Any, ref: str) -> str | None:
    import docker.errors

    try:
        return str(client.images.get(ref).id)
    except docker.errors.ImageNotFound:
        return None


def image_file(client: Any, image: str, path: str) -> Path:
    """A file of ``image`` (``path`` inside it) copied to the host cache, so a machine with
    the image and no release tree still has what the harness reads on the host (the KRaft
    metadata-record schemas). Cached per image id; read from a created, never started
    container, which is removed."""
    ref = image_id(client, image)
    if ref is None:
        raise BrokerUnavailable(f"image {image} is not present")
    base = os.environ.get("HWCHAOS_CACHE") or str(Path.home() / ".cache" / "hwchaos")
    dest = Path(base).expanduser() / "image-files" / ref.split(":")[-1][:16] / Path(path).name
    if dest.is_file():
        return dest
    c = client.containers.create(image, command=["true"], network_disabled=True)
    try:
        stream, _ = c.get_archive(path)
        data = io.BytesIO(b"".join(stream))
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise BrokerUnavailable(f"{path} is not in image {image}: {first[:160]}") from None
    finally:
        with contextlib.suppress(Exception):
            c.remove(force=True)
    with tarfile.open(fileobj=data) as tar:
        member = tar.extractfile(Path(path).name)
        if member is None:
            raise BrokerUnavailable(f"{path} in image {image} is not a file")
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f"{dest.name}.{os.getpid()}.tmp")
        tmp.write_bytes(member.read())
        os.replace(tmp, dest)
    return dest


# --------------------------------------------------------------------------- base JRE image


def debian_mirror(apt: Path = Path("/etc/apt")) -> str:
    """The Debian mirror this machine's apt is configured with (deb822 or one-line format)."""
    files = [apt / "sources.list", *sorted((apt / "sources.list.d").glob("*"))]
    for f in files:
        if not f.is_file() or not f.name.endswith((".list", ".sources")):
            continue
        text = f.read_text(errors="replace")
        for m in re.finditer(r"^URIs:\s*(\S+)", text, re.M):
            if "security" not in m.group(1):
                return m.group(1)
        for m in re.finditer(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+\S+", text, re.M):
            if "security" not in m.group(1):
                return m.group(1)
    return "http://deb.debian.org/debian"


def debian_suite() -> str:
    """The host's Debian codename when it is Debian, else bookworm."""
    with contextlib.suppress(OSError):
        text = Path("/etc/os-release").read_text()
        if re.search(r"^ID=debian$", text, re.M):
            m = re.search(r"^VERSION_CODENAME=(\w+)", text, re.M)
            if m:
                return m.group(1)
    return "bookworm"


def base_inputs(mirror: str, suite: str) -> str:
    return _sha("debootstrap-minbase", suite, mirror, *BASE_PACKAGES)


def _registry_jre(client: Any, say: Say) -> bool:
    """Pull the official JRE image if a registry answers (bounded); True when present."""
    if image_id(client, OFFICIAL_JRE) is not None:
        return True
    try:
        repo, tag = OFFICIAL_JRE.split(":")
        _client(timeout=30).images.pull(repo, tag=tag)
    except Exception as exc:  # no registry: DNS failure, timeout, refused...
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        say(f"no registry answers for {OFFICIAL_JRE} ({first[:100]}); building the base locally")
        return False
    return True


@_locked
def ensure_base(say: Say, client: Any | None = None, force: bool = False) -> str:
    """The base JRE image (build it if missing or stale); returns its image id."""
    client = client or _client()
    current = image_label(client, BASE_IMAGE)
    source = image_label(client, BASE_IMAGE, SOURCE_LABEL)
    fresh = current == base_inputs(debian_mirror(), debian_suite()) or source == "registry"
    if current and fresh and not force:
        return str(image_id(client, BASE_IMAGE))
    if _registry_jre(client, say):
        t0 = time.perf_counter()
        src = image_id(client, OFFICIAL_JRE) or ""
        dockerfile = (
            f'FROM {OFFICIAL_JRE}\nLABEL {INPUTS_LABEL}="{src}" {SOURCE_LABEL}="registry"\n'
        )
        client.images.build(
            fileobj=io.BytesIO(dockerfile.encode()),
            tag=BASE_IMAGE,
            rm=True,
        )
        say(f"built {BASE_IMAGE} from {OFFICIAL_JRE} in {time.perf_counter() - t0:.0f}s")
        return str(image_id(client, BASE_IMAGE))
    return build_base_debootstrap(say, client)


def build_base_debootstrap(say: Say, client: Any | None = None) -> str:
    """debootstrap a minimal Debian with a headless JRE 17 and ``docker import`` it."""
    client = client or _client()
    if os.geteuid() != 0 or shutil.which("debootstrap") is None:
        if os.geteuid() == 0 and shutil.which("apt-get"):
            say("installing debootstrap through apt-get")
            _apt_install("debootstrap")
        else:
            raise ImageMissing(
                f"image {BASE_IMAGE} is missing and building it needs root and debootstrap "
                "(run `hwchaos image build --base` as root, or docker pull "
                f"{OFFICIAL_JRE} where a registry answers)"
            )
    mirror, suite = debian_mirror(), debian_suite()
    inputs = base_inputs(mirror, suite)
    say(
        f"building {BASE_IMAGE}: debootstrap --variant=minbase {suite} from {mirror} "
        f"+ {', '.join(BASE_PACKAGES)} (about a minute on an idle 2-core machine)"
    )
    t0 = time.perf_counter()
    root_parent = Path(tempfile.mkdtemp(prefix="hwchaos-rootfs-", dir="/var/tmp"))
    root = root_parent / "root"
    try:
        res = subprocess.run(
            [
                "nice",
                "-n",
                "10",
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(BASE_PACKAGES)}",
                suite,
                str(root),
                mirror,
            ],
            capture_output=True,
            text=True,
        )
        if res.returncode != 0:
            tail = (res.stdout + res.stderr).strip().splitlines()[-1:] or ["?"]
            raise ImageMissing(f"debootstrap of {BASE_IMAGE} failed: {tail[0][:200]}")
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc",
                     "usr/share/man", "usr/share/info"):  # fmt: skip
            p = root / junk
            if p.is_dir():
                for child in p.iterdir():
                    if child.is_dir() and not child.is_symlink():
                        shutil.rmtree(child, ignore_errors=True)
                    else:
                        child.unlink(missing_ok=True)
        previous = image_id(client, BASE_IMAGE)
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        assert tar.stdout is not None
        client.api.import_image(
            src=tar.stdout,
            repository=BASE_IMAGE.split(":")[0],
            tag=BASE_IMAGE.split(":")[1],
            changes=[
                f'LABEL {INPUTS_LABEL}="{inputs}" {SOURCE_LABEL}="debootstrap"',
                "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            ],
        )
        if tar.wait() != 0:
            raise ImageMissing(f"tar of the {BASE_IMAGE} root file system failed")
        _drop_replaced(client, previous, BASE_IMAGE)
    finally:
        shutil.rmtree(root_parent, ignore_errors=True)
    say(f"built {BASE_IMAGE} in {time.perf_counter() - t0:.0f}s")
    return str(image_id(client, BASE_IMAGE))


def _apt_install(*packages: str) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, capture_output=True)
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", *packages], check=True, env=env, capture_output=True
    )


# --------------------------------------------------------------------------- Kafka images


def kafka_image(version: KafkaVersion) -> str:
    return f"hwchaos/kafka:{version.release}"


def build_command(version: KafkaVersion) -> str:
    return f"hwchaos image build --kafka {version.name}"


def _tree_files(tree: Path) -> Iterator[Path]:
    for part in TREE_PARTS:
        base = tree / part
        if not base.exists():
            continue
        for p in sorted(base.rglob("*")):
            if p.is_file() and not p.name.endswith(_EXCLUDED):
                yield p


def tree_inputs(tree: Path, base_id: str) -> str:
    listing = "\n".join(
        f"{p.relative_to(tree)} {p.stat().st_size} {int(p.stat().st_mtime)}"
        for p in _tree_files(tree)
    )
    return _sha("tree", listing, ENTRYPOINT.read_bytes(), TREE_DOCKERFILE, base_id)


def pinned_sha512(version: KafkaVersion) -> str | None:
    """The sha512 pinned in docker/checksums.txt for this release's tarball, if any."""
    name = f"{version.dist_name}.tgz"
    for line in CHECKSUMS.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == name and re.fullmatch(r"[0-9a-f]{128}", parts[0]):
            return parts[0]
    return None


def tarball_inputs(sha512: str, base_id: str) -> str:
    return _sha(
        "tarball",
        sha512,
        ENTRYPOINT.read_bytes(),
        (DOCKER_DIR / "Dockerfile.kafka").read_bytes(),
        base_id,
    )


def apache_answers(timeout: float = 5.0) -> bool:
    """Whether archive.apache.org answers from here (bounded)."""
    try:
        req = urllib.request.Request(f"{APACHE_ARCHIVE}/KEYS", method="HEAD")
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return bool(resp.status == 200)
    except Exception:
        return False


def _tree_context(tree: Path, dockerfile: str) -> io.BytesIO:
    """The build context as an uncompressed tar: Dockerfile, entrypoint, kafka/<tree parts>."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        tar.add(str(ENTRYPOINT), arcname="kafka-entrypoint.sh")
        for p in _tree_files(tree):
            tar.add(str(p), arcname=f"kafka/{p.relative_to(tree)}", recursive=False)
    buf.seek(0)
    return buf


def _build(client: Any, tag: str, say: Say, **kwargs: Any) -> None:
    import docker.errors

    previous = image_id(client, tag)
    try:
        client.images.build(tag=tag, rm=True, forcerm=True, pull=False, **kwargs)
    except docker.errors.BuildError as exc:
        lines = [str(x.get("stream") or x.get("error") or "").strip() for x in exc.build_log]
        last = next((ln for ln in reversed(lines) if ln), str(exc))
        raise ImageMissing(f"building {tag} failed: {last[:200]}") from None
    _drop_replaced(client, previous, tag)


def _drop_replaced(client: Any, previous: str | None, tag: str) -> None:
    """Remove the image a rebuild replaced (now untagged), so rebuilds do not pile up."""
    if previous and previous != image_id(client, tag):
        with contextlib.suppress(Exception):  # still used by a container or a child image
            client.images.remove(previous)


@_locked
def build_from_tree(
    version: KafkaVersion, tree: Path, say: Say, client: Any | None = None, force: bool = False
) -> str:
    """Build ``hwchaos/kafka:<release>`` FROM the base with the release tree copied in."""
    client = client or _client()
    base_id = ensure_base(say, client)
    inputs = tree_inputs(tree, base_id)
    tag = kafka_image(version)
    if not force and image_label(client, tag) == inputs:
        return tag
    say(f"building {tag} from the release tree {tree}")
    t0 = time.perf_counter()
    dockerfile = TREE_DOCKERFILE.format(
        base=BASE_IMAGE, inputs_label=INPUTS_LABEL, inputs=inputs, source_label=SOURCE_LABEL
    )
    _build(
        client,
        tag,
        say,
        fileobj=_tree_context(tree, dockerfile),
        custom_context=True,
        nocache=force,  # a forced rebuild really rebuilds (no layer cache)
    )
    say(f"built {tag} in {time.perf_counter() - t0:.0f}s")
    return tag


@_locked
def build_from_tarball(
    version: KafkaVersion, say: Say, client: Any | None = None, force: bool = False
) -> str:
    """Build from the official tarball (pinned sha512 + GPG check in docker/Dockerfile.kafka)."""
    client = client or _client()
    sha = pinned_sha512(version)
    if sha is None:
        raise ImageMissing(
            f"no pinned sha512 for {version.dist_name}.tgz in {CHECKSUMS}; "
            f"build from a release tree: {build_command(version)} --from-tree DIR"
        )
    base_id = ensure_base(say, client)
    inputs = tarball_inputs(sha, base_id)
    tag = kafka_image(version)
    if not force and image_label(client, tag) == inputs:
        return tag
    say(f"building {tag} from the official tarball {version.dist_name}.tgz (sha512 + GPG)")
    t0 = time.perf_counter()
    _build(
        client,
        tag,
        say,
        path=str(DOCKER_DIR),
        dockerfile="Dockerfile.kafka",
        buildargs={
            "KAFKA_VERSION": version.release,
            "SCALA_VERSION": version.scala,
            "JAVA_IMAGE": BASE_IMAGE,
        },
        labels={INPUTS_LABEL: inputs, SOURCE_LABEL: "tarball"},
    )
    say(f"built {tag} in {time.perf_counter() - t0:.0f}s")
    return tag


def inputs_not_here(version: KafkaVersion, client: Any) -> str | None:
    """Why this machine cannot tell whether ``version``'s image is current (one line), or
    None when it can: the image was built from the pinned tarball, or the release tree it
    was built from is here to hash. Without either, :func:`ensure_image` uses the image as
    it is, which is right for running it, but nothing can say it is up to date."""
    tag = kafka_image(version)
    current = image_label(client, tag)
    if current is None:
        return f"no image {tag}"
    base_id = image_id(client, BASE_IMAGE) or ""
    sha = pinned_sha512(version)
    if sha is not None and current == tarball_inputs(sha, base_id):
        return None
    root = kafka_dists()
    if root is not None and (root / version.dist_name).is_dir():
        return None
    return (
        f"{tag} was built from a release tree and no {version.dist_name} is under "
        "HWCHAOS_KAFKA_DISTS to compare its inputs with"
    )


@_locked
def ensure_image(
    version: KafkaVersion,
    say: Say,
    build: bool = True,
    tree: Path | None = None,
    client: Any | None = None,
    force: bool = False,
) -> str:
    """The image to run ``version`` with: present and current, built if needed and allowed.

    An ``HWCHAOS_DOCKER_IMAGE_<version>`` override is used as is and must be present locally.
    Otherwise the image is rebuilt whenever its inputs changed: from the tarball when Apache
    answers and the sha512 is pinned, else from the release tree.
    """
    client = client or _client()
    env = "HWCHAOS_DOCKER_IMAGE_" + version.name.replace(".", "_").replace("-", "_")
    override = os.environ.get(env)
    if override:
        if image_id(client, override) is None:
            raise ImageMissing(f"image {override} (from {env}) is not present: docker pull it")
        return override
    tag = kafka_image(version)
    current = None if force else image_label(client, tag)
    if current and not build:
        return tag
    if tree is None:
        root = kafka_dists()
        candidate = root / version.dist_name if root else None
        tree = candidate if candidate is not None and candidate.is_dir() else None
    sha = pinned_sha512(version)
    if current and sha is not None:
        base_id = image_id(client, BASE_IMAGE) or ""
        if current == tarball_inputs(sha, base_id):
            return tag
    if current and tree is not None:
        base_id = image_id(client, BASE_IMAGE) or ""
        if current == tree_inputs(tree, base_id):
            return tag
    if not build:
        raise ImageMissing(f"image {tag} is missing; build it with: {build_command(version)}")
    if sha is not None and apache_answers():
        return build_from_tarball(version, say, client, force=force)
    if tree is not None:
        return build_from_tree(version, tree, say, client, force=force)
    if current:
        say(f"using {tag} as it is (its inputs are not on this machine to compare)")
        return tag
    raise ImageMissing(
        f"image {tag} is missing and nothing here builds it (no {version.dist_name} under "
        f"HWCHAOS_KAFKA_DISTS, archive.apache.org unreachable or no pinned sha512): "
        f"{build_command(version)} --from-tree DIR"
    )
