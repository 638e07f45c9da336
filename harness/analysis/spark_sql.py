"""The Spark job's plan as one Spark SQL statement (see :mod:`harness.analysis.spark_job`).

Why text: every DataFrame API call (``F.col``, ``F.when``, ``.alias``, ``withColumn``) is a
py4j round trip to the driver JVM, and PySpark 4 adds several more per call to record its
call site. Built from the API, the three tables took about 4,200 round trips, some three
seconds of a matrix's first query; the same plan as one statement is parsed by the JVM in a
single call. The statement is the plan the API built, step by step (each ``WITH`` clause
below names the function it replaced), so Catalyst optimises it the same way: the write
groups feed two branches and their exchange is computed once.

The input tables are placeholders (``{runs}``, ``{replicas}``, ``{writes}``) and so are the
replica names (``{r0}``, ``{r1}``, ...): :func:`job` returns the text and the names, and the
caller passes both to ``spark.sql(text, runs=..., **names)``, whose formatter registers each
DataFrame as a temporary view for the statement and quotes each string as a SQL literal.
"""

from __future__ import annotations

from harness.analysis.common import (
    CAUSE_KEYS,
    CONFIG_KEYS,
    MEASURES,
    META_MEASURES,
    SCENARIO_KEYS,
)

# The grouping columns of the summary aggregation, in grouping_id() bit order.
GROUP_COLUMNS = [*CONFIG_KEYS, "scenario"]
_WRITE_MEASURES = [
    "writes_acked_predicted",
    "acked_lost_predicted",
    "writes_acked_observed",
    "acked_lost_observed",
]
# Types of the columns one branch of the final union lacks (filled with typed NULLs).
_TYPES = {
    "version": "STRING",
    "protocol": "STRING",
    "acks": "STRING",
    "min_insync": "BIGINT",
    "unclean": "BOOLEAN",
    "rf": "BIGINT",
    "scenario": "STRING",
    "source": "STRING",
    "lost_step": "INT",
    "lost_event": "STRING",
    "lost_writes": "BIGINT",
    **{m: "BIGINT" for m in MEASURES},
}
OUTPUT_COLUMNS = [
    *GROUP_COLUMNS,
    "gid",
    *MEASURES,
    "source",
    "lost_step",
    "lost_event",
    "lost_writes",
]


def _or(terms: list[str], empty: str = "false") -> str:
    return " OR ".join(f"({t})" for t in terms) if terms else empty


def positions_by_offset(slots: int) -> str:
    """Per (run, offset): divergence per source, model and epoch mismatch, observed rows.

    One aggregation over the replica rows, with the replicas as slots: for replica ``k``
    (the name ``{rk}``) the aggregate keeps the predicted and the observed record (as a
    64-bit hash) and leader epoch at this offset, so predicted and observed are paired
    without grouping by replica first. Each (run, offset) group lives in one file, so the
    map-side partial aggregation already collapses the rows to one per group before
    anything is shuffled. Records are compared by their 64-bit xxhash: fixed-width
    aggregation buffers; two different records of one offset of one run would have to
    collide (~1e-19).
    """
    if slots == 0:
        # No replica names (no rows, or every name null): nothing to pair or compare.
        return (
            "by_offset AS (SELECT xxhash64(run_id) AS run_h, 0 AS div_p, 0 AS div_o,"
            " 0 AS mm, 0 AS em, 0 AS has_obs FROM replicas_in)"
        )
    case = " ".join(f"WHEN {{r{k}}} THEN {k}" for k in range(slots))
    aggs = []
    for k in range(slots):
        for name, side, value in (
            ("rp", "pred", "rec"),
            ("ro", "obs", "rec"),
            ("ep", "pred", "epoch"),
            ("eo", "obs", "epoch"),
        ):
            aggs.append(f"max(CASE WHEN {side} AND slot = {k} THEN {value} END) AS {name}{k}")
    mm = _or([f"NOT (rp{k} <=> ro{k})" for k in range(slots)])
    em = _or(
        [
            f"coalesce(rp{k} = ro{k} AND ep{k} >= 0 AND eo{k} >= 0 AND ep{k} != eo{k}, false)"
            for k in range(slots)
        ]
    )

    def differ(side: str) -> str:
        """Two replicas hold different records here: least != greatest (both skip nulls)."""
        if slots < 2:
            return "0"
        cols = ", ".join(f"{side}{k}" for k in range(slots))
        return f"coalesce(CAST(least({cols}) != greatest({cols}) AS INT), 0)"

    observed = _or([f"ro{k} IS NOT NULL" for k in range(slots)])
    return f"""slot_rows AS (
  SELECT xxhash64(run_id) AS run_h, `offset`,
         source = 'predicted' AS pred, source = 'observed' AS obs,
         CASE replica {case} END AS slot,
         xxhash64(record) AS rec, epoch
  FROM replicas_in),
slot_groups AS (
  SELECT run_h, `offset`, {", ".join(aggs)}
  FROM slot_rows GROUP BY run_h, `offset`),
by_offset AS (
  SELECT run_h, {differ("rp")} AS div_p, {differ("ro")} AS div_o,
         CAST({mm} AS INT) AS mm, CAST({em} AS INT) AS em,
         CAST({observed} AS INT) AS has_obs
  FROM slot_groups)"""


def positions_by_replica(partitions: int) -> str:
    """The same per (run, offset) columns for inputs with many replica names (no slots).

    Pairs predicted and observed per (run, replica, offset) first. The rows are partitioned
    by run once, and both groupings below are keyed by the run plus something, so they
    need no further shuffle; slower than the slots, which is why it is only the fallback.
    """
    return f"""replica_rows AS (
  SELECT /*+ REPARTITION({int(partitions)}, run_h) */
         xxhash64(run_id) AS run_h, xxhash64(replica) AS replica, `offset`, epoch,
         source = 'predicted' AS pred, source = 'observed' AS obs,
         xxhash64(record) AS record
  FROM replicas_in),
pairs AS (
  SELECT run_h, replica, `offset`,
         max(CASE WHEN pred THEN record END) AS rp, max(CASE WHEN obs THEN record END) AS ro,
         max(CASE WHEN pred THEN epoch END) AS ep, max(CASE WHEN obs THEN epoch END) AS eo
  FROM replica_rows GROUP BY run_h, replica, `offset`),
by_offset AS (
  SELECT run_h,
         coalesce(CAST(min(rp) != max(rp) AS INT), 0) AS div_p,
         coalesce(CAST(min(ro) != max(ro) AS INT), 0) AS div_o,
         max(CAST(NOT (rp <=> ro) AS INT)) AS mm,
         max(CAST(rp IS NOT NULL AND ro IS NOT NULL AND rp = ro AND ep >= 0 AND eo >= 0
                  AND ep != eo AS INT)) AS em,
         max(CAST(ro IS NOT NULL AS INT)) AS has_obs
  FROM pairs GROUP BY run_h, `offset`)"""


# Writes per (run, source, lost_step, lost_event): acknowledged, and those lost. A few rows
# per run; both the per-run write measures and the loss causes are summed from it, in one
# job, so the write rows are read and shuffled once.
_WRITE_GROUPS = """write_groups AS (
  SELECT xxhash64(run_id) AS run_h, source, lost_step, lost_event,
         sum(CAST(coalesce(acked, false) AS BIGINT)) AS acked,
         sum(CAST(coalesce(acked, false) AND coalesce(lost, false) AS BIGINT)) AS lost_acked
  FROM writes_in GROUP BY xxhash64(run_id), source, lost_step, lost_event)"""


def _per_run() -> str:
    """One row per run that has rows: the per-run measures, keyed by ``run_h``.

    The replica side (one row per run and offset) and the write side (the write groups)
    are stacked and summed per run in one aggregation; a run's ``run_h`` is the 64-bit
    xxhash of its ``run_id`` (two run ids of one input would have to collide, ~n^2/2^65).
    """
    zeros = ", ".join(f"0L AS {c}" for c in _WRITE_MEASURES)
    writes = ", ".join(
        f"CASE WHEN source = '{src}' THEN {col} ELSE 0L END AS {measure}_{src}"
        for src in ("predicted", "observed")
        for measure, col in (("writes_acked", "acked"), ("acked_lost", "lost_acked"))
    )
    sums = ", ".join(f"sum({c}) AS {c}" for c in _WRITE_MEASURES)
    return f"""measures AS (
  SELECT run_h,
         sum(div_p) AS divergent_offsets_predicted, sum(div_o) AS divergent_offsets_observed,
         max(mm) AS mm, max(em) AS em, max(has_obs) AS obs_replicas,
         {sums}, max(obs_writes) AS obs_writes
  FROM (
    SELECT run_h, CAST(div_p AS BIGINT) AS div_p, CAST(div_o AS BIGINT) AS div_o,
           CAST(mm AS BIGINT) AS mm, CAST(em AS BIGINT) AS em,
           CAST(has_obs AS BIGINT) AS has_obs, {zeros}, 0L AS obs_writes
    FROM by_offset
    UNION ALL
    SELECT run_h, 0L, 0L, 0L, 0L, 0L, {writes},
           coalesce(CAST(source = 'observed' AS BIGINT), 0L) AS obs_writes
    FROM write_groups)
  GROUP BY run_h)"""


def _derived(single: bool) -> str:
    """Every run with :data:`MEASURES` (0 where a run has no rows).

    The evidence columns: observed figures for played runs, predicted for the others. A
    model-only run has nothing observed to mismatch: its missing rows are not a diff.
    """
    keys = ", ".join(f"r.{c}" for c in GROUP_COLUMNS)
    filled = [
        "divergent_offsets_predicted", "divergent_offsets_observed", "mm", "em",
        "obs_replicas", *_WRITE_MEASURES, "obs_writes",
    ]  # fmt: skip
    m = ", ".join(f"coalesce(m.{c}, 0L) AS {c}" for c in filled)
    evidence = ", ".join(
        f"CASE WHEN played > 0 THEN {c}_observed ELSE {c}_predicted END AS {c}"
        for c in ("writes_acked", "acked_lost", "divergent_offsets")
    )
    sides = ", ".join(
        f"{c}_{s}"
        for c in ("writes_acked", "acked_lost", "divergent_offsets")
        for s in ("predicted", "observed")
    )
    meta = ", ".join(f"r.{c}" for c in META_MEASURES)
    return f"""runs_h AS (SELECT *, xxhash64(run_id) AS run_h FROM runs_in),
joined AS (
  SELECT {join_hint("m", single)}{keys}, {meta}, {m}
  FROM runs_h r LEFT JOIN measures m ON r.run_h = m.run_h),
played_runs AS (
  SELECT *, CAST(greatest(obs_replicas, obs_writes) AS BIGINT) AS played FROM joined),
metrics AS (
  SELECT {", ".join(GROUP_COLUMNS)},
         1L AS runs, played AS runs_played,
         mm * played AS model_mismatches, em * played AS epoch_mismatches,
         {sides},
         {evidence},
         CASE WHEN played > 0 THEN acked_lost_predicted ELSE 0L END
           AS acked_lost_predicted_played,
         {", ".join(META_MEASURES)}
  FROM played_runs)"""


def join_hint(build: str, single: bool) -> str:
    """On one partition, join by hashing ``build`` in the task: no broadcast job, no sort."""
    return f"/*+ SHUFFLE_HASH({build}) */ " if single else ""


def _select(values: dict[str, str]) -> str:
    """The :data:`OUTPUT_COLUMNS` of one branch of the final union, typed NULL where absent."""
    return ", ".join(
        f"{values[c]} AS {c}" if c in values else f"CAST(NULL AS {_TYPES[c]}) AS {c}"
        for c in OUTPUT_COLUMNS
    )


def _summary(single: bool) -> str:
    """Both summary tables from one aggregation with grouping sets, and the loss causes.

    One job for the three tables: the write groups feed two branches, and Spark reuses the
    one exchange that computes them. ``acked >= lost_acked`` always holds; naming ``acked``
    keeps this branch's write groups identical to the per-run branch's (else column
    pruning drops that sum here), so Spark computes them once and reuses the exchange. (On
    one partition, ``single``, there is no exchange: the few write rows are grouped twice.)
    """
    grouped = _select(
        {
            **{c: c for c in GROUP_COLUMNS},
            "gid": "CAST(grouping_id() AS INT)",
            **{m: f"CAST(sum({m}) AS BIGINT)" for m in MEASURES},
        }
    )
    sets = f"({', '.join(CONFIG_KEYS)}), ({', '.join(SCENARIO_KEYS)})"
    causes = _select(
        {
            **{c: f"w.{c}" if c in ("source", "lost_step", "lost_event") else f"r.{c}"
               for c in CAUSE_KEYS},
            "gid": "-1",
            "lost_writes": "CAST(sum(w.lost_acked) AS BIGINT)",
        }
    )  # fmt: skip
    cause_keys = ", ".join(
        f"w.{c}" if c in ("source", "lost_step", "lost_event") else f"r.{c}" for c in CAUSE_KEYS
    )
    return f"""SELECT {grouped}
FROM metrics
GROUP BY {", ".join(GROUP_COLUMNS)} GROUPING SETS ({sets})
UNION ALL
SELECT {join_hint("r", single) or "/*+ BROADCAST(r) */ "}{causes}
FROM write_groups w JOIN runs_h r ON w.run_h = r.run_h
WHERE w.lost_acked > 0 AND w.acked >= w.lost_acked
GROUP BY {cause_keys}"""


def job(
    names: list[str] | None, partitions: int, single: bool = False
) -> tuple[str, dict[str, str]]:
    """The statement for the three tables, and the replica names to bind to ``{rk}``.

    ``names``: the replica names, one slot each (:func:`positions_by_offset`); None pairs
    per replica instead (:func:`positions_by_replica`), with the rows repartitioned by run
    into ``partitions``. ``single``: the inputs are small tables on the driver; each is
    coalesced into one partition (no shuffle), which every grouping below then already
    satisfies, so the plan has no exchange but the ones its joins and union need: a small
    first query spends its time on Spark's machinery, not on the rows.
    """
    if names is None:
        positions = positions_by_replica(partitions)
        values: dict[str, str] = {}
    else:
        positions = positions_by_offset(len(names))
        values = {f"r{k}": name for k, name in enumerate(names)}
    hint = "/*+ COALESCE(1) */ " if single else ""
    inputs = ",\n".join(
        f"{t}_in AS (SELECT {hint}* FROM {{{t}}})" for t in ("runs", "replicas", "writes")
    )
    steps = [inputs, positions, _WRITE_GROUPS, _per_run(), _derived(single)]
    text = "WITH " + ",\n".join(steps) + "\n" + _summary(single)
    return text, values


def gid(keys: list[str]) -> int:
    """The grouping_id() of the grouping set ``keys`` over :data:`GROUP_COLUMNS`."""
    n = len(GROUP_COLUMNS)
    return sum(1 << (n - 1 - i) for i, c in enumerate(GROUP_COLUMNS) if c not in keys)
