"""A synthetic results set in the results layout, for the tests and the Spark benchmark.

Why synthetic: a broker matrix big enough to exercise Spark takes days to play, and the
tests need sets whose right answers are known. Runs here look like real ones (every replica
holds the same records except at a few divergent offsets, some acknowledged writes are
lost at a named step, played runs have observed rows that mostly match the prediction) and
:func:`generate` returns the totals the analysis must find.

Bulk layout (see :mod:`harness.analysis.common`): run metadata in ``DIR/runs.parquet``
(the :class:`harness.checker.results.RunInfo` columns that fit a table), rows in
``DIR/cells/chunk-NNNN/{replicas,writes}.parquet`` holding ``chunk_runs`` runs each, with the
:mod:`harness.checker.results` schemas. A folder per run would put a hundred thousand tiny files in
front of both engines and measure the file system, not the analysis.

Vectorised with numpy and pyarrow (strings built through dictionary arrays, never a Python
loop per row), so ten million replica rows take seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from harness.checker import results

SCENARIOS = [
    "kip101-scenario1",
    "kip101-scenario2",
    "kip279-fast-leader-change",
    "kip320-zombie-follower",
    "power-loss-all-replicas",
]
# (version, protocol generation, stores a leader epoch per batch on disk)
VERSIONS = [
    ("0.10.2.1", "hw", False),
    ("2.1.1", "kip320", True),
    ("3.3.1", "kip320", True),
    ("model:kip101", "kip101", True),
]
LOSS_EVENTS = [(4, "crash A"), (6, "restart B"), (7, "elect B")]
REPLICA_NAMES = np.array(["A", "B", "C", "D", "E"])


@dataclass(frozen=True)
class Spec:
    """How many runs, how long their logs are, and how often each anomaly occurs."""

    runs: int = 1000
    replicas: int = 3
    offsets: int = 20
    observed_fraction: float = 0.5
    divergence_rate: float = 0.05
    loss_rate: float = 0.05
    mismatch_rate: float = 0.02
    epoch_mismatch_rate: float = 0.02
    chunk_runs: int = 20_000
    seed: int = 7

    def __post_init__(self) -> None:
        # Divergence needs a second replica; the anomalies sit at offsets 0, 1 and last.
        if not 2 <= self.replicas <= len(REPLICA_NAMES) or self.offsets < 3:
            raise ValueError("replicas must be 2..5 and offsets >= 3")


@dataclass(frozen=True)
class Generated:
    """What was written: row counts and the totals a correct analysis reports."""

    spec: Spec
    replica_rows: int
    write_rows: int
    runs_played: int
    divergent_offsets_predicted: int
    divergent_offsets_observed: int
    acked_lost_predicted: int
    acked_lost_observed: int
    model_mismatches: int
    epoch_mismatches: int


def _strings(prefix: str, values: np.ndarray) -> pa.Array:
    """``prefix + value`` strings built in Arrow through a dictionary (no Python row loop)."""
    uniq, idx = np.unique(values, return_inverse=True)
    dictionary = pa.array([f"{prefix}{u}" for u in uniq.tolist()], pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int32)), dictionary).cast(
        pa.string()
    )


def generate(root: Path, spec: Spec) -> Generated:
    """Write ``spec.runs`` runs under ``root`` in the bulk layout; return the known totals."""
    rng = np.random.default_rng(spec.seed)
    root.mkdir(parents=True, exist_ok=True)
    n = spec.runs
    sc = rng.integers(0, len(SCENARIOS), n)
    ver = rng.integers(0, len(VERSIONS), n)
    model_only = np.array([VERSIONS[v][0].startswith("model") for v in ver])
    epochs_on_disk = np.array([VERSIONS[v][2] for v in ver])
    played = ~model_only & (rng.random(n) < spec.observed_fraction)
    diverges = rng.random(n) < spec.divergence_rate
    loses = rng.random(n) < spec.loss_rate
    mismatch = played & (rng.random(n) < spec.mismatch_rate)
    epoch_bad = played & epochs_on_disk & ~mismatch & (rng.random(n) < spec.epoch_mismatch_rate)
    cause = rng.integers(0, len(LOSS_EVENTS), n)
    acks = rng.choice(["1", "all"], n)
    verdict = np.where(mismatch, "model_mismatch", np.where(loses, "lost_acked", "match"))
    runs = pa.table(
        {
            "run_id": _strings("run-", np.arange(n)),
            "scenario": pa.array([SCENARIOS[i] for i in sc]),
            "version": pa.array([VERSIONS[i][0] for i in ver]),
            "protocol": pa.array([VERSIONS[i][1] for i in ver]),
            "backend": pa.array(np.where(model_only, "model", "local")),
            "acks": pa.array(acks),
            "min_insync": pa.array(rng.integers(1, 3, n)),
            "unclean": pa.array(rng.random(n) < 0.5),
            "rf": pa.array(np.full(n, spec.replicas)),
            "records": pa.array(np.ones(n, np.int64)),
            "verdict": pa.array(verdict),
            "model_match": pa.array(~mismatch),
        }
    )
    pq.write_table(runs, root / "runs.parquet")
    masks = {
        "played": played,
        "diverges": diverges,
        "loses": loses,
        "mismatch": mismatch,
        "epoch_bad": epoch_bad,
        "epochs_on_disk": epochs_on_disk,
        "cause": cause,
    }
    rep_rows = write_rows = 0
    for c, start in enumerate(range(0, n, spec.chunk_runs)):
        ids = np.arange(start, min(start + spec.chunk_runs, n))
        a, b = _write_chunk(
            root / "cells" / f"chunk-{c:04d}", ids, spec, {k: v[ids] for k, v in masks.items()}
        )
        rep_rows, write_rows = rep_rows + a, write_rows + b
    return Generated(
        spec=spec,
        replica_rows=rep_rows,
        write_rows=write_rows,
        runs_played=int(played.sum()),
        divergent_offsets_predicted=int(diverges.sum()),
        # a mismatching record on one replica also makes that offset divergent on disk
        divergent_offsets_observed=int((diverges & played).sum() + mismatch.sum()),
        acked_lost_predicted=int(loses.sum()),
        acked_lost_observed=int((loses & played).sum()),
        model_mismatches=int(mismatch.sum()),
        epoch_mismatches=int(epoch_bad.sum()),
    )


def _write_chunk(
    folder: Path, ids: np.ndarray, spec: Spec, m: dict[str, np.ndarray]
) -> tuple[int, int]:
    """One cell folder holding the runs ``ids``; returns (replica rows, write rows)."""
    folder.mkdir(parents=True, exist_ok=True)
    r, n = spec.replicas, spec.offsets
    per_run = r * n
    tables = []
    for source, mask in (("predicted", np.ones(len(ids), bool)), ("observed", m["played"])):
        k = int(mask.sum())
        run = np.repeat(ids[mask], per_run)
        replica = np.tile(np.repeat(np.arange(r), n), k)
        offset = np.tile(np.arange(n), r * k)
        record = offset.copy()
        # Leader epoch bumps every five offsets; formats before 0.11 store none (-1).
        on_disk = np.repeat(m["epochs_on_disk"][mask], per_run)
        epoch = np.where(on_disk, offset // 5, -1).astype(np.int32)
        # Divergence: the last replica holds another record at offset 1.
        div = np.repeat(m["diverges"][mask], per_run) & (replica == r - 1) & (offset == 1)
        record[div] = n + 1
        if source == "observed":
            # A model mismatch: one more record differs on disk than the model said.
            bad = np.repeat(m["mismatch"][mask], per_run) & (replica == 0) & (offset == n - 1)
            record[bad] = n + 2
            # An epoch mismatch: the right record under the next leader epoch.
            ebad = np.repeat(m["epoch_bad"][mask], per_run) & (replica == 0) & (offset == 0)
            epoch[ebad] += 1
        tables.append(
            pa.table(
                {
                    "run_id": _strings("run-", run),
                    "source": pa.array(np.full(len(run), source)),
                    "replica": _strings("", REPLICA_NAMES[replica]),
                    "offset": pa.array(offset.astype(np.int64)),
                    "epoch": pa.array(epoch),
                    "record": _strings("m", record),
                },
                schema=results.REPLICAS_SCHEMA,
            )
        )
    replicas = pa.concat_tables(tables)
    pq.write_table(replicas, folder / "replicas.parquet")

    w_off = np.tile(np.arange(n), len(ids))
    # The last write of a losing run is acknowledged and then lost at the run's cause step.
    lost = np.repeat(m["loses"], n) & (w_off == n - 1)
    step = np.array([s for s, _ in LOSS_EVENTS], np.int32)[np.repeat(m["cause"], n)]
    event = np.array([e for _, e in LOSS_EVENTS])[np.repeat(m["cause"], n)]
    wt = []
    for source, mask in (("predicted", np.ones(len(ids), bool)), ("observed", m["played"])):
        keep = np.repeat(mask, n)
        k = int(keep.sum())
        lk = lost[keep]
        predicted = source == "predicted"  # brokers do not say at which step a write went
        wt.append(
            pa.table(
                {
                    "run_id": _strings("run-", np.repeat(ids, n)[keep]),
                    "source": pa.array(np.full(k, source)),
                    "record": _strings("m", w_off[keep]),
                    "status": pa.array(np.full(k, "acked")),
                    "offset": pa.array(w_off[keep].astype(np.int64)),
                    "acked": pa.array(np.ones(k, bool)),
                    "lost": pa.array(lk),
                    "lost_step": pa.array(
                        np.where(lk & predicted, step[keep], -1).astype(np.int32)
                    ),
                    "lost_event": pa.array(np.where(lk & predicted, event[keep], "")),
                },
                schema=results.WRITES_SCHEMA,
            )
        )
    writes = pa.concat_tables(wt)
    pq.write_table(writes, folder / "writes.parquet")
    return replicas.num_rows, writes.num_rows
