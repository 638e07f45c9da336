"""The analysis report: tables as Parquet/CSV, charts as PNG, one self-contained HTML page.

Charts (matplotlib, Agg): acknowledged writes lost per config, predicted beside observed;
a heat map of scenario x version; the page also lists loss causes and model mismatches.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

import pandas as pd


def _config_label(row: pd.Series) -> str:
    return (
        f"{row['version']}/{row['protocol']} acks={row['acks']} isr={row['min_insync']} "
        f"{'unclean' if row['unclean'] else 'clean'} rf={row['rf']}"
    )


def loss_chart(by_config: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = by_config.copy()
    df["label"] = df.apply(_config_label, axis=1)
    # Broker rows compare like with like: the prediction of the runs that played to the end.
    model_only = df["version"].str.startswith("model")
    df["predicted"] = df["acked_lost_predicted"].where(
        model_only, df["acked_lost_predicted_played"]
    )
    df = df.sort_values(["label"]).head(40)
    fig, ax = plt.subplots(figsize=(10, max(3, 0.28 * len(df))))
    y = range(len(df))
    ax.barh([i + 0.2 for i in y], df["predicted"], height=0.4, label="predicted")
    if df["runs_played"].sum() > 0:
        ax.barh(
            [i - 0.2 for i in y], df["acked_lost_observed"], height=0.4, label="observed on brokers"
        )
    ax.set_yticks(list(y), df["label"], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("acknowledged writes lost")
    ax.set_title("Acknowledged-write loss by version and config")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def heatmap(by_scenario: pd.DataFrame, path: Path, measure: str = "acked_lost_predicted") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = by_scenario.pivot_table(
        index="scenario", columns="version", values=measure, aggfunc="sum", fill_value=0
    )
    fig, ax = plt.subplots(figsize=(4 + 1.1 * len(grid.columns), 1.5 + 0.45 * len(grid.index)))
    im = ax.imshow(grid.values, cmap="Reds", aspect="auto")
    ax.set_xticks(range(len(grid.columns)), grid.columns, rotation=30, ha="right")
    ax.set_yticks(range(len(grid.index)), grid.index, fontsize=8)
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            ax.text(j, i, str(int(grid.values[i, j])), ha="center", va="center", fontsize=8)
    ax.set_title(measure.replace("_", " "))
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f"<img alt='{html.escape(path.stem)}' src='data:image/png;base64,{data}'>"


def write_outputs(tables: dict[str, pd.DataFrame], out: Path, engine: str) -> Path:
    """Write every table (Parquet + CSV), the PNG charts and ``report.html``; return it."""
    out.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        df.to_parquet(out / f"{name}.parquet", index=False)
        df.to_csv(out / f"{name}.csv", index=False)
    loss_png, heat_png = out / "loss_by_config.png", out / "heatmap_scenario_version.png"
    loss_chart(tables["by_config"], loss_png)
    heatmap(tables["by_scenario"], heat_png)
    observed = tables["by_scenario"]["writes_acked_observed"].sum() > 0
    heat_obs = out / "heatmap_observed.png"
    if observed:
        heatmap(tables["by_scenario"], heat_obs, "acked_lost_observed")
    mism = tables["by_config"][tables["by_config"]["model_mismatches"] > 0]
    parts = [
        "<!doctype html><meta charset='utf-8'><title>hwchaos analysis</title>",
        "<style>body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:"
        "collapse;font-size:.8em}td,th{border:1px solid #ccc;padding:2px 6px}</style>",
        f"<h1>hwchaos analysis</h1><p>engine: {engine}; "
        f"{int(tables['by_config']['runs'].sum())} runs.</p>",
        "<h2>Acknowledged writes lost, by config</h2>",
        _img(loss_png),
        "<h2>Scenario x version (predicted)</h2>",
        _img(heat_png),
    ]
    if observed:
        parts += ["<h2>Scenario x version (observed on brokers)</h2>", _img(heat_obs)]
    parts += [
        "<h2>Which step caused each loss</h2>",
        tables["loss_causes"].to_html(index=False),
        f"<h2>Model mismatches</h2><p>{len(mism)} configs with mismatching runs.</p>",
        mism.to_html(index=False) if len(mism) else "",
        "<h2>By config</h2>",
        tables["by_config"].to_html(index=False),
        "<h2>By scenario and version</h2>",
        tables["by_scenario"].to_html(index=False),
    ]
    page = out / "report.html"
    page.write_text("\n".join(parts))
    return page
