"""The analysis in pandas: the reference the Spark job is checked against, and the fast path
for result folders that fit in one process.

Why a twin: the Spark job's joins and groupings are easy to get subtly wrong (nulls in outer
joins, runs with no rows of one kind), and a second, independent formulation that must give
the same tables to the last integer is the cheapest check. Only the columns a measure needs
are read, and strings are factorised to integer codes before grouping, so ten million
replica rows fit in a few GiB.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from harness.analysis.common import (
    CAUSE_KEYS,
    CONFIG_KEYS,
    HW_STEP_KEYS,
    MEASURES,
    REPLICA_COLUMNS,
    RUN_MEASURES,
    SCENARIO_KEYS,
    SOURCES,
    WRITE_COLUMNS,
    hunt_files,
    hunt_frame,
    hw_step_table,
    locate,
    normalise,
    run_verdicts,
    write_tables,
)

_EMPTY = {
    "replicas": {"run_id": "str", "source": "str", "replica": "str", "offset": "int64",
                 "epoch": "int32", "record": "str"},
    "writes": {"run_id": "str", "source": "str", "acked": "bool", "lost": "bool",
               "lost_step": "int32", "lost_event": "str"},
}  # fmt: skip


def _read(files: list[str], columns: list[str], kind: str, run_ids: pd.Index) -> pd.DataFrame:
    """The given columns of every file, restricted to runs with metadata."""
    if not files:
        return pd.DataFrame({c: pd.Series(dtype=_EMPTY[kind][c]) for c in columns})
    df = pd.concat([pd.read_parquet(f, columns=columns) for f in files], ignore_index=True)
    return df[df["run_id"].isin(run_ids)].reset_index(drop=True)


def per_run(run_ids: pd.Index, replicas: pd.DataFrame, writes: pd.DataFrame) -> pd.DataFrame:
    """One row per run id with :data:`RUN_MEASURES` (0 where a run has no rows)."""
    out = pd.DataFrame(index=pd.Index(run_ids, name="run_id"))
    r = replicas.assign(
        run=pd.Categorical(replicas["run_id"], categories=run_ids).codes,
        rec=pd.factorize(replicas["record"])[0],
        rep=pd.factorize(replicas["replica"])[0],
    )
    sides = {src: r[r["source"] == src] for src in SOURCES}
    for src, side in sides.items():
        # Two replicas hold different records at an offset: more than one distinct record.
        n = side.groupby(["run", "offset"])["rec"].nunique()
        per = (n[n > 1]).groupby(level="run").size()
        out[f"divergent_offsets_{src}"] = _by_code(per, len(run_ids))

    w = writes.assign(lost_acked=writes["acked"].astype(bool) & writes["lost"].astype(bool))
    w = w.assign(acked=w["acked"].astype(bool))
    for src in SOURCES:
        mine = w[w["source"] == src].groupby("run_id")[["acked", "lost_acked"]].sum()
        out[f"writes_acked_{src}"] = mine["acked"].reindex(run_ids, fill_value=0).to_numpy()
        out[f"acked_lost_{src}"] = mine["lost_acked"].reindex(run_ids, fill_value=0).to_numpy()

    played_codes = np.union1d(
        sides["observed"]["run"].unique(),
        pd.Categorical(w.loc[w["source"] == "observed", "run_id"], categories=run_ids).codes,
    )
    played = np.zeros(len(run_ids), dtype="int64")
    played[played_codes[played_codes >= 0]] = 1
    out["runs_played"] = played

    # Observed against predicted, position by position, for the played runs only: a
    # model-only run has nothing observed, and its predicted rows are not differences.
    keys = ["run", "rep", "offset"]
    pred = sides["predicted"]
    pred = pred[played[pred["run"].to_numpy()] == 1][[*keys, "rec", "epoch"]]
    obs = sides["observed"][[*keys, "rec", "epoch"]]
    j = pred.merge(obs, on=keys, how="outer", suffixes=("_p", "_o"))
    present = j["rec_p"].notna() & j["rec_o"].notna()
    same = present & (j["rec_p"] == j["rec_o"])
    mism = j.loc[~same, "run"].unique()
    ep, eo = j["epoch_p"], j["epoch_o"]
    epoch_bad = j.loc[same & (ep >= 0) & (eo >= 0) & (ep != eo), "run"].unique()
    for name, codes in (("model_mismatches", mism), ("epoch_mismatches", epoch_bad)):
        flags = np.zeros(len(run_ids), dtype="int64")
        flags[codes.astype("int64")] = 1
        out[name] = flags
    return out[RUN_MEASURES].astype("int64").reset_index()


def _by_code(counts: pd.Series, n: int) -> np.ndarray:
    """A count per run code as a dense array over all ``n`` runs."""
    dense = np.zeros(n, dtype="int64")
    dense[counts.index.to_numpy(dtype="int64")] = counts.to_numpy(dtype="int64")
    return dense


def derive(metrics: pd.DataFrame) -> pd.DataFrame:
    """The evidence columns: observed figures for played runs, predicted for the others."""
    df = metrics.copy()
    played = df["runs_played"] > 0
    df["runs"] = 1
    for m in ("writes_acked", "acked_lost", "divergent_offsets"):
        df[m] = df[f"{m}_observed"].where(played, df[f"{m}_predicted"])
    df["acked_lost_predicted_played"] = df["acked_lost_predicted"].where(played, 0)
    return df


def summarise(root: Path) -> dict[str, pd.DataFrame]:
    """The three summary tables of ``root`` (see :mod:`harness.analysis.common`)."""
    runs, files = locate(root)
    run_ids = pd.Index(runs["run_id"])
    replicas = _read(files["replicas"], REPLICA_COLUMNS, "replicas", run_ids)
    writes = _read(files["writes"], WRITE_COLUMNS, "writes", run_ids)
    metrics = derive(runs.merge(per_run(run_ids, replicas, writes), on="run_id", how="left"))
    out: dict[str, pd.DataFrame] = {}
    for name, keys in (("by_config", CONFIG_KEYS), ("by_scenario_version", SCENARIO_KEYS)):
        g = metrics.groupby(keys, as_index=False)[MEASURES].sum()
        out[name] = normalise(g[[*keys, *MEASURES]], keys)
    lost = writes[writes["acked"].astype(bool) & writes["lost"].astype(bool)]
    lost = lost.merge(runs[["run_id", "scenario", "version", "protocol"]], on="run_id")
    causes = lost.groupby(CAUSE_KEYS, as_index=False).size().rename(columns={"size": "lost_writes"})
    out["loss_causes"] = normalise(causes[[*CAUSE_KEYS, "lost_writes"]], CAUSE_KEYS)
    out["run_verdicts"] = run_verdicts(runs)
    out["hw_by_step"] = hw_by_step(runs, files["steps"])
    hunts = hunt_files(root)
    if hunts:
        out["hunt_confirm"] = hunt_frame(pd.concat([pd.read_parquet(f) for f in hunts]))
    return out


def hw_by_step(runs: pd.DataFrame, files: list[str]) -> pd.DataFrame:
    """Per (scenario, version, step, event): replica-steps where a broker's checkpointed HW
    was observed, and how it compares with the model's HW for the events played."""
    from harness.analysis.spark_inputs import hw_steps

    s = hw_steps(files).to_pandas()
    s = s.merge(runs[["run_id", "scenario", "version"]], on="run_id")
    o, m = s["observed_hw"], s["realised_hw"]
    s = s.assign(
        hw_compared=1,
        hw_agreeing=(o == m).astype("int64"),
        hw_below_model=(o < m).astype("int64"),
        hw_above_model=(o > m).astype("int64"),
    )
    g = s.groupby(HW_STEP_KEYS, as_index=False).agg(
        runs=("run_id", "nunique"),
        hw_compared=("hw_compared", "sum"),
        hw_agreeing=("hw_agreeing", "sum"),
        hw_below_model=("hw_below_model", "sum"),
        hw_above_model=("hw_above_model", "sum"),
    )
    return hw_step_table(g)


def analyze(root: Path, out: Path) -> dict[str, pd.DataFrame]:
    """Compute the tables and write them as Parquet and CSV under ``out``; return them."""
    tables = summarise(root)
    write_tables(tables, out)
    return tables
