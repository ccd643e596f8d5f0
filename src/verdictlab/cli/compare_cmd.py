"""`verdictlab compare RUN [RUN ...] --by judge|protocol` -- paired exact McNemar tests on
parse-shared items, Holm-corrected across the family (:func:`verdictlab.workflows.comparison.compare_runs`)."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from ._errors import EXIT_INPUT, EXIT_STORE
from .options import (
    FORMAT_DEFAULT,
    UNPARSED_DEFAULT,
    FormatOption,
    LegacyJson,
    TableOrJson,
    Unparsed,
    exit_codes,
    figure_policy,
    format_or_json,
)


class CompareBy(StrEnum):
    judge = "judge"
    protocol = "protocol"


def compare(
    run_dirs: Annotated[list[Path], typer.Argument(metavar="RUN", show_default=False,
                                                   help="One or more run directories (run.sqlite).")],
    by: Annotated[CompareBy, typer.Option(help="Compare judges or protocols.")] = CompareBy.judge,
    all_pairs: Annotated[bool, typer.Option("--all-pairs", help="Test every pair, not only neighbours "
                                            "in config order.")] = False,
    unparsed: Unparsed = UNPARSED_DEFAULT,
    alpha: Annotated[float, typer.Option(help="Significance level for the Holm-adjusted p.")] = 0.05,
    fmt: FormatOption = FORMAT_DEFAULT,
    legacy_json: LegacyJson = False,
) -> None:
    """Paired exact McNemar tests (per dataset; one modal verdict per item and order), Holm-corrected.
    Under --unparsed exclude a unit unparsed for either side is dropped (parse-shared items only)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from ..workflows.comparison import compare_runs, comparison_json
    from ._errors import printable_line
    from .output import data_console

    form = format_or_json(fmt, legacy_json, TableOrJson)
    if not 0 < alpha < 1:
        raise typer.BadParameter(f"--alpha must be in (0, 1), got {alpha}")
    policy = figure_policy(unparsed=unparsed)
    res = compare_runs(run_dirs, by=by.value, all_pairs=all_pairs, policy=policy, alpha=alpha)
    if form is TableOrJson.json:
        payload = comparison_json(res, by=by.value, policy=policy, alpha=alpha)
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False))
        return
    con = data_console(wide=False, markup=False, highlight=False)
    if res.empty:
        con.print(f"Nothing to compare: fewer than two {by.value}s share a dataset in these runs.")
        return
    strata = [c for c in res.columns if c in ("dataset", "protocol", "judge", "temperature", "step")]
    con.print(f"Paired exact McNemar by {by.value}: {res.attrs['pairs']} pairs, Holm over {len(res)} tests, "
              f"unparsed={policy.unparsed.value}")
    # one table per stratum under its own heading, each side of a comparison on a line of its own: a long
    # judge id then folds at most inside its own line, never across a narrow column (80 terminal columns)
    for stratum, group in _by_stratum(res.to_dict("records"), strata):
        t = Table(box=box.SIMPLE_HEAD, pad_edge=False, title=printable_line(stratum), title_justify="left")
        t.add_column(f"{by.value} x / y", overflow="fold")
        for c in ("N", "acc x/y", "only x/y", "p", "p Holm", ""):
            t.add_column(c, justify="right", no_wrap=True)
        for rec in group:
            sides = Text(printable_line(str(rec[f"{by.value}_x"])) + "\n" + printable_line(str(rec[f"{by.value}_y"])))
            t.add_row(sides, str(rec["n_shared"]), f"{rec['acc_x']:.3f}/{rec['acc_y']:.3f}",
                      f"{rec['only_x']}/{rec['only_y']}", f"{rec['p']:.3g}", f"{rec['p_holm']:.3g}",
                      "*" if rec["significant"] else "")
        con.print(t)
    con.print(f"* Holm-adjusted p < {alpha}.  Units are (item, order) with a label; items a side could "
              "not parse are left out (n dropped per row in --format json).")


def _by_stratum(recs: list[dict[str, Any]], strata: list[str]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The comparisons grouped by their stratum (dataset · protocol · ... · temp=0.7), in the order met."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for rec in recs:
        name = " · ".join(f"temp={rec[c]:g}" if c == "temperature" else str(rec[c]) for c in strata)
        groups.setdefault(name, []).append(rec)
    return list(groups.items())


def register(app: typer.Typer) -> None:
    app.command("compare", epilog=exit_codes(EXIT_INPUT, EXIT_STORE))(compare)
