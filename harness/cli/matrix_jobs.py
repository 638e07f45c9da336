"""``matrix --jobs N``: broker cells played by N harness processes side by side.

Why processes, not threads: each cell is a whole harness run (cluster, playbook, faults),
written for one run per process: its JVMs are tied to the thread that spawned them
(``PR_SET_PDEATHSIG``), signals and Ctrl-C go to the process, and a run network registers
its namespaces per process. So the matrix starts one child per cell, at most N at a time:
``python -m harness.cli.matrix_jobs CELL_DIR TARGET BACKEND CELL_ID``, spawned from the
matrix's main thread with :func:`harness.db.runtime.process.spawn`, so a killed matrix takes
its children (and theirs) with it.

Isolation: every job slot has a port range of its own (``HWCHAOS_PORT_RANGE``, below the
kernel's ephemeral ports; a slice of the matrix's own range when it was given one, as a
pytest-xdist worker is), so two clusters never choose the same port; run networks choose
disjoint subnets and namespace names across processes already (their registry and lock in
:mod:`harness.db.runtime.netns`); every run has its own folder. Each child writes its
progress to ``CELL_DIR/matrix.log``.
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


def cell_command(folder: Path, target: str, backend: str, cell_id: str) -> list[str]:
    return [sys.executable, "-m", "harness.cli.matrix_jobs", str(folder), target, backend, cell_id]


def run_parallel(
    cells: list[tuple[Scenario, str, Path, str]],
    jobs: int,
    backend: str,
    done: Callable[[str, bool], None],
) -> int:
    """Play ``cells`` ((scenario, target, folder, cell id)) with at most ``jobs`` children;
    ``done(cell_id, ok)`` after each. Returns how many did not reach a verdict."""
    queue = list(cells)
    running: dict[int, tuple[subprocess.Popen[bytes], str, int]] = {}  # pid -> proc, id, slot
    free_slots = list(range(jobs))
    failures = 0
    try:
        while queue or running:
            while queue and free_slots:
                scenario, target, folder, cell_id = queue.pop(0)
                slot = free_slots.pop(0)
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "scenario.yaml").write_text(
                    yaml.safe_dump(to_document(scenario), sort_keys=False)
                )
                lo, hi = slot_ports(slot, jobs)
                env = {**os.environ, "HWCHAOS_PORT_RANGE": f"{lo}-{hi}"}
                with (folder / "matrix.log").open("ab") as log:
                    proc = spawn(
                        cell_command(folder, target, backend, cell_id),
                        stdout=log,
                        env=env,
                        new_session=False,  # Ctrl-C reaches the cells too: each stops its own
                    )
                running[proc.pid] = (proc, cell_id, slot)
            pid, status = os.wait()  # the next cell to finish, whichever it is
            if pid not in running:
                continue
            proc, cell_id, slot = running.pop(pid)
            proc.returncode = os.waitstatus_to_exitcode(status)
            free_slots.append(slot)
            ok = proc.returncode == 0
            failures += 0 if ok else 1
            done(cell_id, ok)
    finally:
        for proc, _cell, _slot in running.values():
            proc.kill()
            proc.wait()
    return failures


def main(argv: list[str] | None = None) -> int:
    """One cell in a child process: exit 0 when the run reached a verdict, 1 otherwise."""
    from harness.generator.scenarios import load_scenario
    from harness.trial import run_on_brokers

    folder, target, backend, cell_id = (argv if argv is not None else sys.argv[1:])[:4]
    scenario = load_scenario(Path(folder) / "scenario.yaml")
    return 0 if run_on_brokers(scenario, target, backend, Path(folder), cell_id) else 1


if __name__ == "__main__":
    sys.exit(main())
