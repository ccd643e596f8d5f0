"""The adaptive design's statistics: when a unit's outcome is decided, how many pairs and which share
of full-repetition pairs a target precision needs, and the figures of an adaptively run cell.

The estimands are those of the fixed R-repetition design (docs/definitions.md, "verdictlab's own figures"); the
adaptive design only skips calls that cannot change them:

* **Modes.** The modal verdict m(i,o) of R repetitions is decided as soon as no completion of the
  remaining calls can change it: the leading value's count exceeds every other value's count plus the
  calls left.  This must hold under both unparsed policies (an unparsed verdict is a value of its own
  under ``wrong`` and absent under ``exclude``), so the stored verdicts give the same mode, phi and A
  as the full R calls would, whatever policy the report uses.
* **Consistency.** N(i,o) needs every repetition when the unit is consistent, so C is estimated on a
  random subsample of pairs ("C pairs") run until N is decided (two different parsed verdicts seen, or
  all R).  Membership is a hash of (run seed, dataset, item id) below a fraction, fixed before any
  verdict is seen, so the subsample mean is unbiased for C; the pilot pairs (all at full R) are C pairs
  too.
* **Pairs.** Pairs are taken in a seeded random order.  A pilot of ``n_pilot`` pairs at full R gives
  the per-pair variances; :func:`plan_adaptive` then fixes the number of pairs and the C fraction that
  reach the target half-width at the fewest expected calls (delta method for T = C (A − q phi)).  The
  stopping rule uses the pilot's variances only, never the running estimate, so the final estimate is
  a fixed-n estimate given n (a two-stage design in the manner of Stein's); :func:`adaptive_reliability`
  gives its intervals by a pair-level BCa bootstrap (percentile bounds undercovered a small C).
  ``bench/cost_bench.py`` measures their coverage.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _st

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import DEFAULT_DECODING, Order
from ._frame import safe_div
from ._pair_bootstrap import bca_pair_bootstrap
from .reliability import DEFAULT_BY, reliability, unit_table

__all__ = [
    "AdaptivePlan",
    "adaptive_cells",
    "with_adaptive_figures",
    "adaptive_reliability",
    "c_pairs_from",
    "c_pair_draw",
    "calls_to_decide",
    "check_targets",
    "mode_decided",
    "pair_rank",
    "plan_adaptive",
    "unit_done",
]

FIGURES = ("C", "phi", "A", "T")


def _uniform(*parts: object) -> float:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def c_pair_draw(seed: int, dataset: str, item_id: str) -> float:
    """The pair's fixed U[0, 1) draw for C-subsample membership (a C pair when below the fraction)."""
    return _uniform("c-pair", seed, dataset, item_id)


def pair_rank(seed: int, dataset: str, item_id: str) -> float:
    """The pair's position key in the seeded random order in which pairs are added."""
    return _uniform("pair-order", seed, dataset, item_id)


def _decided_one(counts: Mapping[str, int], left: int) -> bool:
    if not counts:
        return False
    ranked = sorted(counts.values(), reverse=True)
    runner_up = ranked[1] if len(ranked) > 1 else 0
    return ranked[0] > runner_up + left


def mode_decided(verdicts: Sequence[str | None], reps: int) -> bool:
    """True when the modal verdict of ``reps`` repetitions is fixed by ``verdicts`` (the first calls)
    under both unparsed policies -- or when all ``reps`` calls are in.

    Worked example: R = 10, seen A A A A A A (6 calls): 6 > 0 + 4 left, decided.  Seen A A A A B
    (5 calls): 4 > 1 + 5? no."""
    left = reps - len(verdicts)
    if left <= 0:
        return True
    parsed = Counter(v for v in verdicts if v is not None)
    with_unparsed = Counter("\x00unparsed" if v is None else v for v in verdicts)
    return _decided_one(parsed, left) and _decided_one(with_unparsed, left)


def unit_done(verdicts: Sequence[str | None], reps: int, *, consistency: bool) -> bool:
    """Whether a unit needs no further call: its mode is decided and, for a C pair's unit
    (``consistency``), N is decided too (two different parsed verdicts seen -- N = 0 under both
    policies -- or all R calls in)."""
    if len(verdicts) >= reps:
        return True
    if not mode_decided(verdicts, reps):
        return False
    if not consistency:
        return True
    return len({v for v in verdicts if v is not None}) > 1


def calls_to_decide(verdicts: Sequence[str | None], reps: int, *, consistency: bool) -> int:
    """How many of a full-R sequence's calls the stopping rule would have made."""
    for k in range(1, len(verdicts) + 1):
        if unit_done(verdicts[:k], reps, consistency=consistency):
            return k
    return len(verdicts)


@dataclass(frozen=True)
class AdaptivePlan:
    """What :func:`plan_adaptive` decided from a pilot: ``n_pairs`` to judge (pilot included), the C
    fraction, the expected calls, and the fixed design's calls for the same precision (all pairs at
    full R, the fewest pairs that reach it).  ``reachable`` is False when even the whole pool at full
    R would not reach every target (then the plan is the whole pool, C fraction 1)."""

    n_pairs: int
    c_fraction: float
    expected_calls: float
    calls_per_mode_unit: float
    calls_per_c_unit: float
    fixed_n_pairs: int
    fixed_calls: int
    reachable: bool
    targets: dict[str, float] = field(default_factory=dict)
    pilot_figures: dict[str, float] = field(default_factory=dict)


def _pilot_pairs(pilot: pd.DataFrame, reps: int) -> pd.DataFrame:
    """Per pair of the pilot (one cell): c (mean N of its units), invariant (P), correct share over its
    labelled units (NaN when unlabelled), and the mean calls each stopping rule would have needed."""
    rows = []
    ordered = pilot.sort_values("rep", kind="stable")
    for (ds, item), g in ordered.groupby(["dataset", "item_id"], sort=True):
        unit_modes: dict[str, str | None] = {}
        n_list, mode_calls, c_calls, correct = [], [], [], []
        label = g["label"].iloc[0]
        for order, u in g.groupby("order", sort=True):
            seq = [None if pd.isna(v) else str(v) for v in u["verdict"]]
            parsed = [v for v in seq if v is not None]
            counts = Counter(parsed)
            top = counts.most_common(2)
            mode = top[0][0] if top and (len(top) == 1 or top[0][1] > top[1][1]) else None
            unit_modes[str(order)] = mode
            n_list.append(float(len(parsed) == len(seq) and len(counts) == 1))
            mode_calls.append(calls_to_decide(seq, reps, consistency=False))
            c_calls.append(calls_to_decide(seq, reps, consistency=True))
            if label in ("A", "B"):
                correct.append(float(mode == label))
        both = len(unit_modes) == 2
        invariant = float(both and unit_modes.get(Order.AB) is not None
                          and unit_modes.get(Order.AB) == unit_modes.get(Order.BA)) if both else np.nan
        rows.append({"dataset": ds, "item_id": item, "c": float(np.mean(n_list)), "invariant": invariant,
                     "correct": float(np.mean(correct)) if correct else np.nan,
                     "mode_calls": float(np.mean(mode_calls)), "c_calls": float(np.mean(c_calls)),
                     "units": len(unit_modes)})
    return pd.DataFrame(rows)


def _var(x: np.ndarray) -> float:
    x = x[np.isfinite(x)]
    return float(np.var(x, ddof=1)) if len(x) > 1 else 0.0


def _cov(x: np.ndarray, y: np.ndarray) -> float:
    ok = np.isfinite(x) & np.isfinite(y)
    return float(np.cov(x[ok], y[ok], ddof=1)[0, 1]) if ok.sum() > 1 else 0.0


def check_targets(targets: Mapping[str, float]) -> None:
    """Precision targets name figures of :data:`FIGURES` with half-widths in (0, 1)."""
    unknown = set(targets) - set(FIGURES)
    if unknown:
        raise ValueError(f"precision targets must name {FIGURES}; got {sorted(unknown)}")
    if not targets:
        raise ValueError("precision needs at least one target half-width (e.g. T: 0.03)")
    for name, h in targets.items():
        if isinstance(h, bool) or not (isinstance(h, int | float) and 0 < h < 1):
            raise ValueError(f"precision target for {name} must be a half-width in (0, 1), got {h!r}")


def plan_adaptive(pilot: pd.DataFrame, *, targets: Mapping[str, float], reps: int, pool_pairs: int,
                  confidence: float = 0.95, q: float = 0.5,
                  fractions: Iterable[float] = tuple(np.linspace(0.05, 1.0, 20))) -> AdaptivePlan:
    """Choose the number of pairs and the C fraction for one cell from its full-R ``pilot``.

    Variances per pair from the pilot: v_c (pair consistency c), v_g (g = correct + q·invariant, whose
    mean minus q is A − q phi) and their covariance; for n pairs and a C fraction f,
    Var(T) ≈ D² v_c/(f n) + C² v_g/n + 2 C D cov/n (D = A − q phi), Var(C) = v_c/(f n),
    Var(phi) = v_p/n, Var(A) = v_a/n.  For each f on a grid, the smallest n with z·SD ≤ target for
    every named figure; the plan takes the f with the fewest expected calls
    2 (n_pilot R + (n − n_pilot)(f·calls_c + (1 − f)·calls_mode))."""
    check_targets(targets)
    pp = _pilot_pairs(pilot, reps)
    if len(pp) < 10:
        raise ValueError(f"the pilot has {len(pp)} pair(s); at least 10 are needed to plan the design")
    z = float(_st.norm.ppf(0.5 + confidence / 2))
    c, inv, cor = pp["c"].to_numpy(), pp["invariant"].to_numpy(), pp["correct"].to_numpy()
    C = float(np.nanmean(c))
    phi = float(1 - np.nanmean(inv)) if np.isfinite(inv).any() else np.nan
    A = float(np.nanmean(cor)) if np.isfinite(cor).any() else np.nan
    D = A - q * phi
    g = cor + q * inv
    v_c, v_g, cov_cg = _var(c), _var(g), _cov(c, g)
    v_p, v_a = _var(inv), _var(cor)
    calls_mode = float(pp["mode_calls"].mean())
    calls_c = float(pp["c_calls"].mean())
    units_per_pair = float(pp["units"].mean())

    def n_needed(f: float) -> float:
        var_t = (D * D * v_c / f + C * C * v_g + 2 * C * D * cov_cg) if np.isfinite(D) else np.inf
        var1 = {"C": v_c / f, "phi": v_p, "A": v_a, "T": var_t}
        return max((z / h) ** 2 * max(var1[name], 0.0) for name, h in targets.items())

    best: tuple[float, float, float] | None = None   # (calls, n, f)
    for f in fractions:
        n = max(float(len(pp)), math.ceil(n_needed(float(f))))
        if n > pool_pairs:
            continue
        # the pilot's pairs ran at full R; the others stop early
        calls = units_per_pair * (len(pp) * reps + (n - len(pp)) * (f * calls_c + (1 - f) * calls_mode))
        if best is None or calls < best[0]:
            best = (calls, n, float(f))
    fixed_n = max(len(pp), math.ceil(n_needed(1.0))) if math.isfinite(n_needed(1.0)) else pool_pairs + 1
    reachable = best is not None
    if best is None:
        best = (units_per_pair * pool_pairs * reps, float(pool_pairs), 1.0)
    return AdaptivePlan(
        n_pairs=int(best[1]), c_fraction=best[2], expected_calls=float(best[0]),
        calls_per_mode_unit=calls_mode, calls_per_c_unit=calls_c, fixed_n_pairs=int(min(fixed_n, pool_pairs)),
        fixed_calls=int(round(units_per_pair * min(fixed_n, pool_pairs) * reps)), reachable=reachable,
        targets=dict(targets), pilot_figures={"C": C, "phi": phi, "A": A, "T": C * D})


def c_pairs_from(design_meta: Mapping[str, Any] | None,
                 judgments: pd.DataFrame) -> dict[str, set[tuple[str, str]]] | None:
    """The C pairs of every cell of an adaptive run, re-derived from its stored plans (the run meta
    ``adaptive_design``) and the seed: the pilot pairs (the first ``pilot_pairs`` judged pairs in the
    seeded order) and every judged pair whose draw is below the cell's C fraction.  ``{cell label:
    {(dataset, item_id), ...}}``; None for a run without an adaptive design."""
    if not design_meta:
        return None
    seed = int((design_meta.get("design") or {}).get("seed", 42))
    out: dict[str, set[tuple[str, str]]] = {}
    for label, plan in (design_meta.get("cells") or {}).items():
        key = plan["cell"]
        dataset = key["dataset"]
        sel = _cell_rows(judgments, key)
        items = sorted(set(judgments.loc[sel, "item_id"]), key=lambda i: pair_rank(seed, dataset, i))
        pilot = set(items[:int(plan.get("pilot_pairs", 0))])
        out[label] = {(dataset, i) for i in items
                      if i in pilot or c_pair_draw(seed, dataset, i) < float(plan["c_fraction"])}
    return out


def _cell_rows(judgments: pd.DataFrame, key: Mapping[str, Any]) -> pd.Series:
    sel = ((judgments["judge"] == key["judge"]) & (judgments["protocol"] == key["protocol"])
           & (judgments["dataset"] == key["dataset"])
           & (judgments["temperature"].astype(float) == float(key["temperature"])))
    if "decoding" in judgments.columns:
        sel &= judgments["decoding"] == key.get("decoding", DEFAULT_DECODING)
    if "step" in judgments.columns and key.get("step"):
        sel &= judgments["step"].fillna("") == key["step"]
    return sel


def adaptive_cells(design_meta: Mapping[str, Any] | None, judgments: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY,
                   by: Sequence[str] = DEFAULT_BY) -> pd.DataFrame | None:
    """:func:`adaptive_reliability` for every cell of an adaptive run (None for a run without one):
    the figures that replace the fixed-design C and T of those cells (truncated units would look
    consistent to :func:`verdictlab.stats.reliability`)."""
    c_pairs = c_pairs_from(design_meta, judgments)
    if not c_pairs:
        return None
    frames = []
    for label, plan in (design_meta or {}).get("cells", {}).items():
        rows = judgments[_cell_rows(judgments, plan["cell"])]
        if rows.empty:
            continue
        fig = adaptive_reliability(rows, c_pairs=c_pairs[label], policy=policy, by=by)
        frames.append(fig.assign(design="adaptive"))
    return pd.concat(frames, ignore_index=True) if frames else None


#: the fixed-design figures an adaptive cell replaces (the others -- phi, A, A_dec, ... -- hold as they are)
REPLACED = ("C", "C_lo", "C_hi", "T", "T_lo", "T_hi")
#: figures the adaptive design does not estimate (they need every repetition of every unit)
UNDEFINED = ("self_consistency", "T_joint", "C_boot_lo", "C_boot_hi")


def with_adaptive_figures(cells: pd.DataFrame, design_meta: Mapping[str, Any] | None, judgments: pd.DataFrame,
                          *, policy: FigurePolicy = DEFAULT_POLICY) -> pd.DataFrame:
    """``cells`` (a :func:`verdictlab.stats.reliability` frame) with the cells of an adaptive design
    carrying the adaptive C and T (and their intervals), the figures it cannot estimate set to NaN, and
    a ``design`` column ('adaptive' | 'fixed').  Unchanged (plus ``design``) for a run without one."""
    out = cells.copy()
    out["design"] = "fixed"
    by = [c for c in DEFAULT_BY if c in cells.columns]
    ad = adaptive_cells(design_meta, judgments, policy=policy, by=by)
    if ad is None or out.empty:
        return out
    idx = out.set_index(by).index
    for _, row in ad.iterrows():
        key = tuple(row[c] for c in by)
        hit = idx == key if len(by) > 1 else idx == key[0]
        if not np.any(hit):
            continue
        for col in REPLACED:
            out.loc[hit, col] = row[col]
        for col in UNDEFINED:
            if col in out.columns:
                out.loc[hit, col] = np.nan
        out.loc[hit, "design"] = "adaptive"
        out.loc[hit, "n_c_pairs"] = row["n_c_pairs"]
    return out


def adaptive_reliability(judgments: pd.DataFrame, *, c_pairs: Collection[tuple[str, str]],
                         policy: FigurePolicy = DEFAULT_POLICY, q: float = 0.5,
                         by: Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """C, phi, A and T per cell of an adaptively run design.

    phi and A come from every pair's modes (decided modes equal the full-R modes); C from the units of
    the C pairs only (``c_pairs``: ``(dataset, item_id)`` tuples); T = C (A − q phi).  Intervals: a
    pair-level BCa bootstrap (pairs resampled within the cell, the C pairs among them as drawn).
    Returns the cell keys, ``n_pairs``, ``n_c_pairs``, ``n_judgments`` and each figure with
    ``_lo``/``_hi``."""
    full = reliability(judgments, policy=policy.but(n_bootstrap=0), q=q, by=by)
    cells, u = unit_table(judgments, policy=policy, by=by)
    keys = list(cells.columns)
    pair_row = u["pair_row"]
    pair_ds = judgments["dataset"].to_numpy()[pair_row]
    pair_item = judgments["item_id"].to_numpy()[pair_row]
    wanted = set(c_pairs)
    is_c_pair = np.fromiter(((d, i) in wanted for d, i in zip(pair_ds, pair_item, strict=True)), bool,
                            count=len(pair_row))
    up, uo, m = u["unit_pair"], u["unit_order"], u["mode"]
    n_pairs_all, G = len(pair_row), len(cells)
    c_unit = is_c_pair[up]

    def per_pair(x: np.ndarray) -> np.ndarray:
        return np.bincount(up, weights=np.asarray(x, dtype=float), minlength=n_pairs_all)

    m_ab = np.full(n_pairs_all, -2)
    m_ba = np.full(n_pairs_all, -2)
    m_ab[up[uo == 0]] = m[uo == 0]
    m_ba[up[uo == 1]] = m[uo == 1]
    both = (m_ab != -2) & (m_ba != -2)
    P = both & (m_ab == m_ba) & (m_ab >= 0)
    ulab = u["pair_label"][up]
    correct = (ulab >= 0) & (m == ulab)
    stats = np.column_stack([per_pair(u["N"] & c_unit), per_pair(c_unit), (both & ~P).astype(float),
                             both.astype(float), per_pair(correct), per_pair(ulab >= 0)])
    pc = u["pair_cell"]
    sums = np.vstack([np.bincount(pc, weights=stats[:, k], minlength=G) for k in range(stats.shape[1])]).T
    C = safe_div(sums[:, 0], sums[:, 1])
    out = cells.copy()
    out["n_pairs"] = np.bincount(pc, minlength=G)
    out["n_c_pairs"] = np.bincount(pc, weights=is_c_pair.astype(float), minlength=G).astype(np.int64)
    out["n_judgments"] = full["n_judgments"].to_numpy()
    point = {"C": C, "phi": full["phi"].to_numpy(), "A": full["A"].to_numpy()}
    point["T"] = point["C"] * (point["A"] - q * point["phi"])
    bounds = _bootstrap(stats, pc, G, q, policy.n_bootstrap, policy.seed, policy.confidence)
    for name in FIGURES:
        out[name] = point[name]
        out[f"{name}_lo"], out[f"{name}_hi"] = bounds[name]
    out["unparsed_policy"] = policy.unparsed.value
    return out[keys + [c for c in out.columns if c not in keys]]


def _figures(q: float) -> Callable[[np.ndarray], np.ndarray]:
    def fn(S: np.ndarray) -> np.ndarray:
        C = S[:, 0] / S[:, 1]
        phi = S[:, 2] / S[:, 3]
        A = S[:, 4] / S[:, 5]
        return np.column_stack([C, phi, A, C * (A - q * phi)])
    return fn


def _bootstrap(stats: np.ndarray, pair_cell: np.ndarray, G: int, q: float, n_boot: int, seed: int,
               confidence: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """BCa bounds of C, phi, A, T per cell over resampled pairs."""
    out = {k: (np.full(G, np.nan), np.full(G, np.nan)) for k in FIGURES}
    if n_boot <= 0:
        return out
    seeds = np.random.SeedSequence(seed).spawn(max(G, 1))
    for g in range(G):
        rows = np.flatnonzero(pair_cell == g)
        lo, hi = bca_pair_bootstrap(stats[rows], _figures(q), n_boot=n_boot,
                                    rng=np.random.default_rng(seeds[g]), confidence=confidence)
        for k, name in enumerate(FIGURES):
            out[name][0][g] = lo[k]
            out[name][1][g] = hi[k]
    return out
