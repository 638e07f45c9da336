"""What both analysis engines share: where the inputs are and what the outputs look like.

Inputs (layout of :mod:`harness.results`): run metadata from every ``run.json`` under the
folder, or from a ``runs.parquet`` at its root (bulk writers such as the synthetic
generator put many runs per cell folder and list them there); ``replicas.parquet`` and
``writes.parquet`` from every cell folder.

Outputs, one row per group, the same columns and order from Spark and from pandas:

``by_config``     per (version, protocol, acks, min_insync, unclean, rf)
``by_scenario``   per (scenario, version)
``loss_causes``   per (scenario, version, protocol, source, lost_step, lost_event)
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

CONFIG_KEYS = ["version", "protocol", "acks", "min_insync", "unclean", "rf"]
SCENARIO_KEYS = ["scenario", "version"]
CAUSE_KEYS = ["scenario", "version", "protocol", "source", "lost_step", "lost_event"]
MEASURES = [
    "runs",
    "runs_played",  # broker runs that reached a verdict (observed rows exist)
    "acked_lost_predicted_played",  # predicted losses of those runs: compare with observed
    "writes_acked_predicted",
    "acked_lost_predicted",
    "writes_acked_observed",
    "acked_lost_observed",
    "divergent_offsets_predicted",
    "divergent_offsets_observed",
    "model_mismatches",
]
RUN_COLUMNS = ["run_id", "scenario", *CONFIG_KEYS]


def load_runs(root: Path) -> pd.DataFrame:
    """Run metadata as a small DataFrame with :data:`RUN_COLUMNS`."""
    bulk = root / "runs.parquet"
    if bulk.is_file():
        df = pd.read_parquet(bulk)
    else:
        rows = [json.loads(p.read_text()) for p in sorted(root.rglob("run.json"))]
        df = pd.DataFrame(rows)
    if df.empty:
        raise FileNotFoundError(f"{root}: no runs (no run.json and no runs.parquet)")
    df = df[RUN_COLUMNS].copy()
    df["acks"] = df["acks"].astype(str)
    df["min_insync"] = df["min_insync"].astype("int64")
    df["rf"] = df["rf"].astype("int64")
    df["unclean"] = df["unclean"].astype(bool)
    return df


def table_files(root: Path, name: str) -> list[str]:
    return sorted(str(p) for p in root.glob(f"**/{name}.parquet") if "analysis" not in p.parts)


def normalise(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Same dtypes and row order from both engines, so results compare exactly."""
    out = df.copy()
    for c in out.columns:
        if c in MEASURES or c in ("lost_writes", "lost_step", "min_insync", "rf"):
            out[c] = out[c].fillna(0).astype("int64")
        elif c == "unclean":
            out[c] = out[c].astype(bool)
        else:
            out[c] = out[c].astype(str)
    return out.sort_values(keys).reset_index(drop=True)[list(df.columns)]
