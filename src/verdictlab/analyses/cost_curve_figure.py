"""The cost curves' picture for the HTML report and ``--plots``: per dataset and criterion, every
configuration's figure (T, T_g or the bound C x A, with its interval) against its measured cost per
item, the Pareto front the ``cost_curves`` table flags drawn as a line through its points.  Dollars when
some configuration of the panel is priced, else calls (the front over calls always exists).  Renders
only: every value and every front flag is the table's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["cost_front_figure"]


def _axis(g: pd.DataFrame) -> tuple[str, str, str]:
    priced = pd.to_numeric(g["usd_per_item"], errors="coerce").fillna(0).gt(0).any()
    return ("usd_per_item", "on_front_usd", "dollars per item") if priced else (
        "calls_per_item", "on_front_calls", "calls per item")


def _panel(ax: Any, g: pd.DataFrame, title: str) -> None:
    x_col, front_col, x_words = _axis(g)
    x = pd.to_numeric(g[x_col], errors="coerce").to_numpy(float)
    y = pd.to_numeric(g["value"], errors="coerce").to_numpy(float)
    lo = np.clip(y - pd.to_numeric(g["lo"], errors="coerce").to_numpy(float), 0, None)
    hi = np.clip(pd.to_numeric(g["hi"], errors="coerce").to_numpy(float) - y, 0, None)
    on = g[front_col].fillna(False).astype(bool).to_numpy()
    ok = np.isfinite(x) & np.isfinite(y)
    ax.errorbar(x[ok & ~on], y[ok & ~on], yerr=[np.nan_to_num(lo[ok & ~on]), np.nan_to_num(hi[ok & ~on])],
                fmt="o", color="#999", capsize=3, label="dominated")
    front = ok & on
    order = np.argsort(x[front])
    ax.errorbar(x[front], y[front], yerr=[np.nan_to_num(lo[front]), np.nan_to_num(hi[front])], fmt="o",
                color="#1f77b4", capsize=3, label="Pareto front")
    ax.plot(x[front][order], y[front][order], drawstyle="steps-post", color="#1f77b4", lw=1.2)
    for xi, yi, name in zip(x[ok], y[ok], g.loc[ok, "judge"].astype(str), strict=True):
        ax.annotate(name[:22], (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel(x_words)
    ax.set_ylabel("T, T_g or C × A (fraction)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")


def cost_front_figure(table: Mapping[str, Any] | pd.DataFrame, *, max_panels: int = 6) -> Any:
    """The Pareto front picture of the ``cost_curves`` table (a frame, or the report's ``{"columns",
    "rows"}``): one panel per dataset and criterion (``step``), at most ``max_panels``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = table if isinstance(table, pd.DataFrame) else pd.DataFrame(table["rows"], columns=table["columns"])
    df = df.assign(step=df["step"].fillna("").astype(str) if "step" in df.columns else "")
    groups = list(df.groupby(["dataset", "step"], sort=True))[:max_panels]
    if not groups:
        return None
    fig, axes = plt.subplots(1, len(groups), figsize=(5.2 * len(groups), 4.0), squeeze=False, layout="constrained")
    for ax, ((dataset, step), g) in zip(axes[0], groups, strict=True):
        _panel(ax, g, f"{dataset}" + (f" · {step}" if step else ""))
    return fig
