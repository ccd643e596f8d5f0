"""The decision between graders, as a typed result (:func:`grader_decision`) and a registered table.

Per dataset and criterion, the grader cells are ranked by T_g (or, where any of them lacks T_g, all by
the bound C x A; :func:`verdictlab.stats.ranking_value`), the best is compared with each other on the
per-item trust events (:func:`verdictlab.stats.grader_versus_best`), and each gets its avoid codes
(:func:`verdictlab.stats.grader_avoid_codes`) with one sentence per code.  The typed result is what a
decision panel renders; until the report's panel takes it, the table carries it to every output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..core.vocab import CellKey
from ..stats import AVOID_THRESHOLDS, grader_avoid_codes, grader_versus_best, ranking_value
from . import AnalysisInput, register
from .grader_cells import GRADER_KEY, grader_cell_figures

__all__ = ["GraderChoice", "GraderGroup", "avoid_sentence", "grader_decision"]

_SENTENCES = {
    "inconsistent": "its grades change between repetitions (C below {C_min:.0%} even at the interval's top)",
    "disagrees_with_humans": "it agrees with the human labels little beyond chance (kappa below {kappa_min:.2f} "
                             "even at the interval's top)",
    "not_invariant": "a meaning-preserving change ({kind}) moves its grade (invariance below {invariance_min:.0%} "
                     "even at the interval's top)",
    "insensitive": "it misses meaning-changing edits ({kind}): it follows a flipped label less often than "
                   "{sensitivity_min:.0%} even at the interval's top",
    "unparsed": "more than {unparsed_max:.0%} of its replies could not be read",
    "worse_than_best": "the best grader of the group is better on the same items (exact test, Holm-adjusted)",
}


def avoid_sentence(code: str) -> str:
    """The sentence of an avoid code (``not_invariant:<kind>`` names its kind)."""
    name, _, kind = code.partition(":")
    return _SENTENCES[name].format(kind=kind, **AVOID_THRESHOLDS)


@dataclass(frozen=True)
class GraderChoice:
    """One grader cell in its group: its rank (None when it has no ranking value), the value and its
    interval, whether it is the best, whether it is distinguishable from the best (None: not tested),
    the avoid codes and their sentences, and why it is unranked."""

    cell: CellKey
    step: str
    rank: int | None
    value: float
    lo: float
    hi: float
    best: bool
    distinguishable: bool | None
    p_holm: float | None
    avoid: tuple[str, ...]
    why: tuple[str, ...]
    unranked_because: str | None


@dataclass(frozen=True)
class GraderGroup:
    """The graders of one dataset and criterion, best first; ``ranked_by`` is ``T_g`` or ``T_bound``."""

    dataset: str
    step: str
    ranked_by: str
    choices: tuple[GraderChoice, ...]


def _group(rows: pd.DataFrame, cells: list[Any]) -> GraderGroup:
    values, ranked_by = ranking_value(rows["T"], rows["T_bound"])
    events = pd.concat([c.events.assign(grader=g).rename(columns={"item_id": "item"}) for g, c in enumerate(cells)],
                       ignore_index=True)
    vs = grader_versus_best(events, values)
    # the bound C x A has no interval of its own: its low and high were printed as the point, "69% [69, 69]"
    nan = float("nan")
    choices = []
    for g, (r, cell) in enumerate(zip(rows.to_dict("records"), cells, strict=True)):
        v = vs.iloc[g]
        worse = bool(v["distinguishable"]) and not bool(v["best"])
        codes = grader_avoid_codes(C_hi=cell.C_hi, kappa_hi=cell.agreement.kappa_hi, n_unparsed=cell.n_unparsed,
                                   n_judgments=cell.n_judgments, effects=cell.effects, worse_than_best=worse)
        unranked = None if v["rank"] is not None else (cell.trust.reason or "no figure to rank by")
        choices.append(GraderChoice(
            cell=CellKey.of(r), step=str(r["step"]), rank=v["rank"], value=float(values[g]),
            lo=float(r["T_lo"]) if ranked_by == "T_g" else nan, hi=float(r["T_hi"]) if ranked_by == "T_g" else nan, best=bool(v["best"]), distinguishable=v["distinguishable"],
            p_holm=None if pd.isna(v["p_holm"]) else float(v["p_holm"]), avoid=codes,
            why=tuple(avoid_sentence(c) for c in codes), unranked_because=unranked))
    choices.sort(key=lambda c: (c.rank is None, c.rank or 0, c.cell))
    return GraderGroup(dataset=str(rows["dataset"].iloc[0]), step=str(rows["step"].iloc[0]), ranked_by=ranked_by,
                       choices=tuple(choices))


def grader_decision(inp: AnalysisInput) -> list[GraderGroup]:
    """The grader decision of a run: one :class:`GraderGroup` per dataset and criterion."""
    figures = grader_cell_figures(inp)
    if not figures:
        return []
    table, cells = figures
    out = []
    for _, idx in table.groupby(["dataset", "step"], sort=True).groups.items():
        pos = [table.index.get_loc(i) for i in idx]
        out.append(_group(table.iloc[pos].reset_index(drop=True), [cells[p] for p in pos]))
    return out


@register("grader_decision", order=83, title="Which grader to use",
          description="Per dataset and criterion: graders ranked by T_g (or by the bound C x A when invariance is "
                      "unmeasured), whether each is distinguishable from the best on the same items, and why to "
                      "avoid it.")
def grader_decision_table(inp: AnalysisInput) -> pd.DataFrame | None:
    rows = [{**c.cell.as_dict(), "step": c.step, "ranked_by": g.ranked_by, "rank": c.rank, "value": c.value,
             "lo": c.lo, "hi": c.hi, "best": c.best, "distinguishable_from_best": c.distinguishable,
             "p_holm": c.p_holm, "avoid": ", ".join(c.avoid) or None, "why": "; ".join(c.why) or None,
             "unranked_because": c.unranked_because}
            for g in grader_decision(inp) for c in g.choices]
    return pd.DataFrame(rows, columns=[*GRADER_KEY, *[k for k in (rows[0] if rows else {}) if k not in GRADER_KEY]]
                        ) if rows else None
