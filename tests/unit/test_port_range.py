"""Ports of a job's own (HWCHAOS_PORT_RANGE, set per ``matrix --jobs`` slot): handed out only
from the range, never twice, never one that is taken, and a bad range is one clear line."""

from __future__ import annotations

import socket

import pytest

from harness.db.runtime import ports


def test_ports_come_from_the_range_and_skip_a_taken_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "_HANDED_OUT", set())
    monkeypatch.setattr(ports, "_NEXT", [])
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        taken = busy.getsockname()[1]
        monkeypatch.setenv("HWCHAOS_PORT_RANGE", f"{taken}-{taken + 3}")
        got = [ports.free_port() for _ in range(3)]
    assert taken not in got
    assert all(taken < p <= taken + 3 for p in got) and len(set(got)) == 3
    assert ports.free_port() == taken  # released now: the range's last port left
    with pytest.raises(RuntimeError, match="no free port left"):
        ports.free_port()


def test_without_a_range_the_kernel_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HWCHAOS_PORT_RANGE", raising=False)
    assert ports.port_range() is None
    assert 1024 <= ports.free_port() <= 65535


@pytest.mark.parametrize("bad", ["21000", "x-y", "30000-20000", "80-90"])
def test_a_bad_range_is_one_line(bad: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HWCHAOS_PORT_RANGE", bad)
    with pytest.raises(ValueError, match="HWCHAOS_PORT_RANGE") as err:
        ports.port_range()
    assert "\n" not in str(err.value)
