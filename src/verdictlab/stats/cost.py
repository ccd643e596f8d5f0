"""What a configuration costs per item, measured from the store's accounting, and the cost/figure
Pareto front (to pick the cheapest judge or grader that is reliable enough).

* ``usd_per_item`` = the cell's summed ``cost_usd`` (every call of every trial, retries included, as the
  caller charged them) / its distinct items; NaN when no judgment of the cell carries a cost (a run
  imported without accounting), with ``n_priced`` saying how many did;
* ``calls_per_item`` = the cell's summed ``attempts`` (a judgment without a count is one call) / its
  distinct items.  An item of a pairwise cell is a pair: both orders and every repetition are its calls.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..core.vocab import CELL_KEY
from ._frame import with_cell_columns

__all__ = ["COST_COLUMNS", "cost_per_item", "pareto_front"]

COST_COLUMNS: tuple[str, ...] = ("n_items", "n_judgments", "n_priced", "usd", "calls", "usd_per_item",
                                 "calls_per_item")


def cost_per_item(judgments: pd.DataFrame, *, by: Sequence[str] = CELL_KEY) -> pd.DataFrame:
    """One row per ``by`` group: :data:`COST_COLUMNS` (module docstring)."""
    keys = list(by)
    df = with_cell_columns(judgments, [k for k in keys if k in CELL_KEY])
    missing = pd.Series(np.nan, index=df.index)
    cost = pd.to_numeric(df["cost_usd"] if "cost_usd" in df.columns else missing, errors="coerce")
    calls = pd.to_numeric(df["attempts"] if "attempts" in df.columns else missing, errors="coerce").fillna(1.0)
    # an item is (dataset, item id); within groups of one dataset the item id alone names it
    item = df["item_id"] if "dataset" in keys else df["dataset"].astype(str) + "\x1f" + df["item_id"].astype(str)
    work = df[keys].assign(_cost=cost.fillna(0.0), _priced=cost.notna().astype(int), _calls=calls, _item=item)
    g = work.groupby(keys, dropna=False, sort=True)
    out = pd.DataFrame({"n_items": g["_item"].nunique(), "n_judgments": g.size(), "n_priced": g["_priced"].sum(),
                        "usd": g["_cost"].sum(), "calls": g["_calls"].sum()}).reset_index()
    out["usd"] = out["usd"].where(out["n_priced"] > 0, np.nan)
    out["usd_per_item"] = out["usd"] / out["n_items"]
    out["calls_per_item"] = out["calls"] / out["n_items"]
    return out[[*keys, *COST_COLUMNS]]


def pareto_front(cost: Sequence[float], value: Sequence[float]) -> np.ndarray:
    """Boolean mask of the configurations on the cost/figure Pareto front: no other configuration
    costs at most as much *and* has at least the figure, with one of the two strictly better.  A
    configuration with a missing cost or figure is never on the front (and never dominates)."""
    c = np.asarray(cost, dtype=float)
    v = np.asarray(value, dtype=float)
    ok = ~(np.isnan(c) | np.isnan(v))
    le_cost = c[None, :] <= c[:, None]          # [i, j]: j costs at most what i costs
    ge_val = v[None, :] >= v[:, None]
    strict = (c[None, :] < c[:, None]) | (v[None, :] > v[:, None])
    dominated = (le_cost & ge_val & strict & ok[None, :]).any(axis=1)
    return ok & ~dominated
