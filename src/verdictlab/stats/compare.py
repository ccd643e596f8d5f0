"""Paired comparisons of judges (or protocols): exact McNemar on parse-shared units, Holm-corrected."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import Order
from .reliability import DEFAULT_BY, unit_table
from .significance import holm_adjust, mcnemar_exact

__all__ = ["paired_mcnemar"]


def paired_mcnemar(judgments: pd.DataFrame, *, by: str = "judge", order: Sequence[str] | None = None,
                   all_pairs: bool = False, policy: FigurePolicy = DEFAULT_POLICY, alpha: float = 0.05,
                   cell_keys: Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Compare the values of ``by`` (judges or protocols) pairwise within each stratum of the other
    cell keys (dataset, protocol/judge, temperature[, step]).

    The unit of a test is a labelled (item, order) with one verdict per entity: the modal verdict over
    repetitions (a split mode counts as wrong).  Only *parse-shared* units enter a test: under
    unparsed ``exclude`` a unit where either entity has no parsed verdict is dropped (counted in
    ``n_dropped``); under ``"wrong"`` an unparsed unit is a wrong answer and stays.  The two orders
    of an item are separate units (they are not independent; read p as approximate).

    Pairs are adjacent in ``order`` (default: first appearance) or all pairs with ``all_pairs``.
    p-values are Holm-adjusted across the whole family (every stratum and pair) in ``p_holm``;
    ``significant`` = p_holm < alpha."""
    if by not in cell_keys:
        raise ValueError(f"by must be one of {tuple(cell_keys)}, got {by!r}")
    cells, u = unit_table(judgments, policy=policy, by=cell_keys)
    keys = list(cells.columns)
    strata_keys = [k for k in keys if k != by]
    lab = u["pair_label"][u["unit_pair"]]
    labelled = lab >= 0
    units = cells.iloc[u["unit_cell"][labelled]].reset_index(drop=True)
    units["item_id"] = judgments["item_id"].to_numpy()[u["pair_row"][u["unit_pair"][labelled]]]
    units["order"] = np.where(u["unit_order"][labelled] == 0, Order.AB.value, Order.BA.value)
    units["correct"] = (u["mode"][labelled] == lab[labelled]).astype(float)
    entities = list(order) if order is not None else list(pd.unique(judgments[by]))
    extra = [e for e in pd.unique(judgments[by]) if e not in entities]
    entities += extra
    if all_pairs:
        pairs = list(combinations(entities, 2))
    else:
        pairs = list(zip(entities[:-1], entities[1:], strict=True))
    rows = []
    groups = units.groupby(strata_keys, sort=True, dropna=False) if strata_keys else [((), units)]
    for skey, g in groups:
        skey = skey if isinstance(skey, tuple) else (skey,)
        wide = g.pivot_table(index=["item_id", "order"], columns=by, values="correct", aggfunc="first")
        for x, y in pairs:
            if x not in wide.columns or y not in wide.columns:
                continue
            r = mcnemar_exact(wide[x].to_numpy(), wide[y].to_numpy())
            rows.append({**dict(zip(strata_keys, skey, strict=True)), f"{by}_x": x, f"{by}_y": y,
                         "n_shared": r.n_shared, "n_dropped": r.n_dropped, "acc_x": r.acc_x,
                         "acc_y": r.acc_y, "only_x": r.only_x, "only_y": r.only_y, "p": r.p_value})
    out = pd.DataFrame(rows, columns=[*strata_keys, f"{by}_x", f"{by}_y", "n_shared", "n_dropped",
                                      "acc_x", "acc_y", "only_x", "only_y", "p"])
    out["p_holm"] = holm_adjust(out["p"].to_numpy(float)) if len(out) else []
    out["significant"] = out["p_holm"] < alpha
    out.attrs.update({"by": by, "family_size": len(out), "alpha": alpha, "unparsed": policy.unparsed.value,
                      "pairs": "all" if all_pairs else "adjacent", "order": entities})
    return out
