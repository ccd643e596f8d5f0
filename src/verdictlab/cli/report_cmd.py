"""`verdictlab report RUN_DIR` -- reliability figures per cell as a table, JSON, HTML or plot files."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..vocab import UnparsedPolicy


def _check_definitions(definitions: str | None) -> None:
    """An unknown ``--definitions`` name is a usage error naming the known ones (before any work)."""
    if definitions is None:
        return
    from ..analyses.definitions import resolve_definitions

    try:
        resolve_definitions(definitions)
    except (KeyError, ValueError) as e:
        raise typer.BadParameter(str(e).strip("'\""), param_hint="--definitions") from None


def report(
    run_dir: Annotated[Path, typer.Argument(help="Run directory holding run.sqlite.")],
    out: Annotated[Path | None, typer.Argument(
        help="Where to write the HTML report with --html (default RUN_DIR/report.html).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON (schema_version 1).")] = False,
    html: Annotated[bool, typer.Option("--html", help="Write one self-contained HTML file.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the tables as Markdown.")] = False,
    plots: Annotated[Path | None, typer.Option(
        "--plots", help="Write every figure as PNG and SVG into this directory.")] = None,
    unparsed: Annotated[UnparsedPolicy, typer.Option(
        help="Unparsed verdicts: 'exclude' (counted, left out) or 'wrong' (counted as wrong).")
    ] = UnparsedPolicy.EXCLUDE,
    confidence: Annotated[float, typer.Option(help="Confidence level of the intervals.")] = 0.95,
    bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples for the T interval.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed (>= 0).", min=0)] = 0,
    expected_reps: Annotated[int | None, typer.Option(
        "--expected-reps", min=1, help="R for the expected figures from token probabilities "
                                       "(default: each cell's own repetitions).")] = None,
    definitions: Annotated[str | None, typer.Option(
        "--definitions", help="Add the figures as published papers define them, per cell: 'all' or "
                              "NAME,NAME (see docs/definitions.md).")] = None,
) -> None:
    """Reliability per cell (judge × protocol × dataset × temperature): C, φ, A, A_max, T with intervals."""
    from rich.console import Console

    from ..column_cache import cache_root
    from ..report import build_report, render_html, render_markdown, render_terminal, report_json, write_plots
    from ..store import StoreError
    from ._errors import EXIT_STORE, check_writable, fail, printable_view, say

    if out is not None and not html:
        if out.suffix.lower() in (".html", ".htm"):
            html = True
        else:
            raise typer.BadParameter(f"unexpected argument {out}; did you mean --html {out}?")
    if not 0 < confidence < 1:
        raise typer.BadParameter(f"--confidence must be in (0, 1), got {confidence}")
    if bootstrap < 0:
        raise typer.BadParameter(f"--bootstrap must be >= 0, got {bootstrap}")
    _check_definitions(definitions)
    if html:                     # before the (possibly long) report is built
        check_writable(out or (run_dir / "report.html"), option="--html")
    try:
        rep = build_report(run_dir, unparsed=unparsed.value, confidence=confidence, n_bootstrap=bootstrap,
                           seed=seed, expected_reps=expected_reps, definitions=definitions,
                           cache=cache_root("columns"))
    except StoreError as e:
        fail(e, EXIT_STORE)
    if as_json and markdown:
        raise typer.BadParameter("choose one of --json and --markdown")
    if as_json:
        typer.echo(json.dumps(report_json(rep), indent=2, ensure_ascii=False, allow_nan=False))
    elif markdown:     # run text with control characters (ANSI escapes...) shown as \x1b, not obeyed
        typer.echo(render_markdown(printable_view(rep)))
    else:
        # piped or captured output gets a wide table instead of rich's 80-column default
        render_terminal(printable_view(rep), Console() if sys.stdout.isatty() else Console(width=180))
    if html:
        target = out or (run_dir / "report.html")
        render_html(rep, target)
        say(f"HTML report written to {target}")
    if plots is not None:
        written = write_plots(rep, plots)
        say(f"{len(written)} plot files written to {plots}")


def register(app: typer.Typer) -> None:
    app.command("report")(report)
