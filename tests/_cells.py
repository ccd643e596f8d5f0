"""Hand-made report cells for the tests of the readings and renderers: a flat record -- the figures, counts
and key of a cell as the JSON has them, with ``vs_best``, ``agreement`` and ``display`` as dicts -- becomes
the typed :class:`~verdictlab.report.model.Cell` the report builds (through the report's own
``cells_from_frame``, so every missing figure gets its reason the way a real report's does)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from verdictlab.report.build import cells_from_frame
from verdictlab.report.model import Cell, CellNames
from verdictlab.report.readings import agreement_of

_KEY_DEFAULTS = {"judge": "j", "protocol": "direct", "dataset": "d", "temperature": 0.0, "decoding": "free",
                 "step": ""}


def cell_of(rec: Mapping[str, Any]) -> Cell:
    """The typed cell of a flat record (module docstring)."""
    flat = {**_KEY_DEFAULTS, **{k: v for k, v in rec.items() if k not in ("agreement", "display", "sentence",
                                                                         "best_T_in_dataset", "top_parse_failure")}}
    row = pd.DataFrame([{k: (v if v is not None else float("nan")) if k not in ("vs_best", "regions_possible",
                                                                              "region") else v
                         for k, v in flat.items()}])
    (cell,) = cells_from_frame(row)
    if rec.get("agreement") is not None:
        cell.agreement = agreement_of(rec["agreement"])
    shown = rec.get("display")
    if shown is not None:
        cell.names = CellNames(judge=str(shown.get("judge", cell.key.judge)),
                               protocol=str(shown.get("protocol", cell.key.protocol)),
                               dataset=str(shown.get("dataset", cell.key.dataset)),
                               configuration=str(shown.get("configuration", cell.key.judge)),
                               configuration_id=str(shown.get("configuration_id", cell.key.judge)))
    cell.best_T_in_dataset = bool(rec.get("best_T_in_dataset"))
    cell.sentence = str(rec.get("sentence") or "")
    cell.top_parse_failure = rec.get("top_parse_failure")
    return cell


def cells_of(recs: list[Mapping[str, Any]]) -> list[Cell]:
    return [cell_of(r) for r in recs]


def report_of(recs: list[Mapping[str, Any]], *, policy: Any = None, run: Mapping[str, Any] | None = None,
              checklist: list[Mapping[str, Any]] | None = None) -> Any:
    """A typed report of hand-made cells with every reading filled in the way ``build_report`` fills it
    (sentences, decision, format dispersion, notes)."""
    from verdictlab.core.policy import FigurePolicy
    from verdictlab.report import readings
    from verdictlab.report.build import dispersion_rows
    from verdictlab.report.model import CheckItem, Report, RunInfo

    cells = cells_of(recs)
    info = {"run_dir": "", "meta": {}, "n_judgments": 0, "judges": [], "datasets": [], "protocols": [],
            "temperatures": [], "report_versions": {}, **(run or {})}
    policy = policy or FigurePolicy()
    for c in cells:
        c.sentence = c.sentence or readings.cell_sentence(c)
    rep = Report(run=RunInfo(**info), policy=policy, cells=cells,
                 decision=readings.decision(cells, alpha=policy.alpha, family_size=0),
                 format_dispersion=dispersion_rows(cells),
                 checklist=[CheckItem(**c) for c in checklist or []])
    rep.notes = readings.report_notes(rep)
    return rep
