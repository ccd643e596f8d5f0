"""``flask``: one call per criterion, then a majority vote across criteria.

The criteria (four by default) come from the rubric family of the dataset (package data, see
:mod:`verdictlab.protocols.rubrics`; ``rubric: auto|correctness|instruction|PATH``).  Each criterion
call is its own trial and judgment row, with ``step`` = the criterion name, so C and phi can be
computed per criterion.  Each call answers in the G-Eval JSON format (scores for both responses on
that one criterion, then the winner) and is parsed by :func:`verdictlab.protocols.geval.parse_geval`.

The aggregate verdict (:func:`aggregate_criteria`) is a derived row with ``step = ''`` per
(judge, dataset, item, protocol, order, temperature, rep): the jury vote of
:func:`verdictlab.jury.vote_counts` over the criterion verdicts, with

* a quorum (default: a strict majority of the criteria, 3 of 4) -- fewer parsed criterion verdicts
  give no aggregate verdict, so parse failures cannot silently shrink the vote;
* an explicit tie rule for a split (2-2): ``"tie"`` (default) -> verdict ``tie``; ``"none"`` -> no
  verdict; ``"priority"`` -> the verdict of the most important criterion (rubric order) among the
  tied values, marked ``parse_status = "fallback"`` with ``fallback_rule = "criterion-priority"``.

Cost: calls per evaluation = number of criteria (reported by :func:`flask_table`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..jury import default_quorum, vote_counts
from .base import ParseResult, Protocol
from .geval import CONTRADICTION_RULES, GEvalProtocol, _label_set, parse_geval
from .rubrics import load_rubric

FLASK_TIE_RULES = ("tie", "none", "priority")
_AGG_KEY = ["judge", "dataset", "item_id", "protocol", "order", "temperature", "rep"]


class FlaskProtocol(Protocol):
    """One call per criterion of the rubric family; options as :class:`GEvalProtocol` (``rubric``,
    ``scale``, ``allows_tie``, ``on_contradiction``, ``max_tokens``)."""

    id = "flask"
    label_only = False
    wants_token_logprobs = True
    verdict_choices = ("A", "B")

    def __init__(self, *, rubric: str | Path = "auto", scale: int = 5, allows_tie: bool = False,
                 on_contradiction: str = "flag", max_tokens: int = 140, protocol_id: str = "flask") -> None:
        if on_contradiction not in CONTRADICTION_RULES:
            raise ValueError(f"on_contradiction must be one of {CONTRADICTION_RULES}, got {on_contradiction!r}")
        self.id = protocol_id
        self.rubric_spec = str(rubric)
        self.scale = int(scale)
        self.allows_tie = bool(allows_tie)
        self.on_contradiction = on_contradiction
        self._max_tokens = int(max_tokens)
        # the renderer / instruction wording is shared with geval
        self._geval = GEvalProtocol(rubric=rubric, scale=scale, allows_tie=allows_tie,
                                    on_contradiction=on_contradiction)

    def __repr__(self) -> str:
        return f"FlaskProtocol(rubric={self.rubric_spec!r})"

    def criteria(self, item: Any) -> list[dict[str, Any]]:
        return list(load_rubric(self.rubric_spec, dataset=getattr(item, "dataset", None))["flask"]["criteria"])

    def steps(self, item: Any) -> tuple[str, ...]:
        return tuple(str(c["name"]) for c in self.criteria(item))

    def messages(self, item: Any, order: str, *, step: str = "") -> list[dict[str, str]]:
        crit = {str(c["name"]): c for c in self.criteria(item)}
        if step not in crit:
            raise ValueError(f"flask: unknown criterion step {step!r}; this item's criteria: {', '.join(crit)}")
        c = crit[step]
        system = str(load_rubric(self.rubric_spec, dataset=getattr(item, "dataset", None))["flask"]["system"]).strip()
        first, second = item.shown(order)
        la, lb = _label_set(item)
        user = (f"Question:\n{item.question}\n\nResponse {la}:\n{first}\n\nResponse {lb}:\n{second}\n\n"
                f"[Criterion: {c.get('title', c['name'])}] {c['question']}\n\n"
                f"{self._geval.instruction(item).replace('against the rubric', 'on this criterion only')}")
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def max_tokens(self) -> int:
        return self._max_tokens

    def stop(self) -> tuple[str, ...]:
        return ("}",)

    def parse(self, text: str) -> ParseResult:
        return parse_geval(text, allows_tie=self.allows_tie, on_contradiction=self.on_contradiction)

    def parse_response(self, response: Any) -> ParseResult:
        return self._geval.parse_response(response)

    def render(self, verdict: str, *, rationale: str = "", scores: dict[str, Any] | None = None) -> str:
        return self._geval.render(verdict, rationale=rationale, scores=scores)

    def render_malformed(self, u: float = 0.0) -> str:
        return self._geval.render_malformed(u)


def make_flask(*, template_path: str | Path | None = None, **options: Any) -> FlaskProtocol:
    from .rubrics import build_rubric_protocol

    return build_rubric_protocol(FlaskProtocol, "flask", template_path=template_path, **options)


def make_flask_correctness(*, template_path: str | Path | None = None, **options: Any) -> FlaskProtocol:
    return make_flask(template_path=template_path, family="correctness", protocol_id="flask-correctness",
                      **options)


def make_flask_instruction(*, template_path: str | Path | None = None, **options: Any) -> FlaskProtocol:
    return make_flask(template_path=template_path, family="instruction", protocol_id="flask-instruction",
                      **options)


# -- aggregation ------------------------------------------------------------------------------------
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
    from ..remedies import _empty, _finish, _prep

    if tie_rule not in FLASK_TIE_RULES:
        raise ValueError(f"tie_rule must be one of {FLASK_TIE_RULES}, got {tie_rule!r}")
    df = _prep(judgments)
    df = df[df["step"] != ""].copy()
    if df.empty:
        return _empty()
    prio = list(priority) if priority is not None else list(dict.fromkeys(df["step"]))
    rank = {s: i for i, s in enumerate(prio)}
    df["_rank"] = df["step"].map(rank).fillna(len(prio)).astype(int)
    v = df["verdict"].astype(object)
    for x in ("A", "B", "tie"):
        df[f"_n_{x}"] = (v == x).astype(int)
    df["_n"] = 1
    num = ["tokens_in", "tokens_out", "cost_usd", "latency_s", "attempts"]
    for c in num:
        df[c] = pd.to_numeric(df[c], errors="coerce")
    df = df.sort_values("_rank")
    agg: dict[str, Any] = {"_n_A": "sum", "_n_B": "sum", "_n_tie": "sum", "_n": "sum", "label": "first",
                           "category": "first", "cache_hit": "max", "created_at": "max", "error": "first"}
    grouped = df.groupby(_AGG_KEY, dropna=False, sort=True)
    g = grouped.agg(agg).join(grouped[num].sum(min_count=1)).reset_index()
    counts = g[["_n_A", "_n_B", "_n_tie"]].to_numpy()
    n_crit = g["_n"].to_numpy()
    q = np.array([quorum or default_quorum(int(n)) for n in n_crit])
    verdict, status = vote_counts(counts, quorum=q, tie_rule="none" if tie_rule == "priority" else tie_rule)
    pstatus = np.where(pd.isna(verdict), "failed", "ok").astype(object)
    fallback = np.full(len(g), None, dtype=object)
    if tie_rule == "priority" and (status == "split").any():
        # the most important criterion whose verdict is one of the tied top values
        top = counts.max(axis=1)
        tied = {i: {x for x, c in zip(("A", "B", "tie"), counts[i], strict=True) if c == top[i]}
                for i in np.flatnonzero(status == "split")}
        firsts = df.dropna(subset=["verdict"]).groupby(_AGG_KEY, dropna=False, sort=True)
        lookup = {k: list(grp["verdict"]) for k, grp in firsts}
        for i, values in tied.items():
            key = tuple(g.loc[i, _AGG_KEY])
            pick = next((x for x in lookup.get(key, []) if x in values), None)
            if pick is not None:
                verdict[i], pstatus[i], fallback[i] = pick, "fallback", "criterion-priority"
    g["verdict"] = verdict
    g["parse_status"] = pstatus
    g["fallback_rule"] = fallback
    g["parse_detail"] = [f"{s}: {int(a + b + t)}/{int(n)} criteria parsed"
                         for s, a, b, t, n in zip(status, *counts.T, n_crit, strict=True)]
    g["scores"] = [json.dumps({"votes_A": int(a), "votes_B": int(b), "votes_tie": int(t), "criteria": int(n),
                               "calls": int(n), "vote": s})
                   for a, b, t, n, s in zip(*counts.T, n_crit, status, strict=True)]
    g["step"] = ""
    g["raw_output"] = None
    g["prompt_hash"] = None
    g["p_a"] = np.nan
    first = np.where(g["order"] == "AB", "A", "B")
    is_ab = pd.Series(verdict).isin(["A", "B"]).to_numpy()
    g["shown_first_won"] = np.where(is_ab, (verdict == first).astype(float), np.nan)
    return _finish(g)


def flask_table(judgments: pd.DataFrame, *, tie_rule: str = "tie", unparsed: str = "exclude") -> pd.DataFrame:
    """Reliability per criterion and for the aggregate, with calls per evaluation.

    One row per (judge, dataset, protocol, temperature, step); ``step == ''`` is the aggregate.
    ``calls_per_evaluation`` = criterion calls behind one aggregate verdict (per pair and order)."""
    from ..stats import reliability

    steps = judgments[judgments["step"].fillna("").astype(str) != ""]
    if steps.empty:
        return pd.DataFrame()
    agg = aggregate_criteria(steps, tie_rule=tie_rule)
    per = reliability(steps, unparsed=unparsed, n_bootstrap=0)
    tot = reliability(agg, unparsed=unparsed, n_bootstrap=0)
    tot["step"] = ""
    out = pd.concat([tot, per], ignore_index=True)
    calls = (steps.groupby(["judge", "dataset", "protocol", "temperature"])["step"].nunique()
             .rename("calls_per_evaluation").reset_index())
    return out.merge(calls, on=["judge", "dataset", "protocol", "temperature"], how="left")
