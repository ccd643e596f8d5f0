"""Transitivity of a judge over multi-response items, and a Bradley-Terry ranking of the systems.

A *multi-response item* (one question, K >= 3 responses keyed by system name) is expanded into
every pair of systems; each pair is judged in both orders (and R repetitions).  Inputs here are
per-verdict rows carrying ``group`` (the multi-response item), ``sys_a`` and ``sys_b`` (the system
behind canonical response A / B) and ``verdict`` (canonical ``A | B | tie``, missing = unparsed).

Pair outcome (normative)
------------------------
Per (cell, group, pair) every parsed verdict of both orders and all repetitions is pooled:
``n_a``, ``n_b``, ``n_tie``.  The *modal* verdict is the value with the strictly largest count;
when two values share the top count the outcome is a **tie** (so a pair whose verdict follows the
position -- A shown first wins, then B shown first wins -- is a tie, not a preference).  A pair with
no parsed verdict has no outcome and every triple through it is left out (counted as excluded).

Triple rule (normative)
-----------------------
A triple of systems {x, y, z} of one item is **transitive** when some weak order (a ranking that
allows equal places) of the three reproduces all three outcomes; otherwise it is non-transitive.
Of the 27 outcome combinations 13 are weak orders; the 14 others are the two strict cycles
(x > y > z > x and its reverse) and 12 tie violations such as x ~ y, y ~ z, x > z.  With
``tie_rule="exclude"`` a triple with any tied pair is left out instead and only strict cycles count.

The share of non-transitive triples gets a Wilson interval (triples of one item share pairs, so
the interval is optimistic; read it as approximate).  An item *has a cycle* when at least one of
its triples is non-transitive (``n_items_cycle``); ``n_items_strict_cycle`` counts items with a
strict 3-cycle (in a tournament any preference cycle implies a 3-cycle).

Bradley-Terry: strengths from every parsed decisive verdict (ties left out) with ``choix``'s
I-LSR on the dense win matrix (a small ``alpha`` regularises systems that never lose), centred to
mean 0 on the log scale; percentile intervals from a bootstrap over items (groups).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import combinations, product
from typing import Any

import numpy as np
import pandas as pd

from ._frame import require_columns
from .bias import Correlation
from .intervals import percentile_bounds, wilson_bounds
from .significance import kendall

__all__ = ["TIE_RULES", "TransitivityResult", "TripleTies", "pair_outcomes", "triple_outcomes", "transitivity",
           "bradley_terry", "kendall_vs_reference", "weak_order_consistent"]

class TripleTies(StrEnum):
    """What a tied pair does to a triple: it may be part of a weak order, or the triple is left out."""

    WEAK_ORDER = "weak_order"
    EXCLUDE = "exclude"


TIE_RULES: tuple[str, ...] = tuple(r.value for r in TripleTies)
_PAIR_COLS = ("group", "sys_a", "sys_b", "verdict")


def _weak_order_table() -> np.ndarray:
    """Lookup over (o_xy, o_yz, o_xz) in {-1, 0, 1}^3 (index = 9 (o_xy+1) + 3 (o_yz+1) + o_xz+1):
    True where some weak order of x, y, z gives these outcomes (o_uv = sign(rank score u - v))."""
    ok = np.zeros(27, dtype=bool)
    for sx, sy, sz in product(range(3), repeat=3):   # every weak order is some score vector in {0,1,2}^3
        o = (np.sign(sx - sy), np.sign(sy - sz), np.sign(sx - sz))
        ok[9 * (o[0] + 1) + 3 * (o[1] + 1) + (o[2] + 1)] = True
    return ok


_WEAK_OK = _weak_order_table()


def weak_order_consistent(o_xy: Any, o_yz: Any, o_xz: Any) -> np.ndarray:
    """Vectorised triple rule: outcomes in {-1, 0, 1} (1 = first system preferred, 0 = tie)."""
    a, b, c = (np.asarray(v, dtype=np.int64) for v in (o_xy, o_yz, o_xz))
    return _WEAK_OK[9 * (a + 1) + 3 * (b + 1) + (c + 1)]


def pair_outcomes(rows: pd.DataFrame, *, by: Sequence[str] = ()) -> pd.DataFrame:
    """One row per (``by``..., group, sys_x, sys_y) with sys_x < sys_y (sorted names):
    ``n_x, n_y, n_tie`` (parsed verdicts for x, for y, tie) and ``outcome`` (1: x modal, -1: y modal,
    0: tie by the modal rule, NaN: no parsed verdict)."""
    require_columns(rows, [*by, *_PAIR_COLS], who="pair_outcomes")
    df = rows[[*by, *_PAIR_COLS]].copy()
    swap = df["sys_a"].astype(str) > df["sys_b"].astype(str)
    df["sys_x"] = np.where(swap, df["sys_b"], df["sys_a"])
    df["sys_y"] = np.where(swap, df["sys_a"], df["sys_b"])
    v = df["verdict"].astype(object)
    a, b = (v == "A").to_numpy(), (v == "B").to_numpy()
    sw = swap.to_numpy()
    df["n_x"] = np.where(sw, b, a).astype(np.int64)
    df["n_y"] = np.where(sw, a, b).astype(np.int64)
    df["n_tie"] = (v == "tie").to_numpy().astype(np.int64)
    keys = [*by, "group", "sys_x", "sys_y"]
    out = df.groupby(keys, sort=True, dropna=False)[["n_x", "n_y", "n_tie"]].sum().reset_index()
    counts = out[["n_x", "n_y", "n_tie"]].to_numpy()
    top = counts.max(axis=1)
    n_top = (counts == top[:, None]).sum(axis=1)
    arg = counts.argmax(axis=1)
    outcome = np.where(n_top > 1, 0.0, np.choose(arg, [1.0, -1.0, 0.0]))
    out["outcome"] = np.where(counts.sum(axis=1) == 0, np.nan, outcome)
    return out


def triple_outcomes(outcomes: pd.DataFrame, *, tie_rule: str = "weak_order") -> pd.DataFrame:
    """Every triple of systems within a group (and ``by`` keys present in ``outcomes``):
    ``group, x, y, z, status`` with status ``transitive | nontransitive | excluded`` and
    ``strict_cycle`` (bool).  Groups are whatever other columns precede ``group``."""
    if tie_rule not in TIE_RULES:
        raise ValueError(f"tie_rule must be one of {TIE_RULES}, got {tie_rule!r}")
    cols = list(outcomes.columns)
    by = cols[:cols.index("group")]
    recs: list[dict[str, Any]] = []
    for key, g in outcomes.groupby([*by, "group"], sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        o = {(x, y): val for x, y, val in zip(g["sys_x"], g["sys_y"], g["outcome"], strict=True)}
        systems = sorted(set(g["sys_x"]) | set(g["sys_y"]))
        for x, y, z in combinations(systems, 3):   # systems per item are few (K <= ~10)
            vals = (o.get((x, y), np.nan), o.get((y, z), np.nan), o.get((x, z), np.nan))
            recs.append({**dict(zip([*by, "group"], key, strict=True)), "x": x, "y": y, "z": z,
                         "o_xy": vals[0], "o_yz": vals[1], "o_xz": vals[2]})
    tri = pd.DataFrame(recs, columns=[*by, "group", "x", "y", "z", "o_xy", "o_yz", "o_xz"])
    v = tri[["o_xy", "o_yz", "o_xz"]].to_numpy(float)
    missing = np.isnan(v).any(axis=1)
    vi = np.nan_to_num(v).astype(np.int64)
    consistent = weak_order_consistent(vi[:, 0], vi[:, 1], vi[:, 2]) if len(tri) else np.zeros(0, bool)
    strict = (vi[:, 0] == vi[:, 1]) & (vi[:, 2] == -vi[:, 0]) & (vi[:, 0] != 0) & ~missing
    excluded = missing | ((vi == 0).any(axis=1) if TripleTies(tie_rule) is TripleTies.EXCLUDE else False)
    tri["status"] = np.where(excluded, "excluded", np.where(consistent, "transitive", "nontransitive"))
    tri["strict_cycle"] = strict
    return tri


@dataclass(frozen=True)
class TransitivityResult:
    """Share of non-transitive triples with a Wilson interval, and items with a cycle."""

    share: float
    low: float
    high: float
    n_triples: int          # triples judged (excluded ones not counted)
    n_nontransitive: int
    n_strict_cycles: int
    n_excluded: int
    n_items: int            # items (groups) with at least one judged triple
    n_items_cycle: int      # items with a non-transitive triple
    n_items_strict_cycle: int
    tie_rule: str
    confidence: float


def transitivity(outcomes: pd.DataFrame, *, tie_rule: str = "weak_order",
                 confidence: float = 0.95) -> TransitivityResult:
    """Figures over all triples of ``outcomes`` (one cell: the output of :func:`pair_outcomes`
    restricted to one judge x protocol x dataset x temperature)."""
    tri = triple_outcomes(outcomes, tie_rule=tie_rule)
    judged = tri[tri["status"] != "excluded"]
    n = len(judged)
    bad = judged["status"] == "nontransitive"
    k = int(bad.sum())
    lo, hi = wilson_bounds(k, n, confidence=confidence)
    per_item = judged.assign(bad=bad.to_numpy(), strict=judged["strict_cycle"].to_numpy()
                             ).groupby("group")[["bad", "strict"]].any()
    return TransitivityResult(
        share=k / n if n else float("nan"), low=float(lo), high=float(hi), n_triples=n,
        n_nontransitive=k, n_strict_cycles=int(judged["strict_cycle"].sum()),
        n_excluded=int((tri["status"] == "excluded").sum()), n_items=len(per_item),
        n_items_cycle=int(per_item["bad"].sum()), n_items_strict_cycle=int(per_item["strict"].sum()),
        tie_rule=tie_rule, confidence=confidence)


def _win_tensor(outcomes: pd.DataFrame, systems: list[str]) -> tuple[np.ndarray, list[Any]]:
    """(G, S, S) win counts per group: W[g, i, j] = decisive verdicts for i over j in group g."""
    idx = {s: i for i, s in enumerate(systems)}
    gcodes, groups = pd.factorize(outcomes["group"], sort=True)
    W = np.zeros((len(groups), len(systems), len(systems)))
    xi = outcomes["sys_x"].map(idx).to_numpy(np.int64)
    yi = outcomes["sys_y"].map(idx).to_numpy(np.int64)
    np.add.at(W, (gcodes, xi, yi), outcomes["n_x"].to_numpy(float))
    np.add.at(W, (gcodes, yi, xi), outcomes["n_y"].to_numpy(float))
    return W, list(groups)


def _bt_fit(win: np.ndarray, alpha: float) -> np.ndarray:
    import choix

    params = np.asarray(choix.ilsr_pairwise_dense(win, alpha=alpha), dtype=float)
    return params - params.mean()


def bradley_terry(outcomes: pd.DataFrame, *, n_boot: int = 200, seed: int = 0, confidence: float = 0.95,
                  alpha: float = 0.01) -> pd.DataFrame:
    """Bradley-Terry strengths of the systems (log scale, mean 0) with bootstrap intervals over
    items: ``system, strength, lo, hi, rank, rank_lo, rank_hi, wins, losses`` sorted best first
    (rank 1 = strongest; rank bounds are bootstrap percentiles).  ``outcomes`` is one cell's
    :func:`pair_outcomes` frame; its ``n_x`` / ``n_y`` are the decisive verdict counts."""
    require_columns(outcomes, ["group", "sys_x", "sys_y", "n_x", "n_y"], who="bradley_terry")
    systems = sorted(set(outcomes["sys_x"]) | set(outcomes["sys_y"]))
    cols = ["system", "strength", "lo", "hi", "rank", "rank_lo", "rank_hi", "wins", "losses"]
    if len(systems) < 2:
        return pd.DataFrame(columns=cols)
    W, groups = _win_tensor(outcomes, systems)
    total = W.sum(axis=0)
    est = _bt_fit(total, alpha)
    rng = np.random.default_rng(seed)
    G = len(groups)
    boot = np.full((n_boot, len(systems)), np.nan)
    for b in range(n_boot):   # resamples of items; each fit is a small S x S problem
        w = np.bincount(rng.integers(0, G, size=G), minlength=G).astype(float)
        boot[b] = _bt_fit(np.tensordot(w, W, axes=1), alpha)
    rank = (-est).argsort().argsort() + 1
    if n_boot > 0:
        lo, hi = percentile_bounds(boot, confidence=confidence)
        ranks = (-boot).argsort(axis=1).argsort(axis=1) + 1
        rlo, rhi = percentile_bounds(ranks.astype(float), confidence=confidence)
    else:   # no bootstrap: no interval; the rank range is the rank itself
        lo = hi = np.full(len(systems), np.nan)
        rlo = rhi = rank.astype(float)
    out = pd.DataFrame({"system": systems, "strength": est, "lo": lo, "hi": hi, "rank": rank,
                        "rank_lo": np.floor(rlo).astype(int), "rank_hi": np.ceil(rhi).astype(int),
                        "wins": total.sum(axis=1).astype(int), "losses": total.sum(axis=0).astype(int)})
    out = out.sort_values("rank", kind="stable").reset_index(drop=True)
    out.attrs.update({"n_items": G, "n_boot": n_boot, "alpha": alpha, "confidence": confidence})
    return out


def kendall_vs_reference(strengths: Mapping[str, float], reference: Sequence[str] | Mapping[str, float]
                         ) -> Correlation:
    """Kendall's tau-b between fitted strengths and a reference ranking (a list best first, or a
    mapping system -> score, higher better), on the systems both name."""
    ref = ({s: -float(i) for i, s in enumerate(reference)} if not isinstance(reference, Mapping)
           else {s: float(v) for s, v in reference.items()})
    common = [s for s in strengths if s in ref]
    return kendall([strengths[s] for s in common], [ref[s] for s in common])
