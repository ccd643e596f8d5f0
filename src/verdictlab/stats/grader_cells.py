"""Every figure of one pointwise grader cell from its judgment rows (:func:`grader_cell`).

The rows of one cell (grader x rubric x dataset x temperature x decoding, and one criterion ``step``)
carry ``item_id``, ``grade`` (normalised text, ``None`` = unparsed), ``label`` (the item's human or
expected label, ``None`` = unlabelled) and, for a perturbed case that counts, ``source_id``, ``kind``
and ``klass`` (``preserving`` / ``changing``); unperturbed items have ``source_id`` ``None``.  Consistency
and agreement stand on the unperturbed items; the perturbation figures pair each case with its source
(:mod:`verdictlab.stats.graders` has the definitions).

Calibration across the scale: :func:`~verdictlab.stats.graders.level_calibration` per true level, and
an ECE-style figure: the top-label ECE (:func:`verdictlab.stats.calibration.calibration`, 10 equal-width
bins) of the **vote share of the modal grade over the repetitions** (the grader's own agreement with
itself, its only probability when it gives none) against whether the modal grade equals the label, over
labelled items graded at least twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import PerturbationClass
from .calibration import Calibration, calibration
from .graders import (
    SPLIT_GRADE,
    UNPARSED_GRADE,
    GraderAgreement,
    GraderTrust,
    grade_kind,
    grader_agreement,
    grader_trust,
    item_grades,
    level_calibration,
    perturbation_effects,
)
from .intervals import wilson_bounds

__all__ = ["ECE_BINS", "GraderCell", "grader_cell"]

#: equal-width bins of the grader's ECE
ECE_BINS = 10


@dataclass(frozen=True)
class GraderCell:
    """The figures of one grader cell: counts, consistency C over repetitions (Wilson over the items
    graded at least twice) and self-consistency, agreement with the labels, the perturbation effects
    per kind and ``pooled`` per class (invariance over every preserving unit, sensitivity over every
    changing one), trust, the trust event per source item (``events``: right x consistent x invariant,
    the last two where measured; NaN unlabelled), calibration per level and the ECE of the modal grade's vote share."""

    kind: str
    scale: tuple[str, ...]
    n_judgments: int
    n_unparsed: int
    n_items: int
    n_cases: int
    n_orphan_cases: int
    n_consistency_units: int
    C: float
    C_lo: float
    C_hi: float
    self_consistency: float
    agreement: GraderAgreement
    effects: pd.DataFrame
    pooled: pd.DataFrame
    trust: GraderTrust
    levels: pd.DataFrame
    ece: Calibration
    events: pd.DataFrame


def _scale(given: Sequence[str] | None, labels: pd.Series, grades: pd.Series) -> tuple[str, ...]:
    if given:
        return tuple(given)
    seen = {str(v) for v in [*labels.dropna(), *grades.dropna()]} - {SPLIT_GRADE, UNPARSED_GRADE}

    def key(x: str) -> tuple[bool, float, str]:
        try:
            return (False, float(x), x)
        except ValueError:
            return (True, 0.0, x)

    return tuple(sorted(seen, key=key))


def _units(grades: pd.DataFrame) -> pd.DataFrame:
    """Each counted case beside its source's grade and label (``gs``, ``ls``) and its own (``gp``, ``lp``)."""
    src = grades[grades["source_id"].isna()].set_index("item_id")
    cases = grades[grades["source_id"].notna()]
    known = cases["source_id"].isin(src.index)
    u = cases[known]
    return pd.DataFrame({"source_id": u["source_id"].to_numpy(), "kind": u["kind"].to_numpy(),
                         "klass": u["klass"].to_numpy(), "gs": src["grade"].reindex(u["source_id"]).to_numpy(),
                         "gp": u["grade"].to_numpy(), "ls": src["label"].reindex(u["source_id"]).to_numpy(),
                         "lp": u["label"].to_numpy()}), int((~known).sum())


def _trust_inputs(src: pd.DataFrame, units: pd.DataFrame) -> pd.DataFrame:
    """Per source item: consistent, correct, and its preserving units' counts (see :func:`grader_trust`)."""
    pres = units[(units["klass"] == PerturbationClass.PRESERVING) & units["gs"].notna() & units["gp"].notna()]
    changed = (pres["gs"] != pres["gp"]) | (pres["gs"] == SPLIT_GRADE)
    right = ((pres["gs"] == pres["ls"]).astype(float) + (pres["gp"] == pres["lp"]).astype(float)) / 2
    per = pd.DataFrame({"source_id": pres["source_id"], "one": 1, "changed": changed.astype(int),
                        "q": right.where(changed, 0.0)}).groupby("source_id")[["one", "changed", "q"]].sum()
    per = per.reindex(src["item_id"]).fillna(0)
    labelled = src["label"].notna() & src["grade"].notna()
    correct = np.where(labelled, (src["grade"] == src["label"]).astype(float), np.nan)
    invariant = np.where(per["one"].to_numpy() > 0, (per["changed"].to_numpy() == 0) * 1.0, np.nan)
    return pd.DataFrame({"consistent": src["consistent"].to_numpy(float), "correct": correct,
                         "n_preserving": per["one"].to_numpy(), "n_changed": per["changed"].to_numpy(),
                         "q_sum": per["q"].to_numpy(), "invariant": invariant})


def _ece(src: pd.DataFrame) -> Calibration:
    ok = src["label"].notna() & src["grade"].notna() & (src["n_reps"] >= 2)
    return calibration(src.loc[ok, "mode_share"].to_numpy(float),
                       (src.loc[ok, "grade"] == src.loc[ok, "label"]).to_numpy(float), n_bins=ECE_BINS)


def grader_cell(rows: pd.DataFrame, *, scale: Sequence[str] | None = None,
                policy: FigurePolicy = DEFAULT_POLICY) -> GraderCell:
    """:class:`GraderCell` of one cell's rows (columns in the module docstring), its figures computed under
    ``policy``."""
    confidence, n_bootstrap, seed = policy.confidence, policy.n_bootstrap, policy.seed
    grades = item_grades(rows, unit=["item_id"], policy=policy)
    meta = rows.drop_duplicates("item_id").set_index("item_id")[["label", "source_id", "kind", "klass"]]
    grades = grades.join(meta, on="item_id")
    grades["label"] = grades["label"].astype(object).where(grades["label"].notna(), None)
    src = grades[grades["source_id"].isna()]
    levels = _scale(scale, src["label"], grades["grade"])
    kind = grade_kind(levels)
    agreement = grader_agreement(src["label"], src["grade"], scale=list(levels), kind=kind, confidence=confidence,
                                 n_bootstrap=n_bootstrap, seed=seed)
    cons = src["consistent"].dropna()
    c_lo, c_hi = wilson_bounds(float(cons.sum()), len(cons), confidence=confidence)
    units, orphans = _units(grades)
    effects = perturbation_effects(units["kind"], units["klass"], units["gs"], units["gp"], units["ls"], units["lp"],
                                   confidence=confidence)
    t = _trust_inputs(src, units)
    trust = grader_trust(t["consistent"], t["correct"], t["n_preserving"], t["n_changed"], t["q_sum"], t["invariant"],
                         binary=kind == "binary", confidence=confidence, n_bootstrap=n_bootstrap, seed=seed,
                         readable=bool(rows["grade"].notna().any()))
    pooled = perturbation_effects(units["klass"], units["klass"], units["gs"], units["gp"], units["ls"], units["lp"],
                                  confidence=confidence)
    # the trust event per source item: right, and consistent / invariant where measured
    event = t["correct"].to_numpy() * t["consistent"].fillna(1.0).to_numpy() * t["invariant"].fillna(1.0).to_numpy()
    multi = src[src["n_reps"] >= 2]
    return GraderCell(
        kind=kind, scale=levels, n_judgments=len(rows), n_unparsed=int(rows["grade"].isna().sum()), n_items=len(src),
        n_cases=len(grades) - len(src), n_orphan_cases=orphans, n_consistency_units=len(cons),
        C=float(cons.mean()) if len(cons) else float("nan"), C_lo=float(c_lo), C_hi=float(c_hi),
        self_consistency=float(multi["mode_share"].mean()) if len(multi) else float("nan"),
        agreement=agreement, effects=effects, pooled=pooled, trust=trust,
        events=pd.DataFrame({"item_id": src["item_id"].to_numpy(), "event": event}),
        levels=level_calibration(src["label"], src["grade"], scale=levels), ece=_ece(src))
