"""`verdictlab validate RUN` -- the judge's figures corrected by human labels.

Human labels come from the run's items (their ``label``) or from ``--human FILE`` (JSON Lines or CSV
with ``item_id``, ``label`` -- A / B / tie for pairs, PASS / FAIL / UNKNOWN for point items -- and, when
item ids repeat across the run's datasets, ``dataset``; read and joined by
:mod:`verdictlab.workflows.human_label_runs`).  Per cell:
judge-only, human-only and PPI++ estimates side by side (win rate of A; system accuracy on PASS/FAIL
items), calibration of the judge's confidence before and after cross-fitted recalibration, and the
selective-evaluation threshold that certifies ``--target-agreement`` with probability 1 - ``--delta``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from ._errors import EXIT_INPUT, EXIT_STORE, printable_line, say
from .options import (
    CONFIDENCE_DEFAULT,
    FORMAT_DEFAULT,
    SEED_DEFAULT,
    UNPARSED_DEFAULT,
    Confidence,
    FormatOption,
    LabelIdFromOption,
    LabelMapOption,
    LabelMapValuesOption,
    LegacyJson,
    RunArg,
    Seed,
    TableOrJson,
    Unparsed,
    exit_codes,
    figure_policy,
    format_or_json,
    label_reading,
)


def check_fractions(*fractions: tuple[str, float]) -> None:
    """Usage errors for options that must lie in (0, 1)."""
    for name, value in fractions:
        if not 0 < value < 1:
            raise typer.BadParameter(f"{name} must be in (0, 1), got {value}")


def _fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def _est(e: Any) -> str:
    if e.value is None:
        return "—"
    return f"{e.value:.3f} [{e.lo:.3f}, {e.hi:.3f}]"


def cell_name(cell: dict[str, Any]) -> str:
    """A cell as one plain line (run strings never reach rich markup: see cli._errors.printable_line)."""
    extra = "".join(f" · {cell[c]}" for c in ("decoding", "step") if cell.get(c) not in (None, "", "free"))
    return printable_line(f"{cell['judge']} · {cell['protocol']} · {cell['dataset']} · T={cell['temperature']:g}{extra}")


def _cell_name(v: Any) -> Any:
    from rich.text import Text

    return Text(cell_name(v.cell))


def _estimates_table(cells: list[Any], confidence: float) -> Any:
    from rich.table import Table

    t = Table(title=f"Estimates ({confidence:.0%} intervals): judge-only vs human-only vs PPI++")
    for col in ("cell", "quantity", "labelled", "unlabelled", "judge only", "human only", "PPI++",
                "λ", "ess", "PPI (λ=1)"):
        t.add_column(col, overflow="fold")
    for v in cells:
        t.add_row(_cell_name(v), v.quantity, str(v.n_labelled), str(v.n_unlabelled), _est(v.judge),
                  _est(v.human), _est(v.ppi), _fmt(v.ppi.lam, 2), _fmt(v.ppi.ess, 0), _est(v.ppi_classic))
    return t


def _selective_text(s: Any) -> str:
    if s.threshold is None:
        return "—"
    held = ("" if s.test_coverage is None else
            f"; held-out: cov {s.test_coverage:.2f}, agree {_fmt(s.test_agreement, 2)}")
    return (f"t={s.threshold:.3f}: cov {s.coverage:.2f}, agree {s.agreement:.2f} "
            f"(≥{s.lower_bound:.2f}){held}")


def _calibration_table(cells: list[Any], target: float, delta: float) -> Any:
    from rich.table import Table

    t = Table(title=f"Calibration (top-label) and selective evaluation: agreement ≥ {target:g} "
                    f"with probability ≥ {1 - delta:g}")
    for col in ("cell", "confidence", "ECE", "MCE", "Brier", "ECE Platt", "ECE isotonic", "ECE votes",
                "selective"):
        t.add_column(col, overflow="fold")
    for v in cells:
        c = v.calibration
        t.add_row(_cell_name(v), v.source, _fmt(c.ece), _fmt(c.mce), _fmt(c.brier),
                  _fmt(None if v.platt.after is None else v.platt.after.ece),
                  _fmt(None if v.isotonic.after is None else v.isotonic.after.ece),
                  _fmt(None if v.vote_calibration is None else v.vote_calibration.ece), _selective_text(v.selective))
    return t


def validate(
    run_dir: RunArg,
    human: Annotated[Path | None, typer.Option(
        "--human", help="Human labels: JSON Lines, a JSON list or CSV with item_id, label and (optional) dataset "
                        "-- other column names and values with --map / --map-values (default: the items' labels).")
    ] = None,
    map_: LabelMapOption = None,
    map_values: LabelMapValuesOption = None,
    id_from: LabelIdFromOption = None,
    target_agreement: Annotated[float, typer.Option(
        "--target-agreement", help="Agreement with humans the judge must reach on the items it decides.")] = 0.9,
    delta: Annotated[float, typer.Option(help="Allowed chance that the certified agreement is not met.")] = 0.1,
    confidence: Confidence = CONFIDENCE_DEFAULT,
    keep_labels: Annotated[int | None, typer.Option(
        "--keep-labels", help="What-if: keep only this many human labels per cell (seeded), hide the rest.")
    ] = None,
    unparsed: Unparsed = UNPARSED_DEFAULT,
    bins: Annotated[int, typer.Option(help="Bins of the reliability diagram / ECE.")] = 15,
    seed: Seed = SEED_DEFAULT,
    plots: Annotated[Path | None, typer.Option(
        "--plots", metavar="DIR", help="Write the reliability diagram as reliability.png and .svg into this "
                                       "directory.")
    ] = None,
    fmt: FormatOption = FORMAT_DEFAULT,
    legacy_json: LegacyJson = False,
) -> None:
    """Human-label-corrected estimates (PPI++), calibration and a certified selective threshold."""
    import sys

    from ..analyses.human_labels import cell_notes
    from ..workflows.human_label_runs import validate_run, validation_records, write_reliability_plots
    from .output import data_console

    form = format_or_json(fmt, legacy_json, TableOrJson)
    check_fractions(("--target-agreement", target_agreement), ("--delta", delta))
    if keep_labels is not None and keep_labels < 1:
        raise typer.BadParameter(f"--keep-labels must be >= 1, got {keep_labels}")
    if bins < 1:
        raise typer.BadParameter(f"--bins must be >= 1, got {bins}")
    reading = label_reading(human, map_, map_values, id_from)
    cells = validate_run(run_dir, human=human, policy=figure_policy(unparsed=unparsed, confidence=confidence, seed=seed),
                         target=target_agreement, delta=delta, keep_labels=keep_labels, n_bins=bins, reading=reading)
    if plots is not None:
        written = write_reliability_plots(cells, plots)
        say(f"reliability diagram written to {plots}/reliability.png and .svg" if written else
            "no reliability diagram: no cell has calibration bins (see the reasons)")
    if form is TableOrJson.json:
        typer.echo(json.dumps({"cells": validation_records(cells)}, indent=2, allow_nan=False, default=str))
        return
    console = data_console(width=200) if not sys.stdout.isatty() else data_console()
    if not cells:
        console.print("No cells with pair or PASS/FAIL verdicts in this run.", markup=False)
        return
    console.print(_estimates_table(cells, confidence))
    console.print(_calibration_table(cells, target_agreement, delta))
    for v in cells:
        why = cell_notes(v)
        if v.reference is not None and v.reference.value is not None:
            why = f"all-label human estimate {_est(v.reference)}" + (f"; {why}" if why else "")
        if why:
            console.print(printable_line(f"{cell_name(v.cell)}: {why}"), markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.command("validate", epilog=exit_codes(EXIT_INPUT, EXIT_STORE))(validate)
