"""Ports of a job's own (HWCHAOS_PORT_RANGE, set per ``matrix --jobs`` slot): handed out only
from the range, never twice, never one that is taken, and a bad range is one clear line."""

from __future__ import annotations

import itertools
import socket
from pathlib import Path

import pytest

from harness.db.runtime import ports


def _quiet_block(width: int) -> list[socket.socket]:
    """``width`` consecutive ports, each bound (held) here, outside the kernel's ephemeral
    range (above it, else below it) so that no other process's ``connect`` or ``bind(0)``
    lands in them while the test runs; a port bound from the ephemeral range had neighbours a
    parallel test's connections took."""
    span = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    low, high = (int(x) for x in span)
    top = 65535 if high < 65535 - width else low - 1
    base = high + 1 if high < 65535 - width else 1024
    for first in range(base, top - width, width):
        held: list[socket.socket] = []
        for port in range(first, first + width):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                s.close()
                break
            held.append(s)
        if len(held) == width:
            return held
        for s in held:
            s.close()
    raise RuntimeError(f"no {width} consecutive free ports outside the ephemeral range")


def test_ports_come_from_the_range_and_skip_a_taken_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "_HANDED_OUT", set())
    monkeypatch.setattr(ports, "_NEXT", [])
    busy, *rest = _quiet_block(4)
    with busy:
        taken = busy.getsockname()[1]
        for s in rest:
            s.close()
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


def test_slices_are_disjoint_and_cover_only_the_span() -> None:
    slices = [ports.share(i, 3, (22000, 32767)) for i in range(3)]
    assert slices[0][0] == 22000 and all(lo <= hi <= 32767 for lo, hi in slices)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(slices))
    with pytest.raises(ValueError, match="too few for 8 parallel jobs"):
        ports.share(0, 8, (21000, 21399))


def test_matrix_slots_slice_the_range_they_were_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """A matrix in a test worker (which has a range) keeps its jobs inside that range; two
    such matrices in two workers would otherwise both take 20000-20399."""
    from harness.cli.matrix_jobs import slot_ports

    monkeypatch.delenv("HWCHAOS_PORT_RANGE", raising=False)
    assert slot_ports(1, 2) == (20400, 20799)  # the documented default, unchanged
    monkeypatch.setenv("HWCHAOS_PORT_RANGE", "25000-25799")
    assert [slot_ports(s, 2) for s in range(2)] == [(25000, 25399), (25400, 25799)]


def test_each_xdist_worker_gets_its_own_slice() -> None:
    from harness.pytest_plugin.workers import worker_ports

    got = {worker_ports(f"gw{i}", 3, None) for i in range(3)}
    assert len(got) == 3 and all(22000 <= lo <= hi <= 32767 for lo, hi in got)
    assert worker_ports("gw3", 3, None) == worker_ports("gw0", 3, None)  # a replaced worker
    assert worker_ports("gw1", 2, (30000, 30999)) == (30500, 30999)


def test_cpu_heavy_files_are_one_xdist_work_unit() -> None:
    """The Spark files run on one worker, one after another, and so do the mypyc build's
    tests; a broker test is a unit of its own (any worker takes it)."""
    from tests.conftest import shared_unit

    assert shared_unit("tests/integration/test_analysis.py::test_x[files]") == "spark"
    assert shared_unit("tests/integration/test_spark_cds.py::test_w") == "spark"
    assert shared_unit("tests/integration/test_native.py::test_y") == "mypyc"
    assert shared_unit("tests/system/test_replay_brokers.py::test_r[4.0.0-s1]") == "replay"
    assert shared_unit("tests/system/test_brokers.py::test_z[local-0.10.2.1]") is None
