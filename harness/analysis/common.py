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
``hw_steps_compared`` / ``hw_steps_agreeing`` / ``hw_runs_differing``
    the per-step HW check of broker runs (``run.json`` ``extra.hw``): steps where a
    replica's checkpointed HW was compared with the model's, those agreeing, and runs with a
    differing step. Older folders without the check count 0.
``consumer_<kind>_observed`` / ``consumer_<kind>_predicted``
    the consumer oracle's anomalies (``extra.consumer``), per kind (:data:`CONSUMER_KINDS`).
``runs_disagree`` / ``runs_unsafe``
    the two verdicts (:mod:`harness.checker.verdicts`), kept apart: played runs whose
    agreement is not ``match`` or ``prevented``, and runs whose safety is ``lost``.

Run-level fields (:data:`VERDICT_COLUMNS`) come from ``run.json`` and are flattened here,
on the driver, once for both engines; the engines only sum them. They are also listed per
run in the ``run_verdicts`` table, with the first differing HW step (not summable).

``loss_causes`` counts lost acknowledged writes (``writes.parquet`` rows with ``acked`` and
``lost``) per source as well: the model names the step that lost a write, brokers do not
(their rows carry step -1), and adding the two would count a write twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.checker.verdicts import AGREEMENT, JUDGED, two_verdicts

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
# Consumer anomaly kinds, as harness.checker.consumer.anomalies names them.
CONSUMER_KINDS = (
    "lost",
    "read_then_lost",
    "hw_regression",
    "uncommitted_read",
    "divergent_offsets",
)
CONSUMER_COLUMNS = [f"consumer_{k}_{s}" for k in CONSUMER_KINDS for s in SOURCES]
# Run-level measures from run.json, summed per group by both engines as they are.
META_MEASURES = [
    "hw_steps_compared",
    "hw_steps_agreeing",
    "hw_runs_differing",
    *CONSUMER_COLUMNS,
    "runs_disagree",
    "runs_unsafe",
]
MEASURES += META_MEASURES
RUN_MEASURES = [m for m in MEASURES if m not in _DERIVED and m not in META_MEASURES]
# Per step of the HW check: steps.parquet's observed_hw (a broker's checkpoint) against
# realised_hw (the model's HW for the events played), replica-steps where a broker showed one.
HW_STEP_KEYS = ["scenario", "version", "step", "event"]
HW_STEP_MEASURES = ["runs", "hw_compared", "hw_agreeing", "hw_below_model", "hw_above_model"]
STEP_COLUMNS = ["run_id", "step", "event", "observed_hw", "realised_hw"]
TABLE_NAMES = ("by_config", "by_scenario_version", "loss_causes", "run_verdicts", "hw_by_step")
TABLE_KEYS = {
    "by_config": CONFIG_KEYS,
    "by_scenario_version": SCENARIO_KEYS,
    "loss_causes": CAUSE_KEYS,
    "run_verdicts": ["run_id"],
    "hw_by_step": HW_STEP_KEYS,
}
BASE_RUN_COLUMNS = [
    "run_id", "scenario", *CONFIG_KEYS, "backend", "records", "verdict", "model_match"
]  # fmt: skip
# Per run, from run.json (see the module docstring): what the run_verdicts table lists.
VERDICT_COLUMNS = [
    "agreement",
    "safety",
    "hw_steps_compared",
    "hw_steps_agreeing",
    "hw_first_step",
    *CONSUMER_COLUMNS,
]
RUN_COLUMNS = [*BASE_RUN_COLUMNS, *VERDICT_COLUMNS, "hw_runs_differing", "runs_disagree",
               "runs_unsafe"]  # fmt: skip
RUN_VERDICT_KEYS = ["run_id", "scenario", "version", "backend", "verdict"]
REPLICA_COLUMNS = ["run_id", "source", "replica", "offset", "epoch", "record"]
WRITE_COLUMNS = ["run_id", "source", "acked", "lost", "lost_step", "lost_event"]
INT_COLUMNS = {
    *MEASURES, *VERDICT_COLUMNS[2:], *HW_STEP_MEASURES, "step", "lost_writes", "lost_step",
    "min_insync", "rf",
}  # fmt: skip


# explore --confirm's table (harness.generator.confirm.CONFIRM_TABLE, in the confirm folder):
# read as it stands when present, listed as the ``hunt_confirm`` output table.
HUNT_TABLE = "confirm.parquet"
HUNT_TYPES: dict[str, Any] = {
    "hunt": "str", "index": "int64", "invariant": "str", "profile": "str", "version": "str",
    "backend": "str", "ordering": "str", "classification": "str", "reason": "str",
    "run_folder": "str", "observed_verdict": "str", "seconds": "float64", "same_run_as": "int64",
}  # fmt: skip


def hunt_files(root: Path) -> list[str]:
    """``DIR/confirm.parquet`` of an ``explore --confirm`` folder, or ``DIR/*/confirm.parquet``
    of a folder of them (``--runs``, default ``runs/``, gathers every hunt there)."""
    own = root / HUNT_TABLE
    found = [own] if own.is_file() else sorted(root.glob(f"*/{HUNT_TABLE}"))
    return [str(p) for p in found]


def hunt_frame(df: pd.DataFrame) -> pd.DataFrame:
    """The hunt table with fixed columns, dtypes and order, whichever engine read it."""
    out = pd.DataFrame({c: df[c] if c in df.columns else None for c in HUNT_TYPES})
    for col, kind in HUNT_TYPES.items():
        out[col] = out[col].fillna(-1 if kind == "int64" else 0.0 if kind == "float64" else "")
        out[col] = out[col].astype(kind)
    return out.sort_values(["hunt", "index"], kind="mergesort").reset_index(drop=True)


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
        bulk = pd.read_parquet(root / "runs.parquet")
        if not len(bulk):
            raise NoResults(f"{root}: no runs (no run.json and no runs.parquet)")
        return _runs_frame(bulk_verdicts(bulk)), _files(folders)
    else:
        markers = sorted(root.glob("cells/*/run.json")) or sorted(root.rglob("run.json"))
        folders = [p.parent for p in markers]
        meta = [json.loads(p.read_text()) for p in markers]
    if not meta:
        raise NoResults(f"{root}: no runs (no run.json and no runs.parquet)")
    meta = [{**m, **verdict_fields(m)} for m in meta]
    return _runs_frame(pd.DataFrame(meta)), _files(folders)


def _files(folders: list[Path]) -> dict[str, list[str]]:
    """The replica and write Parquet files of the given run (or bulk cell) folders."""
    return {
        name: [str(f / f"{name}.parquet") for f in folders if (f / f"{name}.parquet").is_file()]
        for name in ("replicas", "writes", "steps")
    }


def bulk_verdicts(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`verdict_fields` for a bulk set's ``runs.parquet``, column-wise.

    A bulk set has flat columns and no ``extra`` (millions of rows: per-row Python would cost
    seconds per million). Verdict columns it carries are kept; the words follow
    :func:`harness.checker.verdicts.two_verdicts`, the checks absent count 0.
    """
    out = df.copy()
    n = len(out)
    verdict = out["verdict"].astype(str) if "verdict" in out else pd.Series(["match"] * n)
    if "agreement" not in out:
        words = verdict.map(lambda v: AGREEMENT.get(v, v.replace("_", " ")))
        model = out["backend"].astype(str) == "model" if "backend" in out else False
        out["agreement"] = words.where(~pd.Series(model, index=out.index), "model only")
    if "safety" not in out:
        lost = pd.Series(False, index=out.index)
        for col in ("lost_acked", "divergent_offsets"):
            if col in out:
                lost |= out[col].map(lambda v: _count(v) > 0)
        judged = verdict.map(lambda v: AGREEMENT.get(v, "") in JUDGED)
        out["safety"] = np.where(lost, "lost", np.where(judged, "no loss", "unknown"))
    for col in VERDICT_COLUMNS[2:]:
        if col not in out:
            out[col] = -1 if col == "hw_first_step" else 0
    out["hw_runs_differing"] = (out["hw_steps_agreeing"] < out["hw_steps_compared"]).astype(int)
    agree = out["agreement"].astype(str)
    out["runs_disagree"] = (~agree.isin(["match", "prevented", "model only"])).astype(int)
    out["runs_unsafe"] = (out["safety"].astype(str) == "lost").astype(int)
    return out


def _count(value: Any) -> int:
    """An anomaly entry's size: a list's length, or a number as it stands."""
    if isinstance(value, list | tuple | np.ndarray):
        return len(value)
    return int(value) if isinstance(value, int | float) and value == value else 0


def _dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else empty (absent in older run folders)."""
    return value if isinstance(value, dict) else {}


def verdict_fields(doc: dict[str, Any]) -> dict[str, Any]:
    """The :data:`VERDICT_COLUMNS` of one ``run.json`` (or ``runs.parquet`` row).

    Fields a row already carries flat (a bulk set's ``runs.parquet``) are kept; nested
    ``extra.hw`` / ``extra.consumer`` are flattened; absent ones (older folders, model-only
    runs) are 0, ``hw_first_step`` -1. The verdict words come from
    :func:`harness.checker.verdicts.two_verdicts`, the function every other surface uses.
    """
    extra = _dict(doc.get("extra"))
    hw, consumer = _dict(extra.get("hw")), _dict(extra.get("consumer"))
    out: dict[str, Any] = {}
    if "agreement" in doc and "safety" in doc:
        out["agreement"], out["safety"] = str(doc["agreement"]), str(doc["safety"])
    else:
        two = two_verdicts(doc)
        out["agreement"] = "model only" if two.model_only else two.agreement
        out["safety"] = two.safety
    first = hw.get("first_step")
    out["hw_steps_compared"] = int(hw.get("steps_compared") or 0)
    out["hw_steps_agreeing"] = int(hw.get("steps_agreeing") or 0)
    out["hw_first_step"] = -1 if first is None else int(first)
    for src in SOURCES:
        side = _dict(consumer.get(src))
        for kind in CONSUMER_KINDS:
            out[f"consumer_{kind}_{src}"] = _count(side.get(kind))
    for col in VERDICT_COLUMNS[2:]:
        if col in doc and not isinstance(doc[col], dict):
            out[col] = int(doc[col])
    out["hw_runs_differing"] = int(out["hw_steps_agreeing"] < out["hw_steps_compared"])
    out["runs_disagree"] = int(out["agreement"] not in ("match", "prevented", "model only"))
    out["runs_unsafe"] = int(out["safety"] == "lost")
    return out


def run_verdicts(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run: its two verdicts, HW check and consumer anomalies (from run.json).

    Not computed by either engine: it is the run metadata both read, so it is the same
    for both by construction.
    """
    cols = [*RUN_VERDICT_KEYS, *VERDICT_COLUMNS]
    return normalise(runs[cols], ["run_id"])


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
    for col in ("run_id", "scenario", "version", "protocol", "acks", "backend", "verdict",
                "agreement", "safety"):  # fmt: skip
        out[col] = out[col].astype(str)
    for col in ("min_insync", "rf", "records", *RUN_COLUMNS[len(BASE_RUN_COLUMNS) + 2 :]):
        out[col] = out[col].astype("int64")
    for col in ("unclean", "model_match"):
        out[col] = out[col].astype(bool)
    return out


def hw_step_table(df: pd.DataFrame) -> pd.DataFrame:
    """``hw_by_step`` with its columns, dtypes and order, from either engine's grouped rows."""
    return normalise(df[[*HW_STEP_KEYS, *HW_STEP_MEASURES]], HW_STEP_KEYS)


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
