"""`verdictlab drift RUN_A RUN_B` (two versions, dates or vendors of a judge; or two judges of one run
with ``--judge-a/--judge-b``) and `verdictlab drift RUN_1 ... RUN_n` (a control chart over a series of
runs on a fixed anchor set).  The report: :func:`verdictlab.workflows.drift.drift_report` (figures from
:mod:`verdictlab.stats.drift`); the page: :mod:`verdictlab.report.drift_page`."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from ._errors import EXIT_INPUT, EXIT_STORE
from .options import (
    BOOTSTRAP_DEFAULT,
    SEED_DEFAULT,
    UNPARSED_DEFAULT,
    Bootstrap,
    LegacyJson,
    OutOption,
    Seed,
    Unparsed,
    deprecated,
    exit_codes,
    figure_policy,
    given,
    is_stdout,
    legacy_spelling,
    output_format,
)


class Chart(StrEnum):
    cusum = "cusum"
    ewma = "ewma"


def _f(v: Any, spec: str = ".3f") -> str:
    return "–" if v is None else format(v, spec)


def _print_pair(rep: dict[str, Any]) -> None:
    from .output import data_console

    con = data_console(wide=False, highlight=False)
    con.print(f"Drift: {' vs '.join(rep['runs'])} (margin ±{rep['margin']:g}; McNemar Holm-adjusted over "
              f"{len(rep['cells'])} cells; items compared: {rep['item_check']['compared']})", markup=False)
    _print_item_note(con, rep)
    pairs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rep["cells"]:
        pairs.setdefault((r["judge_a"], r["judge_b"]), []).append(r)
    for (ja, jb), rows in pairs.items():
        con.print(f"a = {ja}\nb = {jb}", markup=False)
        for r in rows:
            con.print(f"  {r['protocol']} · {r['dataset']} · T={r['temperature']:g}: {r['n_units']} units, "
                      f"κ {_f(r['kappa'], '.2f')}, flip rate {_f(r['flip_rate'], '.3f')} "
                      f"[{_f(r['flip_lo'], '.3f')}, {_f(r['flip_hi'], '.3f')}]\n"
                      f"    A {_f(r['A_a'])} → {_f(r['A_b'])}, ΔA {_f(r['delta_A'], '+.3f')} "
                      f"[{_f(r['delta_A_lo'], '+.3f')}, {_f(r['delta_A_hi'], '+.3f')}], ΔT {_f(r['delta_T'], '+.3f')} "
                      f"[{_f(r['delta_T_lo'], '+.3f')}, {_f(r['delta_T_hi'], '+.3f')}]\n"
                      f"    McNemar p {_f(r['mcnemar_p'], '.3g')} (Holm {_f(r['mcnemar_p_holm'], '.3g')}); "
                      f"equivalent within ±{rep['margin']:g}: {r['equivalent']}", markup=False)
    for r in rep["ranking_change"]:
        if r["n_protocols"] >= 2:
            con.print(f"protocol ranking by {r['figure']} ({r['dataset']}, T={r['temperature']:g}): "
                      f"{' > '.join(r['ranking_a'])}  →  {' > '.join(r['ranking_b'])}  (τ = {_f(r['tau'], '.2f')}"
                      f"{', top changed' if r['top_changed'] else ''})", markup=False)
    con.print(rep["equivalence"], markup=False)


def _print_item_note(con: Any, rep: dict[str, Any]) -> None:
    check = rep["item_check"]
    if check["n_changed"]:
        shown = ", ".join(f"{d['dataset']}/{d['item_id']}" for d in check["excluded"][:5])
        con.print(f"{check['n_changed']} item(s) whose content differs between the runs left out on both sides "
                  f"({shown}{' ...' if check['n_changed'] > 5 else ''})", markup=False)


def _print_series(rep: dict[str, Any]) -> None:
    from .output import data_console

    con = data_console(wide=False)
    _print_item_note(con, rep)
    for c in rep["charts"]:
        accs = "  ".join(f"{a:.3f}{'*' if fl else ''}" for a, fl in zip(c["accuracy"], c["flagged"], strict=True))
        flag = (f"first flagged: run {c['first_flagged_index'] + 1} ({c['first_flagged_run']}), shift began at run "
                f"{c['onset_index'] + 1}" if c["first_flagged_index"] is not None else "no shift flagged")
        con.print(f"{c['protocol']} · {c['dataset']} · T={c['temperature']:g} [{c['method']}]: accuracy per run "
                  f"{accs}\n  baseline {c['baseline_accuracy']:.3f}; {flag}")


class DriftFormat(StrEnum):
    table = "table"
    json = "json"
    html = "html"


def _form(fmt: DriftFormat | None, out: Path | None, legacy_json: bool, legacy_html: Path | None
          ) -> tuple[DriftFormat, Path | None, Path | None]:
    """(form, where it goes, the old --html page beside it).  The old ``--json`` and ``--html PATH``
    keep their behaviour (JSON or the table on stdout, the page written too) for one release."""
    if legacy_json:
        fmt = legacy_spelling("--json", DriftFormat.json, "--format", fmt)
    if legacy_html is not None:
        if fmt is DriftFormat.html or out is not None:
            raise typer.BadParameter(f"--html {legacy_html} (the old --format html -o {legacy_html}) with "
                                     f"{'-o ' + str(out) if out is not None else '--format html'}: give only "
                                     "--format html -o PATH", param_hint="'--html'")
        deprecated(f"--html {legacy_html}", f"--format html -o {legacy_html}")
        return fmt or DriftFormat.table, out, legacy_html
    form = output_format(out, fmt, DriftFormat, DriftFormat.table)
    if form is DriftFormat.html and out is None:
        raise typer.BadParameter("--format html writes a page: give its file with -o/--out PATH",
                                 param_hint="'--format'")
    if form is DriftFormat.table and out is not None and not is_stdout(out):
        raise typer.BadParameter("the drift table prints to the terminal; use --format json or html with -o",
                                 param_hint="'--out'")
    return form, out, None


def drift(
    run_dirs: Annotated[list[Path], typer.Argument(
        metavar="RUN", show_default=False,
        help="Run directories: one (with --judge-a/--judge-b), two (a vs b), or three or more (a series on a "
             "fixed anchor set).")],
    judge_a: Annotated[str | None, typer.Option("--judge-a", help="Judge id on side a (or of the series).")] = None,
    judge_b: Annotated[str | None, typer.Option("--judge-b", help="Judge id on side b.")] = None,
    margin: Annotated[float, typer.Option(help="Equivalence margin on delta A (0.02 = ±2 pp).")] = 0.02,
    alpha: Annotated[float, typer.Option(help="Level of each one-sided test (TOST).")] = 0.05,
    unparsed: Unparsed = UNPARSED_DEFAULT,
    bootstrap: Bootstrap = BOOTSTRAP_DEFAULT,
    seed: Seed = SEED_DEFAULT,
    chart: Annotated[Chart, typer.Option(help="Series: CUSUM or EWMA chart.")] = Chart.cusum,
    baseline: Annotated[int, typer.Option(help="Series: runs pooled as the baseline.")] = 1,
    series: Annotated[bool, typer.Option("--series", help="Treat two runs as a series (chart) too.")] = False,
    exclude_changed: Annotated[bool, typer.Option(
        "--exclude-changed-items", help="Leave out items whose question, responses or label differ between the "
                                        "runs (default: refuse to compare them).")] = False,
    fmt: Annotated[DriftFormat | None, typer.Option(
        "--format", case_sensitive=False, show_default=False,
        help="table (terminal), json, or html (a drift page; needs -o). Default: from --out's extension, "
             "else table.")] = None,
    out: OutOption = None,
    legacy_json: LegacyJson = False,
    legacy_html: Annotated[Path | None, typer.Option("--html", hidden=True)] = None,
    legacy_n_boot: Annotated[int | None, typer.Option("--n-boot", hidden=True)] = None,
) -> None:
    """Did the judge's verdicts change between runs, by how much, and is the replacement equivalent?"""
    from ..report.drift_page import render_drift_html
    from ..workflows.drift import drift_report
    from ._errors import check_writable, say

    form, out, page = _form(fmt, out, legacy_json, legacy_html)
    if legacy_n_boot is not None:
        bootstrap = legacy_spelling(f"--n-boot {legacy_n_boot}", legacy_n_boot, "--bootstrap", bootstrap,
                                    new_given=given("bootstrap"))
    for path in (out, page):
        if path is not None:
            check_writable(path)
    rep = drift_report(run_dirs, series=series, judge_a=judge_a, judge_b=judge_b, margin=margin, alpha=alpha,
                       policy=figure_policy(unparsed=unparsed, bootstrap=bootstrap, seed=seed), chart=chart.value,
                       baseline=baseline, changed_items="exclude" if exclude_changed else "refuse")
    _print(rep, form, out)
    if page is not None:
        page.write_text(render_drift_html(rep), encoding="utf-8")
        say(f"drift page written to {page}")


def _print(rep: dict[str, Any], form: DriftFormat, out: Path | None) -> None:
    from ..report.drift_page import render_drift_html
    from .output import emit

    if form is DriftFormat.html:
        emit(render_drift_html(rep), out, what="drift page")
    elif form is DriftFormat.json:
        emit(json.dumps(rep, indent=2, ensure_ascii=False, allow_nan=False, default=str), out, what="drift JSON")
    elif rep["mode"] == "pair":
        _print_pair(rep)
    else:
        _print_series(rep)


def register(app: typer.Typer) -> None:
    app.command("drift", epilog=exit_codes(EXIT_INPUT, EXIT_STORE))(drift)
