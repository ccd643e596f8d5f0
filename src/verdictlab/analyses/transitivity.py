"""Transitivity and the Bradley-Terry ranking of systems, for runs over multi-response items.

Only pair items expanded from multi-response items (``meta["multi_id"]``, see
:mod:`verdictlab.datasets.multi`) take part.  Per cell (the full cell key):
the share of non-transitive triples on modal verdicts (tie rule ``weak_order``; see
:mod:`verdictlab.stats.transitivity`) with its Wilson interval, items with a preference cycle, and
the Bradley-Terry ranking of the systems with bootstrap intervals over items.  Kendall's tau compares
that ranking with a reference: ``inp.extra["reference_ranking"]`` (a list best first, or a mapping
dataset -> list) when given, else the ranking Bradley-Terry fits to the gold pair labels (when the
source gave gold scores or a ranking).

Unparsed verdicts never count as a preference; under unparsed ``wrong`` a pair whose verdicts are
all unparsed still has no outcome (there is no "wrong" side to prefer), so the policy does not change
these figures -- it is recorded in the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..core.policy import FigurePolicy
from ..core.vocab import CELL_KEY
from ..datasets.multi import pair_systems
from ..stats import with_cell_columns
from ..stats.group_counts import n_distinct
from ..stats.transitivity import bradley_terry, kendall_vs_reference, pair_outcomes, transitivity
from . import AnalysisInput, register

CELL = list(CELL_KEY)
TRANSITIVITY_COLUMNS: tuple[str, ...] = (
    *CELL, "n_items", "n_systems", "n_triples", "n_nontransitive", "share_nontransitive", "lo", "hi",
    "n_items_cycle", "n_items_strict_cycle", "n_strict_cycles", "n_excluded", "tie_rule", "ranking",
    "kendall_tau", "kendall_n", "reference", "unparsed_policy",
)
RANKING_COLUMNS: tuple[str, ...] = (*CELL, "system", "strength", "lo", "hi", "rank", "rank_lo", "rank_hi",
                                    "wins", "losses")


def multi_rows(judgments: pd.DataFrame, items: Sequence[Any] | pd.DataFrame | None) -> pd.DataFrame:
    """The judgments of multi-response pairs with ``group``, ``sys_a``, ``sys_b`` joined on."""
    if items is None or judgments.empty:
        return judgments.iloc[0:0].assign(group=None, sys_a=None, sys_b=None)
    ps = pair_systems(items)
    if ps.empty:
        return judgments.iloc[0:0].assign(group=None, sys_a=None, sys_b=None)
    j = with_cell_columns(judgments).assign(item_id=judgments["item_id"].astype(str))
    return j.merge(ps, on=["dataset", "item_id"], how="inner")


def _gold_reference(rows: pd.DataFrame) -> dict[str, float] | None:
    lab = rows.drop_duplicates(["group", "sys_a", "sys_b"])
    lab = lab[lab["label"].isin(["A", "B", "tie"])]
    if lab.empty:
        return None
    bt = bradley_terry(pair_outcomes(lab.rename(columns={"verdict": "_v"}).rename(columns={"label": "verdict"})),
                       n_boot=0)
    return dict(zip(bt["system"], bt["strength"], strict=True)) if len(bt) else None


def _reference(extra: Mapping[str, Any], dataset: str, rows: pd.DataFrame) -> tuple[Any, str]:
    ref = extra.get("reference_ranking")
    if isinstance(ref, Mapping) and dataset in ref:
        return ref[dataset], "given"
    if isinstance(ref, Sequence) and not isinstance(ref, str | Mapping):
        return list(ref), "given"
    gold = _gold_reference(rows)
    return (gold, "gold labels") if gold else (None, "")


#: the policy of :func:`transitivity_tables` unless told otherwise: 200 Bradley-Terry resamples
TABLE_POLICY = FigurePolicy(n_bootstrap=200)


def transitivity_tables(rows: pd.DataFrame, *, extra: Mapping[str, Any] | None = None, tie_rule: str = "weak_order",
                        policy: FigurePolicy = TABLE_POLICY
                        ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-cell transitivity table, per-cell Bradley-Terry ranking table) from :func:`multi_rows`."""
    extra = extra or {}
    recs, ranks = [], []
    for key, g in rows.groupby(CELL, sort=True, dropna=False):
        cell = dict(zip(CELL, key, strict=True))
        out = pair_outcomes(g)
        res = transitivity(out, tie_rule=tie_rule, confidence=policy.confidence)
        bt = bradley_terry(out, n_boot=policy.n_bootstrap, seed=policy.seed, confidence=policy.confidence)
        ranks += [{**cell, **r} for r in bt.to_dict("records")]
        ref, ref_kind = _reference(extra, str(cell["dataset"]), g)
        tau = kendall_vs_reference(dict(zip(bt["system"], bt["strength"], strict=True)), ref) if ref else None
        recs.append({**cell, "n_items": n_distinct(g["group"]), "n_systems": len(bt),
                     "n_triples": res.n_triples, "n_nontransitive": res.n_nontransitive,
                     "share_nontransitive": res.share, "lo": res.low, "hi": res.high,
                     "n_items_cycle": res.n_items_cycle, "n_items_strict_cycle": res.n_items_strict_cycle,
                     "n_strict_cycles": res.n_strict_cycles, "n_excluded": res.n_excluded, "tie_rule": tie_rule,
                     "ranking": " > ".join(bt["system"].astype(str)),
                     "kendall_tau": tau.value if tau else np.nan, "kendall_n": tau.n if tau else 0,
                     "reference": ref_kind, "unparsed_policy": policy.unparsed.value})
    return (pd.DataFrame(recs, columns=list(TRANSITIVITY_COLUMNS)),
            pd.DataFrame(ranks, columns=list(RANKING_COLUMNS)))


def ranking_figure(table: Mapping[str, Any] | pd.DataFrame, *, max_panels: int = 6) -> Any:
    """The Bradley-Terry ranking plot: per cell, each system's strength with its bootstrap interval
    (best at the top).  ``table`` is the ``bt_ranking`` table as a frame or as the report holds it
    (``{"columns", "rows"}``).  Renders only (matplotlib Figure)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = table if isinstance(table, pd.DataFrame) else pd.DataFrame(table["rows"], columns=table["columns"])
    cells = list(df.groupby(CELL, sort=True))[:max_panels]
    fig, axes = plt.subplots(1, max(len(cells), 1), figsize=(4.2 * max(len(cells), 1), 0.5 + 0.45 * max(
        (len(g) for _, g in cells), default=3)), squeeze=False)
    for ax, (key, g) in zip(axes[0], cells, strict=False):
        g = g.sort_values("strength")
        y = np.arange(len(g))
        lo = (g["strength"] - g["lo"]).clip(lower=0).fillna(0)
        hi = (g["hi"] - g["strength"]).clip(lower=0).fillna(0)
        ax.errorbar(g["strength"], y, xerr=[lo, hi], fmt="o", capsize=3)
        ax.set_yticks(y)
        ax.set_yticklabels([str(s)[:24] for s in g["system"]])
        ax.axvline(0, color="#999", lw=0.8)
        ax.set_xlabel("Bradley-Terry strength (log scale)")
        ax.set_title(f"{str(key[0])[:28]}\n{key[1]} · {key[2]}", fontsize=8)
    fig.tight_layout()
    return fig


_LAST: list[Any] = []   # [inp, result]: the two registered tables share one fit per report


def _run(inp: AnalysisInput) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    if _LAST and _LAST[0] is inp:
        return _LAST[1]
    res = _compute(inp)
    _LAST[:] = [inp, res]
    return res


def _compute(inp: AnalysisInput) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    rows = multi_rows(inp.pairs, inp.items if inp.items is not None else inp.items_frame)
    if rows.empty:
        return None
    n_boot = min(inp.policy.n_bootstrap, 200)
    return transitivity_tables(rows, extra=inp.extra, policy=inp.policy.but(n_bootstrap=n_boot))


@register("transitivity", order=70, title="Transitivity",
          description="Multi-response items: share of system triples whose modal verdicts fit no ranking "
                      "(ties by the weak-order rule; Wilson interval), items with a preference cycle, the "
                      "Bradley-Terry ranking and Kendall's τ against the reference (given or gold).")
def transitivity_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    res = _run(inp)
    return None if res is None else res[0]


@register("bt_ranking", order=71, title="Bradley-Terry ranking",
          description="Strength of each system (log scale, mean 0) with bootstrap intervals over items, and "
                      "its rank with the bootstrap range of ranks (1 = strongest).",
          figure=ranking_figure,
          figure_title="Transitivity: Bradley-Terry ranking of systems")
def ranking_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    res = _run(inp)
    return None if res is None else res[1]
