"""Child processes that die with the harness, even when the harness is SIGKILLed.

A JVM started by the harness (ZooKeeper, a broker) must not outlive it: a SIGKILLed harness
runs no ``finally``, no ``atexit``, and its children are reparented to init and keep their
ports and data dirs. Linux has the mechanism for this: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``
makes the kernel send SIGKILL to a process when its parent dies.

:func:`spawn` sets it without ``preexec_fn`` (which is unsafe in a process that already runs
threads, as the harness does: kazoo and librdkafka threads): the command is started through
a tiny launcher, ``python -I -S -c LAUNCHER <harness pid> cmd...``, that calls ``prctl``,
checks that its parent is still the harness (the harness may have died between fork and
prctl), then ``execvp``s the command. The death signal survives ``execve``, and the pid the
caller gets is the JVM's own pid, so signalling (SIGSTOP, SIGKILL) and waiting work as with
a direct ``Popen``.

Caveat, from ``prctl(2)``: the "parent" is the *thread* that forked the child. Spawn from a
thread that outlives the cluster (the main thread, as the CLI, the matrix and the pytest
plugin do), not from a short-lived worker thread, or the JVM dies with that thread.

The ``pids.json`` reaper (:func:`harness.db.runtime.local.kill_leftovers`) stays as a second line
for platforms without ``prctl`` (macOS) and for the docker backend's equivalent, labels.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

# prctl option number from <linux/prctl.h>; stable ABI.
PR_SET_PDEATHSIG = 1

# Runs in the child before exec: as small as possible (no site, no user env: -I -S).
LAUNCHER = (
    "import ctypes,os,signal,sys\n"
    "ppid,ready=int(sys.argv[1]),int(sys.argv[2])\n"
    "libc=ctypes.CDLL(None,use_errno=True)\n"
    f"if libc.prctl({PR_SET_PDEATHSIG},signal.SIGKILL,0,0,0)!=0:\n"
    "    sys.stderr.write('hwchaos launcher: prctl(PR_SET_PDEATHSIG) failed: '"
    "+os.strerror(ctypes.get_errno())+'\\n');os._exit(126)\n"
    "if os.getppid()!=ppid:\n"
    "    os._exit(137)\n"  # the harness died before prctl: do not start an orphan
    "if ready>=0:\n"
    "    os.set_inheritable(ready,False)\n"  # closed by exec: the harness sees EOF
    "try:\n"
    "    os.execvp(sys.argv[3],sys.argv[3:])\n"
    "except OSError as e:\n"
    "    sys.stderr.write('hwchaos launcher: cannot run '+sys.argv[3]+': '+str(e)+'\\n')\n"
    "    os._exit(127)\n"
)

# How long spawn waits for the launcher to reach exec (a Python start-up, ~30 ms).
LAUNCH_TIMEOUT = 60.0


def pdeathsig_supported() -> bool:
    """Whether :func:`spawn` can tie children to the harness (Linux) or only starts them."""
    return sys.platform.startswith("linux")


def launcher_argv(
    cmd: Sequence[str], parent_pid: int | None = None, ready_fd: int = -1
) -> list[str]:
    """The argv that runs ``cmd`` with PR_SET_PDEATHSIG=SIGKILL tied to ``parent_pid``.

    ``ready_fd`` (inherited by the launcher) is closed when ``cmd`` is exec'd, so the
    spawner knows the death signal is armed before it returns the pid.
    """
    if not pdeathsig_supported():
        return list(cmd)
    ppid = os.getpid() if parent_pid is None else parent_pid
    return [sys.executable, "-I", "-S", "-c", LAUNCHER, str(ppid), str(ready_fd), *cmd]


def spawn(
    cmd: Sequence[str],
    *,
    cwd: Path | str | None = None,
    stdout: IO[bytes] | int | None = None,
    stderr: IO[bytes] | int | None = subprocess.STDOUT,
    env: Mapping[str, str] | None = None,
    new_session: bool = True,
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` so that it is SIGKILLed when this process dies, however it dies.

    ``new_session`` puts the child in its own session and process group, so a Ctrl-C in
    the terminal reaches only the harness (which then stops the cluster in order) and
    ``os.killpg(pid, ...)`` reaches the child and anything it forked.
    """
    if not cmd:
        raise ValueError("spawn: empty command")
    if not pdeathsig_supported():
        return subprocess.Popen(
            list(cmd),
            cwd=cwd,
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            start_new_session=new_session,
        )
    ready_r, ready_w = os.pipe()
    try:
        proc = subprocess.Popen(
            launcher_argv(cmd, ready_fd=ready_w),
            cwd=cwd,
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            start_new_session=new_session,
            pass_fds=(ready_w,),
        )
        os.close(ready_w)
        ready_w = -1
        # EOF once the launcher exec'd the command (or exited): only then is the death
        # signal armed, and only then may the caller signal the pid (a SIGSTOP that lands
        # in the launcher before prctl would leave an orphan no death signal reaches).
        if not select.select([ready_r], [], [], LAUNCH_TIMEOUT)[0]:
            proc.kill()
            raise OSError(f"spawn: launcher for {cmd[0]} did not start in {LAUNCH_TIMEOUT}s")
        os.read(ready_r, 1)
    finally:
        os.close(ready_r)
        if ready_w >= 0:
            os.close(ready_w)
    return proc


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped counts as dead)."""
    stat = Path(f"/proc/{pid}/stat")
    if Path("/proc/self/stat").exists():
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def jvms_under(path: Path) -> list[int]:
    """Pids of live ``java`` processes whose command line names ``path`` (a run folder).

    Every JVM hwchaos starts has its log dir (under the run folder) on its command line, so
    this finds them without a pid file: what "nothing left behind" is checked with.
    """
    needle = str(path).encode()
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv0, _, rest = (d / "cmdline").read_bytes().partition(b"\0")
        except OSError:
            continue
        if argv0.endswith(b"java") and needle in rest and alive(int(d.name)):
            pids.append(int(d.name))
    return pids


def stopped(pid: int) -> bool:
    """Whether every thread of ``pid`` is stopped (SIGSTOP took hold), or the process is gone.

    ``kill(pid, SIGSTOP)`` returns once the signal is queued; each of a JVM's threads stops
    when the kernel next interrupts it, which on a loaded machine can be after a request
    sent just then was answered (seen on 0.10.2.1: an ApiVersions right after the signal).
    """
    tasks = Path(f"/proc/{pid}/task")
    try:
        threads = list(tasks.iterdir())
    except OSError:
        return not alive(pid)
    for t in threads:
        try:
            state = (t / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # the thread exited
        if state not in ("T", "t", "Z", "X"):
            return False
    return True


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants, from ``/proc/<pid>/task/*/children`` (a launcher that
    exec'd keeps its pid; ``ip netns exec`` or ``nsenter`` may leave one parent)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue
    return out


def renice(pid: int, value: int, group: int | None = None) -> int:
    """Set the nice value of every thread of ``pid`` and its descendants, and (``group``)
    of their scheduler autogroups; returns how many threads were set.

    Linux keeps a nice value per thread (``setpriority(2)``, BUGS), so the process id alone
    would move only the JVM's main thread. And where ``kernel.sched_autogroup_enabled`` is
    1 (this machine, most desktops), every session is an autogroup that gets its equal
    share of the CPU whatever its threads' nice values: each JVM is a session of its own
    (:func:`spawn`), so only ``/proc/<pid>/autogroup`` moves it against the others.

    Why: the warm pool starts a cluster in the background at a lower priority, so the run
    playing meanwhile keeps the CPU (harness.generator.warm); the run that takes the
    cluster puts its JVMs back first."""
    n = 0
    for p in _tree(pid):
        if group is not None:
            with contextlib.suppress(OSError):
                Path(f"/proc/{p}/autogroup").write_text(str(group))
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                os.setpriority(os.PRIO_PROCESS, int(task.name), value)
                n += 1
            except (OSError, ValueError):
                continue
    return n
