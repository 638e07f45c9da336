"""A container cluster start that fails from outside: one more try on fresh host ports.

A real daemon and the hwchaos images (0.10.2.1 in ZooKeeper mode, 4.0.0 in KRaft): a host
port the harness chose free is taken by another listener before Docker publishes it, and
the daemon refuses the container ("... address already in use"). As the local runtime does
for a JVM that exits during the start (``test_start_retry.py``), the start keeps that
attempt's node folders aside with the cause, and comes up on fresh ports; a second refusal
is the one-line error; nothing is left behind either way. Skips with the reason where no
daemon answers or the image cannot be had.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from harness.db import ClusterError
from harness.db.catalogue.versions import resolve_version
from harness.db.names import CONTROLLER
from harness.db.runtime import docker as docker_rt
from harness.db.runtime import images
from harness.db.runtime.daemon import docker_available
from harness.db.specs import PublishRefused
from tests.integration.test_docker_backend import _hwchaos_objects
from tests.integration.test_start_retry import _take
from tests.integration.test_start_retry import squatter as _squatter

squatter = _squatter  # the same fixture: a listener that takes a port


def _image(name: str) -> None:
    reason = docker_available()
    if reason is not None:
        pytest.skip(reason)
    try:
        images.ensure_image(resolve_version(name), lambda _m: None)
    except images.ImageMissing as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("name", ["0.10.2.1", "4.0.0"])
def test_a_host_port_taken_before_docker_publishes_it_is_retried_on_fresh_ports(
    name: str, tmp_path: Path, squatter: socket.socket
) -> None:
    _image(name)
    c = docker_rt.DockerCluster(resolve_version(name), ["A"], tmp_path / "run", "retry")
    taken = c.nodes[CONTROLLER].port
    _take(squatter, taken)
    try:
        c.start()
        assert c.nodes[CONTROLLER].port != taken
        assert c.is_running(CONTROLLER) and c.is_running("A")
        why = (tmp_path / "run" / "failed-start" / "why.txt").read_text().strip()
        assert "did not start" in why and "address already in use" in why, why
        assert c.failed_starts == (why,)
        assert (tmp_path / "run" / "failed-start" / CONTROLLER).is_dir()
    finally:
        c.close()
    assert _hwchaos_objects(c.run_id) == ([], [])


def test_a_second_refusal_is_the_one_line_error_and_nothing_is_left(
    tmp_path: Path, squatter: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    _image("0.10.2.1")
    c = docker_rt.DockerCluster(resolve_version("0.10.2.1"), ["A"], tmp_path / "run", "retry2")
    taken = c.nodes[CONTROLLER].port
    _take(squatter, taken)
    again = iter([s.port for s in c.nodes.values()])  # the retry gets the same ports
    monkeypatch.setattr(docker_rt, "free_port", lambda: next(again))
    with pytest.raises(PublishRefused) as err:
        c.start()
    message = str(err.value)
    assert isinstance(err.value, ClusterError) and "\n" not in message
    assert err.value.node == CONTROLLER and "did not start" in message, message
    assert _hwchaos_objects(c.run_id) == ([], [])
