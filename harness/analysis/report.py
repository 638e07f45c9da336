"""The analysis report: one self-contained HTML page, charts beside it as PNG.

Why self-contained: the page is mailed around and attached to tickets, so the charts are
embedded as base64 PNG (matplotlib's Agg backend, no display needed) and the tables are plain
HTML; the PNGs are also written next to it for slides and diffs.

Contents: acknowledged-write loss per config (predicted beside observed when some runs were
played on brokers), a scenario x version heat map of acknowledged writes lost, the step of
each loss, and the model mismatches.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis.common import CONFIG_KEYS, CONSUMER_COLUMNS

MAX_RUN_ROWS = 200  # runs listed in the verdicts table; the CSV has them all

MAX_BARS = 40  # beyond this a horizontal bar chart stops being readable


def _pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (works on a headless CI box)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _config_label(row: pd.Series) -> str:
    return (
        f"{row['version']}/{row['protocol']} acks={row['acks']} isr={row['min_insync']} "
        f"{'unclean' if row['unclean'] else 'clean'} rf={row['rf']}"
    )


def loss_chart(by_config: pd.DataFrame, path: Path) -> str:
    """Bar chart of acknowledged writes lost per config; returns its caption.

    Broker configs compare like with like: their predicted bar is the prediction of the runs
    that were played to a verdict, not of every run (some may have errored).
    """
    plt = _pyplot()
    df = by_config.copy()
    df["label"] = df.apply(_config_label, axis=1)
    model_only = df["version"].str.startswith("model")
    df["predicted"] = df["acked_lost_predicted"].where(
        model_only, df["acked_lost_predicted_played"]
    )
    observed = bool(df["runs_played"].sum() > 0)
    df["worst"] = df[["predicted", "acked_lost_observed"]].max(axis=1)
    shown = df.sort_values(["worst", "label"], ascending=[False, True]).head(MAX_BARS)
    fig, ax = plt.subplots(figsize=(10, max(3.0, 0.3 * len(shown) + 1.2)))
    y = list(range(len(shown)))
    height = 0.4 if observed else 0.7
    ax.barh(
        [i - height / 2 if observed else i for i in y],
        shown["predicted"],
        height=height,
        label="predicted (model)",
        color="#4c72b0",
    )
    if observed:
        ax.barh(
            [i + height / 2 for i in y],
            shown["acked_lost_observed"],
            height=height,
            label="observed on brokers",
            color="#dd8452",
        )
    ax.set_yticks(y, list(shown["label"]), fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("acknowledged writes lost")
    ax.set_title("Acknowledged-write loss by version and config")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    caption = f"{len(shown)} of {len(df)} configs"
    return caption + (f", the {MAX_BARS} with most loss" if len(df) > MAX_BARS else "")


def heatmap(by_scenario: pd.DataFrame, path: Path, measure: str = "acked_lost") -> None:
    """Scenario x version grid of ``measure``, each cell annotated with its count."""
    plt = _pyplot()
    grid = by_scenario.pivot_table(
        index="scenario", columns="version", values=measure, aggfunc="sum", fill_value=0
    )
    fig, ax = plt.subplots(figsize=(4 + 1.1 * len(grid.columns), 1.5 + 0.45 * len(grid.index)))
    values = grid.to_numpy()
    im = ax.imshow(values, cmap="Reds", aspect="auto", vmin=0)
    ax.set_xticks(range(len(grid.columns)), list(grid.columns), rotation=30, ha="right")
    ax.set_yticks(range(len(grid.index)), list(grid.index), fontsize=8)
    top = values.max() if values.size else 0
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            v = int(values[i, j])
            colour = "white" if top and v > 0.6 * top else "black"
            ax.text(j, i, str(v), ha="center", va="center", fontsize=8, color=colour)
    ax.set_title(measure.replace("_", " ") + " (scenario x version)")
    from matplotlib.ticker import MaxNLocator

    fig.colorbar(im, ax=ax, ticks=MaxNLocator(integer=True))  # counts: no 0.25 ticks
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f"<img alt='{html.escape(path.stem)}' src='data:image/png;base64,{data}'>"


def _table(df: pd.DataFrame) -> str:
    return df.to_html(index=False, border=0, escape=True) if len(df) else "<p>none</p>"


def verdict_section(tables: dict[str, pd.DataFrame]) -> list[str]:
    """The two verdicts, the per-step HW check and the consumer anomalies, per config and run.

    Agreement and safety are shown side by side and counted apart, so a run that lost data
    exactly as the model predicted shows as agreeing *and* unsafe.
    """
    by_config = tables["by_config"]
    cols = [*CONFIG_KEYS, "runs", "runs_played", "runs_disagree", "runs_unsafe",
            "hw_steps_agreeing", "hw_steps_compared", "hw_runs_differing",
            *[c for c in CONSUMER_COLUMNS if c in by_config.columns]]  # fmt: skip
    cols = [c for c in cols if c in by_config.columns]
    runs = tables.get("run_verdicts")
    if runs is None:
        runs = pd.DataFrame(columns=["backend", "agreement", "safety", "hw_steps_compared"])
    # Played runs only: a model-only run's "lost" is a prediction (counted in by_config's
    # runs_unsafe all the same, and its loss steps are in the loss causes above).
    played = runs[runs["backend"] != "model"]
    model_lost = int((runs["safety"] == "lost").sum()) - int((played["safety"] == "lost").sum())
    total = by_config.get("hw_steps_compared", pd.Series(dtype=int)).sum()
    agreeing = by_config.get("hw_steps_agreeing", pd.Series(dtype=int)).sum()
    parts = [
        "<h2>Verdicts, high watermark and consumer</h2>",
        f"<p>Of {len(played)} runs played on brokers: "
        f"{int((~played['agreement'].isin(['match', 'prevented'])).sum())}"
        " disagree with the model (agreement); "
        f"{int((played['safety'] == 'lost').sum())} lost data or showed a consumer anomaly "
        "(safety), "
        f"whether predicted or not. HW per step: {int(agreeing)}/{int(total)} steps agree "
        "(checkpointed HW on the brokers against the model's). Model-only runs predicting a "
        f"loss: {model_lost}.</p>",
        _table(by_config[cols]),
    ]
    if len(played):
        notable = played[
            (played["hw_steps_compared"] > 0)
            | (played["safety"] != "no loss")
            | ~played["agreement"].isin(["match", "prevented"])
        ]
        shown = notable.head(MAX_RUN_ROWS)
        parts += [
            "<h3>Played runs with a HW check, a loss or a disagreement</h3>",
            f"<p>{len(shown)} of {len(notable)} such runs (of {len(played)} played); all runs "
            "are in run_verdicts.csv.</p>",
            _table(shown),
        ]
    steps = tables.get("hw_by_step")
    if steps is not None and len(steps):
        parts += [
            "<h3>HW per step</h3>",
            "<p>Replica-steps where a broker's checkpointed HW was observed, against the "
            "model's HW for the events played: agreeing, below the model (lagging) or above.</p>",
            _table(steps),
        ]
    hunt = tables.get("hunt_confirm")
    if hunt is not None:
        parts += [
            "<h2>Hunt: counterexamples played on brokers</h2>",
            "<p>explore --confirm classifications, one row per counterexample played.</p>",
            _table(hunt),
        ]
    return parts


def write_report(
    tables: dict[str, pd.DataFrame], out: Path, engine: str = "", source: str = ""
) -> Path:
    """Write the PNG charts and ``report.html`` under ``out``; return the page's path."""
    out.mkdir(parents=True, exist_ok=True)
    by_config, by_scenario = tables["by_config"], tables["by_scenario_version"]
    loss_png = out / "loss_by_config.png"
    heat_png = out / "heatmap_scenario_version.png"
    caption = loss_chart(by_config, loss_png)
    heatmap(by_scenario, heat_png, "acked_lost")
    mism_cols = [
        *CONFIG_KEYS,
        "runs",
        "runs_played",
        "model_mismatches",
        "epoch_mismatches",
        "acked_lost_predicted_played",
        "acked_lost_observed",
        "divergent_offsets_predicted",
        "divergent_offsets_observed",
    ]
    played = by_config[by_config["runs_played"] > 0]
    mism = played[(played["model_mismatches"] > 0) | (played["epoch_mismatches"] > 0)]
    runs, n_played = int(by_config["runs"].sum()), int(by_config["runs_played"].sum())
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>hwchaos analysis</title>",
        "<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}"
        "table{border-collapse:collapse;font-size:.8em;margin-bottom:1em}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
        "img{max-width:100%}</style></head><body>",
        "<h1>hwchaos analysis</h1>",
        f"<p>{html.escape(source)} &middot; engine: {html.escape(engine)} &middot; "
        f"{runs} runs, {n_played} played on brokers, {runs - n_played} model-only.</p>",
        "<h2>Acknowledged writes lost, by config</h2>",
        f"<p>{html.escape(caption)}.</p>",
        _img(loss_png),
        "<h2>Acknowledged writes lost, scenario x version</h2>",
        "<p>Observed figures for runs played on brokers, predicted for model-only runs.</p>",
        _img(heat_png),
        "<h2>Loss causes</h2>",
        "<p>The step after which each lost acknowledged write was gone, per scenario.</p>",
        _table(tables["loss_causes"]),
        "<h2>Model mismatches</h2>",
        f"<p>{int(played['model_mismatches'].sum())} of {n_played} played runs differ from "
        f"the model in a record at some offset; {int(played['epoch_mismatches'].sum())} "
        "only in a leader epoch.</p>",
        _table(mism[mism_cols]),
        *verdict_section(tables),
        "<h2>By config</h2>",
        _table(by_config),
        "<h2>By scenario and version</h2>",
        _table(by_scenario),
        "</body></html>",
    ]
    page = out / "report.html"
    page.write_text("\n".join(parts))
    return page
