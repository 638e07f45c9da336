"""``matrix --jobs N``: broker cells played by N harness processes side by side.

Why processes, not threads: each cell is a whole harness run (cluster, playbook, faults),
written for one run per process: its JVMs are tied to the thread that spawned them
(``PR_SET_PDEATHSIG``), signals and Ctrl-C go to the process, and a run network registers
its namespaces per process. So the matrix starts one child per batch of cells, at most N at
a time (``python -m harness.cli.matrix_jobs [--warm ROOT] BACKEND CELL_DIR TARGET CELL_ID
...``), spawned from the matrix's main thread with :func:`harness.db.runtime.process.spawn`,
so a killed matrix takes its children (and theirs) with it.

Isolation: every job slot has a port range of its own (``HWCHAOS_PORT_RANGE``, below the
kernel's ephemeral ports; a slice of the matrix's own range when it was given one, as a
pytest-xdist worker is), so two clusters never choose the same port; run networks choose
disjoint subnets and namespace names across processes already (their registry and lock in
:mod:`harness.db.runtime.netns`); every run has its own folder. Each child writes its
progress to each cell's ``CELL_DIR/matrix.log`` (its stdout and stderr moved to the next
cell's file when that cell starts).

Warm clusters (issue 23): a child plays a *batch*, cells of one cluster configuration one
after another on a warm pool of its own (:class:`harness.generator.warm.WarmClusters`, its
clusters on its slot's ports, in the matrix's ``warm-clusters`` folder under work dirs named
by its pid), checked clean and reset between them as in a serial matrix; the pool closes
when the batch ends. The matrix cuts the batches (``harness.cli.matrix.job_batches``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from harness.db.runtime.ports import port_range, share
from harness.db.runtime.process import spawn
from reference_model.scenario import Scenario, to_document

PLAYED_AGAIN = "played-again"
"""``<out>/played-again/<cell>``: a cell's first run when the harness did not play a step
as scripted and played the cell once more in its folder (harness.trial.once_more_if_missed);
outside ``cells/``, so the results pipeline reads each cell once."""

PORT_BASE = 20000  # below the usual ephemeral range (32768-60999)
PORTS_PER_JOB = 400


def default_jobs() -> int:
    """What the cores allow: a run keeps about two cores busy while its cluster starts
    (three to five JVMs), so one job per two cores, at least one."""
    return max(1, (os.cpu_count() or 1) // 2)


def slot_ports(slot: int, jobs: int) -> tuple[int, int]:
    """The ports of job slot ``slot``: a slice of this process's own range when it has one
    (two matrices in two test workers must not both take 20000-20399), else 400 from 20000."""
    span = port_range()
    if span is not None:
        return share(slot, jobs, span)
    lo = PORT_BASE + slot * PORTS_PER_JOB
    return lo, lo + PORTS_PER_JOB - 1


Job = tuple[Scenario, str, Path, str]  # scenario, target, cell folder, cell id


def cell_command(
    batch: list[tuple[Path, str, str]], backend: str, warm_root: Path | None = None
) -> list[str]:
    """The child's command line: ``[--warm ROOT] BACKEND (CELL_DIR TARGET CELL_ID)...``."""
    cmd = [sys.executable, "-m", "harness.cli.matrix_jobs"]
    if warm_root is not None:
        cmd += ["--warm", str(warm_root)]
    cmd.append(backend)
    for folder, target, cell_id in batch:
        cmd += [str(folder), target, cell_id]
    return cmd


def _reached_verdict(folder: Path) -> bool:
    """The cell's run.json says it reached a verdict (harness.trial.CONCLUDED)."""
    import json

    from harness.trial import CONCLUDED

    try:
        return json.loads((folder / "run.json").read_text()).get("verdict") in CONCLUDED
    except (OSError, ValueError):
        return False


def run_parallel(
    batches: list[list[Job]],
    jobs: int,
    backend: str,
    done: Callable[[str, bool], None],
    warm_root: Path | None = None,
) -> int:
    """Play ``batches`` of cells with at most ``jobs`` children, one child per batch (its
    cells on one warm cluster when ``warm_root`` is given, else each on a fresh one);
    ``done(cell_id, ok)`` after each cell. Returns how many did not reach a verdict."""
    queue = list(batches)
    running: dict[int, tuple[subprocess.Popen[bytes], list[Job], int]] = {}  # pid -> ..., slot
    free_slots = list(range(jobs))
    failures = 0
    try:
        while queue or running:
            while queue and free_slots:
                batch = queue.pop(0)
                slot = free_slots.pop(0)
                for scenario, _target, folder, _cell_id in batch:
                    folder.mkdir(parents=True, exist_ok=True)
                    (folder / "scenario.yaml").write_text(
                        yaml.safe_dump(to_document(scenario), sort_keys=False)
                    )
                lo, hi = slot_ports(slot, jobs)
                env = {**os.environ, "HWCHAOS_PORT_RANGE": f"{lo}-{hi}"}
                cmd = cell_command([(f, t, i) for _s, t, f, i in batch], backend, warm_root)
                with (batch[0][2] / "matrix.log").open("ab") as log:
                    proc = spawn(
                        cmd,
                        stdout=log,
                        env=env,
                        new_session=False,  # Ctrl-C reaches the cells too: each stops its own
                    )
                running[proc.pid] = (proc, batch, slot)
            pid, status = os.wait()  # the next batch to finish, whichever it is
            if pid not in running:
                continue
            proc, batch, slot = running.pop(pid)
            proc.returncode = os.waitstatus_to_exitcode(status)
            free_slots.append(slot)
            for _scenario, _target, folder, cell_id in batch:
                ok = _reached_verdict(folder)
                failures += 0 if ok else 1
                done(cell_id, ok)
    finally:
        for proc, _batch, _slot in running.values():
            proc.kill()
            proc.wait()
    return failures


def _log_to(path: Path) -> None:
    """This process's stdout and stderr (and its children's, inherited) into ``path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
    finally:
        os.close(fd)


def main(argv: list[str] | None = None) -> int:
    """One batch in a child process: exit 0 when every cell reached a verdict, 1 otherwise."""
    import contextlib

    from harness.generator.scenarios import load_scenario
    from harness.generator.warm import WarmClusters
    from harness.trial import run_on_brokers

    args = list(argv if argv is not None else sys.argv[1:])
    warm_root = None
    if args[:1] == ["--warm"]:
        warm_root, args = Path(args[1]), args[2:]
    backend, rest = args[0], args[1:]
    failed = 0
    with contextlib.ExitStack() as stack:
        warm = None if warm_root is None else stack.enter_context(WarmClusters(warm_root))
        for i in range(0, len(rest) - 2, 3):  # (folder, target, cell id) triples
            folder, target, cell_id = Path(rest[i]), rest[i + 1], rest[i + 2]
            _log_to(folder / "matrix.log")
            scenario = load_scenario(folder / "scenario.yaml")
            if warm is not None and i + 3 >= len(rest):
                warm.last_run()  # the batch's last cell: its cluster is closed, not reset
            # cells live in <out>/cells/<cell>; a first run not played as scripted goes aside
            aside = folder.parent.parent / PLAYED_AGAIN
            ok = run_on_brokers(scenario, target, backend, folder, cell_id, warm=warm, aside=aside)
            failed += 0 if ok else 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
