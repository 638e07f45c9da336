"""The analysis in pandas: the reference the Spark job is checked against, and the fast
path for small result folders."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.analysis.common import (
    CAUSE_KEYS,
    CONFIG_KEYS,
    MEASURES,
    SCENARIO_KEYS,
    load_runs,
    normalise,
    table_files,
)


def _read(root: Path, name: str, columns: list[str]) -> pd.DataFrame:
    files = table_files(root, name)
    if not files:
        return pd.DataFrame(columns=columns)
    return pd.concat([pd.read_parquet(f, columns=columns) for f in files], ignore_index=True)


def per_run(replicas: pd.DataFrame, writes: pd.DataFrame) -> pd.DataFrame:
    """One row per run_id with every measure except ``runs``."""
    w = writes.assign(acked=writes["acked"].astype(bool), lost=writes["lost"].astype(bool))
    w = w.assign(lost=w["acked"] & w["lost"])
    grouped = w.groupby(["run_id", "source"]).agg(acked=("acked", "sum"), lost=("lost", "sum"))
    wagg = pd.DataFrame(grouped.unstack("source", fill_value=0))
    out = pd.DataFrame(
        index=pd.Index(sorted(set(writes["run_id"]) | set(replicas["run_id"])), name="run_id")
    )
    for src in ("predicted", "observed"):
        out[f"writes_acked_{src}"] = wagg.get(("acked", src), pd.Series(dtype="int64"))
        out[f"acked_lost_{src}"] = wagg.get(("lost", src), pd.Series(dtype="int64"))
    n = replicas.groupby(["run_id", "source", "offset"])["record"].nunique()
    div = n[n > 1].reset_index().groupby(["run_id", "source"]).size().unstack(fill_value=0)
    for src in ("predicted", "observed"):
        out[f"divergent_offsets_{src}"] = div[src] if src in div.columns else 0
    obs = replicas[replicas["source"] == "observed"]
    observed_runs = set(obs["run_id"])
    pred = replicas[(replicas["source"] == "predicted") & replicas["run_id"].isin(observed_runs)]
    keys = ["run_id", "replica", "offset"]
    j = pred[[*keys, "record"]].merge(
        obs[[*keys, "record"]], on=keys, how="outer", suffixes=("_p", "_o")
    )
    bad = j[j["record_p"].isna() | j["record_o"].isna() | (j["record_p"] != j["record_o"])]
    out["model_mismatches"] = out.index.isin(set(bad["run_id"])).astype("int64")
    played = observed_runs | set(writes.loc[writes["source"] == "observed", "run_id"])
    out["runs_played"] = out.index.isin(played).astype("int64")
    out["acked_lost_predicted_played"] = out["acked_lost_predicted"].fillna(0) * out["runs_played"]
    return out.fillna(0).astype("int64").reset_index()


def summarise(root: Path) -> dict[str, pd.DataFrame]:
    runs = load_runs(root)
    replicas = _read(root, "replicas", ["run_id", "source", "replica", "offset", "record"])
    writes = _read(
        root, "writes", ["run_id", "source", "record", "acked", "lost", "lost_step", "lost_event"]
    )
    metrics = runs.merge(per_run(replicas, writes), on="run_id", how="left").fillna(
        {m: 0 for m in MEASURES if m != "runs"}
    )
    metrics["runs"] = 1
    out = {}
    for name, keys in (("by_config", CONFIG_KEYS), ("by_scenario", SCENARIO_KEYS)):
        g = metrics.groupby(keys, as_index=False)[MEASURES].sum()
        out[name] = normalise(g[[*keys, *MEASURES]], keys)
    lost = writes[writes["acked"].astype(bool) & writes["lost"].astype(bool)]
    lost = lost.merge(runs[["run_id", "scenario", "version", "protocol"]], on="run_id")
    causes = lost.groupby(CAUSE_KEYS, as_index=False).size().rename(columns={"size": "lost_writes"})
    out["loss_causes"] = normalise(causes[[*CAUSE_KEYS, "lost_writes"]], CAUSE_KEYS)
    return out
