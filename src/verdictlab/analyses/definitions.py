"""The catalogue of published figure definitions, registered like analyses: every paper's
"agreement", "accuracy", "consistency" or "win rate" on one run, beside verdictlab's own C, phi, A, T.

Papers that audit judges count ties, flips, unparsed outputs and denominators differently, which
moves "agreement" by 10-20 points on the same judgments.  Each entry here names its source (paper,
script), its rules, and one line on what it counts differently from verdictlab's ``A`` -- the bridge
between a paper's number and the report's.  The figures themselves are pure functions in
:mod:`verdictlab.stats.definitions` (and :func:`~verdictlab.stats.reliability`,
:func:`~verdictlab.stats.class_figures` for verdictlab's own and PandaLM's).

Adding a definition touches this module (one :func:`register_definition` entry) and a stats function
with its hand-worked test::

    @register_definition("my-agreement", title="...", source="paper, table, script", ties="...",
                         flips="...", unparsed="...", denominator="...", note="...")
    def _my_agreement(d: DefinitionInput) -> pd.DataFrame:
        return my_agreement(d.frame, policy=d.policy, by=d.by)

:func:`definitions_table` gives the long table the report shows ("figures as the papers define
them"): one row per (cell, definition, variant) with value, interval, N and the note.  A definition
a cell cannot support (N = 0) has no value there, and its row says why in ``missing`` -- the reason
:mod:`verdictlab.stats.missing` decides for every output: no readable replies, one order, one
repetition, no labels, too few pairs (the first the cell lacks of what the definition needs); every value
of a cell with no readable reply is not measured, and verdictlab's own T and T_joint at one repetition
are upper bounds (``upper_bound``).  A definition whose data the run has none of (soft preferences,
score pairs) has no rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from ..core.policy import FigurePolicy
from ..core.registry import Registry
from ..core.vocab import CELL_KEY, Missing
from ..errors import UsageError
from ..protocols.geval import scores_frame
from ..stats import figure_reasons, first_lack, upper_bound_reasons, with_cell_columns
from ..stats.classes import class_figures
from ..stats.definitions import (
    DEFINITION_COLUMNS,
    accuracy_mean_of_orders,
    accuracy_per_order,
    agreement_both_orders,
    class_figure,
    consistency_both_orders,
    pair_verdict_agreement,
    positional_agreement,
    reliability_figure,
    score_ratio,
    vote_accuracy,
    win_rate,
)
from ..stats.reliability import reliability
from . import AnalysisInput

__all__ = ["CATALOGUE_FIELDS", "DEFINITIONS", "DEFINITIONS_COLUMNS", "Definition", "DefinitionInput", "catalogue",
           "definition_names", "definitions_table", "register_definition", "resolve_definitions"]

#: the columns of :func:`definitions_table` after the cell keys
DEFINITIONS_COLUMNS: tuple[str, ...] = ("definition", "title", "source", *DEFINITION_COLUMNS,
                                        "unparsed_rule", "note", "missing", "upper_bound")
#: what a definition's denominator needs of a cell (``needs=`` of :func:`register_definition`)
NEEDS: tuple[str, ...] = ("labels", "both orders", "repetitions", "soft preferences", "score pairs")


@dataclass(frozen=True)
class DefinitionInput:
    """What a definition reads: the run's pairwise judgments (``frame``, on the full cell key: a missing
    or NULL decoding is free), the cell columns ``by`` (:data:`~verdictlab.core.vocab.CELL_KEY`) and the
    figure policy; verdictlab's own figures are computed once and shared."""

    analysis: AnalysisInput

    @cached_property
    def frame(self) -> pd.DataFrame:
        return with_cell_columns(self.analysis.pairs)

    @property
    def by(self) -> tuple[str, ...]:
        return CELL_KEY

    @property
    def has_steps(self) -> bool:
        f = self.frame
        return "step" in f.columns and bool(f["step"].astype("object").fillna("").ne("").any())

    @property
    def policy(self) -> FigurePolicy:
        """The figure policy of the report (:class:`~verdictlab.core.policy.FigurePolicy`)."""
        return self.analysis.policy

    @cached_property
    def reliability(self) -> pd.DataFrame:
        return reliability(self.frame, policy=self.policy, by=self.by)

    @cached_property
    def classes(self) -> pd.DataFrame:
        return class_figures(self.frame, policy=self.policy, by=self.by)

    @cached_property
    def scored(self) -> pd.DataFrame:
        """``frame`` with the canonical ``score_a`` / ``score_b`` of score-pair judgments (NaN where
        a row carries no score pair)."""
        f = self.frame
        if f.empty or "scores" not in f.columns or not f["scores"].notna().any():
            return f.assign(score_a=np.nan, score_b=np.nan)
        s = scores_frame(f)
        return f.assign(score_a=pd.to_numeric(s["score_a"], errors="coerce"),
                        score_b=pd.to_numeric(s["score_b"], errors="coerce"))


DefinitionFn = Callable[[DefinitionInput], "pd.DataFrame | None"]


@dataclass(frozen=True)
class Definition:
    """A published figure definition: its ``source`` and its rules for ``ties``, ``flips``,
    ``unparsed`` outputs and the ``denominator``; ``interval`` says how its interval is made;
    ``note`` is the one line on what it counts differently from verdictlab's ``A``;
    ``policy``: True when unparsed outputs follow the cell's unparsed policy (the source has no rule)."""

    name: str
    title: str
    source: str
    ties: str
    flips: str
    unparsed: str
    denominator: str
    interval: str
    note: str
    fn: DefinitionFn
    policy: bool = False
    order: int = 100
    needs: tuple[str, ...] = ()

    def unparsed_rule(self, policy: FigurePolicy) -> str:
        return f"cell policy ({policy.unparsed.value})" if self.policy else self.unparsed


#: the registered definitions (the one registry mechanism, :mod:`verdictlab.core.registry`)
DEFINITIONS: Registry[Definition] = Registry("definition")


def register_definition(name: str, *, title: str, source: str, ties: str, flips: str, unparsed: str,
                        denominator: str, note: str, interval: str = "Wilson over the denominator",
                        policy: bool = False, order: int | None = None,
                        needs: tuple[str, ...] = ()) -> Callable[[DefinitionFn], DefinitionFn]:
    """Decorator: register ``fn(d: DefinitionInput) -> frame`` (cell keys + ``DEFINITION_COLUMNS``)
    as definition ``name``.  ``order`` places it in the table (default: registration order); ``needs``
    (of :data:`NEEDS`) what its denominator needs of a cell, for the reason a cell without it has no
    figure."""
    if not name or not isinstance(name, str) or "," in name:
        raise ValueError("a definition needs a non-empty name without commas")
    if not set(needs) <= set(NEEDS):
        raise ValueError(f"needs must be among {NEEDS}, got {needs}")

    def deco(fn: DefinitionFn) -> DefinitionFn:
        pos = len(DEFINITIONS) if order is None else order
        DEFINITIONS.register(name, Definition(name=name, title=title, source=source, ties=ties, flips=flips,
                                              unparsed=unparsed, denominator=denominator, interval=interval,
                                              note=note, fn=fn, policy=policy, order=pos, needs=tuple(needs)),
                            description=title)
        return fn

    return deco


def definition_names() -> list[str]:
    """Every registered definition, in table order."""
    return [d.name for d in sorted((DEFINITIONS.get(n) for n in DEFINITIONS.names()), key=lambda d: d.order)]


def resolve_definitions(spec: str | Sequence[str]) -> list[str]:
    """``"all"`` or ``"NAME,NAME"`` (or a list of names) -> the names in table order; an unknown name
    raises ``KeyError`` naming the known ones."""
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    if not names:
        raise UsageError("definitions: give 'all' or a comma-separated list of names")
    if "all" in names:
        return definition_names()
    for n in names:
        DEFINITIONS.entry(n)
    return [n for n in definition_names() if n in names]


#: what :func:`catalogue` says of each definition
CATALOGUE_FIELDS: tuple[str, ...] = ("name", "title", "source", "ties", "flips", "unparsed", "denominator",
                                     "interval", "note", "policy")


def catalogue(names: str | Sequence[str] = "all") -> list[dict[str, object]]:
    """The definitions ``names`` in table order, each as ``{field: value}`` over
    :data:`CATALOGUE_FIELDS` (its source and rules; ``policy``: unparsed outputs follow the cell's
    unparsed policy)."""
    return [{f: getattr(DEFINITIONS.get(n), f) for f in CATALOGUE_FIELDS} for n in resolve_definitions(names)]


def definitions_table(inp: AnalysisInput, names: str | Sequence[str] = "all") -> pd.DataFrame:
    """The figures of the definitions ``names`` (``"all"`` by default) for every cell of ``inp``:
    one row per (cell, definition, variant) with the cell keys and :data:`DEFINITIONS_COLUMNS`,
    cells in key order and definitions in table order.  A row with N = 0 or an undefined figure has no
    value, interval or successes (NaN) and says why in ``missing`` (:mod:`verdictlab.stats.missing`); other rows
    have ``missing`` None."""
    d = DefinitionInput(inp)
    # multi-call protocols (one step per criterion or round) have one cell per step, as in reliability
    keys = [*d.by, *(["step"] if d.has_steps else [])]
    frames = []
    if not d.frame.empty:
        for name in resolve_definitions(names):
            spec = DEFINITIONS.get(name)
            got = spec.fn(d)
            if got is None or got.empty:
                continue
            extra = [k for k in got.columns if k not in DEFINITION_COLUMNS and k not in keys]
            got = _with_reasons(got.drop(columns=extra), spec, d, keys)
            got = got.assign(definition=spec.name, title=spec.title, source=spec.source,
                             unparsed_rule=spec.unparsed_rule(d.policy), note=spec.note, _order=spec.order)
            frames.append(got)
    cols = keys + list(DEFINITIONS_COLUMNS)
    if not frames:
        return pd.DataFrame(columns=cols)
    out = pd.concat(frames, ignore_index=True)
    out = out.sort_values([*keys, "_order", "variant"], kind="stable").reset_index(drop=True)
    return out[cols]


#: verdictlab's own figures among the definitions: their reasons are the cell figures' own
_OWN_FIGURES = ("C", "phi", "A", "T", "T_joint")
#: what a definition's denominator needs of a cell (``needs=`` of :func:`register_definition`) -> the cause
#: :func:`verdictlab.stats.missing.first_lack` looks for; the data kinds are the reason when nothing else is
_NEED_CAUSES: dict[str, Missing] = {"both orders": Missing.ONE_ORDER, "repetitions": Missing.ONE_REPETITION,
                                    "labels": Missing.NO_LABELS}
_DATA_REASONS: dict[str, str] = {"soft preferences": "no soft preferences", "score pairs": "no score pairs"}
#: the variants of a per-order definition: one of a cell judged in one order only has nothing to count
_ORDER_VARIANTS = ("AB", "BA")


def _reasons_of_cells(rel: pd.DataFrame, spec: Definition, keys: list[str]) -> tuple[pd.DataFrame, pd.Series]:
    """Per cell of ``rel`` (indexed by ``keys``): the reason a row of ``spec`` has no figure (by the one
    decider, :mod:`verdictlab.stats.missing`) for a row that needs what ``spec`` needs and for a per-order
    variant (which needs the order too), each None when the cell lacks none of it; and the upper bound of
    verdictlab's own T / T_joint."""
    idx = pd.MultiIndex.from_frame(rel[keys]) if len(keys) > 1 else pd.Index(rel[keys[0]])
    if spec.name in _OWN_FIGURES:
        own = [why.get(spec.name) for why in figure_reasons(rel, (spec.name,))]
        reasons = pd.DataFrame({"row": own, "order": own}, index=idx)
        bound = [b.get(spec.name) for b in upper_bound_reasons(rel)]
        return reasons, pd.Series(bound, index=idx, dtype=object)
    needs = tuple(_NEED_CAUSES[n] for n in spec.needs if n in _NEED_CAUSES)
    row = first_lack(rel, needs)
    order = first_lack(rel, (*needs, Missing.ONE_ORDER))
    reasons = pd.DataFrame({"row": [m.value if m else None for m in row],
                            "order": [m.value if m else None for m in order]}, index=idx)
    return reasons, pd.Series([None] * len(rel), index=idx, dtype=object)


def _with_reasons(got: pd.DataFrame, spec: Definition, d: DefinitionInput, keys: list[str]) -> pd.DataFrame:
    """``got`` with ``missing`` and ``upper_bound``: a row has no figure (value, interval and successes
    NaN -- never a number for a figure that was not measured) where N = 0, where the figure is undefined
    (T of a cell without phi), where its cell lacks what the definition needs (C at one repetition reads 1
    by construction) and where no reply of its cell was readable, whatever the definition counts; its
    reason is the one decider's (:func:`verdictlab.stats.missing.first_lack`,
    :func:`~verdictlab.stats.figure_reasons`), or, with nothing lacking, too few pairs or the data the
    definition counts.  ``upper_bound``: why verdictlab's own T / T_joint is only an upper bound."""
    got = got.reset_index(drop=True)
    rel = d.reliability
    got["missing"] = None
    got["upper_bound"] = None
    if got.empty or not set(keys) <= set(rel.columns):
        return got
    reasons, bounds = _reasons_of_cells(rel, spec, keys)
    at = pd.MultiIndex.from_frame(got[keys]) if len(keys) > 1 else pd.Index(got[keys[0]])
    per_order = got["variant"].astype(str).isin(_ORDER_VARIANTS).to_numpy() if "variant" in got.columns \
        else np.zeros(len(got), dtype=bool)
    cause = reasons["row"].reindex(at).to_numpy(dtype=object)
    # a per-order variant of the order a one-order cell never judged has nothing to count: "one order"
    order_cause = reasons["order"].reindex(at).to_numpy(dtype=object)
    lacking = np.array([isinstance(c, str) for c in cause], dtype=bool)
    undefined = ((got["n"] <= 0) | got["value"].isna()).to_numpy(copy=True)
    fallback = next((_DATA_REASONS[n] for n in spec.needs if n in _DATA_REASONS), Missing.TOO_FEW_PAIRS.value)
    empty = lacking | undefined
    got.loc[empty, "missing"] = [c if isinstance(c, str) else o if isinstance(o, str) and p else fallback
                                 for c, o, p in zip(cause[empty], order_cause[empty], per_order[empty], strict=True)]
    got.loc[empty, ["value", "lo", "hi", "successes", "standard_error"]] = np.nan
    bound = bounds.reindex(at).to_numpy(dtype=object)
    got["upper_bound"] = [b if isinstance(b, str) and not e else None for b, e in zip(bound, empty, strict=True)]
    return got


# -- the published definitions ------------------------------------------------------------------------

_AUTOJ = "Auto-J (Li et al. 2023, Generative Judge for Evaluating Alignment), pairwise_eval.py"


@register_definition(
    "agreement-both-orders", needs=("labels", "both orders"), title="agreement, correct in both orders (3 classes)", source=_AUTOJ,
    ties="a tie label is a third class", flips="a flipped pair is wrong",
    unparsed="wrong, pair kept in the denominator", denominator="every labelled pair (A, B or tie) judged in both orders",
    note="One count per pair, right only if BOTH orders name the label, tie labels included; A scores each "
         "order apart and leaves tie labels out.")
def _agreement_both_orders(d: DefinitionInput) -> pd.DataFrame:
    return agreement_both_orders(d.frame, policy=d.policy, by=d.by)


@register_definition(
    "consistency-both-orders", needs=("both orders",), title="consistency in both orders, ties included", source=_AUTOJ,
    ties="tie = tie is consistent", flips="the figure itself: a flip is inconsistent",
    unparsed="cell policy (the source has no rule)", policy=True, denominator="every pair judged in both orders",
    note="No label: the share of pairs whose two orders agree; equals 1 − φ.")
def _consistency_both_orders(d: DefinitionInput) -> pd.DataFrame:
    return consistency_both_orders(d.frame, policy=d.policy, by=d.by)


@register_definition(
    "accuracy-per-order", needs=("labels",), title="single-order accuracy per order (3 classes)", source=_AUTOJ,
    ties="a tie label is a third class", flips="not read: one order at a time",
    unparsed="wrong, kept in the denominator", denominator="every labelled pair judged in that order",
    note="Each order on its own with tie labels a class to hit; A pools both orders and leaves tie labels out.")
def _accuracy_per_order(d: DefinitionInput) -> pd.DataFrame:
    return accuracy_per_order(d.frame, ties=True, policy=d.policy, by=d.by)


@register_definition(
    "accuracy-per-order-no-ties", needs=("labels",), title="single-order accuracy per order, tie labels left out", source=_AUTOJ,
    ties="tie labels left out; a tie verdict is wrong", flips="not read: one order at a time",
    unparsed="wrong, kept in the denominator", denominator="pairs labelled A or B judged in that order",
    note="A's rules for one order at a time (unparsed counted wrong); A is the mean of the two orders.")
def _accuracy_per_order_no_ties(d: DefinitionInput) -> pd.DataFrame:
    return accuracy_per_order(d.frame, ties=False, policy=d.policy, by=d.by)


_MTBENCH = "MT-Bench (Zheng et al. 2023, Judging LLM-as-a-Judge), FastChat llm_judge/compute_agreement.py"


@register_definition(
    "agreement-with-ties", needs=("labels", "both orders"), title="agreement of the pair verdict, with ties", source=_MTBENCH,
    ties="a tie label is a class; a flip makes the pair verdict a tie",
    flips="the pair verdict is the two orders' common verdict, else tie",
    unparsed="one order unparsed: tie; both: an error vote (wrong)",
    denominator="every labelled pair judged in both orders",
    note="One verdict per pair (a flip becomes tie) against labels with ties as a class; A scores each order.")
def _agreement_with_ties(d: DefinitionInput) -> pd.DataFrame:
    return pair_verdict_agreement(d.frame, ties=True, policy=d.policy, by=d.by)


@register_definition(
    "agreement-without-ties", needs=("labels", "both orders"), title="agreement of the pair verdict, without ties", source=_MTBENCH,
    ties="pairs whose label or pair verdict is a tie left out", flips="a flip is a tie verdict: left out",
    unparsed="one order unparsed: tie (left out); both: an error vote (wrong, kept)",
    denominator="labelled A/B pairs whose pair verdict is not a tie",
    note="Flips and tie labels leave the denominator instead of counting wrong, so it runs above A.")
def _agreement_without_ties(d: DefinitionInput) -> pd.DataFrame:
    return pair_verdict_agreement(d.frame, ties=False, policy=d.policy, by=d.by)


_PANDALM = "PandaLM (Wang et al. 2023), test set v1 evaluation (accuracy, macro-F1 over A, B, tie)"


@register_definition(
    "accuracy-3class", needs=("labels",), title="three-class accuracy (A, B, tie)", source=_PANDALM,
    ties="a tie label is a third class", flips="each order scored on its own",
    unparsed="PandaLM maps an unreadable output to tie (the importer's fallback); a stored unparsed "
             "output follows the cell policy", policy=True,
    denominator="(pair, order) units labelled A, B or tie",
    note="A with tie labels kept as a class the judge must name (a tie verdict can be right).")
def _accuracy_3class(d: DefinitionInput) -> pd.DataFrame:
    return class_figure(d.classes, d.reliability, "A_3class", by=d.by)


@register_definition(
    "macro-f1", needs=("labels",), title="macro-F1 over A, B, tie", source=_PANDALM,
    ties="tie is one of three classes, weighted like the others", flips="each order scored on its own",
    unparsed="as accuracy-3class", policy=True, denominator="(pair, order) units labelled A, B or tie",
    interval="percentile bootstrap over pairs",
    note="Mean of per-class F1: a rare class (often tie) weighs as much as a common one; not a share of units.")
def _macro_f1(d: DefinitionInput) -> pd.DataFrame:
    return class_figure(d.classes, d.reliability, "macro_f1", by=d.by)


@register_definition(
    "both-orders-vote", needs=("labels", "both orders"), title="accuracy of the both-orders vote", source="JudgeBench (Tan et al. 2024), utils/metrics",
    ties="a tie vote abstains; a tied vote is a tie verdict, wrong; tie labels left out",
    flips="A + B is a tie: wrong; one order decides when the other abstains",
    unparsed="abstains", denominator="pairs labelled A or B judged in both orders",
    note="One verdict per pair by vote of its two orders (an unparsed or tie order lets the other decide); "
         "A scores each order.")
def _both_orders_vote(d: DefinitionInput) -> pd.DataFrame:
    return vote_accuracy(d.frame, policy=d.policy, by=d.by)


_LLMBAR = "LLMBar (Zeng et al. 2024, Evaluating LLMs at Evaluating Instruction Following), evaluate.py"


@register_definition(
    "accuracy-mean-of-orders", needs=("labels",), title="accuracy averaged over both orders", source=_LLMBAR,
    ties="tie labels left out; a tie verdict is wrong", flips="a flipped pair is half right",
    unparsed="wrong (a null winner), kept in the denominator", denominator="(pair, order) units labelled A or B",
    interval="percentile bootstrap over pairs",
    note="A with unparsed verdicts counted wrong instead of the cell's policy (A under --unparsed wrong).")
def _accuracy_mean_of_orders(d: DefinitionInput) -> pd.DataFrame:
    return accuracy_mean_of_orders(d.frame, policy=d.policy,
                                   by=d.by)


@register_definition(
    "positional-agreement", needs=("both orders",), title="positional agreement", source=_LLMBAR,
    ties="tie = tie agrees", flips="the figure itself: a flip disagrees",
    unparsed="a value: null = null agrees", denominator="every pair judged in both orders",
    note="No label: 1 − φ with a null winner a value of its own (two nulls agree).")
def _positional_agreement(d: DefinitionInput) -> pd.DataFrame:
    return positional_agreement(d.frame, policy=d.policy, by=d.by)


_ALPACA = "AlpacaEval (Dubois et al. 2023), alpaca_eval.metrics (win_rate, standard_error, discrete_win_rate)"


def _with_preferences(d: DefinitionInput) -> pd.DataFrame | None:
    f = d.frame
    if "p_a" not in f.columns or not f["p_a"].notna().any():
        return None
    cells = f.groupby(list(d.by), dropna=False)["p_a"].transform(lambda s: s.notna().any())
    return f[cells.astype(bool)]


@register_definition(
    "win-rate", needs=("soft preferences",), title="win rate from soft preferences", source=_ALPACA,
    ties="a preference of 1/2 is half a win", flips="the two orders' preferences are averaged per pair",
    unparsed="dropped (a judgment without P(A))", denominator="pairs with a soft preference",
    interval="percentile bootstrap over pairs (and AlpacaEval's standard error over pairs)",
    note="No label: the mean probability the judge gives response B over A (with AlpacaEval's SE).")
def _win_rate(d: DefinitionInput) -> pd.DataFrame | None:
    f = _with_preferences(d)
    return None if f is None else win_rate(f, discrete=False, policy=d.policy, by=d.by)


@register_definition(
    "win-rate-discrete", title="discrete win rate, draws half", source=_ALPACA,
    ties="a preference of exactly 1/2 (or a tie verdict) is a draw: half a win",
    flips="the two orders' rounded preferences are averaged per pair",
    unparsed="dropped (no P(A) and no verdict)", denominator="pairs with a preference or a verdict",
    interval="percentile bootstrap over pairs (and AlpacaEval's standard error over pairs)",
    note="No label: each preference rounded to win / draw / loss, then averaged, so it moves away from 1/2.")
def _win_rate_discrete(d: DefinitionInput) -> pd.DataFrame | None:
    f = _with_preferences(d)
    return None if f is None else win_rate(f, discrete=True, policy=d.policy, by=d.by)


@register_definition(
    "score-ratio", needs=("score pairs",), title="pooled score ratio (B's total score / A's)",
    source="Vicuna evaluation (Chiang et al. 2023) / LLaVA-Bench summarize_gpt_review.py (GPT-4 scores both "
           "responses 1-10 in one call)",
    ties="not read (scores, not verdicts)", flips="the orders' scores are pooled",
    unparsed="a judgment without both scores is dropped", denominator="judgments with both scores",
    interval="percentile bootstrap over pairs",
    note="No label and no verdict: response B's summed scores as a share of A's (100% = as good).")
def _score_ratio(d: DefinitionInput) -> pd.DataFrame | None:
    s = d.scored
    if not (s["score_a"].notna() & s["score_b"].notna()).any():
        return None
    return score_ratio(s, policy=d.policy, by=d.by)


# -- verdictlab's own figures, in the same shape ------------------------------------------------------

_OWN = "verdictlab (docs/definitions.md, verdictlab's own figures)"


@register_definition(
    "C", needs=("repetitions",), title="stochastic consistency C", source=_OWN,
    ties="a tie verdict is a value", flips="not read (one order at a time)",
    unparsed="cell policy", policy=True, denominator="(pair, order) units with a verdict",
    note="Repeatability only: share of (pair, order) units whose repetitions all agree; no label, no swap.")
def _c(d: DefinitionInput) -> pd.DataFrame:
    return reliability_figure(d.reliability, "C", by=d.by, confidence=d.policy.confidence)


@register_definition(
    "phi", needs=("both orders",), title="position flip rate φ", source=_OWN,
    ties="a tie verdict is a value (tie = tie is no flip)", flips="the figure itself: modal verdicts differ",
    unparsed="cell policy", policy=True, denominator="pairs judged in both orders",
    note="Order dependence only (1 − φ is the consistency of Auto-J and, under --unparsed wrong, LLMBar's "
         "positional agreement); no label.")
def _phi(d: DefinitionInput) -> pd.DataFrame:
    return reliability_figure(d.reliability, "phi", by=d.by, confidence=d.policy.confidence)


@register_definition(
    "A", needs=("labels",), title="accuracy A", source=_OWN,
    ties="tie labels left out; a tie verdict is wrong", flips="each order scored on its own (a flip is half right)",
    unparsed="cell policy", policy=True, denominator="(pair, order) units labelled A or B",
    note="The reference: each order's modal verdict against an A/B label, tie labels left out.")
def _a(d: DefinitionInput) -> pd.DataFrame:
    return reliability_figure(d.reliability, "A", by=d.by, confidence=d.policy.confidence)


@register_definition(
    "T", needs=("labels", "both orders"), title="trustworthy verdict rate T = C·(A − φq)", source=_OWN,
    ties="as A, with q measured when the judge may say tie", flips="through φ", unparsed="cell policy",
    policy=True, denominator="C, A and φ each on their own denominator; N = labelled units",
    interval="percentile bootstrap over pairs",
    note="Reproducible, order-invariant and correct at once (factorised form): below A by C and φ.")
def _t(d: DefinitionInput) -> pd.DataFrame:
    return reliability_figure(d.reliability, "T", by=d.by, confidence=d.policy.confidence)


@register_definition(
    "T_joint", needs=("labels", "both orders"), title="trustworthy verdict rate, joint event T_joint", source=_OWN,
    ties="as A", flips="a flipped pair counts in neither order", unparsed="cell policy", policy=True,
    denominator="labelled units of pairs judged in both orders",
    note="The joint event measured directly: consistent, not flipped and right in that order.")
def _t_joint(d: DefinitionInput) -> pd.DataFrame:
    return reliability_figure(d.reliability, "T_joint", by=d.by, confidence=d.policy.confidence)
