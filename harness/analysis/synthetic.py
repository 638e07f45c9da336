"""A synthetic results set in the results layout, for tests and the Spark benchmark.

Vectorised (numpy + pyarrow) so ten million replica rows take seconds. Bulk layout: run
metadata in ``DIR/runs.parquet``, rows in ``DIR/cells/chunk-NNNN/{replicas,writes}.parquet``
holding many runs each (a matrix of real runs has one run per cell and ``run.json`` files;
the readers accept both). Every run has predicted rows; ``observed_fraction`` of them also
have observed rows; a few runs get a divergent offset, a lost write or a model mismatch, at
rates the caller sets, so the expected totals are known.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SCENARIOS = [
    "kip101-scenario1",
    "kip101-scenario2",
    "kip279-fast-leader-change",
    "kip320-zombie-follower",
    "power-loss-all-replicas",
]
VERSIONS = [
    ("0.10.2.1", "hw"),
    ("2.1.1", "kip320"),
    ("3.3.1", "kip320"),
    ("model:kip101", "kip101"),
]


@dataclass(frozen=True)
class Spec:
    runs: int = 1000
    replicas: int = 3
    offsets: int = 20
    observed_fraction: float = 0.5
    divergence_rate: float = 0.05
    loss_rate: float = 0.05
    mismatch_rate: float = 0.02
    chunk_runs: int = 20_000
    seed: int = 7

    @property
    def replica_rows(self) -> int:
        per_run = self.replicas * self.offsets
        observed = int(self.runs * self.observed_fraction)
        return self.runs * per_run + observed * per_run


def _strings(prefix: str, values: np.ndarray) -> pa.Array:
    """``prefix + value`` strings built in Arrow through a dictionary (no Python loop)."""
    uniq, idx = np.unique(values, return_inverse=True)
    dictionary = pa.array([f"{prefix}{u}" for u in uniq.tolist()], pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int32)), dictionary).cast(
        pa.string()
    )


def generate(root: Path, spec: Spec) -> Spec:
    rng = np.random.default_rng(spec.seed)
    root.mkdir(parents=True, exist_ok=True)
    run_ids = np.arange(spec.runs)
    sc = rng.integers(0, len(SCENARIOS), spec.runs)
    ver = rng.integers(0, len(VERSIONS), spec.runs)
    observed = rng.random(spec.runs) < spec.observed_fraction
    diverges = rng.random(spec.runs) < spec.divergence_rate
    loses = rng.random(spec.runs) < spec.loss_rate
    mismatch = observed & (rng.random(spec.runs) < spec.mismatch_rate)
    runs = pa.table(
        {
            "run_id": _strings("run-", run_ids),
            "scenario": pa.array([SCENARIOS[i] for i in sc]),
            "version": pa.array([VERSIONS[i][0] for i in ver]),
            "protocol": pa.array([VERSIONS[i][1] for i in ver]),
            "acks": pa.array(rng.choice(["1", "all"], spec.runs)),
            "min_insync": pa.array(rng.integers(1, 3, spec.runs)),
            "unclean": pa.array(rng.random(spec.runs) < 0.5),
            "rf": pa.array(np.full(spec.runs, spec.replicas)),
        }
    )
    pq.write_table(runs, root / "runs.parquet")
    for c, start in enumerate(range(0, spec.runs, spec.chunk_runs)):
        ids = run_ids[start : start + spec.chunk_runs]
        _write_chunk(
            root / "cells" / f"chunk-{c:04d}",
            ids,
            spec,
            observed[ids],
            diverges[ids],
            loses[ids],
            mismatch[ids],
        )
    return spec


def _write_chunk(
    folder: Path,
    ids: np.ndarray,
    spec: Spec,
    observed: np.ndarray,
    diverges: np.ndarray,
    loses: np.ndarray,
    mismatch: np.ndarray,
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    r, n = spec.replicas, spec.offsets
    per_run = r * n
    frames = []
    for source, mask in (("predicted", np.ones(len(ids), bool)), ("observed", observed)):
        run = np.repeat(ids[mask], per_run)
        replica = np.tile(np.repeat(np.arange(r), n), mask.sum())
        offset = np.tile(np.arange(n), r * mask.sum())
        record = offset.copy()
        # divergence: the last replica holds another record at offset 1
        div = np.repeat(diverges[mask], per_run) & (replica == r - 1) & (offset == 1)
        record[div] = n + 1
        if source == "observed":  # a model mismatch: one more record differs on disk
            bad = np.repeat(mismatch[mask], per_run) & (replica == 0) & (offset == n - 1)
            record[bad] = n + 2
        frames.append((source, run, replica, offset, record))
    tables = []
    for source, run, replica, offset, record in frames:
        tables.append(
            pa.table(
                {
                    "run_id": _strings("run-", run),
                    "source": pa.array(np.full(len(run), source)),
                    "replica": _strings("", np.array(list("ABCDE"))[replica]),
                    "offset": pa.array(offset.astype(np.int64)),
                    "epoch": pa.array(np.zeros(len(run), np.int32)),
                    "record": _strings("m", record),
                }
            )
        )
    pq.write_table(pa.concat_tables(tables), folder / "replicas.parquet")
    w_run = np.repeat(ids, n)
    w_off = np.tile(np.arange(n), len(ids))
    lost = np.repeat(loses, n) & (w_off == n - 1)
    wt = []
    for source, mask in (("predicted", np.ones(len(ids), bool)), ("observed", observed)):
        keep = np.repeat(mask, n)
        wt.append(
            pa.table(
                {
                    "run_id": _strings("run-", w_run[keep]),
                    "source": pa.array(np.full(int(keep.sum()), source)),
                    "record": _strings("m", w_off[keep]),
                    "status": pa.array(np.full(int(keep.sum()), "acked")),
                    "offset": pa.array(w_off[keep].astype(np.int64)),
                    "acked": pa.array(np.ones(int(keep.sum()), bool)),
                    "lost": pa.array(lost[keep]),
                    "lost_step": pa.array(np.where(lost[keep], 7, -1).astype(np.int32)),
                    "lost_event": pa.array(np.where(lost[keep], "detect A", "")),
                }
            )
        )
    pq.write_table(pa.concat_tables(wt), folder / "writes.parquet")
