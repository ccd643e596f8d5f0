"""Consistency of any verdict vocabulary over repetitions: pointwise graders (inspect_ai epochs,
rubric PASS/FAIL, 1-5 grades), where :func:`verdictlab.stats.reliability` (A/B/tie only) does not apply.

A unit is (cell, item, order, step); its verdicts are its repetitions.  Only units with at least two
verdicts (after the unparsed policy) say anything about consistency; the others are counted in
``n_single``.

* ``C`` = share of units whose verdicts all agree (N(i,o) of docs/definitions.md averaged), Wilson
  interval over ``n_units``;
* ``self_consistency`` = mean over units of (count of the modal verdict) / (verdicts in the unit);
* unparsed ``exclude`` (the default policy): unparsed verdicts are dropped and counted (``n_unparsed``);
  ``wrong``: an unparsed verdict is a value of its own (two unparsed agree, as in ``reliability``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import CELL_KEY, Order
from ._frame import UNPARSED_VALUE, require_columns, with_cell_columns
from .intervals import wilson_bounds

__all__ = ["REPEAT_COLUMNS", "repeat_consistency"]

REPEAT_COLUMNS: tuple[str, ...] = ("n_judgments", "n_unparsed", "n_units", "n_single", "repetitions", "C",
                                   "C_lo", "C_hi", "self_consistency", "unparsed_policy", "confidence")


def repeat_consistency(judgments: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY,
                       by: Sequence[str] = CELL_KEY) -> pd.DataFrame:
    """``C`` and self-consistency over repetitions per cell, any verdict vocabulary (module docstring)."""
    keys = list(by)
    judgments = with_cell_columns(judgments, by)
    require_columns(judgments, keys + ["item_id", "verdict"], who="repeat_consistency")
    df = judgments[keys + ["item_id", "verdict"]].copy()
    df["order"] = judgments["order"] if "order" in judgments.columns else Order.AB.value
    df["step"] = judgments["step"].fillna("").astype(str) if "step" in judgments.columns else ""
    df["verdict"] = df["verdict"].astype(object)
    missing = df["verdict"].isna()
    cells = df[keys].drop_duplicates().sort_values(keys).reset_index(drop=True)
    n_judgments = df.groupby(keys, dropna=False).size().rename("n_judgments")
    n_unparsed = missing.groupby([df[k] for k in keys], dropna=False).sum().rename("n_unparsed")
    df = df[~missing] if policy.drops_unparsed else df.assign(verdict=df["verdict"].where(~missing, UNPARSED_VALUE))
    unit = keys + ["item_id", "order", "step"]
    g = df.groupby(unit, dropna=False)["verdict"]
    units = pd.DataFrame({"size": g.size(), "distinct": g.nunique()})
    units["modal"] = df.groupby(unit + ["verdict"], dropna=False).size().groupby(level=unit, dropna=False).max()
    units = units.reset_index()
    multi = units[units["size"] >= 2].assign(agree=lambda u: (u["distinct"] == 1).astype(int),
                                             share=lambda u: u["modal"] / u["size"])
    per = multi.groupby(keys, dropna=False).agg(n_units=("size", "size"), repetitions=("size", "max"),
                                                 n_agree=("agree", "sum"), self_consistency=("share", "mean"))
    single = units[units["size"] < 2].groupby(keys, dropna=False).size().rename("n_single")
    out = cells.join(n_judgments, on=keys).join(n_unparsed, on=keys).join(per, on=keys).join(single, on=keys)
    for c in ("n_units", "n_single", "n_agree", "repetitions", "n_unparsed"):
        out[c] = out[c].fillna(0).astype(int)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["C"] = np.where(out["n_units"] > 0, out["n_agree"] / out["n_units"].where(out["n_units"] > 0, 1),
                            np.nan)
    out["C_lo"], out["C_hi"] = wilson_bounds(out["n_agree"].to_numpy(float), out["n_units"].to_numpy(float),
                                             confidence=policy.confidence)
    out["unparsed_policy"] = policy.unparsed.value
    out["confidence"] = policy.confidence
    return out[keys + list(REPEAT_COLUMNS)]
