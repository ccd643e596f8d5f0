"""`verdictlab plan-labels RUN --halfwidth 0.03` -- how many human labels a target interval needs.

Per cell, the items that already have a human label are the pilot; the judge's predictions on every judged
item are the pool.  Printed: labels needed with humans alone, with PPI++ (the judge's verdicts on the pool,
corrected by the labels), and with PPI++ when the labels are spread over judge-confidence strata by Neyman
allocation (more labels where the judge is unsure).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from ._errors import EXIT_INPUT, EXIT_STORE
from .options import (
    CONFIDENCE_DEFAULT,
    FORMAT_DEFAULT,
    UNPARSED_DEFAULT,
    Confidence,
    FormatOption,
    LabelIdFromOption,
    LabelMapOption,
    LabelMapValuesOption,
    LegacyJson,
    RunArg,
    TableOrJson,
    Unparsed,
    exit_codes,
    figure_policy,
    format_or_json,
    label_reading,
)


def _n(x: int | None) -> str:
    return "—" if x is None else str(x)


def _alloc(b: Any) -> str:
    if b.allocation is None or b.strata_edges is None:
        return "—"
    edges = ["min", *(f"{e:.2f}" for e in b.strata_edges), "max"]
    return ", ".join(f"[{edges[i]}, {edges[i + 1]}): {n}" for i, n in enumerate(b.allocation))


def plan_labels_cmd(
    run_dir: RunArg,
    halfwidth: Annotated[float, typer.Option(help="Target half-width of the interval (e.g. 0.03 = ±3 points).")],
    human: Annotated[Path | None, typer.Option(
        "--human", help="Pilot human labels: JSON Lines, a JSON list or CSV with item_id, label and (optional) "
                        "dataset -- other column names and values with --map / --map-values (default: the items').")
    ] = None,
    map_: LabelMapOption = None,
    map_values: LabelMapValuesOption = None,
    id_from: LabelIdFromOption = None,
    confidence: Confidence = CONFIDENCE_DEFAULT,
    strata: Annotated[int, typer.Option(help="Most judge-confidence strata for the Neyman allocation.")] = 4,
    pool: Annotated[int | None, typer.Option(
        help="Plan for a pool of this many judged items (default: the run's; at most 10,000,000), assumed to "
             "look like the pilot.")
    ] = None,
    unparsed: Unparsed = UNPARSED_DEFAULT,
    fmt: FormatOption = FORMAT_DEFAULT,
    legacy_json: LegacyJson = False,
) -> None:
    """Human labels needed for an interval of ±HALFWIDTH: humans only, PPI++, PPI++ with Neyman strata."""
    import sys

    from rich.table import Table
    from rich.text import Text

    from ..workflows.human_label_runs import LabelPlanError, budget_records, plan_labels
    from ._errors import printable_line
    from .output import data_console
    from .validate_cmd import cell_name

    form = format_or_json(fmt, legacy_json, TableOrJson)
    try:
        cells = plan_labels(run_dir, halfwidth=halfwidth, human=human, n_strata=strata, pool=pool,
                            policy=figure_policy(unparsed=unparsed, confidence=confidence),
                            reading=label_reading(human, map_, map_values, id_from))
    except LabelPlanError as e:   # out of range or over a documented limit: a bad option value (exit 2)
        raise typer.BadParameter(str(e), param_hint=f"--{e.option}") from None
    if form is TableOrJson.json:
        typer.echo(json.dumps({"cells": budget_records(cells)}, indent=2, allow_nan=False, default=str))
        return
    console = data_console(width=200) if not sys.stdout.isatty() else data_console()
    if not cells:
        console.print("No cells with pair or PASS/FAIL verdicts in this run.", markup=False)
        return
    t = Table(title=f"Human labels for a {confidence:.0%} interval of ±{halfwidth:g}")
    for col in ("cell", "quantity", "pilot", "pool", "humans only", "PPI++", "PPI++ Neyman",
                "allocation by judge confidence"):
        t.add_column(col, overflow="fold")
    for c in cells:
        b, k = c.budget, c.cell
        t.add_row(Text(cell_name(k)), c.quantity,
                  str(b.n_pilot), str(b.n_unlabelled), _n(b.human_only), _n(b.ppi), _n(b.ppi_stratified),
                  _alloc(b))
    console.print(t)
    for c in cells:
        for r in c.budget.reasons:
            console.print(printable_line(f"{cell_name(c.cell)}: {r}"), markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.command("plan-labels", epilog=exit_codes(EXIT_INPUT, EXIT_STORE))(plan_labels_cmd)
