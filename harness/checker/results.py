"""The on-disk results layout every hwchaos run writes and the analysis pipeline reads.

Why one module: the model-only path (``hwchaos model``/``matrix --model-only``), the broker
path (``hwchaos run``) and the Spark/pandas analysis all meet here, so the column names and
types are fixed in one place instead of being re-invented by each producer and consumer.

A *run folder* holds one scenario played once (by the model, or on brokers):

``run.json``
    The run's identity and verdict (see :class:`RunInfo`).
``replicas.parquet``
    One row per (source, replica, offset): what each replica's log holds at the end.
    ``source`` is ``"predicted"`` (reference model) or ``"observed"`` (real broker files).
``writes.parquet``
    One row per (source, record) the producer sent: whether it was acknowledged, at which
    offset, whether it is lost, and the step after which it was lost.
``steps.parquet``
    The model trace: the partition state after every step, one row per (step, replica),
    with the wall seconds the step took on the brokers (``seconds``) in a broker run.

A matrix is a folder of run folders (``DIR/cells/<cell_id>/``); readers glob
``cells/*/<table>.parquet``.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

REPLICAS_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("source", pa.string()),  # "predicted" | "observed"
        ("replica", pa.string()),  # broker name as the scenario spells it
        ("offset", pa.int64()),
        ("epoch", pa.int32()),  # partitionLeaderEpoch; -1 for message formats v0/v1
        ("record", pa.string()),  # record id (the producer writes it as key and value)
    ]
)

WRITES_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("source", pa.string()),
        ("record", pa.string()),
        ("status", pa.string()),  # acked | refused | failed | pending | sent (acks=0)
        ("offset", pa.int64()),  # offset the leader assigned (-1 if never appended)
        ("acked", pa.bool_()),
        ("lost", pa.bool_()),  # acknowledged and not on the final leader at that offset
        ("lost_step", pa.int32()),  # first step after which it was lost (-1 if not lost)
        ("lost_event", pa.string()),  # that step's event, e.g. "crash B" ("" if not lost)
    ]
)

STEPS_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("step", pa.int32()),
        ("event", pa.string()),
        ("replica", pa.string()),
        ("alive", pa.bool_()),
        ("role", pa.string()),
        ("leo", pa.int64()),
        ("hw", pa.int64()),
        ("checkpoint_hw", pa.int64()),
        ("flushed", pa.int64()),
        ("epochs", pa.string()),  # "e:start,e:start"
        ("log", pa.string()),  # "m1@0/e0 m2@1/e0"
        ("leader", pa.string()),
        ("leader_epoch", pa.int32()),
        ("isr", pa.string()),  # "A,B"
        # wall seconds the step took on the brokers (null: model-only run, step 0, not played)
        ("seconds", pa.float64()),
        # Broker runs: the HW this replica's broker checkpointed after the step (observed;
        # -1: none or a model-only run) and the model's HW for the events really played
        # (harness.checker.realised), which the per-step HW check compares it with.
        ("observed_hw", pa.int64()),
        ("realised_hw", pa.int64()),
    ]
)

TABLES = {"replicas": REPLICAS_SCHEMA, "writes": WRITES_SCHEMA, "steps": STEPS_SCHEMA}


@dataclass
class RunInfo:
    """Identity and verdict of one run; written as ``run.json``.

    ``version`` is a Kafka version (``0.10.2.1``) for broker runs, or ``model`` for
    model-only runs; ``protocol`` is the model generation used for the prediction.
    """

    run_id: str
    scenario: str
    version: str
    protocol: str
    backend: str  # model | local | docker
    acks: str
    min_insync: int
    unclean: bool
    rf: int
    records: int
    # match | prevented | lost_acked | divergence | model_mismatch | step_prevented | error ...
    # ``prevented`` (the model predicted the version refuses a step, the run stopped there and
    # matched the model up to it) is a pass like ``match``; ``step_prevented`` (the harness
    # could not play a step the model did not predict prevented) is a failure.
    verdict: str = "match"
    model_match: bool = True
    lost_acked: list[str] = field(default_factory=list)
    divergent_offsets: list[int] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)  # offline, broker_halted, step_prevented
    # The model's predicted prevention, when it predicts one: {"step", "event", "reason"
    # (Kafka change and broker method), "reached" (the run got there), "harness_note"}.
    prevented: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> RunInfo:
        return cls(**json.loads(text))


def _table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    if not rows:
        return schema.empty_table()
    df = pd.DataFrame(rows, columns=schema.names)
    return pa.Table.from_pandas(df, schema=schema, preserve_index=False)


def write_run(
    folder: Path,
    info: RunInfo,
    replicas: list[dict[str, Any]],
    writes: list[dict[str, Any]],
    steps: list[dict[str, Any]],
) -> None:
    """Write one run folder atomically: tables first, ``run.json`` last.

    ``run.json`` is the commit marker: a folder without it is an interrupted run, which a
    resumed matrix deletes and plays again, so a cell is never half-counted.
    """
    folder.mkdir(parents=True, exist_ok=True)
    steps = [{"observed_hw": -1, "realised_hw": -1, **r} for r in steps]
    for name, rows in (("replicas", replicas), ("writes", writes), ("steps", steps)):
        pq.write_table(_table(rows, TABLES[name]), folder / f"{name}.parquet")
    tmp = folder / "run.json.tmp"
    tmp.write_text(info.to_json())
    os.replace(tmp, folder / "run.json")


def is_complete(folder: Path) -> bool:
    """A run folder counts only once its ``run.json`` commit marker exists."""
    return (folder / "run.json").is_file()


def read_runs(root: Path) -> pd.DataFrame:
    """All ``run.json`` under ``root`` (a run folder or a matrix folder) as one DataFrame."""
    rows = [json.loads(p.read_text()) for p in sorted(root.rglob("run.json"))]
    return pd.DataFrame(rows)


def read_table(root: Path, name: str) -> pd.DataFrame:
    """Concatenate table ``name`` from every complete run folder under ``root``."""
    files = [p / f"{name}.parquet" for p in sorted({q.parent for q in root.rglob("run.json")})]
    files = [f for f in files if f.is_file()]
    frames: list[pd.DataFrame] = [pq.read_table(f).to_pandas() for f in files]
    if not frames:
        frames = [TABLES[name].empty_table().to_pandas()]
    return pd.concat(frames, ignore_index=True)
