"""Human labels on a run directory: what ``verdictlab validate`` and ``verdictlab plan-labels`` compute,
as functions a notebook can call with a run directory.

:func:`labelled_judgments` reads the run's judgments and, with a label file, replaces their labels by the
file's on the full item key (:func:`verdictlab.datasets.human_labels.read_human_labels`, then
:func:`verdictlab.analyses.human_labels.human_label_keys`).  :func:`validate_run` and :func:`plan_labels`
are :func:`~verdictlab.analyses.human_labels.validate_cells` and
:func:`~verdictlab.analyses.human_labels.budget_cells` on those judgments; every figure comes from
:mod:`verdictlab.stats` through them.

A label plan has limits (docs/errors.md): it counts at most :data:`MAX_PLANNED_LABELS` labels (a
half-width so narrow that humans alone could need more is refused before any work: the search would
not fit in memory, and no one labels a million items) and assumes a pool of at most
:data:`MAX_POOL` items.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from ..analyses.human_labels import (
    CellBudget,
    CellValidation,
    apply_human_labels,
    budget_cells,
    human_label_keys,
    reliability_figure,
    reliability_rows,
    validate_cells,
)
from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..errors import UsageError
from ..stats.ppi import smallest_halfwidth, worst_case_labels

#: the most human labels a plan counts: z^2 / (4 h^2) -- humans alone on a 0/1 outcome of variance
#: at most 1/4 -- must not exceed it
MAX_PLANNED_LABELS = 1_000_000
#: the largest pool a plan assumes (``pool=N``): the pool's predictions are held in memory
MAX_POOL = 10_000_000


class LabelPlanError(UsageError):
    """A label plan out of range; ``option`` names the setting at fault (``halfwidth``, ``pool``...)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


def labelled_judgments(run_dir: str | Path, human: str | Path | None = None, *,
                       reading: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """The run's judgments; with ``human`` (a label file) their ``label`` column holds the file's labels,
    joined on dataset and item id (items the file does not name are unlabelled).  ``reading``: how the
    file is read, the keyword arguments ``field_map``, ``value_map``, ``id_from`` of
    :func:`~verdictlab.datasets.human_labels.read_human_labels` (a published file as it is).  A store
    that cannot be opened is a :class:`~verdictlab.store.StoreError`; a label file that cannot be used,
    or that names items ambiguously or not in the run, an :class:`~verdictlab.core.items.ItemError` naming
    file, row and field, every problem of the file -- reading it and joining it to the run -- at once."""
    from ..core.items import Problems
    from ..datasets.human_labels import raise_label_problems, read_human_labels
    from ..store import open_store

    with open_store(run_dir) as store:
        judgments = store.judgments()
    if human is None:
        return judgments
    problems = Problems(str(human))       # the file's problems and the join's, listed at once
    labels = read_human_labels(human, **dict(reading or {}), problems=problems)
    keys = human_label_keys(judgments, labels, problems=problems)
    raise_label_problems(problems)
    return apply_human_labels(judgments, keys)


def validate_run(run_dir: str | Path, *, human: str | Path | None = None, policy: FigurePolicy = DEFAULT_POLICY,
                 target: float = 0.9, delta: float = 0.1, keep_labels: int | None = None,
                 n_bins: int = 15, reading: Mapping[str, Any] | None = None) -> list[CellValidation]:
    """:func:`~verdictlab.analyses.human_labels.validate_cells` on the run's (human-)labelled judgments
    (``reading``: how the label file is read, :func:`labelled_judgments`)."""
    return validate_cells(labelled_judgments(run_dir, human, reading=reading), policy=policy, target=target, delta=delta,
                          keep_labels=keep_labels, n_bins=n_bins)


def check_label_plan(*, halfwidth: float, confidence: float = 0.95, pool: int | None = None) -> None:
    """:class:`LabelPlanError` (naming the option and the limit) for a plan that cannot be counted: ``halfwidth``
    and ``confidence`` outside (0, 1), a half-width that could need more than
    :data:`MAX_PLANNED_LABELS` labels, a ``pool`` below 2 or above :data:`MAX_POOL`."""
    if not (0 < halfwidth < 1):          # NaN fails too
        raise LabelPlanError("halfwidth", f"halfwidth must be in (0, 1), got {halfwidth}")
    if not (0 < confidence < 1):
        raise LabelPlanError("confidence", f"confidence must be in (0, 1), got {confidence}")
    if worst_case_labels(halfwidth, confidence=confidence) > MAX_PLANNED_LABELS:
        smallest = smallest_halfwidth(MAX_PLANNED_LABELS, confidence=confidence, decimals=5)
        raise LabelPlanError("halfwidth", f"halfwidth {halfwidth:g} could need more than {MAX_PLANNED_LABELS:,} human labels at "
                         f"{confidence:g} confidence, the most a plan counts; use a halfwidth of at least "
                         f"{smallest:g}")
    if pool is not None and not (2 <= pool <= MAX_POOL):
        raise LabelPlanError("pool", f"pool must be between 2 and {MAX_POOL:,} items, got {pool:,}")


def plan_labels(run_dir: str | Path, *, halfwidth: float, human: str | Path | None = None,
                policy: FigurePolicy = DEFAULT_POLICY, n_strata: int = 4,
                pool: int | None = None, reading: Mapping[str, Any] | None = None) -> list[CellBudget]:
    """:func:`~verdictlab.analyses.human_labels.budget_cells` on the run's (human-)labelled judgments,
    after :func:`check_label_plan` (so a plan out of range fails before the store is read; ``reading``:
    how the label file is read, :func:`labelled_judgments`)."""
    check_label_plan(halfwidth=halfwidth, confidence=policy.confidence, pool=pool)
    if n_strata < 2:
        raise LabelPlanError("strata", f"strata must be >= 2, got {n_strata}")
    return budget_cells(labelled_judgments(run_dir, human, reading=reading), halfwidth=halfwidth, policy=policy,
                        n_strata=n_strata, pool=pool)


def validation_records(cells: list[CellValidation]) -> list[dict[str, Any]]:
    """The cells as JSON-ready records (``validate --format json``): every field, the cell as a dict."""
    out = []
    for v in cells:
        d = asdict(v)
        d.pop("key")
        d["cell"] = v.cell
        for r in ("platt", "isotonic"):
            d[r].pop("confidence", None)
        out.append(d)
    return out


def budget_records(cells: list[CellBudget]) -> list[dict[str, Any]]:
    """The label budgets as JSON-ready records (``plan-labels --format json``)."""
    return [{"cell": c.cell, "quantity": c.quantity, **asdict(c.budget)} for c in cells]


def write_reliability_plots(cells: list[CellValidation], out_dir: str | Path) -> tuple[Path, ...]:
    """The reliability diagram of ``cells`` as ``reliability.png`` and ``.svg`` in ``out_dir`` (created);
    the files written, none when no cell has calibration bins."""
    bins = reliability_rows(cells)
    if bins.empty:
        return ()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fig = reliability_figure(bins)
    paths = tuple(out / f"reliability.{fmt}" for fmt in ("png", "svg"))
    for path, fmt in zip(paths, ("png", "svg"), strict=True):
        fig.savefig(path, format=fmt, dpi=130, metadata={"Date": None} if fmt == "svg" else None)
    return paths


__all__ = ["MAX_PLANNED_LABELS", "MAX_POOL", "LabelPlanError", "budget_records", "check_label_plan", "labelled_judgments",
           "plan_labels", "validate_run", "validation_records", "write_reliability_plots"]
