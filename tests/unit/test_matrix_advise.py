"""``hwchaos matrix`` (resumable) and ``hwchaos advise``."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

from harness.checker import results
from harness.cli.advise import main as advise_main
from harness.cli.matrix import main as matrix_main
from harness.generator.scenarios import catalogue

N_CELLS = len(catalogue()) * 4 * 8  # scenarios x generations x config grid
SMALL = ["--model-only", "--acks", "1,all", "--min-insync", "1,2", "--unclean", "false,true"]


def cell_dirs(out: Path) -> list[Path]:
    root = out / "cells"
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []


def test_matrix_model_only_writes_every_cell(tmp_path: Path) -> None:
    out = tmp_path / "m"
    assert matrix_main([*SMALL, "--out", str(out)]) == 0
    cells = cell_dirs(out)
    assert len(cells) == N_CELLS
    assert all(results.is_complete(c) for c in cells)
    runs = results.read_runs(out)
    assert len(runs) == len(cells) and runs["run_id"].is_unique
    s1 = runs[
        (runs.scenario == "kip101-scenario1")
        & (runs.acks == "1")
        & (runs.min_insync == 1)
        & runs.unclean.astype(bool)
    ]
    assert dict(zip(s1.protocol, s1.verdict, strict=True)) == {
        "hw": "lost_acked",
        "kip101": "ok",
        "kip279": "ok",
        "kip320": "ok",
    }
    writes = pq.read_table(
        s1.iloc[0:1].pipe(lambda d: out / "cells" / d.run_id.iloc[0]) / "writes.parquet"
    ).to_pandas()
    assert set(writes.columns) == set(results.WRITES_SCHEMA.names)


def test_matrix_interrupted_then_resumed_has_no_duplicate_or_missing_cell(
    tmp_path: Path,
) -> None:
    def interrupted(out: Path) -> set[str]:
        """Play the matrix into ``out`` and SIGINT it once 20 cells are complete (the matrix
        niced, stopped first so no cell completes between the look and the signal)."""
        cmd = [sys.executable, "-m", "harness.cli.matrix", *SMALL, "--out", str(out)]
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=lambda: os.nice(10),
        )

        @retry(
            stop=stop_after_delay(120),
            wait=wait_fixed(0.05),
            retry=retry_if_result(lambda n: n < 20),
        )
        def started() -> int:
            return sum(1 for c in cell_dirs(out) if results.is_complete(c))

        try:
            started()
            proc.send_signal(signal.SIGSTOP)
            proc.send_signal(signal.SIGINT)
            # Niced, it starves on a loaded machine (at nice 19 it took over 30 s to act on
            # the signal: config (a), 7 Dec, load ~5): its priority back before it runs
            # again (only where this process may raise it), and a bound on its exit.
            with contextlib.suppress(PermissionError):
                os.setpriority(os.PRIO_PROCESS, proc.pid, os.getpriority(os.PRIO_PROCESS, 0))
            proc.send_signal(signal.SIGCONT)
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        return {c.name for c in cell_dirs(out) if results.is_complete(c)}

    # Under parallel test workers the matrix has finished every cell before the poller
    # looked again; the experiment is repeated, bounded, until one interruption lands
    # mid-matrix. If none did, the state an interruption leaves is made by hand from the
    # last attempt (what resuming must cope with is the same): the later cells never
    # played (their folders gone) and one cell cut before its commit marker.
    for attempt in range(2):
        out = tmp_path / f"m{attempt}"
        done_before = interrupted(out)
        if len(done_before) < N_CELLS:
            break
    if len(done_before) == N_CELLS:
        for gone in cell_dirs(out)[N_CELLS // 2 :]:
            shutil.rmtree(gone)
        cut = cell_dirs(out)[-1]
        (cut / "run.json").unlink()
        done_before = {c.name for c in cell_dirs(out) if results.is_complete(c)}
    assert 20 <= len(done_before) < N_CELLS, "the interruption must land mid-matrix"
    # A half-written cell, as a crash mid-write would leave it, is played again.
    half = out / "cells" / "kip101-scenario1__model-hw__acks1_isr1_u0_rf2_n1"
    if half.name not in done_before:
        half.mkdir(parents=True, exist_ok=True)
        (half / "replicas.parquet").write_bytes(b"partial")
    mtimes = {n: (out / "cells" / n / "run.json").stat().st_mtime_ns for n in done_before}
    assert matrix_main([*SMALL, "--out", str(out)]) == 0
    cells = cell_dirs(out)
    assert len(cells) == N_CELLS and all(results.is_complete(c) for c in cells)
    assert results.read_runs(out)["run_id"].is_unique
    for n, t in mtimes.items():  # finished cells were not re-run
        assert (out / "cells" / n / "run.json").stat().st_mtime_ns == t


def test_matrix_rejects_unknown_generation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert matrix_main(["--model-only", "--protocols", "kip999", "--out", str(tmp_path)]) == 2
    assert "unknown protocol generation 'kip999'" in capsys.readouterr().err


def test_matrix_rejects_unknown_kafka_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert matrix_main(["--versions", "9.9.9", "--out", str(tmp_path)]) == 2
    assert "unknown Kafka version '9.9.9'" in capsys.readouterr().err


def test_advise_names_the_losing_orderings(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--acks", "all", "--min-insync", "2", "--rf", "3", "--explore", "0", "--json"]
    assert advise_main([*base, "--kafka", "3.3.1"]) == 0
    out = json.loads(capsys.readouterr().out)
    losing = {r["scenario"] for r in out["scenarios"] if r.get("loses_acked")}
    # Safe settings still lose writes to power loss everywhere; nothing else in the catalogue.
    assert losing == {
        "power-loss-all-replicas",
        "kip101-scenario2",
        "kip966-last-replica-standing",
    }
    # KIP-966 (ELR) closes the last-replica-standing loss; advise takes release numbers.
    assert advise_main([*base, "--kafka", "4.0.0-elr"]) == 0
    out = json.loads(capsys.readouterr().out)
    losing = {r["scenario"] for r in out["scenarios"] if r.get("loses_acked")}
    assert "kip966-last-replica-standing" not in losing
    assert "power-loss-all-replicas" in losing
    args = ["--acks", "1", "--min-insync", "1", "--rf", "2", "--unclean", "--kafka", "hw"]
    assert advise_main([*args, "--crashes", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    losing = {r["scenario"] for r in out["scenarios"] if r.get("loses_acked")}
    assert {"kip101-scenario1", "acks1-unclean-election", "jepsen-2013-isr-shrink"} <= losing
    assert out["explorer"], "the explorer must find a minimal losing ordering under hw"
