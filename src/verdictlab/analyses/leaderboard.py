"""The leaderboard each judge configuration builds, and its audit, for runs whose pairs name the
systems that wrote them.

A pair's systems come from the judgments' ``system_a`` / ``system_b`` columns when the store has
them, else from the items (``system_a`` / ``model_a`` fields, or ``meta["system_a"]`` as the
multi-response loaders write it).  A pair's *prompt* is ``meta["multi_id"]`` (multi-response items)
or its question text.  Every cell (the full cell key) is one judge configuration.

Tables (all figures from :mod:`verdictlab.stats`):

* ``leaderboard`` -- per cell and system: the Bradley-Terry rating on the Elo scale with its pair
  bootstrap interval, rank and rank range, ``rank_ub`` (1 + systems separably better), the win rate
  (tie rule ``inp.extra["tie_rule"]``, default ``half``) and the sequential Elo over random match
  orders (``inp.extra["elo_orders"]``, default 100; K 4).
* ``leaderboard_stability`` -- per cell: the ranking per presentation order (AB against BA), per
  repetition (each against the first) and against the humans (the gold labels, one vote per pair; where
  annotators voted, the gold label is the one their votes make under the run's stated ``label_rule``),
  with Kendall's tau, its prompt-bootstrap interval, the top systems and how often the top changes.
* ``leaderboard_agreement`` -- per dataset, every pair of configurations (judges, protocols,
  temperatures, decodings): the same comparison across configurations.
* ``leaderboard_separable`` -- per cell, every pair of systems: the exact sign test over shared
  prompts, Holm-adjusted; which pairs this judge cannot separate.
* ``score_ratio_by_system`` -- per cell and system, FastChat's score ratio against the baseline
  (score-pair judgments; the baseline is ``inp.extra["baseline"]`` or the system every pair has).
* ``alpaca_eval_by_system`` -- per cell and system, AlpacaEval's win rate, standard error and, with
  ``inp.extra["alpaca_reference"]`` (:class:`verdictlab.stats.AlpacaReference`, or AlpacaEval's ``df_gamed.csv`` frame), the LC win rate.

:func:`leaderboard_audits` returns the typed result a decision panel shows per cell
(:class:`verdictlab.stats.LeaderboardAudit`: ranking with intervals, separable tiers, stability).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..core.vocab import CELL_KEY, CellKey
from ..protocols.geval import scores_frame
from ..stats import (
    AlpacaReference,
    LeaderboardAudit,
    Tournament,
    alpaca_win_rate,
    bradley_terry_ratings,
    common_opponent,
    leaderboard_audit,
    length_controlled_win_rate,
    ranking_stability,
    score_ratios,
    separable_pairs,
    sequential_elo,
    tournament,
    unit_preferences,
    win_rates,
    with_cell_columns,
)
from . import AnalysisInput, register

CELL = list(CELL_KEY)
LEADERBOARD_COLUMNS: tuple[str, ...] = (
    *CELL, "system", "rank", "elo", "elo_lo", "elo_hi", "rank_lo", "rank_hi", "rank_ub", "n", "win_rate", "win_lo",
    "win_hi", "wins", "losses", "ties", "tie_rule", "seq_elo", "seq_lo", "seq_hi", "k", "n_orders", "n_units",
    "n_unparsed")
STABILITY_TABLE_COLUMNS: tuple[str, ...] = (
    *CELL, "comparison", "variant_a", "variant_b", "tau", "tau_lo", "tau_hi", "n_systems", "n_prompts", "top_a",
    "top_b", "top_changed", "p_top_changes", "top_k", "top_k_overlap", "n_bootstrap")
AGREEMENT_COLUMNS: tuple[str, ...] = (
    "dataset", "config_a", "config_b", "tau", "tau_lo", "tau_hi", "n_systems", "n_prompts", "top_a", "top_b",
    "top_changed", "p_top_changes", "top_k", "top_k_overlap", "n_bootstrap")


def _item_systems(items: Sequence[Any] | pd.DataFrame | None) -> pd.DataFrame:
    """``dataset, item_id, system_a, system_b, prompt, gold`` of the pair items that name both systems."""
    cols = ["dataset", "item_id", "system_a", "system_b", "prompt", "gold"]
    if items is None:
        return pd.DataFrame(columns=cols)
    recs = items.to_dict("records") if isinstance(items, pd.DataFrame) else [
        {**it.model_dump(), "_obj": it} for it in items if hasattr(it, "response_b")]
    rows = []
    for r in recs:
        meta: dict[str, Any] = r["meta"] if isinstance(r.get("meta"), dict) else {}
        a = r.get("system_a") or r.get("model_a") or meta.get("system_a")
        b = r.get("system_b") or r.get("model_b") or meta.get("system_b")
        if a is None or b is None or "response_b" not in r:
            continue
        rows.append((r["dataset"], str(r["item_id"]), str(a), str(b), str(meta.get("multi_id") or r.get("question")),
                     r.get("label")))
    return pd.DataFrame(rows, columns=cols)


def system_rows(judgments: pd.DataFrame, items: Sequence[Any] | pd.DataFrame | None) -> pd.DataFrame:
    """The pairwise judgments whose two systems are known, with ``system_a``, ``system_b``,
    ``prompt`` and the pair's gold label ``gold``."""
    if judgments.empty:
        return judgments.iloc[0:0]
    known = _item_systems(items)
    j = with_cell_columns(judgments)
    if {"system_a", "system_b"} <= set(j.columns):
        known = known.drop(columns=["system_a", "system_b"])
        j = j[j["system_a"].notna() & j["system_b"].notna()]
    if known.empty:
        return j.iloc[0:0]
    j = j.assign(item_id=j["item_id"].astype(str))
    return j.merge(known, on=["dataset", "item_id"], how="inner")


@dataclass
class _Cell:
    key: CellKey
    rows: pd.DataFrame
    t: Tournament
    ratings: pd.DataFrame
    pairs: pd.DataFrame
    variants: dict[str, Tournament] = field(default_factory=dict)
    comparisons: list[tuple[str, str, str]] = field(default_factory=list)
    stability: pd.DataFrame | None = None


def _gold_rows(rows: pd.DataFrame) -> pd.DataFrame:
    g = rows.drop_duplicates(["dataset", "item_id"])
    return g.assign(verdict=g["gold"].where(g["gold"].isin(["A", "B", "tie"])))


def _cell_variants(c: _Cell, systems: tuple[str, ...]) -> None:
    """Each order, each repetition and the gold labels of one cell as variants to compare."""
    name = c.key.label()
    orders = sorted(c.rows["order"].dropna().astype(str).unique()) if "order" in c.rows else []
    if len(orders) == 2:
        for o in orders:
            c.variants[f"{name} · {o}"] = tournament(c.rows[c.rows["order"].astype(str) == o], systems=systems)
        c.comparisons.append(("order", f"{name} · {orders[0]}", f"{name} · {orders[1]}"))
    reps = sorted(c.rows["rep"].dropna().unique()) if "rep" in c.rows else []
    for r in reps:
        if len(reps) > 1:
            c.variants[f"{name} · rep {r}"] = tournament(c.rows[c.rows["rep"] == r], systems=systems)
    c.comparisons += [("repetition", f"{name} · rep {reps[0]}", f"{name} · rep {r}") for r in reps[1:]]
    gold = _gold_rows(c.rows)
    if gold["verdict"].notna().any():
        c.variants[f"{name} · humans"] = tournament(gold, systems=systems)
        c.comparisons.append(("humans", name, f"{name} · humans"))
    c.variants[name] = c.t


@dataclass
class _Leaderboards:
    cells: list[_Cell]
    stability: pd.DataFrame
    agreement: pd.DataFrame
    policy: dict[str, Any]


def _compute(inp: AnalysisInput) -> _Leaderboards | None:
    rows = system_rows(inp.pairs, inp.items if inp.items is not None else inp.items_frame)
    if rows.empty:
        return None
    n_boot = int(inp.policy.n_bootstrap)
    cells: list[_Cell] = []
    stab, agree = [], []
    for dataset, d in rows.groupby("dataset", sort=True, observed=True):
        systems = tuple(sorted(set(d["system_a"].astype(str)) | set(d["system_b"].astype(str))))
        ds_cells = []
        for key, g in d.groupby(CELL, sort=True, dropna=False, observed=True):
            t = tournament(g, systems=systems)
            c = _Cell(CellKey.of(dict(zip(CELL, key, strict=True))), g, t,
                      bradley_terry_ratings(t, n_bootstrap=n_boot, seed=inp.policy.seed, confidence=inp.policy.confidence),
                      separable_pairs(t))
            _cell_variants(c, systems)
            ds_cells.append(c)
        variants = {k: v for c in ds_cells for k, v in c.variants.items()}
        within = [(c, kind, a, b) for c in ds_cells for kind, a, b in c.comparisons]
        across = [(a.key.label(), b.key.label()) for i, a in enumerate(ds_cells) for b in ds_cells[i + 1:]]
        table = ranking_stability(variants, [(a, b) for _, _, a, b in within] + across,
                                  n_bootstrap=min(n_boot, 200), seed=inp.policy.seed, confidence=inp.policy.confidence)
        for (c, kind, _, _), rec in zip(within, table.to_dict("records")[:len(within)], strict=True):
            stab.append({**c.key.as_dict(), "comparison": kind, **rec})
        for c in ds_cells:
            names = {a for _, a, _ in c.comparisons}
            c.stability = table.iloc[:len(within)][table["variant_a"].iloc[:len(within)].isin(names)]
        for rec in table.to_dict("records")[len(within):]:
            agree.append({"dataset": dataset, **rec, "config_a": rec["variant_a"], "config_b": rec["variant_b"]})
        cells += ds_cells
    return _Leaderboards(cells, pd.DataFrame(stab, columns=list(STABILITY_TABLE_COLUMNS)),
                         pd.DataFrame(agree, columns=list(AGREEMENT_COLUMNS)), dict(inp.extra))


_LAST: list[Any] = []   # [inp, result]: the registered tables share one computation per report


def _run(inp: AnalysisInput) -> _Leaderboards | None:
    if _LAST and _LAST[0] is inp:
        return _LAST[1]
    res = _compute(inp)
    _LAST[:] = [inp, res]
    return res


def leaderboard_audits(inp: AnalysisInput) -> dict[CellKey, LeaderboardAudit]:
    """Per cell, the typed audit a decision panel shows: the ranking with intervals, the separable
    tiers and the ranking's stability under order, repetition and the humans' labels."""
    res = _run(inp)
    if res is None:
        return {}
    return {c.key: leaderboard_audit(c.ratings, c.pairs, c.stability if c.stability is not None
                                     else res.stability.iloc[0:0], confidence=inp.policy.confidence) for c in res.cells}


def _leaderboard_table(inp: AnalysisInput, res: _Leaderboards) -> pd.DataFrame:
    tie_rule = str(inp.extra.get("tie_rule", "half"))
    n_orders = int(inp.extra.get("elo_orders", 100))
    recs = []
    for c in res.cells:
        wr = win_rates(c.t, tie_rule=tie_rule, n_bootstrap=int(inp.policy.n_bootstrap), seed=inp.policy.seed,
                       confidence=inp.policy.confidence).set_index("system")
        se = sequential_elo(c.t, n_orders=n_orders, seed=inp.policy.seed, confidence=inp.policy.confidence).set_index("system")
        audit = leaderboard_audit(c.ratings, c.pairs, res.stability.iloc[0:0], confidence=inp.policy.confidence)
        ub = {r.system: r.rank_ub for r in audit.ranking}
        for r in c.ratings.itertuples(index=False):
            if r.n == 0:
                continue
            w, s = wr.loc[r.system], se.loc[r.system]
            recs.append({**c.key.as_dict(), "system": r.system, "rank": r.rank, "elo": r.elo, "elo_lo": r.lo,
                         "elo_hi": r.hi, "rank_lo": r.rank_lo, "rank_hi": r.rank_hi, "rank_ub": ub[r.system],
                         "n": r.n, "win_rate": w["win_rate"], "win_lo": w["lo"], "win_hi": w["hi"], "wins": w["wins"],
                         "losses": w["losses"], "ties": w["ties"], "tie_rule": tie_rule, "seq_elo": s["elo"],
                         "seq_lo": s["lo"], "seq_hi": s["hi"], "k": s["k"], "n_orders": n_orders,
                         "n_units": w["n_units"], "n_unparsed": c.t.n_unparsed})
    return pd.DataFrame(recs, columns=list(LEADERBOARD_COLUMNS))


@register("leaderboard", order=72, title="Leaderboard per judge configuration",
          description="Systems ranked by the Bradley-Terry rating (Elo scale: 1000 + 400 log10 odds; pair "
                      "bootstrap interval and rank range; rank_ub = 1 + systems separably better), with the win "
                      "rate (tie rule stated) and the sequential Elo (K 4, mean and spread over random match orders).")
def leaderboard_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    res = _run(inp)
    return None if res is None else _leaderboard_table(inp, res)


@register("leaderboard_stability", order=73, title="Leaderboard stability within a configuration",
          description="Does the ranking survive swapping the order, re-asking, and does it match the humans' "
                      "(gold labels)? Kendall's tau with a bootstrap interval over prompts, the two top systems, "
                      "how often the top changes under resampled prompts, top-k overlap.")
def stability_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    res = _run(inp)
    return None if res is None else res.stability


@register("leaderboard_agreement", order=74, title="Leaderboards across configurations",
          description="Per dataset, every pair of judge configurations (judge, protocol, temperature, decoding): "
                      "Kendall's tau between their rankings with a bootstrap interval over prompts and how often "
                      "the top system changes.", spans=("judge", "protocol", "temperature", "decoding"))
def agreement_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    res = _run(inp)
    return None if res is None else res.agreement


@register("leaderboard_separable", order=75, title="Systems this judge can and cannot separate",
          description="Every pair of systems: on prompts both played, prompts where each had the higher win "
                      "share; exact two-sided sign test, Holm-adjusted across the pairs of the configuration.")
def separable_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    res = _run(inp)
    if res is None:
        return None
    frames = [c.pairs.assign(**c.key.as_dict()) for c in res.cells if len(c.pairs)]
    if not frames:
        return None
    out = pd.concat(frames, ignore_index=True)
    return out[[*CELL, *[c for c in out.columns if c not in CELL]]]


def _baseline(inp: AnalysisInput, t: Tournament) -> str | None:
    given = inp.extra.get("baseline")
    return str(given) if given is not None and given in t.systems else common_opponent(t)


@register("score_ratio_by_system", order=76, title="Score ratio against the baseline",
          description="FastChat's 'X% of the baseline': per system, the sum of its scores over the pairs it shares "
                      "with the baseline divided by the baseline's sum (score-pair judgments; pair bootstrap).")
def score_ratio_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    res = _run(inp)
    if res is None:
        return None
    frames = []
    for c in res.cells:
        base = _baseline(inp, c.t)
        if base is None or "scores" not in c.rows.columns:
            continue
        s = scores_frame(c.rows)
        rows = c.rows.assign(score_a=pd.to_numeric(s["score_a"], errors="coerce").to_numpy(),
                             score_b=pd.to_numeric(s["score_b"], errors="coerce").to_numpy())
        if not (rows["score_a"].notna() & rows["score_b"].notna()).any():
            continue
        t = score_ratios(rows, baseline=base, n_bootstrap=int(inp.policy.n_bootstrap), seed=inp.policy.seed,
                         confidence=inp.policy.confidence)
        frames.append(t.assign(**c.key.as_dict()))
    if not frames:
        return None
    out = pd.concat(frames, ignore_index=True)
    return out[[*CELL, *[c for c in out.columns if c not in CELL]]]


def _alpaca_rows(inp: AnalysisInput, c: _Cell, base: str) -> list[dict[str, Any]]:
    prefs = unit_preferences(c.t, base)
    first = c.rows.iloc[c.t.unit_rows]
    ref = inp.extra.get("alpaca_reference")
    if isinstance(ref, pd.DataFrame):       # df_gamed.csv as `report --alpaca-reference` read it
        ref = AlpacaReference.from_gamed(ref)
    recs = []
    for system, p in prefs.groupby("system", sort=True):
        fig = alpaca_win_rate(p["preference"])
        missing = "" if isinstance(ref, AlpacaReference) else (
            "needs AlpacaEval's published instruction difficulties (extra['alpaca_reference'])")
        if not missing and "instruction" not in first.columns:
            missing = "needs each pair's AlpacaEval instruction index (column 'instruction')"
        if not missing and isinstance(ref, AlpacaReference):
            fig = _lc(fig, p, first, base, ref)
        recs.append({**c.key.as_dict(), "system": system, "baseline": base, **fig.__dict__,
                     "lc_missing": missing or None})
    return recs


def _lc(fig: Any, p: pd.DataFrame, first: pd.DataFrame, base: str, ref: AlpacaReference) -> Any:
    """The LC figures of one system from its per-pair preferences and the pairs' response lengths."""
    unit_rows = first.iloc[p["unit"].to_numpy()]   # ``first`` holds one row per unit code
    on_a = (unit_rows["system_a"].astype(str) == base).to_numpy()
    la, lb = unit_rows["len_a"].to_numpy(float), unit_rows["len_b"].to_numpy(float)
    return length_controlled_win_rate(p["preference"].to_numpy(), np.where(on_a, lb, la), np.where(on_a, la, lb),
                                      unit_rows["instruction"].to_numpy(), reference=ref)


@register("alpaca_eval_by_system", order=77, title="AlpacaEval win rate against the baseline",
          description="AlpacaEval 2's figures per system against the baseline: win rate and its standard error "
                      "(one preference per pair, the mean over its judgments), and the length-controlled win rate "
                      "when AlpacaEval's published instruction difficulties are given.")
def alpaca_eval_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    res = _run(inp)
    if res is None:
        return None
    recs = []
    for c in res.cells:
        base = _baseline(inp, c.t)
        if base is not None:
            recs += _alpaca_rows(inp, c, base)
    return pd.DataFrame(recs) if recs else None


__all__ = ["LEADERBOARD_COLUMNS", "STABILITY_TABLE_COLUMNS", "AGREEMENT_COLUMNS", "system_rows", "leaderboard_audits"]
