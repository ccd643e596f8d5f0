"""`verdictlab report RUN [--format table|json|markdown|html] [-o PATH]` -- reliability figures per cell
as a terminal table, JSON, Markdown or one HTML file, and the figures as plot files."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from ._errors import EXIT_INPUT, EXIT_STORE
from .options import (
    BOOTSTRAP_DEFAULT,
    CONFIDENCE_DEFAULT,
    SEED_DEFAULT,
    UNPARSED_DEFAULT,
    Bootstrap,
    Command,
    Confidence,
    LegacyJson,
    OutOption,
    RunArg,
    Seed,
    Unparsed,
    deprecated,
    exit_codes,
    figure_policy,
    is_stdout,
    legacy_spelling,
    output_format,
)


class ReportFormat(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"
    html = "html"


@dataclass(frozen=True)
class _Target:
    fmt: ReportFormat
    out: Path | None             # None: stdout
    html_too: Path | None = None  # the old --html beside another form


def _legacy_target(run_dir: Path, fmt: ReportFormat | None, out: Path | None, legacy_out: Path | None,
                   legacy_json: bool, legacy_html: bool, legacy_markdown: bool) -> _Target:
    """The old spellings (``--json``, ``--markdown``, ``--html [PATH]``, ``report RUN OUT.html``) as they
    behaved: JSON or Markdown on stdout, or the table, and the HTML file beside it.  An old spelling with
    a new one that says another thing (``--json --format markdown``, ``--html A -o B``) is a usage error,
    as two old ones that disagree are (``--json --markdown``)."""
    if legacy_json and legacy_markdown:
        raise typer.BadParameter("choose one of --json and --markdown")
    if legacy_out is not None and legacy_out.suffix.lower() not in (".html", ".htm") and not legacy_html:
        raise typer.BadParameter(f"unexpected argument {legacy_out}; did you mean -o {legacy_out}?")
    if (legacy_out is not None or legacy_html) and (out is not None or fmt not in (None, ReportFormat.html)):
        old = f"--html {legacy_out}" if legacy_html and legacy_out is not None else \
            "--html" if legacy_html else f"report RUN {legacy_out}"
        new = f"-o {out}" if out is not None else f"--format {fmt.value if fmt else ''}"
        raise typer.BadParameter(f"{old} (the old --format html) and {new} say different things; give only "
                                 "--format html -o PATH", param_hint="'--format'")
    if legacy_out is not None and legacy_html:
        deprecated(f"--html {legacy_out}", f"--format html -o {legacy_out}")
    elif legacy_out is not None:
        deprecated(f"report RUN {legacy_out}", f"report RUN --format html -o {legacy_out}")
    elif legacy_html:
        deprecated("--html [PATH]", "--format html [-o PATH]")
    if legacy_json:
        fmt = legacy_spelling("--json", ReportFormat.json, "--format", fmt)
    if legacy_markdown:
        fmt = legacy_spelling("--markdown", ReportFormat.markdown, "--format", fmt)
    form = fmt or ReportFormat.table
    html = (legacy_out or run_dir / "report.html") if legacy_out is not None or legacy_html else None
    return _Target(form, out, html)


def _target(run_dir: Path, fmt: ReportFormat | None, out: Path | None, legacy: tuple[Any, ...]) -> _Target:
    if any(legacy):
        return _legacy_target(run_dir, fmt, out, *legacy)
    fmt = output_format(out, fmt, ReportFormat, ReportFormat.table)
    if fmt is ReportFormat.html and out is None:
        out = run_dir / "report.html"
    return _Target(fmt, out)


def _write(rep: Any, target: _Target, viewer_url: str | None, *, wide: bool = False,
           columns: list[str] | None = None) -> None:
    from ..report import render_html, render_markdown, render_terminal, report_json
    from ._errors import printable_view
    from .output import console, emit

    if target.fmt is ReportFormat.json:
        emit(json.dumps(report_json(rep), indent=2, ensure_ascii=False, allow_nan=False), target.out,
             what="JSON report")
    elif target.fmt is ReportFormat.markdown:   # run text with control characters shown as \x1b, not obeyed
        emit(render_markdown(printable_view(rep)), target.out, what="Markdown report")
    elif target.fmt is ReportFormat.table:
        with console(target.out, what="report") as con:
            render_terminal(printable_view(rep), con, wide=wide, columns=columns)
    if target.fmt is ReportFormat.html and is_stdout(target.out):
        with _status() as step:
            step("drawing the HTML report")
            page = render_html(rep, None, viewer_url=viewer_url)
        typer.echo(page)
        return
    for html in (target.out if target.fmt is ReportFormat.html else None, target.html_too):
        if html is not None:
            with _status() as step:     # the pictures take a while on a large run
                step(f"drawing {html}")
                render_html(rep, html, viewer_url=viewer_url)
            _say_written("HTML report", html)


@contextlib.contextmanager
def _status() -> Iterator[Callable[[str], None]]:
    """A spinner on stderr naming the report's current step, on a terminal only (a pipe or a log gets
    nothing but the result); yields the function that names the next step.  Each step is drawn when it
    starts (``Live.refresh``), not at the spinner's next tick: a step shorter than a tick (reading a small
    run) was never shown."""
    import sys

    if not sys.stderr.isatty():
        yield lambda _step: None
        return
    from rich.live import Live
    from rich.spinner import Spinner

    from .output import message_console

    spinner = Spinner("dots", text="report: starting", style="status.spinner")
    with Live(spinner, console=message_console(), refresh_per_second=12.5, transient=True) as live:

        def step(name: str) -> None:
            spinner.update(text=f"report: {name}")
            live.refresh()

        yield step


def _say_written(what: str, path: Path) -> None:
    from ._errors import say

    say(f"{what} written to {path}")


def _check_definitions(definitions: str | None) -> None:
    """An unknown ``--definitions`` name is a usage error naming the known ones (before any work)."""
    if definitions is None:
        return
    from ..analyses.definitions import resolve_definitions

    try:
        resolve_definitions(definitions)
    except (KeyError, ValueError) as e:
        raise typer.BadParameter(str(e).strip("'\""), param_hint="--definitions") from None


def _check_viewer_url(url: str) -> None:
    """A ``--viewer-url`` that is not ``http(s)://host[:port]`` is a usage error ('' means no links)."""
    if not url:
        return
    from ..core.viewer_links import check_viewer_url

    try:
        check_viewer_url(url)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--viewer-url") from None


class TieRule(StrEnum):
    """The win rate's tie rules (:data:`verdictlab.stats.tournament.WIN_RATE_TIE_RULES`)."""

    half = "half"
    drop = "drop"
    loss = "loss"


def _leaderboard_settings(tie_rule: TieRule, baseline: str | None, alpaca_reference: Path | None) -> dict[str, Any]:
    """The leaderboard analyses' settings from the flags; AlpacaEval's file is read (and refused with
    the file named when it is not df_gamed.csv) before the report is built."""
    from ..importers.alpaca_reference import read_alpaca_reference

    out: dict[str, Any] = {"tie_rule": tie_rule.value}
    if baseline is not None:
        out["baseline"] = baseline
    if alpaca_reference is not None:
        out["alpaca_reference"] = read_alpaca_reference(alpaca_reference)
    return out


def _check_baseline(baseline: str | None, rep: Any) -> None:
    """A ``--baseline`` naming no system of the run is a usage error naming the systems (the analyses
    would otherwise fall back to the common opponent without a word)."""
    systems = sorted({s for b in rep.leaderboards for s in b.systems})
    if baseline is not None and baseline not in systems:
        known = ", ".join(systems) if systems else "none: the run's pairs name no systems"
        raise typer.BadParameter(f"{baseline!r} is not a system of this run (systems: {known})",
                                 param_hint="--baseline")


def _check_columns(columns: str | None) -> list[str] | None:
    """``--columns``: the named columns, each a column's key or label; a bad name is a usage error naming
    the columns there are."""
    if columns is None:
        return None
    from ..report.columns import check_column_names

    try:
        return check_column_names(columns.split(","))
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--columns") from None


def report(
    run_dir: RunArg,
    fmt: Annotated[ReportFormat | None, typer.Option(
        "--format", case_sensitive=False, show_default=False,
        help="table (terminal), json (schema_version 1), markdown, or html (one self-contained file, "
             "default RUN/report.html). Default: from --out's extension, else table.")] = None,
    out: OutOption = None,
    plots: Annotated[Path | None, typer.Option(
        "--plots", metavar="DIR", help="Write every figure as PNG and SVG into this directory.")] = None,
    unparsed: Unparsed = UNPARSED_DEFAULT,
    confidence: Confidence = CONFIDENCE_DEFAULT,
    bootstrap: Bootstrap = BOOTSTRAP_DEFAULT,
    seed: Seed = SEED_DEFAULT,
    expected_reps: Annotated[int | None, typer.Option(
        "--expected-reps", min=1, metavar="R", help="R for the expected figures from token probabilities "
                                                    "(default: each cell's own repetitions).")] = None,
    definitions: Annotated[str | None, typer.Option(
        "--definitions", metavar="NAMES", help="Add the figures as published papers define them, per cell: 'all' "
                                               "or NAME,NAME (see docs/definitions.md).")] = None,
    viewer_url: Annotated[str, typer.Option(
        "--viewer-url", metavar="URL", help="Where `verdictlab view RUN` serves: the HTML report links its tables and "
                                           "items to the viewer's pages there ('' for no links).")] = "http://127.0.0.1:8765",
    tie_rule: Annotated[TieRule, typer.Option(
        "--tie-rule", case_sensitive=False, help="How the leaderboard's win rate counts a tie: half a win, "
                                                 "dropped, or a loss.")] = TieRule.half,
    baseline: Annotated[str | None, typer.Option(
        "--baseline", metavar="SYSTEM", help="The system the score ratio and AlpacaEval's win rates compare "
                                             "against (default: the system every pair has).")] = None,
    alpaca_reference: Annotated[Path | None, typer.Option(
        "--alpaca-reference", metavar="FILE", help="AlpacaEval's df_gamed.csv: gives the length-controlled "
                                                   "win rate (without it the LC figure is missing, with why).")] = None,
    wide: Annotated[bool, typer.Option(
        "--wide", help="The terminal table: every column, however wide (by default the least important are "
                       "dropped to fit the terminal, and named under the table).")] = False,
    columns: Annotated[str | None, typer.Option(
        "--columns", metavar="LIST", help="The terminal table: only these columns after the configuration's, "
                                          "by key or label, e.g. T,C,phi,A,region,T_joint.")] = None,
    legacy_out: Annotated[Path | None, typer.Argument(hidden=True, show_default=False)] = None,
    legacy_json: LegacyJson = False,
    legacy_html: Annotated[bool, typer.Option("--html", hidden=True)] = False,
    legacy_markdown: Annotated[bool, typer.Option("--markdown", hidden=True)] = False,
) -> None:
    """Reliability per cell (judge × protocol × dataset × temperature): C, φ, A, A_max, T with intervals."""
    from ..report import build_report, write_plots
    from ..store.column_cache import cache_root
    from ._errors import check_writable

    policy = figure_policy(unparsed=unparsed, confidence=confidence, bootstrap=bootstrap, seed=seed)
    target = _target(run_dir, fmt, out, (legacy_out, legacy_json, legacy_html, legacy_markdown))
    for path in (target.out, target.html_too):     # before the (possibly long) report is built
        if path is not None:
            check_writable(path)
    _check_definitions(definitions)
    _check_viewer_url(viewer_url)
    chosen = _check_columns(columns)
    board = _leaderboard_settings(tie_rule, baseline, alpaca_reference)
    with _status() as step:         # ended before any error is printed
        rep = build_report(run_dir, policy=policy, expected_reps=expected_reps, definitions=definitions,
                           cache=cache_root("columns"), progress=step, leaderboard=board)
    _check_baseline(baseline, rep)
    _write(rep, target, viewer_url or None, wide=wide, columns=chosen)
    if plots is not None:
        written = write_plots(rep, plots)
        _say_written(f"{len(written)} plot files", plots)


def register(app: typer.Typer) -> None:
    app.command("report", cls=Command, epilog=exit_codes(EXIT_INPUT, EXIT_STORE))(report)
