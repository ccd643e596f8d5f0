"""What constrained decoding does to a judge: free vs constrained cells of the same judge x protocol.

:func:`decoding_effect` pairs, for every ``(judge, protocol, dataset, temperature)`` judged in both
decoding modes, the free cell with the constrained one on the SAME items (pairs judged in both modes)
and returns one row with, per mode, C, phi, A, T (definitions of :mod:`verdictlab.stats.reliability`)
and the parse-failure rate, then the differences constrained - free:

* ``dC, dphi, dA, dT`` with paired percentile-bootstrap intervals (``*_lo, *_hi``): pairs are
  resampled once per replicate and the SAME resample is used for both modes, so the interval is of
  the paired difference;
* ``d_unparsed`` = parse-failure rate constrained - free (over judgments, failed calls included);
* ``unparsed_removed`` = share of the free mode's unparsed outputs the constraint removed,
  (pf_free - pf_constrained) / pf_free (NaN when the free outputs were all readable);
* ``mechanism``: the constrained mechanism the backend recorded (``constrained: ...`` in the
  parse detail), its commonest value.

What a row means in words is the report's (:func:`verdictlab.report.readings.decoding_reading`).

Figures are computed from per-pair sums (ratio estimators):
C = sum N(i,o) / units; phi = pairs whose two modal verdicts differ / pairs with both orders;
A = units whose mode is the label / labelled units; T = C (A - phi q) with q = 1/2 (the pairwise
protocols allow no tie; a cell with judge ``tie`` verdicts still uses q = 1/2 here and says so in
``q``).  A split mode (no single modal verdict) is never consistent, never order-invariant and
never right, as in :func:`~verdictlab.stats.reliability.reliability`.  ``unparsed`` is the same
policy (``exclude``: unparsed verdicts are dropped; ``wrong``: they are a value of their own).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import CELL_KEY, Order
from ._frame import require_columns, safe_div, with_cell_columns
from .intervals import percentile_bounds

__all__ = ["decoding_effect", "DECODING_EFFECT_COLUMNS"]

#: a free cell and its constrained twin: the cell key without the decoding
GROUP_KEYS: tuple[str, ...] = tuple(c for c in CELL_KEY if c != "decoding")
MODES: tuple[str, str] = ("free", "constrained")
FIGURES: tuple[str, ...] = ("C", "phi", "A", "T")
# per-pair sums, in this column order: C num/den, phi num/den, A num/den, rows, unparsed rows
_SUMS = ("c_num", "c_den", "phi_num", "phi_den", "a_num", "a_den", "rows", "unparsed_rows")
_MECH_RE = re.compile(r"constrained: ([^;|]+)")

#: the columns of :func:`decoding_effect` after the group keys
DECODING_EFFECT_COLUMNS: tuple[str, ...] = (
    "n_pairs", "n_judgments_free", "n_judgments_constrained",
    *(f"{f}_{m}" for m in MODES for f in FIGURES),
    "unparsed_free", "unparsed_constrained", "d_unparsed", "unparsed_removed",
    *(f"d{f}{s}" for f in FIGURES for s in ("", "_lo", "_hi")),
    "q", "unparsed_policy", "confidence", "n_bootstrap", "mechanism",
)


def _pair_sums(j: pd.DataFrame, policy: FigurePolicy) -> pd.DataFrame:
    """Per (group keys, decoding, item) sums of :data:`_SUMS`."""
    keys = [*GROUP_KEYS, "decoding", "item_id"]
    verdict = j["verdict"].astype("object")
    is_unparsed = ~verdict.isin(["A", "B", "tie"])
    code = verdict.where(~is_unparsed, "unparsed")
    rows = j.assign(_code=code, _unp=is_unparsed.astype(int))
    per_item = rows.groupby(keys, sort=False, dropna=False).agg(rows=("_unp", "size"),
                                                                unparsed_rows=("_unp", "sum"))
    labels = rows.groupby(keys, sort=False, dropna=False)["label"].first()
    kept = rows[~is_unparsed] if policy.drops_unparsed else rows
    counts = kept.groupby([*keys, "order", "_code"], sort=False, dropna=False).size().unstack("_code", fill_value=0)
    total = counts.sum(axis=1)
    top = counts.max(axis=1)
    n_top = counts.eq(top, axis=0).sum(axis=1)
    mode = counts.idxmax(axis=1).where(n_top == 1, "split")
    units = pd.DataFrame({"mode": mode, "N": ((top == total) & (n_top == 1)).astype(int)}).reset_index()
    units["label"] = labels.reindex(pd.MultiIndex.from_frame(units[keys])).to_numpy()
    units["labelled"] = units["label"].isin(["A", "B"])
    units["right"] = (units["labelled"] & (units["mode"] == units["label"])).astype(int)
    g = units.groupby(keys, sort=False, dropna=False)
    out = pd.DataFrame({"c_num": g["N"].sum(), "c_den": g["N"].size(),
                        "a_num": g["right"].sum(), "a_den": g["labelled"].sum()})
    by_order = units.pivot_table(index=keys, columns="order", values="mode", aggfunc="first", dropna=False)
    ab = by_order[Order.AB.value] if Order.AB.value in by_order else pd.Series(np.nan, index=by_order.index)
    ba = by_order[Order.BA.value] if Order.BA.value in by_order else pd.Series(np.nan, index=by_order.index)
    both = ab.notna() & ba.notna()
    same = both & (ab == ba) & (ab != "split")
    out["phi_den"] = both.astype(int).reindex(out.index).fillna(0)
    out["phi_num"] = (both & ~same).astype(int).reindex(out.index).fillna(0)
    out = per_item.join(out, how="left").fillna(0)
    return out[list(_SUMS)].astype(float)


def _figures(s: np.ndarray, q: float) -> np.ndarray:
    """C, phi, A, T and the parse-failure rate from sums (last axis in :data:`_SUMS` order)."""
    C = safe_div(s[..., 0], s[..., 1])
    phi = safe_div(s[..., 2], s[..., 3])
    A = safe_div(s[..., 4], s[..., 5])
    T = C * (A - phi * q)
    pf = safe_div(s[..., 7], s[..., 6])
    return np.stack([C, phi, A, T, pf], axis=-1)


def _mechanism(j: pd.DataFrame) -> str | None:
    if "parse_detail" not in j.columns:
        return None
    found = j["parse_detail"].dropna().astype(str).str.extract(_MECH_RE, expand=False).dropna().str.strip()
    return None if found.empty else str(found.value_counts().index[0])


def decoding_effect(judgments: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY,
                    by: Sequence[str] = GROUP_KEYS) -> pd.DataFrame:
    """Free vs constrained, paired on items, per (judge, protocol, dataset, temperature).

    ``judgments`` needs ``judge, protocol, dataset, temperature, item_id, order, verdict, label`` and
    ``decoding`` (a frame without it is all 'free' and gives an empty result).  Returns one row per
    group judged in both modes, columns ``by`` + :data:`DECODING_EFFECT_COLUMNS`.
    """
    if tuple(by) != GROUP_KEYS:
        raise ValueError(f"decoding_effect groups by {GROUP_KEYS}")
    require_columns(judgments, [*GROUP_KEYS, "item_id", "order", "verdict", "label"], who="decoding_effect")
    cols = [*GROUP_KEYS, *DECODING_EFFECT_COLUMNS]
    if "decoding" not in judgments.columns or judgments.empty:
        return pd.DataFrame(columns=cols)
    j = with_cell_columns(judgments)
    if "step" in j.columns and (j["step"].fillna("") != "").any():
        j = j[j["step"].fillna("") == ""]        # multi-step protocols are not compared here
    j = j[j["decoding"].isin(MODES)]
    sums = _pair_sums(j, policy)
    rng = np.random.default_rng(policy.seed)
    n_bootstrap = policy.n_bootstrap
    q = 0.5
    rows = []
    for key, part in sums.groupby(level=list(GROUP_KEYS), sort=True, dropna=False):
        modes = part.index.get_level_values("decoding")
        if not set(MODES) <= set(modes):
            continue
        free = part[modes == "free"].droplevel(list(GROUP_KEYS) + ["decoding"])
        con = part[modes == "constrained"].droplevel(list(GROUP_KEYS) + ["decoding"])
        items = free.index.intersection(con.index)
        if items.empty:
            continue
        m = np.stack([free.loc[items].to_numpy(), con.loc[items].to_numpy()])   # (2, n, k)
        point = _figures(m.sum(axis=1), q)                                     # (2, 5)
        row: dict[str, object] = dict(zip(GROUP_KEYS, key if isinstance(key, tuple) else (key,), strict=True))
        row.update(n_pairs=len(items), n_judgments_free=int(m[0, :, 6].sum()),
                   n_judgments_constrained=int(m[1, :, 6].sum()))
        for k, mode in enumerate(MODES):
            for i, name in enumerate(FIGURES):
                row[f"{name}_{mode}"] = float(point[k, i])
        row.update(unparsed_free=float(point[0, 4]), unparsed_constrained=float(point[1, 4]),
                   d_unparsed=float(point[1, 4] - point[0, 4]),
                   unparsed_removed=float((point[0, 4] - point[1, 4]) / point[0, 4]) if point[0, 4] > 0
                   else float("nan"))
        diff = point[1, :4] - point[0, :4]
        if n_bootstrap > 0:
            n = len(items)
            w = rng.multinomial(n, np.full(n, 1.0 / n), size=n_bootstrap).astype(float)   # (B, n)
            boot = _figures(np.einsum("bn,mnk->bmk", w, m), q)                          # (B, 2, 5)
            lo, hi = percentile_bounds(boot[:, 1, :4] - boot[:, 0, :4], confidence=policy.confidence)
        else:
            lo = hi = np.full(4, np.nan)
        for i, name in enumerate(FIGURES):
            row[f"d{name}"], row[f"d{name}_lo"], row[f"d{name}_hi"] = float(diff[i]), float(lo[i]), float(hi[i])
        sel = j[(j["decoding"] == "constrained")]
        for c, v in zip(GROUP_KEYS, key if isinstance(key, tuple) else (key,), strict=True):
            sel = sel[sel[c] == v]
        row.update(q=q, unparsed_policy=policy.unparsed.value, confidence=policy.confidence, n_bootstrap=int(n_bootstrap),
                   mechanism=_mechanism(sel))
        rows.append(row)
    return pd.DataFrame(rows, columns=cols)
