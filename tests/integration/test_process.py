"""Children of the harness die with it, even when it is SIGKILLed (no finally, no atexit)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

from harness.db.runtime.process import alive, launcher_argv, pdeathsig_supported, spawn

pytestmark = pytest.mark.skipif(not pdeathsig_supported(), reason="PR_SET_PDEATHSIG is Linux-only")


def _wait_dead(pid: int, timeout: float) -> bool:
    @retry(
        stop=stop_after_delay(timeout),
        wait=wait_fixed(0.02),
        retry=retry_if_result(lambda a: a),
        reraise=True,
    )
    def poll() -> bool:
        return alive(pid)

    try:
        return not poll()
    except Exception:
        return False


def test_spawned_child_runs_the_command_under_its_own_pid(tmp_path: Path) -> None:
    out = (tmp_path / "out.log").open("wb")
    proc = spawn(["sh", "-c", "echo pid=$$; pwd"], stdout=out, cwd=tmp_path)
    assert proc.wait(timeout=30) == 0
    out.close()
    text = (tmp_path / "out.log").read_text().split()
    assert text == [f"pid={proc.pid}", str(tmp_path)]  # exec, not a child of a wrapper


def test_missing_command_is_one_line(tmp_path: Path) -> None:
    proc = spawn(["/nonexistent/java"], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    assert proc.wait(timeout=30) == 127
    assert out.strip().startswith("hwchaos launcher: cannot run /nonexistent/java:")
    assert len(out.strip().splitlines()) == 1


def test_child_dies_within_a_second_of_a_sigkilled_parent(tmp_path: Path) -> None:
    """A stand-in harness spawns two long-lived children, one stopped, and is SIGKILLed."""
    harness = textwrap.dedent(
        f"""
        import os, signal, sys, time
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from harness.db.runtime.process import spawn
        a = spawn(["sleep", "300"])
        b = spawn(["sleep", "300"])
        os.kill(b.pid, signal.SIGSTOP)  # a paused follower must die too
        print(a.pid, b.pid, flush=True)
        time.sleep(300)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", harness], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    pids = [int(p) for p in parent.stdout.readline().split()]
    try:
        assert len(pids) == 2 and all(alive(p) for p in pids)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        assert all(_wait_dead(p, 1.0) for p in pids), [p for p in pids if alive(p)]
    finally:
        for p in pids:
            if alive(p):
                os.killpg(p, signal.SIGKILL)


def test_launcher_refuses_to_start_an_orphan() -> None:
    """If the harness died between fork and prctl, the launcher exits instead of exec'ing."""
    argv = launcher_argv(["sleep", "300"], parent_pid=1)  # not our pid: as if reparented
    res = subprocess.run(argv, timeout=30)
    assert res.returncode == 137


@pytest.mark.broker
@pytest.mark.slow
def test_sigkilled_harness_mid_run_leaves_no_jvm_after_one_second() -> None:
    """Three ``hwchaos run``s on real brokers, each SIGKILLed at a random step."""
    from harness.db import BrokerUnavailable
    from harness.db.catalogue.dists import find_tree
    from harness.db.catalogue.versions import resolve_version

    try:
        find_tree(resolve_version("0.10.2.1"))
    except BrokerUnavailable as exc:
        pytest.skip(str(exc))
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_sigkill.py"
    args = ["--runs", "3", "--every", "1", "--versions", "0.10.2.1", "--json"]
    res = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert res.returncode == 0, summary
    assert summary["killed"] == 3 and summary["jvms_at_kill_min"] >= 3  # ZK, controller, A, B
    assert summary["killed_alive_after_1s"] == 0
    assert summary["kill_to_no_jvm_max_s"] <= 1.0


def _nice_of_threads(pid: int) -> list[int]:
    """The nice value of every thread of ``pid`` (field 19 of /proc/<pid>/task/<tid>/stat)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out.append(int((task / "stat").read_text().rsplit(")", 1)[1].split()[16]))
    return out


def test_renice_reaches_every_thread_and_the_children(tmp_path: Path) -> None:
    """A process with a second thread and a child: renice sets all three, where the pid
    alone would move only the main thread (Linux keeps a nice value per thread)."""
    from harness.db.runtime.process import renice

    script = textwrap.dedent(
        """
        import subprocess, sys, threading, time
        child = subprocess.Popen(["sleep", "60"])
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        print(child.pid, flush=True)
        sys.stdin.read()
        child.kill()
        """
    )
    # a session of its own, as spawn() gives every JVM: its own scheduler autogroup
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    group = Path(f"/proc/{proc.pid}/autogroup")
    try:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        assert len(_nice_of_threads(proc.pid)) >= 2
        mine = Path("/proc/self/autogroup").read_text() if group.exists() else ""
        set_ = renice(proc.pid, 7, group=7)
        assert set_ >= 3, set_
        assert set(_nice_of_threads(proc.pid)) == {7}
        assert _nice_of_threads(child) == [7]
        if group.exists():  # a kernel with autogroups: the JVM's own, not this test's
            assert group.read_text().split()[-1] == "7", group.read_text()
            assert Path("/proc/self/autogroup").read_text() == mine
        if os.geteuid() == 0:  # lowering a nice value needs CAP_SYS_NICE
            renice(proc.pid, 0, group=0)
            assert set(_nice_of_threads(proc.pid)) == {0}
            assert _nice_of_threads(child) == [0]
            if group.exists():
                assert group.read_text().split()[-1] == "0", group.read_text()
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
