"""Remedies as derived protocols, computed from stored judgments (no new calls).

Each remedy is a pure function from a judgments frame (the columns of
:data:`verdictlab.store.JUDGMENT_COLUMNS`) to a *derived* judgments frame with the same columns, whose
``protocol`` is ``"<base>+<remedy>"`` (e.g. ``vf-json+both-orders``), so :func:`verdictlab.stats.reliability`
applies to it unchanged.  Derived frames keep the cost columns of the stored calls they consume, so
their totals equal the base run's.

``both-orders``
    For each (judge, dataset, item, protocol, temperature, rep, step) judged in both orders: the
    verdict both orders agree on, else ``tie`` (the honest pairwise answer: the order decided it).
    Unparsed in either order -> unparsed.  One derived row per order carries the combined verdict
    (so phi is 0 by construction and the cost shows up as the tie rate).  Keys judged in one order
    only are dropped.  Costs 2 calls per verdict.
``order-average``
    The same keys; P(A) averaged over both orders (``p_a``, canonical, from log-probabilities):
    ``A`` if > 1/2, ``B`` if < 1/2, ``tie`` if exactly 1/2.  Rows without ``p_a`` are dropped (the
    remedy needs a backend with log-probabilities and a label-only protocol).  Costs 2 calls.
``majority@k``
    For each (judge, dataset, item, protocol, order, temperature, step): repetitions in consecutive
    blocks of k (reps 0..k-1 -> derived rep 0, k..2k-1 -> rep 1, ...; an incomplete last block is
    dropped); the block's verdict is the jury vote of :func:`verdictlab.stats.juries.vote_counts` (quorum
    ``k // 2 + 1`` parsed votes, else unparsed; split top -> ``tie``).  Vote counts go to ``scores``.
    Costs k calls per verdict.

Remedies chain left to right: ``majority@3+both-orders``.

The verdict rules and the figures are :mod:`verdictlab.stats.remedies`; this module builds the derived
judgment rows and tabulates.  :func:`remedy_table` gives, per cell, how each remedy moves A, phi, T and
the tie rate, and the calls per verdict it costs; it needs no derived frame: its figures are
:func:`verdictlab.stats.remedy_figures.remedy_reliability`'s, the same rules applied to the base rows'
integer codes.  ``derive_all`` adds every derived frame to a
judgments frame.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import CELL_KEY, DECISIVE, Missing, Order, ParseStatus, Verdict
from ..errors import UsageError
from ..stats import figure_reasons, remedy_reliability
from ..stats.group_counts import block_of, vote_groups, votes_matrix
from ..stats.juries import default_quorum, vote_counts
from ..stats.remedies import (
    both_orders_verdicts,
    calls_per_verdict,
    order_average_verdicts,
    remedy_effects,
    worst_parse_status,
)
from . import AnalysisInput, register
from ._frames import (
    FIGURE_COLUMNS,
    _empty,
    _finish,
    _prep,
    both_order_rows,
    paired_positions,
    per_distinct,
    suffixed,
    text_filled,
)
from .flask import aggregate_criteria

__all__ = ["BOTH_ORDERS_VOTE", "DEFAULT_REMEDIES", "PAIR_KEY", "REMEDY_COLUMNS", "REMEDY_TABLE_COLUMNS", "REPORT_REMEDIES", "UNIT_KEY",
           "both_orders", "derive", "derive_all", "majority_at_k", "order_average", "remedy_table",
           "single_verdict_rows"]

#: a pair judged in both orders (one derived verdict per key) and a unit (one verdict per order); both
#: carry the full cell key, so remedies never mix free and constrained decoding
PAIR_KEY: tuple[str, ...] = (*CELL_KEY, "item_id", "rep", "step")
UNIT_KEY: tuple[str, ...] = (*CELL_KEY, "item_id", "order", "step")
DEFAULT_REMEDIES: tuple[str, ...] = ("both-orders", "order-average", "majority@3")
BOTH_ORDERS_VOTE = "both-orders-vote"
#: the remedies the report shows: the defaults plus JudgeBench's both-orders vote
#: (:mod:`verdictlab.analyses.remedy_vote`)
REPORT_REMEDIES: tuple[str, ...] = ("both-orders", BOTH_ORDERS_VOTE, "order-average", "majority@3")
_MAJ_RE = re.compile(r"^majority@(\d+)$")


def _combined_texts(columns: Sequence[str] | None, **texts: Callable[[], Any]) -> dict[str, Any]:
    """The text columns of combined rows the caller asked for (``columns=None``: all), each computed
    only then."""
    return {name: make() for name, make in texts.items() if columns is None or name in columns}


def both_orders(judgments: pd.DataFrame, *, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The ``both-orders`` remedy (see the module docstring); ``columns``: only these columns of the
    derived frame (default every judgment column)."""
    df = _prep(judgments, columns)
    return _both_orders_of(df, *paired_positions(df, PAIR_KEY), columns=columns)


def _both_orders_of(df: pd.DataFrame, ab: np.ndarray, ba: np.ndarray, *, columns: Sequence[str] | None) -> pd.DataFrame:
    """:func:`both_orders` of the prepared rows ``df`` whose order pairs are at ``ab`` / ``ba``."""
    if not len(ab):
        return _empty(columns)
    verdicts = df["verdict"].to_numpy(object)
    verdict, parsed, agree = both_orders_verdicts(verdicts[ab], verdicts[ba])
    status_all = df["parse_status"].to_numpy(object)
    worst = worst_parse_status(status_all[ab], status_all[ba])
    status = np.where(parsed, worst, ParseStatus.FAILED.value)
    status = np.where(parsed & (status == ParseStatus.FAILED), ParseStatus.OK.value, status)
    combined = {"verdict": verdict, "parse_status": status, **_combined_texts(
        columns, fallback_rule=lambda: None, raw_output=lambda: None, scores=lambda: None, p_a=lambda: np.nan,
        parse_detail=lambda: np.where(agree, "both orders agree", np.where(
            parsed, "orders disagree -> tie", "unparsed in at least one order")).astype(object))}
    return _finish(both_order_rows(df, ab, ba, combined, "+both-orders"), columns)


def order_average(judgments: pd.DataFrame, *, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The ``order-average`` remedy (see the module docstring); ``columns`` as for :func:`both_orders`."""
    df = _prep(judgments, columns)
    df["p_a"] = pd.to_numeric(df["p_a"], errors="coerce")
    df = df[df["p_a"].notna()]
    ab, ba = paired_positions(df, PAIR_KEY)
    if not len(ab):
        return _empty(columns)
    p_a = df["p_a"].to_numpy(float)
    p, verdict = order_average_verdicts(p_a[ab], p_a[ba])
    combined = {"verdict": verdict, "parse_status": np.full(len(p), ParseStatus.OK.value, dtype=object),
                "p_a": p, **_combined_texts(
                    columns, fallback_rule=lambda: None, raw_output=lambda: None, scores=lambda: None,
                    parse_detail=lambda: np.array([f"mean P(A) over both orders = {x:.3f}" for x in p], dtype=object))}
    return _finish(both_order_rows(df, ab, ba, combined, "+order-average"), columns)


def majority_at_k(judgments: pd.DataFrame, *, k: int = 3, quorum: int | None = None,
                  tie_rule: str = "tie", columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The ``majority@k`` remedy (see the module docstring); ``columns`` as for :func:`both_orders`."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    df = _prep(judgments, columns)
    if df.empty:
        return _empty(columns)
    df["_block"] = block_of(df["rep"], k)
    df = df.sort_values("rep", kind="stable")
    present = set(df.columns)
    g = vote_groups(df, [*UNIT_KEY, "_block"],
                    sums=[c for c in ("tokens_in", "tokens_out", "cost_usd", "latency_s", "attempts") if c in present],
                    firsts=[c for c in ("label", "category", "prompt_hash", "error") if c in present],
                    latest=[c for c in ("cache_hit", "created_at") if c in present])
    g = g[g["n_votes"] == k]  # incomplete last block dropped
    if g.empty:
        return _empty(columns)
    counts = votes_matrix(g)
    verdict, vstatus = vote_counts(counts, quorum=quorum or default_quorum(k), tie_rule=tie_rule)
    g["verdict"] = verdict
    g["parse_status"] = np.where(pd.isna(verdict), ParseStatus.FAILED.value, ParseStatus.OK.value)
    texts = _combined_texts(
        columns, fallback_rule=lambda: None, raw_output=lambda: None, p_a=lambda: np.nan,
        parse_detail=lambda: per_distinct(lambda s, n: f"{s}: {n}/{k} votes parsed", vstatus, g["n_parsed"]),
        scores=lambda: per_distinct(lambda a, b, t, s: json.dumps(
            {"votes_A": int(a), "votes_B": int(b), "votes_tie": int(t), "unparsed": int(k - a - b - t), "k": k,
             "vote": s}), *counts.T, vstatus))
    for name, values in texts.items():
        g[name] = values
    g["rep"] = g["_block"].astype(int)
    g["protocol"] = suffixed(g["protocol"], f"+majority@{k}")
    first = np.where(g["order"] == Order.AB, Verdict.A.value, Verdict.B.value)
    g["shown_first_won"] = np.where(pd.Series(verdict).isin(DECISIVE).to_numpy(), (verdict == first).astype(float),
                                    np.nan)
    return _finish(g, columns)


def derive(judgments: pd.DataFrame, remedy: str, *, quorum: int | None = None, tie_rule: str = "tie",
           columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Apply ``remedy`` (``both-orders``, ``order-average``, ``majority@K`` or a ``+`` chain of them);
    ``columns``: only these columns of the derived frame (default every judgment column)."""
    out = judgments
    for part in remedy.split("+"):
        m = _MAJ_RE.match(part)
        if part == "both-orders":
            out = both_orders(out, columns=columns)
        elif part == BOTH_ORDERS_VOTE:
            from .remedy_vote import both_orders_vote

            out = both_orders_vote(out, columns=columns)
        elif part == "order-average":
            out = order_average(out, columns=columns)
        elif m:
            out = majority_at_k(out, k=int(m.group(1)), quorum=quorum, tie_rule=tie_rule, columns=columns)
        else:
            raise UsageError(f"unknown remedy {part!r}; known: both-orders, {BOTH_ORDERS_VOTE}, order-average, "
                             "majority@K")
    return out


def derive_all(judgments: pd.DataFrame, remedies: Sequence[str] = DEFAULT_REMEDIES) -> pd.DataFrame:
    """``judgments`` plus every derived frame (base protocols only), one frame."""
    base = judgments[~judgments["protocol"].astype(str).str.contains("+", regex=False)]
    frames = [judgments] + [derive(base, r) for r in remedies]
    return pd.concat([f for f in frames if len(f)], ignore_index=True)


#: what :func:`remedy_table` derives: the figure columns and what the verdict rules read
REMEDY_COLUMNS: tuple[str, ...] = (*FIGURE_COLUMNS, "parse_status", "p_a")
REMEDY_TABLE_COLUMNS: tuple[str, ...] = (
    "judge", "dataset", "protocol", "temperature", "decoding", "step", "remedy", "derived_protocol", "n_pairs",
    "n_labelled_pairs", "A", "phi", "C", "T", "tie_rate", "dA", "dphi", "dT", "dtie_rate",
    "calls_per_verdict", "extra_calls_per_verdict", "new_calls", "note",
)


def remedy_table(judgments: pd.DataFrame, *, remedies: Sequence[str] = DEFAULT_REMEDIES,
                 policy: FigurePolicy = DEFAULT_POLICY) -> pd.DataFrame:
    """How each remedy moves A, phi, C, T and the tie rate, per cell, beside the base protocol.

    One row per (cell, remedy) plus one ``remedy == "none"`` row per cell.  ``calls_per_verdict`` is
    in calls of the base protocol (times its steps for multi-call protocols);
    ``extra_calls_per_verdict`` is what the remedy adds per verdict; ``new_calls`` is 0: every remedy
    here is computed from stored judgments.  A remedy the run cannot support (one order only,
    fewer than k repetitions, no log-probabilities) gets NaN figures and a ``note``.

    The figures follow the cell figures' ``policy`` (its unparsed rule and confidence) as in
    :func:`verdictlab.stats.reliability` (q measured as there, ``q="auto"``), so the ``none`` row of a
    cell equals that cell's figures under the same policy; they are
    :func:`verdictlab.stats.remedy_figures.remedy_reliability`'s, computed from the base rows' codes
    (the same numbers as ``reliability`` of each derived frame).  The table shows point figures only,
    so the policy's bootstrap draws nothing.
    """
    derived = [p for p in pd.unique(judgments["protocol"]) if isinstance(p, str) and "+" in p]
    base = judgments.loc[~judgments["protocol"].isin(derived), [c for c in REMEDY_COLUMNS if c in judgments.columns]]
    base = base.reindex(columns=list(REMEDY_COLUMNS))     # the figure columns only: no text, no trial id
    base["step"] = text_filled(base["step"], "")
    base = base[base["step"] == ""]   # per-criterion / per-round rows: aggregate them first
    cell = list(CELL_KEY)           # free and constrained decoding are different cells, as in the report
    if base.empty:
        return pd.DataFrame(columns=list(REMEDY_TABLE_COLUMNS))
    # the figures of reliability(derive(base, remedy)), from the base rows' codes (no derived frames)
    figures = remedy_reliability(base, remedies, policy=policy, q="auto")
    b = figures[0][1]
    b["step"] = ""
    rows = [b.assign(remedy="none", derived_protocol=b["protocol"])]
    for r, rel in figures[1:]:
        if rel.empty:
            continue
        rel["protocol"] = rel["protocol"].astype(str).astype(object)
        rel["derived_protocol"] = rel["protocol"] + f"+{r}"
        rel["step"] = ""
        rows.append(rel.assign(remedy=r))
    joined = remedy_effects(pd.concat(rows, ignore_index=True), b, keys=cell)
    joined["calls_per_verdict"] = [1 if rem == "none" else calls_per_verdict(rem) for rem in joined["remedy"]]
    joined["extra_calls_per_verdict"] = joined["calls_per_verdict"] - 1
    joined["new_calls"] = 0
    joined["note"] = ""
    # cells the remedy could not be computed for
    have = set(map(tuple, joined[[*cell, "remedy"]].astype(str).to_numpy()))
    missing = []
    for _, row in b.iterrows():
        for r in remedies:
            if tuple(str(row[c]) for c in cell) + (r,) not in have:
                miss = {c: row[c] for c in cell}
                miss.update(remedy=r, derived_protocol=f"{row['protocol']}+{r}", new_calls=0, step="",
                            calls_per_verdict=calls_per_verdict(r), extra_calls_per_verdict=calls_per_verdict(r) - 1,
                            note=_why_missing(r))
                missing.append(miss)
    if missing:
        joined = pd.concat([joined, pd.DataFrame(missing)], ignore_index=True)
    _blank_unreadable(joined, b, cell)      # the first reason of a cell with nothing readable is that
    order = {r: i for i, r in enumerate(["none", *remedies])}
    joined["_o"] = joined["remedy"].map(order)
    joined = joined.sort_values([*cell, "_o"]).reset_index(drop=True)
    return joined[[c for c in REMEDY_TABLE_COLUMNS if c in joined.columns]]


#: the figures of a remedy row (blank where the cell has nothing readable)
_ROW_FIGURES = ("A", "phi", "C", "T", "tie_rate", "dA", "dphi", "dT", "dtie_rate")


def _blank_unreadable(joined: pd.DataFrame, base: pd.DataFrame, cell: Sequence[str]) -> None:
    """Rows of a cell with no readable reply get no figure, whatever a remedy would derive from its
    unparsed verdicts (a vote of two unparsed orders is no verdict), and the reason as their note
    (:func:`verdictlab.stats.figure_reasons`)."""
    unread = {tuple(str(rec[c]) for c in cell) for rec, why in zip(base.to_dict(orient="records"),
                                                                 figure_reasons(base), strict=True)
              if why.get("C") == Missing.NO_READABLE_REPLIES}
    if not unread or joined.empty:
        return
    at = np.array([tuple(str(v) for v in row) in unread for row in joined[list(cell)].to_numpy().tolist()])
    joined.loc[at, [c for c in _ROW_FIGURES if c in joined.columns]] = np.nan
    joined.loc[at, "note"] = Missing.NO_READABLE_REPLIES.value


def _why_missing(remedy: str) -> str:
    if "order-average" in remedy:
        return "needs P(A) from log-probabilities in both orders"
    m = re.search(r"majority@(\d+)", remedy)
    if m:
        return f"needs at least {m.group(1)} repetitions" + (" and both orders" if "both-orders" in remedy else "")
    return "needs both orders"


def single_verdict_rows(pairs: pd.DataFrame) -> pd.DataFrame:
    """Pairwise rows with one verdict per trial: rows without a step as they are, and for multi-call
    protocols (``flask``: one row per criterion) the aggregate verdicts of
    :func:`verdictlab.analyses.flask.aggregate_criteria` instead of their step rows."""
    if pairs.empty:
        return pairs
    stepped = pairs["step"].fillna("") != ""
    if not stepped.any():
        return pairs
    return pd.concat([pairs[~stepped], aggregate_criteria(pairs[stepped])], ignore_index=True)


@register("remedies", order=10, title="Remedies",
          description="How running both orders, averaging P(A) over orders, or a majority over k repetitions "
                      "moves A, φ, C, T and the tie rate, and what each costs in calls per verdict (d = change "
                      "against no remedy; the 'none' row is the cell itself, under the report's policy).")
def remedies_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    """:func:`remedy_table` over the run's pairwise rows (multi-call protocols by their aggregate)."""
    if inp.pairs.empty:
        return None
    return remedy_table(single_verdict_rows(inp.pairs), remedies=REPORT_REMEDIES, policy=inp.policy)
