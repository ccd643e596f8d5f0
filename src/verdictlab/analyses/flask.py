"""FLASK analyses: the aggregate verdict over criteria and reliability per criterion.

The ``flask`` protocol (:mod:`verdictlab.protocols.flask`) makes one call per criterion; each is its
own judgment row with ``step`` = the criterion name.  The aggregate verdict (:func:`aggregate_criteria`)
is a derived row with ``step = ''`` per (judge, dataset, item, protocol, order, temperature, rep): the
jury vote of :func:`verdictlab.stats.juries.vote_counts` over the criterion verdicts, with

* a quorum (default: a strict majority of the criteria, 3 of 4) -- fewer parsed criterion verdicts
  give no aggregate verdict, so parse failures cannot silently shrink the vote;
* an explicit tie rule for a split (2-2): ``"tie"`` (default) -> verdict ``tie``; ``"none"`` -> no
  verdict; ``"priority"`` -> the verdict of the most important criterion (rubric order) among the
  tied values (:func:`verdictlab.stats.juries.priority_verdicts`), marked ``parse_status = "fallback"``
  with ``fallback_rule = "criterion-priority"``.

Cost: calls per evaluation = number of criteria (reported by :func:`flask_table`).  The counting
of the votes and the totals of the criterion calls are :func:`verdictlab.stats.group_counts.vote_groups`;
this module builds the derived rows and the table.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..core.policy import FigurePolicy
from ..core.vocab import CELL_KEY, DECISIVE, Order, ParseStatus, Verdict
from ..stats import reliability
from ..stats.group_counts import distinct_count, vote_groups, votes_matrix
from ..stats.juries import default_quorum, priority_verdicts, vote_counts
from . import NO_BOOTSTRAP, AnalysisInput, register
from ._frames import _empty, _finish, _prep, per_distinct

FLASK_TIE_RULES = ("tie", "none", "priority")
#: one aggregate verdict per trial of the multi-call protocol (its criteria are its steps)
_AGG_KEY = [*CELL_KEY, "item_id", "order", "rep"]
#: what the criterion calls of one aggregate verdict cost, summed
_ACCOUNTING = ("tokens_in", "tokens_out", "cost_usd", "latency_s", "attempts")


def aggregate_criteria(judgments: pd.DataFrame, *, quorum: int | None = None, tie_rule: str = "tie",
                       priority: Sequence[str] | None = None) -> pd.DataFrame:
    """Derived aggregate rows (``step = ''``) for every multi-step group of ``judgments``.

    Rows with a non-empty ``step`` are grouped by (judge, dataset, item, protocol, order,
    temperature, rep); the group's verdict is the vote described in the module docstring.
    ``priority`` lists criterion names most important first (default: the order in which the
    steps first appear in ``judgments``, i.e. the rubric order the engine ran them in).
    Returns a frame with the judgment columns; costs are summed over the criterion calls and the
    vote counts go to ``scores``.
    """
    if tie_rule not in FLASK_TIE_RULES:
        raise ValueError(f"tie_rule must be one of {FLASK_TIE_RULES}, got {tie_rule!r}")
    df = _prep(judgments)
    df = df[df["step"] != ""].copy()
    if df.empty:
        return _empty()
    prio = list(priority) if priority is not None else list(dict.fromkeys(df["step"]))
    rank = {s: i for i, s in enumerate(prio)}
    df["_rank"] = df["step"].map(rank).fillna(len(prio)).astype(int)
    df = df.sort_values("_rank")
    g = vote_groups(df, _AGG_KEY, sums=_ACCOUNTING, firsts=("label", "category", "error"),
                    latest=("cache_hit", "created_at"))
    counts = votes_matrix(g)
    n_crit = g["n_votes"].to_numpy()
    q = np.array([quorum or default_quorum(int(n)) for n in n_crit])
    verdict, status = vote_counts(counts, quorum=q, tie_rule="none" if tie_rule == "priority" else tie_rule)
    pstatus = np.where(pd.isna(verdict), ParseStatus.FAILED.value, ParseStatus.OK.value).astype(object)
    fallback = np.full(len(g), None, dtype=object)
    if tie_rule == "priority" and (status == "split").any():
        # each group's parsed criterion verdicts in rubric order (the frame is sorted by rank)
        lookup = {k: list(grp["verdict"]) for k, grp in
                  df.dropna(subset=["verdict"]).groupby(_AGG_KEY, dropna=False, sort=True)}
        picks = priority_verdicts(counts, status, [lookup.get(tuple(k), []) for k in g[_AGG_KEY].to_numpy()])
        picked = pd.notna(picks)
        verdict[picked] = picks[picked]
        pstatus[picked] = ParseStatus.FALLBACK.value
        fallback[picked] = "criterion-priority"
    g["verdict"] = verdict
    g["parse_status"] = pstatus
    g["fallback_rule"] = fallback
    g["parse_detail"] = per_distinct(lambda s, parsed, n: f"{s}: {int(parsed)}/{int(n)} criteria parsed",
                                     status, g["n_parsed"], n_crit)
    g["scores"] = per_distinct(lambda a, b, t, n, s: json.dumps(
        {"votes_A": int(a), "votes_B": int(b), "votes_tie": int(t), "criteria": int(n), "calls": int(n), "vote": s}),
        *counts.T, n_crit, status)
    g["step"] = ""
    g["raw_output"] = None
    g["prompt_hash"] = None
    g["p_a"] = np.nan
    first = np.where(g["order"] == Order.AB, Verdict.A.value, Verdict.B.value)
    is_ab = pd.Series(verdict).isin(DECISIVE).to_numpy()
    g["shown_first_won"] = np.where(is_ab, (verdict == first).astype(float), np.nan)
    return _finish(g)


def flask_table(judgments: pd.DataFrame, *, tie_rule: str = "tie", policy: FigurePolicy = NO_BOOTSTRAP
                ) -> pd.DataFrame:
    """Reliability per criterion and for the aggregate, with calls per evaluation.

    One row per (judge, dataset, protocol, temperature, step); ``step == ''`` is the aggregate.
    ``calls_per_evaluation`` = criterion calls behind one aggregate verdict (per pair and order).
    ``policy`` goes to :func:`verdictlab.stats.reliability` as for the cell figures (so a criterion row equals the report cell of that step)."""
    steps = judgments[judgments["step"].fillna("").astype(str) != ""]
    if steps.empty:
        return pd.DataFrame()
    steps = _prep(steps)               # free and constrained decoding are different cells, as in the report
    cell = list(CELL_KEY)
    kw: dict[str, Any] = {"policy": policy, "q": "auto"}
    agg = aggregate_criteria(steps, tie_rule=tie_rule)
    per = reliability(steps, **kw)
    tot = reliability(agg, **kw)
    tot["step"] = ""
    out = pd.concat([tot, per], ignore_index=True)
    calls = distinct_count(steps, cell, "step").rename(columns={"n_distinct": "calls_per_evaluation"})
    return out.merge(calls, on=cell, how="left")


@register("flask", order=30, title="FLASK criteria",
          description="Per-criterion calls and the verdict aggregated over criteria (majority vote with a "
                      "quorum; figures under the report's unparsed policy).")
def flask_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    """:func:`flask_table` over the run's pairwise rows."""
    if inp.pairs.empty:
        return None
    return flask_table(inp.pairs, policy=inp.policy.but(n_bootstrap=0))
