"""Cost curves: every pairwise judge configuration (its T) and every grader configuration (its T_g, or
the bound C x A where invariance is unmeasured) against its measured dollars and calls per item, with
the cost/figure Pareto front per dataset and criterion (:func:`verdictlab.stats.pareto_front`) -- the
cheapest configurations that no other beats on both.  A rubric's criteria are different questions, so each
criterion (``step``) has a front of its own; a pairwise cell and a grader with no criterion share one.  Dollars and calls come from the store's accounting
(:func:`verdictlab.stats.cost_per_item`); a front over dollars needs priced judgments, the front over
calls always exists.  A pairwise row's T carries no interval here (its bootstrap is the report's cell
table's, not repeated); a grader row carries T_g's.  The HTML drawing of the front belongs to the report; this table is its data."""

from __future__ import annotations

import pandas as pd

from ..core.vocab import CELL_KEY
from ..stats import cost_per_item, pareto_front, reliability, with_cell_columns
from . import AnalysisInput, register
from .cost_curve_figure import cost_front_figure
from .grader_cells import GRADER_KEY, grader_cells

__all__ = ["COST_CURVE_COLUMNS", "cost_curves"]

COST_CURVE_COLUMNS: tuple[str, ...] = ("kind", "figure", "value", "lo", "hi", "n_items", "usd_per_item",
                                       "calls_per_item", "on_front_usd", "on_front_calls")


def _pairwise(inp: AnalysisInput) -> pd.DataFrame:
    pairs = inp.pairs
    if pairs.empty:
        return pd.DataFrame()
    # T without its bootstrap: the interval is the report's cell table's (one bootstrap per report is enough)
    rel = reliability(pairs, policy=inp.policy.but(n_bootstrap=0))
    rel = with_cell_columns(rel).assign(step=rel["step"] if "step" in rel.columns else "")
    cost = cost_per_item(with_cell_columns(pairs), by=CELL_KEY)
    out = rel.merge(cost, on=list(CELL_KEY), how="left")
    return out.assign(kind="pairwise", figure="T", value=out["T"], lo=out["T_lo"], hi=out["T_hi"])


def _graders(inp: AnalysisInput) -> pd.DataFrame:
    t = grader_cells(inp)
    if t is None:
        return pd.DataFrame()
    has_t = t["T"].notna()
    return t.assign(kind="grader", figure=["T_g" if h else "T_bound" for h in has_t],
                    value=t["T"].where(has_t, t["T_bound"]), lo=t["T_lo"].where(has_t, t["T_bound"]),
                    hi=t["T_hi"].where(has_t, t["T_bound"]), n_items=t["n_items"])


def cost_curves(inp: AnalysisInput) -> pd.DataFrame | None:
    """One row per configuration (pairwise cells and grader cells): :data:`COST_CURVE_COLUMNS`."""
    parts = [p for p in (_pairwise(inp), _graders(inp)) if len(p)]
    if not parts:
        return None
    out = pd.concat([p[[*GRADER_KEY, *COST_CURVE_COLUMNS[:8]]] for p in parts], ignore_index=True)
    out["on_front_usd"] = False
    out["on_front_calls"] = False
    for _, idx in out.groupby(["dataset", "step"], sort=True, dropna=False).groups.items():
        g = out.loc[idx]
        out.loc[idx, "on_front_usd"] = pareto_front(g["usd_per_item"].to_numpy(float), g["value"].to_numpy(float))
        out.loc[idx, "on_front_calls"] = pareto_front(g["calls_per_item"].to_numpy(float), g["value"].to_numpy(float))
    return out


@register("cost_curves", order=88, title="Cost curves: figures against dollars and calls per item",
          figure=cost_front_figure, figure_title="Cost curves: the Pareto front per dataset and criterion",
          description="Per judge or grader configuration: T (pairwise), T_g or the bound C x A (graders) against "
                      "measured dollars and calls per item; on_front_* marks the Pareto front per dataset and "
                      "criterion (no cheaper configuration with at least the figure).")
def cost_curves_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    return cost_curves(inp)
