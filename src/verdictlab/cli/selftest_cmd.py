"""`verdictlab selftest`: run the whole pipeline on simulated judges with planted biases and show that
the figures recover them (:mod:`verdictlab.selftest`)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer


def selftest(
    as_json: Annotated[bool, typer.Option("--json", help='Print {"rows": [{"property", "planted", "recovered", '
                                                         '"lo", "hi", "passed"}, ...]}.')] = False,
    pairs: Annotated[int, typer.Option(help="Generated pairs (base of the padding / anchoring probes).", min=50)
                     ] = 400,
    questions: Annotated[int, typer.Option(help="Generated 3-system questions (self-preference, transitivity).",
                                           min=30)] = 300,
    seed: Annotated[int, typer.Option(help="Seed of the generated data and the simulated judges (>= 0).",
                                      min=0)] = 7,
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples.", min=200)] = 2000,
    keep: Annotated[Path | None, typer.Option(help="Keep the generated data and run store in this directory.")
                    ] = None,
) -> None:
    """Plant position bias, verbosity bias, self-preference, anchoring and noise in simulated judges at
    known strengths, audit them, and print planted vs recovered (exit code 1 if a row fails)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from ..selftest import rows_json, run_selftest

    t0 = time.perf_counter()
    rows = run_selftest(n_pairs=pairs, n_questions=questions, seed=seed, n_boot=n_boot, workdir=keep)
    elapsed = time.perf_counter() - t0
    ok = all(r.passed for r in rows)
    if as_json:
        typer.echo(json.dumps({**rows_json(rows), "seed": seed, "elapsed_s": round(elapsed, 2)}, indent=2,
                              allow_nan=False))
    else:
        k = len(rows)
        t = Table(box=box.SIMPLE_HEAD, pad_edge=False,
                  title=f"verdictlab selftest: planted vs recovered ({k} rows, each interval at "
                        f"{100 * (1 - 0.05 / k):.2f}% = Bonferroni for 5% over the rows)")
        for c in ("property", "planted", "recovered", "interval", ""):
            t.add_column(c, overflow="fold")
        for r in rows:
            t.add_row(r.property, f"{r.planted:.3f}", f"{r.recovered:.3f}", f"[{r.lo:.3f}, {r.hi:.3f}]",
                      "[green]pass[/green]" if r.passed else "[red]FAIL[/red]")
        con = Console()
        con.print(t)
        for r in rows:
            con.print(f"  {r.property}: {r.how}", highlight=False, markup=False)
        con.print(f"{'all rows pass' if ok else 'SOME ROWS FAIL'} ({elapsed:.1f} s; seed {seed}; judges and "
                  "knobs: verdictlab.judges.sim, rows: verdictlab.selftest)")
    if not ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("selftest")(selftest)
