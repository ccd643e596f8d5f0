"""The JSON document of a report (``verdictlab report --format json``) and the one function that makes a
value JSON-ready.

The document is ``{"schema_version", "run", "unparsed", "cells"}``.  Each cell is written from the
typed :class:`~verdictlab.report.model.Cell` by iterating the same column specification the tables use
(:data:`verdictlab.report.columns.CELL_FIGURES` for the figures, with ``X_lo``/``X_hi`` where the figure has
an interval) plus its numbers, its extra columns (flat, as registered), ``agreement``, ``region``,
``vs_best``, names, sentence and -- new in this shape -- ``missing`` (figure -> why it is not measured) and
``upper_bounds`` (figure -> why it is only an upper bound).  A figure that is not measured is ``null``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, fields, is_dataclass
from typing import Any

import numpy as np
import pandas as pd

from .columns import CELL_FIGURES
from .model import Cell, DatasetDecision, DecisionEntry, Report
from .readings import figure_words

__all__ = ["JSON_KEYS", "cell_json", "decision_json", "json_ready", "report_json"]

#: keys of the JSON document (the stable schema)
JSON_KEYS: tuple[str, ...] = ("schema_version", "run", "unparsed", "cells")


def json_ready(value: Any) -> Any:
    """numpy/pandas scalars -> Python; NaN/NA -> None; tuples -> lists; dataclasses -> dicts (recursively
    for dicts and lists)."""
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating | float):
        f = float(value)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(value, np.ndarray):
        return [json_ready(v) for v in value.tolist()]
    if is_dataclass(value) and not isinstance(value, type):
        return json_ready({f.name: getattr(value, f.name) for f in fields(value)})
    return value


def cell_json(cell: Cell, *, with_step: bool) -> dict[str, Any]:
    """One cell as the JSON writes it (module docstring): the cell key (and ``step`` when the report's
    cells have steps), every figure of :data:`~verdictlab.report.columns.CELL_FIGURES` (with its interval
    bounds), every number, every extra column, and the cell's readings."""
    out: dict[str, Any] = cell.key.as_dict()
    if with_step:
        out["step"] = cell.step
    for col in CELL_FIGURES:
        iv = cell.figures.get(col.key)
        if iv is None:
            continue
        out[col.key] = iv.point
        if col.interval:
            out[f"{col.key}_lo"], out[f"{col.key}_hi"] = iv.low, iv.high
    out.update(cell.numbers)
    out["region"] = cell.region
    out["regions_possible"] = list(cell.regions_possible) if cell.regions_possible else None
    out["vs_best"] = dict(cell.vs_best.values) if cell.vs_best is not None else None
    out["agreement"] = ({**cell.agreement.values, "consistency_bias_paradox": cell.agreement.paradox}
                        if cell.agreement is not None else None)
    out.update(cell.extra)
    out["best_T_in_dataset"] = cell.best_T_in_dataset
    out["sentence"] = cell.sentence
    if cell.names is not None:
        out["display"] = {"judge": cell.names.judge, "protocol": cell.names.protocol, "dataset": cell.names.dataset,
                          "configuration": cell.names.configuration, "configuration_id": cell.names.configuration_id}
        out["judge_label"] = cell.names.judge
    out["missing"] = dict(cell.missing)
    out["upper_bounds"] = dict(cell.upper_bounds)
    if cell.definitions is not None:
        out["definitions"] = [dict(d.values) for d in cell.definitions]
    return out


def _entry_json(e: DecisionEntry) -> dict[str, Any]:
    return {"number": e.number, "cell_index": e.cell_index, "configuration": e.configuration,
            "configuration_id": e.configuration_id, "judge": e.key.judge, "protocol": e.key.protocol,
            "temperature": e.key.temperature, "decoding": e.key.decoding, "step": e.step or None,
            "T": e.T.point, "T_lo": e.T.low, "T_hi": e.T.high, "T_upper_bound": e.T.upper_bound,
            "region": e.region, "region_short": e.region_short, "group": e.group, "rule": e.rule,
            "reason": e.reason, "brief": e.brief, "caution": e.caution}


def decision_json(d: DatasetDecision) -> dict[str, Any]:
    """One dataset's decision as the JSON writes it (``run.decision``)."""
    out: dict[str, Any] = {"dataset": d.dataset, "dataset_name": d.dataset_name, "headline": d.headline,
                           "ranking": d.ranking, "alpha": d.alpha, "family_size": d.family_size}
    for g in ("use", "avoid", "below_best", "not_measured"):
        out[g] = [_entry_json(e) for e in d.group(g)]
    out["missing"] = [{"figure": figure_words(m.figure), "reason": m.reason, "why": f"{m.reason}: {m.why}",
                       "configurations": list(m.configurations), "every": m.every} for m in d.missing]
    return out


def report_json(report: Report) -> dict[str, Any]:
    """The stable JSON document: ``{"schema_version", "run", "unparsed", "cells"}``.

    ``run`` carries the key-free meta, the engine accounting, the audit counts, the interval settings,
    the validation checklist, the format dispersion, the figures across cells, the registered analyses
    (``run.analyses[name]``: title, description, columns, rows), the display names and the decision;
    each cell carries its figures (fractions in [0, 1], ``null`` when not measured, with the reason in
    ``missing``), intervals (``X_lo``/``X_hi``), Ns, region, sentence, ``agreement`` and the columns of
    the registered cell-column analyses -- every cell the same keys.  With published definitions asked
    for, ``run.definitions`` is their catalogue and each cell's ``definitions`` its figures under them
    (``[]`` for a cell none of them supports)."""
    policy = report.policy
    run = {f.name: getattr(report.run, f.name) for f in fields(report.run) if f.name != "other"}
    run.update(report.run.other)
    run["intervals"] = {"confidence": policy.confidence, "n_bootstrap": policy.n_bootstrap, "seed": policy.seed}
    run["checklist"] = [asdict(c) for c in report.checklist]
    run["format_dispersion"] = [asdict(d) for d in report.format_dispersion]
    run["across_cells"] = report.across_cells
    run["analyses"] = report.extra_tables
    run["display_names"] = report.display_names
    run["decision"] = [decision_json(d) for d in report.decision]
    run["leaderboards"] = [asdict(b) for b in report.leaderboards]
    run["graders"] = [asdict(b) for b in report.graders]
    if report.definitions:
        run["definitions"] = report.definitions
    with_step = any(c.step for c in report.cells)
    return json_ready({"schema_version": report.schema_version, "run": run, "unparsed": policy.unparsed.value,
                       "cells": [cell_json(c, with_step=with_step) for c in report.cells]})
