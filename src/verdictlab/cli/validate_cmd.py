"""`verdictlab validate RUN_DIR` -- the judge's figures corrected by human labels.

Human labels come from the run's items (their ``label``) or from ``--human FILE`` (JSON Lines or CSV
with ``item_id`` and ``label``: A / B / tie for pairs, PASS / FAIL / UNKNOWN for point items).  Per cell:
judge-only, human-only and PPI++ estimates side by side (win rate of A; system accuracy on PASS/FAIL
items), calibration of the judge's confidence before and after cross-fitted recalibration, and the
selective-evaluation threshold that certifies ``--target-agreement`` with probability 1 - ``--delta``.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from ._errors import EXIT_INPUT, EXIT_STORE, fail, plain

_LABEL_WORDS = {"a": "A", "b": "B", "tie": "tie", "pass": "PASS", "fail": "FAIL", "unknown": "UNKNOWN"}


class HumanLabelError(ValueError):
    """A human-label file that cannot be used; the message names file, row and field."""


def _records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(row number, record) from a CSV/TSV or JSON Lines file, through the package's readers (records split
    on "\n" only, BOM dropped, JSON within the input limits)."""
    from ..datasets._common import json_lines
    from ..items import ItemError

    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise HumanLabelError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    if path.suffix.lower() in (".csv", ".tsv"):
        reader = csv.DictReader(io.StringIO(text, newline=""),
                                delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
        out = []
        for rec in reader:
            if None in rec:
                raise HumanLabelError(f"{path}, row {reader.line_num}: more fields than the header")
            out.append((reader.line_num, dict(rec)))
        return out
    try:
        return [(row, dict(rec)) for row, rec in json_lines(text, path=str(path))]
    except ItemError as e:
        raise HumanLabelError(str(e)) from None


def _label(value: Any, where: str) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        return "PASS" if value else "FAIL"
    word = _LABEL_WORDS.get(str(value).strip().lower())
    if word is None:
        raise HumanLabelError(f"{where}, field 'label': expected A, B, tie, PASS, FAIL or UNKNOWN, got {value!r}")
    return word


def read_human_labels(path: Path) -> dict[str, str | None]:
    """``{item_id: label}`` from a JSON Lines or CSV file (columns ``item_id``, ``label``)."""
    labels: dict[str, str | None] = {}
    for row, rec in _records(path):
        where = f"{path}, row {row}"
        if "item_id" not in rec or rec["item_id"] in (None, ""):
            raise HumanLabelError(f"{where}, field 'item_id': missing")
        if "label" not in rec:
            raise HumanLabelError(f"{where}, field 'label': missing")
        item_id = str(rec["item_id"])
        lab = _label(rec["label"], where)
        if item_id in labels and labels[item_id] != lab:
            raise HumanLabelError(f"{where}, field 'label': item {item_id!r} already labelled "
                                  f"{labels[item_id]!r}, now {lab!r}")
        labels[item_id] = lab
    if not labels:
        raise HumanLabelError(f"{path}: no labels found")
    return labels


def load_judgments(run_dir: Path, human: Path | None) -> Any:
    """The run's judgments, with labels from ``human`` when given; exits with a clear error otherwise."""
    from ..analyses.human_labels import apply_human_labels, unknown_item_ids
    from ..store import StoreError, open_store

    try:
        with open_store(run_dir) as store:
            judgments = store.judgments()
    except StoreError as e:
        fail(e, EXIT_STORE)
    if human is None:
        return judgments
    try:
        labels = read_human_labels(human)
    except HumanLabelError as e:
        fail(e, EXIT_INPUT)
    unknown = unknown_item_ids(judgments, labels)
    if unknown:
        shown = ", ".join(repr(u) for u in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        fail(f"{human}: {len(unknown)} item_id(s) not in the run {run_dir}: {shown}", EXIT_INPUT)
    return apply_human_labels(judgments, labels)


def check_options(unparsed: str, *fractions: tuple[str, float]) -> None:
    """Usage errors for options that must lie in (0, 1) and for the unparsed policy."""
    for name, value in fractions:
        if not 0 < value < 1:
            raise typer.BadParameter(f"{name} must be in (0, 1), got {value}")
    from ..vocab import check_unparsed

    try:
        check_unparsed(unparsed)
    except ValueError as e:
        raise typer.BadParameter(f"--{e}") from None


def _fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def _est(e: Any) -> str:
    if e.value is None:
        return "—"
    return f"{e.value:.3f} [{e.lo:.3f}, {e.hi:.3f}]"


def cell_name(cell: dict[str, Any]) -> str:
    """A cell as one plain line (run strings never reach rich markup: see cli._errors.plain)."""
    extra = "".join(f" · {cell[c]}" for c in ("decoding", "step") if cell.get(c) not in (None, "", "free"))
    return plain(f"{cell['judge']} · {cell['protocol']} · {cell['dataset']} · T={cell['temperature']:g}{extra}")


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


def _cells_json(cells: list[Any]) -> list[dict[str, Any]]:
    from dataclasses import asdict

    out = []
    for v in cells:
        d = asdict(v)
        d.pop("key")
        d["cell"] = v.cell
        for r in ("platt", "isotonic"):
            d[r].pop("confidence", None)
        out.append(d)
    return out


def _write_plots(cells: list[Any], out_dir: Path) -> None:
    from ..analyses.human_labels import reliability_figure, reliability_rows

    bins = reliability_rows(cells)
    if bins.empty:
        typer.echo("no reliability diagram: no cell has calibration bins (see the reasons)", err=True)
        return
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        fig = reliability_figure(bins)
        for fmt in ("png", "svg"):
            fig.savefig(out_dir / f"reliability.{fmt}", format=fmt, dpi=130,
                        metadata={"Date": None} if fmt == "svg" else None)
    except OSError as e:
        fail(f"{out_dir}: cannot write the plots: {e.strerror or e}", EXIT_INPUT)
    typer.echo(plain(f"reliability diagram written to {out_dir}/reliability.png and .svg"), err=True)


def validate(
    run_dir: Annotated[Path, typer.Argument(help="Run directory holding run.sqlite.")],
    human: Annotated[Path | None, typer.Option(
        "--human", help="Human labels: JSON Lines or CSV with item_id and label (default: the items' labels).")
    ] = None,
    target_agreement: Annotated[float, typer.Option(
        "--target-agreement", help="Agreement with humans the judge must reach on the items it decides.")] = 0.9,
    delta: Annotated[float, typer.Option(help="Allowed chance that the certified agreement is not met.")] = 0.1,
    confidence: Annotated[float, typer.Option(help="Confidence level of the intervals.")] = 0.95,
    keep_labels: Annotated[int | None, typer.Option(
        "--keep-labels", help="What-if: keep only this many human labels per cell (seeded), hide the rest.")
    ] = None,
    unparsed: Annotated[str, typer.Option(help="Unparsed verdicts: 'exclude' or 'wrong'.")] = "exclude",
    bins: Annotated[int, typer.Option(help="Bins of the reliability diagram / ECE.")] = 15,
    seed: Annotated[int, typer.Option(help="Seed of the folds, splits and --keep-labels (>= 0).", min=0)] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    plots: Annotated[Path | None, typer.Option(
        "--plots", help="Write the reliability diagram as reliability.png and .svg into this directory.")
    ] = None,
) -> None:
    """Human-label-corrected estimates (PPI++), calibration and a certified selective threshold."""
    from rich.console import Console

    from ..analyses.human_labels import cell_notes, validate_cells

    check_options(unparsed, ("--target-agreement", target_agreement), ("--delta", delta),
                  ("--confidence", confidence))
    if keep_labels is not None and keep_labels < 1:
        raise typer.BadParameter(f"--keep-labels must be >= 1, got {keep_labels}")
    if bins < 1:
        raise typer.BadParameter(f"--bins must be >= 1, got {bins}")
    judgments = load_judgments(run_dir, human)
    cells = validate_cells(judgments, unparsed=unparsed, confidence=confidence, target=target_agreement,
                           delta=delta, keep_labels=keep_labels, seed=seed, n_bins=bins)
    if plots is not None:
        _write_plots(cells, plots)
    if as_json:
        typer.echo(json.dumps({"cells": _cells_json(cells)}, indent=2, allow_nan=False, default=str))
        return
    console = Console(width=200) if not Console().is_terminal else Console()
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
            console.print(plain(f"{cell_name(v.cell)}: {why}"), markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
