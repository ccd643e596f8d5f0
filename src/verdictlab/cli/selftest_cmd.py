"""`verdictlab selftest`: run the whole pipeline on simulated judges with planted biases and show that
the figures recover them (:mod:`verdictlab.workflows.selftest`)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from ._errors import EXIT_INTERRUPTED, EXIT_SELFTEST_FAILED, EXIT_TERMINATED
from .options import (
    BOOTSTRAP_DEFAULT,
    FORMAT_DEFAULT,
    SEED_DEFAULT,
    Bootstrap,
    FormatOption,
    LegacyJson,
    Seed,
    TableOrJson,
    deprecated,
    exit_codes,
    format_or_json,
    given,
    legacy_spelling,
)

#: the seed ``selftest`` used when none was given, before every command's default became 0: kept for
#: one release (with a notice), because "the default seed passes" was documented as a fixed outcome
OLD_DEFAULT_SEED = 7
#: fewer resamples leave the Bonferroni-corrected tails (about 0.4 % each) with too few draws to be read
MIN_BOOTSTRAP = 200


def _seed(ctx: typer.Context, seed: int) -> int:
    """``--seed`` as given; without it, this release still runs the old default seed, and says so."""
    from typer._click.core import ParameterSource

    if ctx.get_parameter_source("seed") is not ParameterSource.DEFAULT:
        return seed
    deprecated(f"selftest without --seed (it runs seed {OLD_DEFAULT_SEED}, the old default)",
               f"--seed {OLD_DEFAULT_SEED} to keep it, or --seed {SEED_DEFAULT}, the default of every command")
    return OLD_DEFAULT_SEED


def selftest(
    ctx: typer.Context,
    fmt: FormatOption = FORMAT_DEFAULT,
    pairs: Annotated[int, typer.Option(metavar="N", min=50,
                                       help="Generated pairs (base of the padding / anchoring probes).")] = 400,
    questions: Annotated[int, typer.Option(metavar="N", min=30,
                                           help="Generated 3-system questions (self-preference, transitivity).")
                         ] = 300,
    seed: Seed = SEED_DEFAULT,
    bootstrap: Bootstrap = BOOTSTRAP_DEFAULT,
    keep: Annotated[Path | None, typer.Option(
        metavar="DIR", help="Keep the generated data and run store in this directory.")] = None,
    legacy_json: LegacyJson = False,
    legacy_n_boot: Annotated[int | None, typer.Option("--n-boot", hidden=True)] = None,
) -> None:
    """Plant position bias, verbosity bias, self-preference, anchoring and noise in simulated judges at
    known strengths, audit them, and print planted vs recovered (--format json: {"rows": [{"property",
    "planted", "recovered", "lo", "hi", "passed"}, ...]}).  Exits 6 when a row fails.  --bootstrap must
    be >= 200 here.  Without --seed this release still runs seed 7, the old default (with a notice)."""
    from ..workflows.selftest import rows_json, run_selftest

    form = format_or_json(fmt, legacy_json, TableOrJson)
    if legacy_n_boot is not None:
        bootstrap = legacy_spelling(f"--n-boot {legacy_n_boot}", legacy_n_boot, "--bootstrap", bootstrap,
                                    new_given=given("bootstrap"))
    if bootstrap < MIN_BOOTSTRAP:
        raise typer.BadParameter(f"must be >= {MIN_BOOTSTRAP} for the selftest's intervals, got {bootstrap}",
                                 param_hint="'--bootstrap'")
    seed = _seed(ctx, seed)
    t0 = time.perf_counter()
    rows = run_selftest(n_pairs=pairs, n_questions=questions, seed=seed, n_boot=bootstrap, workdir=keep)
    elapsed = time.perf_counter() - t0
    ok = all(r.passed for r in rows)
    if form is TableOrJson.json:
        typer.echo(json.dumps({**rows_json(rows), "seed": seed, "elapsed_s": round(elapsed, 2)}, indent=2,
                              allow_nan=False))
    else:
        _print_rows(rows)
    from ..errors import SelftestFailedError
    from ._errors import say

    where = (f"({elapsed:.1f} s; seed {seed}; judges and knobs: verdictlab.judges.sim, "
             "rows: verdictlab.workflows.selftest)")
    if not ok:
        failed = ", ".join(r.property for r in rows if not r.passed)
        raise SelftestFailedError(f"SOME ROWS FAIL: {failed} {where}")
    say(f"all rows pass {where}")


def _print_rows(rows: list[Any]) -> None:
    from rich import box
    from rich.table import Table

    from .output import data_console

    k = len(rows)
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False,
              title=f"verdictlab selftest: planted vs recovered ({k} rows, each interval at "
                    f"{100 * (1 - 0.05 / k):.2f}% = Bonferroni for 5% over the rows)")
    for c in ("property", "planted", "recovered", "interval", ""):
        t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(r.property, f"{r.planted:.3f}", f"{r.recovered:.3f}", f"[{r.lo:.3f}, {r.hi:.3f}]",
                  "[green]pass[/green]" if r.passed else "[red]FAIL[/red]")
    con = data_console()
    con.print(t)
    for r in rows:
        con.print(f"  {r.property}: {r.how}", highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    app.command("selftest", epilog=exit_codes(EXIT_SELFTEST_FAILED, EXIT_INTERRUPTED, EXIT_TERMINATED))(selftest)
