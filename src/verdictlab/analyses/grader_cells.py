"""Pointwise graders audited like pairwise judges: one row per grader cell (grader x rubric x dataset x
temperature x decoding, and criterion ``step``) with its consistency, agreement with the human labels,
invariance / sensitivity under perturbations, calibration, trust and cost per item
(:func:`verdictlab.stats.grader_cells.grader_cell` computes them all; definitions in docs/definitions.md).

A perturbed item (``meta["perturbation"]``, :func:`verdictlab.core.items.perturbation_of`) enters only
when its case counts (deterministic, or accepted by a person); the others are counted per cell
(``n_cases_uncounted``).  Unparsed grades follow the cell figures' policy (``inp.policy``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict
from typing import Any

import pandas as pd

from ..core.items import perturbation_of
from ..core.policy import FigurePolicy
from ..core.vocab import CELL_KEY
from ..protocols.pointwise import grade_text
from ..protocols.rubric import human_label, normalise_result
from ..stats import cost_per_item, with_cell_columns
from ..stats.grader_cells import GraderCell, grader_cell
from ..stats.group_counts import n_distinct
from . import AnalysisInput, register

__all__ = ["GRADER_KEY", "grader_cell_figures", "grader_cells", "grader_rows", "iter_grader_cells"]

#: one grader cell: the cell key and the criterion
GRADER_KEY: tuple[str, ...] = (*CELL_KEY, "step")
_RUBRIC = ("PASS", "FAIL", "UNKNOWN")
_CACHE = "grader_cells"


def _item_info(items: Sequence[Any] | None) -> dict[tuple[str, str], tuple[Any, Any]]:
    """(dataset, item id) -> (item, its Perturbation or None)."""
    return {(str(it.dataset), str(it.item_id)): (it, perturbation_of(it)) for it in items or ()
            if hasattr(it, "response")}


def grader_rows(points: pd.DataFrame, items: Sequence[Any] | None) -> pd.DataFrame:
    """The pointwise rows as grader rows: :data:`GRADER_KEY`, ``item_id``, ``grade`` and ``label``
    (normalised: PASS/FAIL/UNKNOWN for a rubric, grade text otherwise), ``source_id`` / ``kind`` /
    ``klass`` of a perturbed case, ``counts`` (False for a case that does not count yet), ``scale`` (the
    item's scale as grade text, rubric ``FAIL, PASS``), and the accounting columns."""
    df = with_cell_columns(points).copy()
    df["step"] = df["step"].fillna("").astype(str) if "step" in df.columns else ""
    info = _item_info(items)
    keys = list(zip(df["dataset"].astype(str), df["item_id"].astype(str), strict=True))
    found = [info.get(k, (None, None)) for k in keys]
    rubric = (df["verdict"].isin(_RUBRIC) | df["protocol"].astype(str).str.startswith("rubric")).to_numpy()
    df["grade"] = [normalise_result(v) if r else grade_text(v) for v, r in zip(df["verdict"], rubric, strict=True)]
    df["label"] = [human_label(it, s) if r and it is not None else normalise_result(lab) if r
                   else grade_text(it.label if it is not None else lab)
                   for (it, _), s, lab, r in zip(found, df["step"], df["label"], rubric, strict=True)]
    df["source_id"] = [p.source_id if p is not None else None for _, p in found]
    df["kind"] = [p.kind if p is not None else None for _, p in found]
    df["klass"] = [str(p.perturbation_class) if p is not None else None for _, p in found]
    df["counts"] = [p is None or p.counts() for _, p in found]
    df["scale"] = [("FAIL", "PASS") if r else tuple(grade_text(x) for x in it.scale) if it is not None and it.scale
                   else None for (it, _), r in zip(found, rubric, strict=True)]
    return df


def _compute(inp: AnalysisInput) -> list[tuple[dict[str, Any], GraderCell, int]]:
    points = inp.points
    if points.empty:
        return []
    rows = grader_rows(points, inp.items)
    out = []
    for key, g in rows.groupby(list(GRADER_KEY), dropna=False, sort=True):
        scales = g["scale"].dropna()
        counted = g[g["counts"]]
        if counted.empty:
            continue
        cell = grader_cell(counted, scale=scales.iloc[0] if len(scales) else None, policy=inp.policy)
        out.append((dict(zip(GRADER_KEY, key, strict=True)), cell, n_distinct(g.loc[~g["counts"], "item_id"])))
    return out


def iter_grader_cells(inp: AnalysisInput) -> Iterator[tuple[dict[str, Any], GraderCell, int]]:
    """``(key, figures, n_cases_uncounted)`` per grader cell of the run (cells in key order), computed
    once per :class:`AnalysisInput` (the four grader tables share them through ``inp.extra``)."""
    if _CACHE not in inp.extra:
        inp.extra[_CACHE] = _compute(inp)
    yield from inp.extra[_CACHE]


def grader_cell_figures(inp: AnalysisInput) -> tuple[pd.DataFrame, list[GraderCell]] | None:
    """The grader cell table (:func:`grader_cells`) and the figures of each of its rows, in order."""
    cells = list(iter_grader_cells(inp))
    table = grader_cells(inp)
    return None if table is None else (table, [c for _, c, _ in cells])


def _pooled(cell: GraderCell, klass: str, name: str) -> dict[str, Any]:
    p = cell.pooled[cell.pooled["kind"] == klass]
    if p.empty:
        return {name: None, f"{name}_lo": None, f"{name}_hi": None, f"n_{name}_units": 0}
    r = p.iloc[0]
    return {name: r["rate"], f"{name}_lo": r["rate_lo"], f"{name}_hi": r["rate_hi"], f"n_{name}_units": r["n_counted"]}


def _cell_row(key: dict[str, Any], cell: GraderCell, uncounted: int, policy: FigurePolicy) -> dict[str, Any]:
    ag = asdict(cell.agreement)
    tr = asdict(cell.trust)
    return {**key, "kind": cell.kind, "scale": ", ".join(cell.scale), "n_items": cell.n_items,
            "n_cases": cell.n_cases, "n_cases_uncounted": uncounted, "n_judgments": cell.n_judgments,
            "n_unparsed": cell.n_unparsed, "unparsed_policy": policy.unparsed.value,
            "C": cell.C, "C_lo": cell.C_lo, "C_hi": cell.C_hi, "n_consistency_items": cell.n_consistency_units,
            "self_consistency": cell.self_consistency,
            **{k: ag[k] for k in ("n", "accuracy", "accuracy_lo", "accuracy_hi", "kappa", "kappa_lo", "kappa_hi",
                                  "kappa_quadratic", "kappa_quadratic_lo", "kappa_quadratic_hi", "spearman",
                                  "spearman_lo", "spearman_hi", "mae", "mae_lo", "mae_hi")},
            **_pooled(cell, "preserving", "invariance"), **_pooled(cell, "changing", "sensitivity"),
            **{k: tr[k] for k in ("T", "T_lo", "T_hi", "T_joint", "T_joint_lo", "T_joint_hi", "T_bound", "iota", "q")},
            "T_reason": tr["reason"] or None, "ece": cell.ece.ece, "ece_n": cell.ece.n, "ece_reason": cell.ece.reason}


def grader_cells(inp: AnalysisInput) -> pd.DataFrame | None:
    """One row per grader cell: every figure of :class:`~verdictlab.stats.grader_cells.GraderCell`
    and the measured cost per item (:func:`verdictlab.stats.cost_per_item`)."""
    rows = [_cell_row(key, cell, unc, inp.policy) for key, cell, unc in iter_grader_cells(inp)]
    if not rows:
        return None
    out = pd.DataFrame(rows)
    cost = cost_per_item(with_cell_columns(inp.points).assign(
        step=inp.points["step"].fillna("").astype(str)), by=GRADER_KEY)
    return out.merge(cost[[*GRADER_KEY, "usd_per_item", "calls_per_item"]], on=list(GRADER_KEY), how="left")


@register("grader_cells", order=84, title="Pointwise graders, audited like judges",
          description="Per grader cell: C over repetitions, agreement with the human label (accuracy, kappa; "
                      "ordinal: weighted kappa, Spearman, MAE), invariance under meaning-preserving and "
                      "sensitivity under meaning-changing perturbations, T_g = C (A - iota q) and T_g_joint, "
                      "the ECE of the modal grade's vote share, dollars and calls per item.")
def grader_cells_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    return grader_cells(inp)


@register("grader_perturbations", order=86, title="Grader invariance and sensitivity per perturbation kind",
          description="Per grader cell and kind, paired over the same source items: invariance (preserving) or "
                      "sensitivity (changing, among sources graded right) with a Wilson interval, and exact "
                      "McNemar of correctness on the source against the perturbed case (Holm within the cell).")
def grader_perturbations(inp: AnalysisInput) -> pd.DataFrame | None:
    frames = [cell.effects.assign(**key) for key, cell, _ in iter_grader_cells(inp) if len(cell.effects)]
    if not frames:
        return None
    out = pd.concat(frames, ignore_index=True)
    return out[[*GRADER_KEY, *[c for c in out.columns if c not in GRADER_KEY]]]


@register("grader_calibration", order=87, title="Grader calibration across the scale",
          description="Per grader cell and true level: items, mean grade given, shares graded at / above / below "
                      "the level, and the confusion row (graded_<level>).")
def grader_calibration(inp: AnalysisInput) -> pd.DataFrame | None:
    frames = [cell.levels.assign(**key) for key, cell, _ in iter_grader_cells(inp)
              if len(cell.levels) and cell.levels["n"].any()]
    if not frames:
        return None
    out = pd.concat(frames, ignore_index=True)
    return out[[*GRADER_KEY, *[c for c in out.columns if c not in GRADER_KEY]]]
