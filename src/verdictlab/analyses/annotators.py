"""Human annotators as a source (the items' ``votes``, :attr:`AnalysisInput.votes`), and any judge as
the reference of another.

* ``annotator_agreement`` -- per dataset with votes: Fleiss' kappa, Krippendorff's alpha, the mean
  pairwise Cohen's kappa and the agreement of a random pair of annotators (MT-Bench's, with and without
  ties), with item-bootstrap intervals; the gold rule the items' labels were made with.
* ``judge_human_agreement`` -- per cell on a dataset with votes: the judge's agreement with the
  annotators as MT-Bench reports it (every judgment x vote pair of an item, with and without ties)
  beside the annotators' agreement with each other (the ceiling), and the judge against the gold label
  (ties a class, every judgment; Fleiss' kappa of verdict and label in shown terms, as the PRD study
  computes it).  The figures: :mod:`verdictlab.stats.annotators`.
* ``judge_vs_judge`` -- every two judges of one protocol, dataset, temperature and decoding: the share of
  the judgments they share (item, order, repetition) on which they agree and Cohen's kappa -- one judge
  as the reference of the other.
* ``peer_rank`` / ``peer_vote`` -- where two or more judges of one protocol, dataset, temperature and
  decoding are also systems of the tournament: PRD's peer-rank weights and weighted win rates, and
  the weighted vote against the gold label (:mod:`verdictlab.stats.peer_rank`).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import pandas as pd

from ..core.vocab import CELL_KEY
from ..stats import (
    annotator_agreement,
    gold_agreement,
    judge_agreements,
    peer_rank,
    vote_pair_agreement,
    weighted_vote,
)
from ..stats._frame import with_cell_columns
from . import AnalysisInput, register

CELL = list(CELL_KEY)
#: the cell key without the judge: the judges of one such group are compared with each other
GROUP = [c for c in CELL if c != "judge"]


def _pairs(inp: AnalysisInput) -> pd.DataFrame:
    df = inp.pairs
    if "step" in df.columns:
        df = df[df["step"].fillna("").astype(str) == ""]
    return with_cell_columns(df)


def _rule(votes: pd.DataFrame) -> str | None:
    rules = sorted({str(r) for r in votes["label_rule"].dropna()})
    return ", ".join(rules) if rules else None


@register("annotator_agreement", order=73, title="Agreement among human annotators",
          description="Per dataset with annotators' votes: Fleiss' kappa (items with the usual number of votes), "
                      "Krippendorff's alpha, the mean pairwise Cohen's kappa, and how often two annotators of one "
                      "pair agree (MT-Bench's human-human agreement, with and without ties): the ceiling a judge is "
                      "read against.  gold_rule: how the items' labels were made from the votes.")
def annotator_agreement_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    votes = inp.votes
    if votes.empty:
        return None
    rows = [{"dataset": ds, "gold_rule": _rule(v), **annotator_agreement(v, **_boot(inp))}
            for ds, v in votes.groupby("dataset", sort=True)]
    return pd.DataFrame(rows)


def _boot(inp: AnalysisInput) -> dict[str, Any]:
    return {"policy": inp.policy}


@register("judge_human_agreement", order=74, title="Judges against the human annotators",
          description="Per cell on a dataset with annotators' votes: how often the judge agrees with a human "
                      "(every judgment x vote of an item, MT-Bench's figure, with and without ties) beside how "
                      "often two humans agree (the ceiling); and the judge against the gold label over every "
                      "judgment, ties a class (accuracy and Fleiss' kappa in shown terms, as the PRD study).")
def judge_human_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    votes = inp.votes
    if votes.empty:
        return None
    df = _pairs(inp)
    df = df[df["dataset"].astype(str).isin(set(votes["dataset"].astype(str)))]
    if df.empty:
        return None
    ceiling = {ds: {ties: vote_pair_agreement(v, ties=ties, **_boot(inp)) for ties in (True, False)}
               for ds, v in votes.groupby("dataset", sort=True)}
    rows = []
    for key, g in df.groupby(CELL, sort=True, observed=True):
        cell = dict(zip(CELL, key, strict=True))
        v = votes[votes["dataset"] == cell["dataset"]]
        row: dict[str, Any] = {**cell, "gold_rule": _rule(v)}
        for suffix, ties in (("", True), ("_no_ties", False)):
            j = vote_pair_agreement(v, g, ties=ties, **_boot(inp))
            h = ceiling[cell["dataset"]][ties]
            row.update({f"judge_human{suffix}": j.value, f"judge_human{suffix}_lo": j.lo,
                        f"judge_human{suffix}_hi": j.hi, f"n_judge_human{suffix}": j.n,
                        f"human_human{suffix}": h.value, f"human_human{suffix}_lo": h.lo,
                        f"human_human{suffix}_hi": h.hi, f"n_human_human{suffix}": h.n})
        gold = gold_agreement(g, **_boot(inp))
        row.update({f"gold_{k}": val for k, val in gold.items()})
        rows.append(row)
    return pd.DataFrame(rows)


@register("judge_vs_judge", order=75, spans=("judge",), title="Judge against judge",
          description="Every two judges of one protocol, dataset, temperature and decoding, on the judgments they "
                      "share (item, order, repetition): how often they agree (ties a class) and Cohen's kappa -- one "
                      "judge read as the reference of the other.")
def judge_vs_judge_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    df = _pairs(inp)
    # only the columns the groups and judge_agreements read (its unit: dataset, item_id, order, rep):
    # splitting every column of 5.4M rows into the groups cost 1-1.6 s of CPU
    df = df[[c for c in dict.fromkeys([*GROUP, "judge", "item_id", "order", "rep", "verdict"]) if c in df.columns]]
    keys, pairs = [], []
    for key, g in df.groupby(GROUP, sort=True, observed=True):
        by_judge = {str(j): rows for j, rows in g.groupby("judge", observed=True, sort=False)}
        for a, b in combinations(sorted(by_judge), 2):
            keys.append({**dict(zip(GROUP, key, strict=True)), "judge": None, "judge_a": a, "reference": b})
            pairs.append((by_judge[a], by_judge[b]))
    rows = [{**k, **fig} for k, fig in zip(keys, judge_agreements(pairs, **_boot(inp)), strict=True) if fig["n"]]
    return pd.DataFrame(rows) if rows else None


def _peer_groups(inp: AnalysisInput) -> list[tuple[dict[str, Any], pd.DataFrame]]:
    """The (group key, rows) of the groups of two or more judges that are systems of their tournament."""
    df = _pairs(inp)
    if "system_a" not in df.columns or df["system_a"].isna().all():
        return []
    out = []
    for key, g in df.groupby(GROUP, sort=True, observed=True):
        systems = set(g["system_a"].dropna().astype(str)) | set(g["system_b"].dropna().astype(str))
        judges = set(g["judge"].astype(str))
        if len(judges) >= 2 and len(judges & systems) >= 2:
            out.append((dict(zip(GROUP, key, strict=True)), g[g["system_a"].notna() & g["system_b"].notna()]))
    return out


@register("peer_rank", order=78, spans=("judge",), title="Peer rank: reviewers weighted by their own standing",
          description="Where the judges of one protocol and dataset are also systems of the tournament (PRD's peer "
                      "rank): each reviewer's weight from its own win rate as a system (min-max scaled, 5 rounds), "
                      "and every system's win rate with the reviewers' votes so weighted (ties half).")
def peer_rank_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    rows = []
    for key, g in _peer_groups(inp):
        pr = peer_rank(g)
        for system, rate in pr.win_rates.items():
            rows.append({**key, "judge": None, "system": system, "weighted_win_rate": rate,
                         "reviewer_weight": pr.weights.get(system), "iterations": pr.iterations,
                         "n_battles": pr.n_battles, "n_unparsed": pr.n_unparsed})
    return pd.DataFrame(rows) if rows else None


@register("peer_vote", order=79, spans=("judge",), title="Peer vote against the gold label",
          description="The reviewers' vote per item and order, weighted by their peer-rank weights (and "
                      "unweighted), against the gold label over every item and order, ties a class: accuracy and "
                      "Fleiss' kappa as the PRD study reports them.")
def peer_vote_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    rows = []
    for key, g in _peer_groups(inp):
        if g["label"].isna().all():
            continue
        weights = peer_rank(g).weights
        for name, w in (("peer-rank weights", weights), ("equal weights", None)):
            vote = weighted_vote(g, w)
            fig = gold_agreement(vote, **_boot(inp))
            rows.append({**key, "judge": None, "weighting": name,
                         "judges": ", ".join(sorted(g["judge"].astype(str).unique())), **fig})
    return pd.DataFrame(rows) if rows else None
