"""What happened to each pair in each cell, by the rules of the report's figures.

A row of the viewer's list is one pair judged in one cell (judge, protocol, dataset, temperature,
decoding, and the step of a multi-call protocol).  Its outcomes come from
:func:`verdictlab.stats.modal_verdicts` -- the units behind C, phi and A -- under the same unparsed
policy as the report, never from a second copy of those rules:

* ``flipped``: the pair is not order-invariant (P(i) = 0: the modal verdicts of AB and BA differ, or
  one is split).  A pair judged in one order only cannot flip.
* ``unstable``: the repetitions of one of its orders disagree (N(i,o) = 0).
* ``wrong``: a modal verdict m(i,o) differs from the label, on pairs labelled A or B (the units of A).
* ``disagree``: a modal verdict differs from the label, ties included (the units of kappa and alpha):
  with human labels, where the judge and the people part.
* ``unparsed``: at least one of its judgments has no verdict (counted, whatever the policy).

Under unparsed ``exclude`` an order whose every verdict is unparsed has no modal verdict and takes
no part in the first four; under ``"wrong"`` unparsed is a value of its own, as in the figures.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import CELL_KEY, DECISIVE, LABELS, ORDERS
from ..stats import modal_verdicts

__all__ = ["OUTCOMES", "PAIR_KEY", "pair_outcomes"]

#: the columns naming one row of the list: the cell with its decoding, the step, the pair
PAIR_KEY: tuple[str, ...] = (*CELL_KEY, "step", "item_id")
#: the outcomes a list can be filtered by, in the order the viewer offers them
OUTCOMES: tuple[str, ...] = ("flipped", "unstable", "wrong", "disagree", "unparsed")


def pair_outcomes(judgments: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY) -> pd.DataFrame:
    """One row per (cell, step, pair) of ``judgments`` (at least :data:`PAIR_KEY`, ``order``, ``rep``,
    ``verdict``, ``label``; e.g. :meth:`verdictlab.store.RunStore.judgment_keys`), in the order of the
    key: the key columns, ``label``, ``n_judgments``, ``n_unparsed``, ``modal_AB``, ``modal_BA`` (the
    modal verdict of each order, ``None`` where it has none) and the boolean :data:`OUTCOMES`."""
    key = list(PAIR_KEY)
    columns = [*key, "label", "n_judgments", "n_unparsed", *(f"modal_{o}" for o in ORDERS), *OUTCOMES]
    if judgments.empty:
        return pd.DataFrame({c: pd.Series(dtype=bool if c in OUTCOMES else float if c == "temperature"
                                          else np.int64 if c.startswith("n_") else object) for c in columns})
    j = judgments.assign(step=_filled(judgments["step"], ""), decoding=_filled(judgments["decoding"], "free"))
    base = j.assign(_unparsed=j["verdict"].isna()).groupby(key, sort=True, observed=True, dropna=False).agg(
        n_judgments=("order", "size"), n_unparsed=("_unparsed", "sum"), label=("label", "first"))
    base = base.reset_index()
    base["label"] = base["label"].astype("object").where(base["label"].notna(), None)
    units = _unit_flags(j, policy)
    out = base.merge(units, on=key, how="left", sort=False)
    for o in ORDERS:
        col = f"modal_{o}"
        out[col] = out[col].astype("object").where(out[col].notna(), None) if col in out else None
    for flag in ("flipped", "unstable", "wrong", "disagree"):
        out[flag] = out[flag].fillna(False).astype(bool) if flag in out else False
    out["unparsed"] = out["n_unparsed"].to_numpy() > 0
    out["n_judgments"] = out["n_judgments"].astype(np.int64)
    out["n_unparsed"] = out["n_unparsed"].astype(np.int64)
    return out[columns]


def _filled(col: pd.Series, value: str) -> pd.Series:
    """``col`` with missing values as ``value`` (a categorical column stays categorical)."""
    if not col.isna().any():
        return col
    if isinstance(col.dtype, pd.CategoricalDtype):
        if value not in col.cat.categories:
            col = col.cat.add_categories([value])
        return col.fillna(value)
    return col.astype("object").fillna(value)


def _unit_flags(j: pd.DataFrame, policy: FigurePolicy) -> pd.DataFrame:
    """Per (cell, step, pair): the flags of its (order) units from :func:`modal_verdicts`, and each
    order's modal verdict."""
    key = list(PAIR_KEY)
    mv = modal_verdicts(j, policy=policy, by=CELL_KEY)
    if "step" not in mv.columns:            # modal_verdicts keys by step only where steps exist
        mv["step"] = ""
    if mv.empty:           # every verdict unparsed and excluded: no unit has a modal verdict
        return j[key].drop_duplicates().assign(flipped=False, unstable=False, wrong=False, disagree=False,
                                               modal_AB=None, modal_BA=None)
    labels = j.groupby(["dataset", "item_id"], observed=True, sort=False)["label"].first().reset_index()
    labels = labels.astype({"dataset": "object", "item_id": "object", "label": "object"})
    label = mv[["dataset", "item_id"]].astype("object").merge(labels, how="left", on=["dataset", "item_id"],
                                                                 sort=False)["label"].to_numpy()
    mode = mv["mode"].astype("object").to_numpy()
    mv = mv.assign(
        _flip=mv["order_invariant"].eq(False).fillna(False).astype(bool),
        _unstable=~mv["consistent"].astype(bool),
        _wrong=np.isin(label, DECISIVE) & (mode != label),
        _disagree=np.isin(label, LABELS) & (mode != label),
    )
    g = mv.groupby(key, sort=False, observed=True, dropna=False)
    flags = g.agg(flipped=("_flip", "any"), unstable=("_unstable", "any"), wrong=("_wrong", "any"),
                  disagree=("_disagree", "any"))
    modes = mv.pivot_table(index=key, columns="order", values="mode", aggfunc="first", dropna=False,
                           observed=True)
    for o in ORDERS:
        flags[f"modal_{o}"] = modes[o].reindex(flags.index) if o in modes.columns else None
    return flags.reset_index()
