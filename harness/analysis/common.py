"""What both analysis engines share: where the inputs are and what the outputs look like.

Why one module: the Spark job and its pandas twin must agree exactly (a test checks it), so
the inputs they read, the measures' names and the outputs' dtypes and row order are decided
here once rather than in each engine.

Inputs (layout of :mod:`harness.checker.results`), found by :func:`locate`:

* a single run folder (``DIR/run.json`` exists): that folder's tables;
* a matrix (``DIR/cells/<cell_id>/``): the tables of every folder holding a ``run.json``.
  A folder without one is an interrupted run (``run.json`` is the commit marker), so its
  possibly half-written Parquet is never read;
* a bulk set (``DIR/runs.parquet`` exists, as the synthetic generator writes): run
  metadata from that file, one row per run with the :class:`harness.checker.results.RunInfo`
  columns, and tables from every ``DIR/cells/*/<table>.parquet``, each holding many runs.
  This is the one addition to the layout, for data sets too large for a folder per run.

Only rows whose ``run_id`` has metadata are counted, whichever the layout.

Outputs, one row per group, the same columns, dtypes and order from Spark and from pandas:

``by_config``            per (version, protocol, acks, min_insync, unclean, rf)
``by_scenario_version``  per (scenario, version), for the heat map
``loss_causes``          per (scenario, version, protocol, source, lost_step, lost_event)

Measures (:data:`MEASURES`), summed over the runs of a group:

``runs``
    runs in the group.
``runs_played``
    runs with observed rows (played on brokers to a verdict); the others are model-only.
``writes_acked`` / ``acked_lost`` / ``divergent_offsets``
    the best evidence per run: observed figures for played runs, predicted for the rest.
``model_mismatches``
    played runs whose observed replica logs differ from the predicted ones: some (replica,
    offset) holds another record, or is present on one side only. Model-only runs have none.
``epoch_mismatches``
    played runs where a record is where the model put it but under another leader epoch
    (where both sides store an epoch, i.e. epoch >= 0). Kept apart from ``model_mismatches``
    as :mod:`harness.checker.diff` does: which epoch number a controller hands out after
    simultaneous failures is not something the model pins, records at offsets are.
``*_predicted`` / ``*_observed``
    the same per source: acknowledged writes (``writes_acked_``), those lost
    (``acked_lost_``) and offsets where two replicas of the run hold different records
    (``divergent_offsets_``), computed from ``replicas.parquet``, never from ``run.json``.
``acked_lost_predicted_played``
    the predicted losses of the played runs only: what ``acked_lost_observed`` should equal.

``loss_causes`` counts lost acknowledged writes (``writes.parquet`` rows with ``acked`` and
``lost``) per source as well: the model names the step that lost a write, brokers do not
(their rows carry step -1), and adding the two would count a write twice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

CONFIG_KEYS = ["version", "protocol", "acks", "min_insync", "unclean", "rf"]
SCENARIO_KEYS = ["scenario", "version"]
CAUSE_KEYS = ["scenario", "version", "protocol", "source", "lost_step", "lost_event"]
SOURCES = ("predicted", "observed")
MEASURES = [
    "runs",
    "runs_played",
    "writes_acked",
    "acked_lost",
    "divergent_offsets",
    "model_mismatches",
    "epoch_mismatches",
    "writes_acked_predicted",
    "writes_acked_observed",
    "acked_lost_predicted",
    "acked_lost_observed",
    "acked_lost_predicted_played",
    "divergent_offsets_predicted",
    "divergent_offsets_observed",
]
# Measures computed per run from the tables; the rest follow from these (see above).
_DERIVED = {
    "runs",
    "writes_acked",
    "acked_lost",
    "divergent_offsets",
    "acked_lost_predicted_played",
}
RUN_MEASURES = [m for m in MEASURES if m not in _DERIVED]
TABLE_NAMES = ("by_config", "by_scenario_version", "loss_causes")
TABLE_KEYS = {
    "by_config": CONFIG_KEYS,
    "by_scenario_version": SCENARIO_KEYS,
    "loss_causes": CAUSE_KEYS,
}
RUN_COLUMNS = ["run_id", "scenario", *CONFIG_KEYS, "backend", "records", "verdict", "model_match"]
REPLICA_COLUMNS = ["run_id", "source", "replica", "offset", "epoch", "record"]
WRITE_COLUMNS = ["run_id", "source", "acked", "lost", "lost_step", "lost_event"]
INT_COLUMNS = {*MEASURES, "lost_writes", "lost_step", "min_insync", "rf"}


class NoResults(FileNotFoundError):
    """``DIR`` is missing or holds no complete run: the CLI reports it in one line."""


def locate(root: Path) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """The run metadata of ``root`` and the Parquet files of each table, per the layout."""
    if not root.is_dir():
        raise NoResults(f"{root}: no such folder")
    if (root / "run.json").is_file():
        folders = [root]
        meta = [json.loads((root / "run.json").read_text())]
    elif (root / "runs.parquet").is_file():
        folders = sorted(p for p in (root / "cells").glob("*") if p.is_dir())
        meta = pd.read_parquet(root / "runs.parquet").to_dict("records")
    else:
        markers = sorted(root.glob("cells/*/run.json")) or sorted(root.rglob("run.json"))
        folders = [p.parent for p in markers]
        meta = [json.loads(p.read_text()) for p in markers]
    if not meta:
        raise NoResults(f"{root}: no runs (no run.json and no runs.parquet)")
    files = {
        name: [str(f / f"{name}.parquet") for f in folders if (f / f"{name}.parquet").is_file()]
        for name in ("replicas", "writes")
    }
    return _runs_frame(pd.DataFrame(meta)), files


def _runs_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Metadata with :data:`RUN_COLUMNS` and fixed dtypes; optional RunInfo fields filled."""
    defaults: dict[str, str | int | bool] = {
        "backend": "",
        "records": 1,
        "verdict": "",
        "model_match": True,
    }
    for col, value in defaults.items():
        if col not in df.columns:
            df[col] = value
    missing = [c for c in RUN_COLUMNS if c not in df.columns]
    if missing:
        raise NoResults(f"run metadata lacks columns {missing}")
    out = df[RUN_COLUMNS].drop_duplicates("run_id").reset_index(drop=True)
    for col in ("run_id", "scenario", "version", "protocol", "acks", "backend", "verdict"):
        out[col] = out[col].astype(str)
    for col in ("min_insync", "rf", "records"):
        out[col] = out[col].astype("int64")
    for col in ("unclean", "model_match"):
        out[col] = out[col].astype(bool)
    return out


def normalise(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Same dtypes and row order from both engines, so results compare exactly."""
    out = df.copy()
    for c in out.columns:
        if c in INT_COLUMNS:
            out[c] = out[c].fillna(0).astype("int64")
        elif c == "unclean":
            out[c] = out[c].astype(bool)
        else:
            out[c] = out[c].astype(str)
    return out.sort_values(keys, kind="mergesort").reset_index(drop=True)[list(df.columns)]


def write_tables(tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Each table as ``OUT/<name>.parquet`` and ``.csv``: small files any tool can open."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, df in tables.items():
        df.to_parquet(out / f"{name}.parquet", index=False)
        df.to_csv(out / f"{name}.csv", index=False)
        paths += [out / f"{name}.parquet", out / f"{name}.csv"]
    return paths
