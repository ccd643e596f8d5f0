"""Judge drift and evaluator replacement: paired comparison of two sets of verdicts on the same items,
and a control chart over a series of runs on a fixed anchor set.

Pairwise (:func:`drift_pair`)
-----------------------------
Side ``a`` (the reference: old version, first date, current vendor) and side ``b`` (the candidate)
are the same cells (protocol x dataset x temperature [x step]) judged on the same items.  The unit
is an (item, order) with one *modal* verdict per side over its repetitions (a split mode has no
verdict); only units present on both sides are used (``n_units``).

* ``kappa``       Cohen's kappa between the two sides' modal verdicts (A / B / tie) on units where
                  both have one.
* ``flip_rate``   share of those units whose modal verdict differs (Wilson interval).
* ``mcnemar_p``   exact McNemar on correctness (modal verdict == gold label; a split mode is wrong,
                  an unparsed unit is left out on both sides) over labelled units;
                  ``mcnemar_p_holm`` Holm-adjusted across every cell of the comparison.
* ``delta_A``     A_b - A_a on the labelled shared units (A = mean of 1[mode = label], as in
                  :func:`verdictlab.stats.reliability`), with a paired percentile bootstrap over
                  items (both sides of an item move together) -> ``delta_A_lo``, ``delta_A_hi``.
* ``delta_T``     T_b - T_a with T = C (A - phi q), q = 1/2, on the shared items; same bootstrap.
* equivalence     two one-sided tests at level ``alpha`` in bootstrap form: the replacement is
                  ``equivalent = "yes"`` when the (1 - 2 alpha) interval of delta_A lies inside
                  (-margin, +margin), ``"no"`` when it lies wholly outside [-margin, +margin] (the
                  change is larger than the margin), otherwise ``"inconclusive"``.

Series (:func:`drift_series`)
-----------------------------
Agreement with the anchor labels per run (accuracy on labelled units; each labelled item weighs one,
its orders averaged, so n_t is the number of labelled items -- the two orders of an item are not
independent), standardised against the baseline (the pooled accuracy p0 of the first ``baseline``
runs): z_t = (A_t - p0) / sqrt(p0 (1 - p0) / n_t).
CUSUM (default): S+_t = max(0, S+_{t-1} + z_t - k), S-_t = max(0, S-_{t-1} - z_t - k); the first run
with S+ or S- > h is flagged and the shift's onset is estimated as the run after the last zero of
that sum.  EWMA: Z_t = lam z_t + (1 - lam) Z_{t-1} (Z_0 = 0), flagged when
|Z_t| > L sqrt(lam / (2 - lam) (1 - (1 - lam)^(2t))).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as _st

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import CELL_KEY, DECISIVE, VERDICTS, Order
from ._frame import with_cell_columns
from .agreement import cohen_kappa
from .intervals import percentile_bounds, wilson_bounds
from .reliability import unit_table
from .significance import holm_adjust, mcnemar_exact

__all__ = ["DRIFT_COLUMNS", "EQUIVALENCE", "unit_frame", "drift_pair", "equivalence_decision",
           "ranking_change", "ControlChart", "cusum_chart", "ewma_chart", "drift_series"]

#: a drift cell: the cell key without the judge (the two sides compared are two judges or two runs)
CELL: tuple[str, ...] = tuple(c for c in CELL_KEY if c != "judge")
EQUIVALENCE: tuple[str, ...] = ("yes", "no", "inconclusive")
_MODE = dict(enumerate(VERDICTS))   # unit_table mode codes 0, 1, 2
DRIFT_COLUMNS: tuple[str, ...] = (
    *CELL, "n_units", "n_items", "n_labelled_units", "kappa", "n_kappa", "flip_rate", "flip_lo", "flip_hi",
    "A_a", "A_b", "T_a", "T_b", "only_a", "only_b", "mcnemar_p", "mcnemar_p_holm", "delta_A", "delta_A_lo",
    "delta_A_hi", "delta_T", "delta_T_lo", "delta_T_hi", "tost_lo", "tost_hi", "margin", "equivalent",
)


def unit_frame(judgments: pd.DataFrame, *, by: Sequence[str] = CELL, policy: FigurePolicy = DEFAULT_POLICY
               ) -> pd.DataFrame:
    """One row per (cell, item, order): ``mode`` ('A' | 'B' | 'tie' | None for split or unparsed),
    ``N`` (all repetitions agree), ``label`` and ``correct`` (1.0 / 0.0, NaN when unlabelled; a split
    mode is wrong; an unparsed unit is dropped under unparsed ``exclude`` and wrong under ``wrong``)."""
    judgments = with_cell_columns(judgments, by)
    cells, u = unit_table(judgments, policy=policy, by=by)
    keys = list(cells.columns)
    out = cells.iloc[u["unit_cell"]].reset_index(drop=True)
    rows = u["pair_row"][u["unit_pair"]]
    out["item_id"] = judgments["item_id"].to_numpy()[rows].astype(str)
    out["order"] = np.where(u["unit_order"] == 0, Order.AB.value, Order.BA.value)
    m = u["mode"]
    out["mode"] = pd.Series(m).map(_MODE).astype(object).where(m >= 0, None).to_numpy()
    out["N"] = u["N"].astype(bool)
    lab = u["pair_label"][u["unit_pair"]]
    labels = np.full(len(lab), None, dtype=object)
    labels[lab == 0], labels[lab == 1] = DECISIVE
    out["label"] = labels
    # under "exclude" a unit without a parsed verdict is not in the table; under "wrong" its mode
    # is the unparsed code, which never equals a label: wrong
    out["correct"] = np.where(lab >= 0, (m == lab).astype(float), np.nan)
    out.attrs["cell_keys"] = keys
    return out


def _pair_stats(u: pd.DataFrame, items: np.ndarray, n_items: int) -> np.ndarray:
    """Per item: [N sum, units, flipped, both orders, correct, labelled] for the T / A bootstrap."""
    code = items
    def s(x: np.ndarray) -> np.ndarray:
        return np.bincount(code, weights=np.asarray(x, dtype=float), minlength=n_items)
    ab = u["order"].to_numpy() == Order.AB.value
    mode = u["mode"].to_numpy(object)
    m_ab = np.full(n_items, None, dtype=object)
    m_ba = np.full(n_items, None, dtype=object)
    m_ab[code[ab]] = mode[ab]
    m_ba[code[~ab]] = mode[~ab]
    has_ab = np.zeros(n_items, bool)
    has_ba = np.zeros(n_items, bool)
    has_ab[code[ab]] = True
    has_ba[code[~ab]] = True
    both = has_ab & has_ba
    agree = both & (m_ab == m_ba) & pd.notna(m_ab)
    corr = u["correct"].to_numpy(float)
    return np.column_stack([s(u["N"].to_numpy()), s(np.ones(len(u))), (both & ~agree).astype(float),
                            both.astype(float), s(np.nan_to_num(corr)), s(~np.isnan(corr))])


def _figures(st: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A and T from summed pair statistics (last axis = the six columns of :func:`_pair_stats`)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        C = st[..., 0] / st[..., 1]
        phi = st[..., 2] / st[..., 3]
        A = st[..., 4] / st[..., 5]
    return A, C * (A - 0.5 * phi)


def equivalence_decision(lo: float, hi: float, margin: float) -> str:
    """TOST in interval form: 'yes' if (lo, hi) lies inside (-margin, margin), 'no' if it lies wholly
    outside [-margin, margin], else 'inconclusive' (NaN bounds: inconclusive)."""
    if margin <= 0:
        raise ValueError(f"margin must be > 0, got {margin}")
    if np.isnan(lo) or np.isnan(hi):
        return "inconclusive"
    if -margin < lo and hi < margin:
        return "yes"
    if lo > margin or hi < -margin:
        return "no"
    return "inconclusive"


@dataclass(frozen=True)
class _Opts:
    margin: float
    alpha: float
    confidence: float
    n_boot: int
    seed: int


def _cell_row(ua: pd.DataFrame, ub: pd.DataFrame, o: _Opts) -> dict[str, object]:
    m = ua.merge(ub, on=["item_id", "order"], suffixes=("_a", "_b"))
    both_mode = m["mode_a"].notna() & m["mode_b"].notna()
    kap = cohen_kappa(m.loc[both_mode, "mode_a"].to_numpy(object), m.loc[both_mode, "mode_b"].to_numpy(object))
    n_dec = int(both_mode.sum())
    n_flip = int((m.loc[both_mode, "mode_a"] != m.loc[both_mode, "mode_b"]).sum())
    flo, fhi = wilson_bounds(n_flip, n_dec, confidence=o.confidence)
    lab = m["correct_a"].notna() & m["correct_b"].notna()
    mc = mcnemar_exact(m.loc[lab, "correct_b"].to_numpy(), m.loc[lab, "correct_a"].to_numpy())
    # paired bootstrap over items; units outside the labelled shared set keep their C / phi role
    mm = m.copy()
    mm.loc[~lab, ["correct_a", "correct_b"]] = np.nan
    items, uniq = pd.factorize(mm["item_id"], sort=True)
    n_items = len(uniq)
    side = {s: _pair_stats(mm.rename(columns={f"mode_{s}": "mode", f"N_{s}": "N", f"correct_{s}": "correct"}),
                           items.astype(np.int64), n_items) for s in ("a", "b")}
    A_a, T_a = _figures(side["a"].sum(axis=0))
    A_b, T_b = _figures(side["b"].sum(axis=0))
    rng = np.random.default_rng(o.seed)
    w = np.stack([np.bincount(rng.integers(0, n_items, n_items), minlength=n_items) for _ in range(o.n_boot)]
                 ) if n_items else np.zeros((0, 0))
    bA_a, bT_a = _figures(w @ side["a"]) if n_items else (np.array([np.nan]),) * 2
    bA_b, bT_b = _figures(w @ side["b"]) if n_items else (np.array([np.nan]),) * 2
    dA, dT = bA_b - bA_a, bT_b - bT_a
    a_lo, a_hi = percentile_bounds(dA, confidence=o.confidence)
    t_lo, t_hi = percentile_bounds(dT, confidence=o.confidence)
    e_lo, e_hi = percentile_bounds(dA, confidence=1.0 - 2.0 * o.alpha)
    return {"n_units": len(m), "n_items": n_items, "n_labelled_units": int(lab.sum()), "kappa": kap.value,
            "n_kappa": kap.n, "flip_rate": n_flip / n_dec if n_dec else np.nan, "flip_lo": float(flo),
            "flip_hi": float(fhi), "A_a": float(A_a), "A_b": float(A_b), "T_a": float(T_a), "T_b": float(T_b),
            "only_a": mc.only_y, "only_b": mc.only_x, "mcnemar_p": mc.p_value if lab.any() else np.nan,
            "delta_A": float(A_b - A_a), "delta_A_lo": float(a_lo), "delta_A_hi": float(a_hi),
            "delta_T": float(T_b - T_a), "delta_T_lo": float(t_lo), "delta_T_hi": float(t_hi),
            "tost_lo": float(e_lo), "tost_hi": float(e_hi), "margin": o.margin,
            "equivalent": equivalence_decision(float(e_lo), float(e_hi), o.margin)}


def drift_pair(judgments_a: pd.DataFrame, judgments_b: pd.DataFrame, *, margin: float = 0.02,
               alpha: float = 0.05, policy: FigurePolicy = DEFAULT_POLICY, by: Sequence[str] = CELL) -> pd.DataFrame:
    """Drift figures per cell between two sets of verdicts on the same items (module docstring).

    Each frame holds one judge (or one side of a comparison); cells are ``by`` (protocol, dataset,
    temperature).  Cells present on one side only are left out (listed in ``attrs["unmatched"]``).
    ``policy``: the unparsed rule, the confidence of the intervals, the bootstrap resamples and seed;
    ``alpha``: the level of the equivalence test (TOST) against ``margin``."""
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    opts = _Opts(margin, alpha, policy.confidence, policy.n_bootstrap, policy.seed)
    ua = unit_frame(judgments_a, by=by, policy=policy)
    ub = unit_frame(judgments_b, by=by, policy=policy)
    keys = [k for k in ua.attrs["cell_keys"] if k in ub.attrs["cell_keys"]]
    ga = dict(iter(ua.groupby(keys, sort=True))) if len(ua) else {}
    gb = dict(iter(ub.groupby(keys, sort=True))) if len(ub) else {}
    rows = []
    for key in sorted(set(ga) & set(gb), key=str):
        kt = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(keys, kt, strict=True)), **_cell_row(ga[key], gb[key], opts)})
    cols = [*keys, *[c for c in DRIFT_COLUMNS if c not in CELL]]
    out = pd.DataFrame(rows, columns=cols)
    out["mcnemar_p_holm"] = holm_adjust(out["mcnemar_p"].to_numpy(float)) if len(out) else []
    out.attrs.update({"margin": margin, "alpha": alpha, "confidence": policy.confidence,
                      "n_boot": policy.n_bootstrap, "unparsed": policy.unparsed.value, "cell_keys": keys,
                      "unmatched": sorted(map(str, set(ga) ^ set(gb)))})
    return out


def ranking_change(drift: pd.DataFrame, *, figure: str = "A", within: Sequence[str] = ("dataset", "temperature")
                   ) -> pd.DataFrame:
    """How the ranking of protocols by ``figure`` (A or T) changes from side a to side b, per
    ``within`` stratum: ``ranking_a``, ``ranking_b`` (best first), Kendall ``tau`` and ``top_changed``."""
    rows = []
    for key, g in drift.groupby(list(within), sort=True):
        kt = key if isinstance(key, tuple) else (key,)
        ra = g.sort_values(f"{figure}_a", ascending=False, kind="stable")["protocol"].tolist()
        rb = g.sort_values(f"{figure}_b", ascending=False, kind="stable")["protocol"].tolist()
        if len(g) >= 2:
            tau = _st.kendalltau(g[f"{figure}_a"].to_numpy(float), g[f"{figure}_b"].to_numpy(float)).statistic
        else:
            tau = np.nan
        rows.append({**dict(zip(within, kt, strict=True)), "figure": figure, "ranking_a": ra, "ranking_b": rb,
                     "tau": float(tau), "top_changed": bool(ra[:1] != rb[:1]), "n_protocols": len(g)})
    return pd.DataFrame(rows, columns=[*within, "figure", "ranking_a", "ranking_b", "tau", "top_changed",
                                       "n_protocols"])


# -- series --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ControlChart:
    """A control chart over runs: standardised agreement ``z`` and the chart statistic(s) per run,
    the first flagged run (index, or None) and the estimated onset of the shift."""

    method: str
    accuracy: np.ndarray
    n: np.ndarray
    z: np.ndarray
    upper: np.ndarray          # CUSUM S+ (or EWMA Z)
    lower: np.ndarray          # CUSUM S- (or the EWMA control limit)
    flagged: np.ndarray        # bool per run
    first_flagged: int | None
    onset: int | None
    baseline: float
    params: dict[str, float]


def _standardise(correct: Sequence[float], n: Sequence[int], baseline: int) -> tuple[np.ndarray, np.ndarray, float]:
    k = np.asarray(correct, dtype=float)
    m = np.asarray(n, dtype=float)
    if len(k) != len(m) or len(k) < baseline + 1:
        raise ValueError(f"need at least {baseline + 1} runs with counts, got {len(k)}")
    if (m <= 0).any():
        raise ValueError("every run needs at least one labelled unit")
    p0 = float(k[:baseline].sum() / m[:baseline].sum())
    sd = np.sqrt(max(p0 * (1 - p0), 1e-12) / m)
    return k / m, (k / m - p0) / sd, p0


def cusum_chart(correct: Sequence[float], n: Sequence[int], *, baseline: int = 1, k: float = 0.5,
                h: float = 4.0) -> ControlChart:
    """Two-sided tabular CUSUM of the standardised accuracy per run (module docstring).
    ``correct[t]`` right answers out of ``n[t]`` labelled units in run t."""
    acc, z, p0 = _standardise(correct, n, baseline)
    T = len(z)
    sp, sm = np.zeros(T), np.zeros(T)
    prev_p = prev_m = 0.0
    for t in range(T):   # a recursion over runs (few), not over judgments
        prev_p = sp[t] = max(0.0, prev_p + z[t] - k) if t >= baseline else 0.0
        prev_m = sm[t] = max(0.0, prev_m - z[t] - k) if t >= baseline else 0.0
    eps = 1e-9 * max(1.0, h)   # S == h (up to rounding) is not a signal
    flagged = (sp > h + eps) | (sm > h + eps)
    first = int(np.argmax(flagged)) if flagged.any() else None
    onset = None
    if first is not None:
        s = sp if sp[first] > h + eps else sm
        zeros = np.flatnonzero(s[:first] == 0)
        onset = int(zeros[-1]) + 1 if len(zeros) else baseline
    return ControlChart("cusum", acc, np.asarray(n, int), z, sp, sm, flagged, first, onset, p0,
                        {"k": k, "h": h, "baseline": baseline})


def ewma_chart(correct: Sequence[float], n: Sequence[int], *, baseline: int = 1, lam: float = 0.3,
               L: float = 3.0) -> ControlChart:
    """EWMA chart of the standardised accuracy per run (module docstring)."""
    if not 0 < lam <= 1:
        raise ValueError(f"lam must be in (0, 1], got {lam}")
    acc, z, p0 = _standardise(correct, n, baseline)
    T = len(z)
    Z, lim = np.zeros(T), np.zeros(T)
    prev = 0.0
    for t in range(baseline, T):
        prev = Z[t] = lam * z[t] + (1 - lam) * prev
        j = t - baseline + 1
        lim[t] = L * np.sqrt(lam / (2 - lam) * (1 - (1 - lam) ** (2 * j)))
    flagged = np.abs(Z) > lim
    flagged[:baseline] = False
    first = int(np.argmax(flagged)) if flagged.any() else None
    return ControlChart("ewma", acc, np.asarray(n, int), z, Z, lim, flagged, first, first, p0,
                        {"lam": lam, "L": L, "baseline": baseline})


def drift_series(frames: Sequence[pd.DataFrame], *, method: str = "cusum", baseline: int = 1,
                 policy: FigurePolicy = DEFAULT_POLICY, **params: float) -> ControlChart:
    """Control chart of agreement with the anchor labels over runs ``frames`` (each one run's
    judgments of one judge x protocol on the anchor set; correctness per labelled (item, order) unit)."""
    correct, n = [], []
    for f in frames:
        u = unit_frame(f, by=(), policy=policy) if len(f) else pd.DataFrame({"item_id": [], "correct": []})
        # the two orders of an item are not independent: the item (its mean correctness over its
        # labelled units) is the unit of the chart, so n is the number of labelled items
        per_item = u.dropna(subset=["correct"]).groupby("item_id")["correct"].mean()
        correct.append(float(per_item.sum()))
        n.append(len(per_item))
    if method == "cusum":
        return cusum_chart(correct, n, baseline=baseline, **params)
    if method == "ewma":
        return ewma_chart(correct, n, baseline=baseline, **params)
    raise ValueError(f"method must be 'cusum' or 'ewma', got {method!r}")
