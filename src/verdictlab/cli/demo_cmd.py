"""`verdictlab demo`: audit the embedded local judge on the packaged demo pairs.

Runs every pairwise protocol (direct, vf-json, vf-xml, cot-json, cot-xml) in both orders with
several repetitions at a temperature above 0, with FREE and with CONSTRAINED decoding (the
format forced around the verdict, the verdict scored over the labels), through the normal engine,
so the run lands in a normal run store (``runs/demo`` by default) and resumes if interrupted or
rerun.  Then it prints the reliability table (one row per protocol x decoding), one plain sentence
per row and the free-vs-constrained table with a one-line reading per protocol (gathered by
:func:`verdictlab.workflows.demo.demo_results`).

Defaults: 8 of the 28 pairs (every category, the better answer first in half of them), 3
repetitions, temperature 0.7, both decoding modes: 480 judgments, every protocol x decoding cell
filled with 8 pairs x 2 orders x 3 repetitions.  The grid is sized so that a first ``make demo`` on
a fresh 2-core machine -- set-up, the llama-cpp-python build included, plus the demo -- stays under
ten minutes.  ``--pairs 28`` for more, ``--decoding free`` for the free-only run.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from ..core.vocab import ORDERS, Decoding
from ..errors import UsageError
from ..protocols.pairwise import PAIRWISE_IDS as DEMO_PROTOCOLS  # every pairwise protocol
from ._errors import EXIT_INPUT, EXIT_INTERRUPTED, EXIT_STORE
from .options import BOOTSTRAP_DEFAULT, Bootstrap, RunDirOption, exit_codes, legacy_spelling

DEMO_JUDGE = "llamacpp:smollm2-135m"
DEMO_DECODINGS = ("free", "constrained")
DEFAULT_PAIRS = 8
DEFAULT_REPETITIONS = 3
DEFAULT_TEMPERATURE = 0.7


def demo_config(*, pairs: int = DEFAULT_PAIRS, repetitions: int = DEFAULT_REPETITIONS,
                temperature: float = DEFAULT_TEMPERATURE, judge: str = DEMO_JUDGE,
                protocols: tuple[str, ...] | list[str] = DEMO_PROTOCOLS, seed: int = 42,
                decodings: tuple[str, ...] | list[str] = DEMO_DECODINGS) -> Any:
    """The demo's :class:`~verdictlab.engine.config.RunConfig`, built in code from the command's options
    (a value the config refuses is a :class:`~verdictlab.errors.UsageError`)."""
    from pydantic import ValidationError

    from ..engine.config import RunConfig

    try:
        return RunConfig.model_validate({
            "name": "demo", "datasets": [{"name": "demo", "pairs": int(pairs)}],
            "judges": [{"id": judge, "concurrency": 1 if judge.startswith("llamacpp:") else 8}],
            "protocols": list(protocols), "orders": list(ORDERS), "temperatures": [float(temperature)],
            "repetitions": int(repetitions), "seed": seed, "decoding": list(decodings)})
    except ValidationError as exc:
        raise UsageError(str(exc)) from exc


def print_results(run_dir: Path, *, console: Any, n_bootstrap: int = 500) -> list[tuple[str, str]]:
    """Print the figures table, one sentence per protocol and decoding mode, and the free-vs-constrained
    table (:func:`verdictlab.workflows.demo.demo_results`); return the sentences."""
    from ..report.terminal import figures_table
    from ..workflows.demo import demo_results

    res = demo_results(run_dir, n_bootstrap=n_bootstrap, protocols=DEMO_PROTOCOLS)
    console.print(figures_table(res.cells, title="Reliability per protocol and decoding "
                                                 "(C, φ, A, T in %; 95% intervals in brackets)"))
    console.print(res.report.notes["policy"], style="dim", highlight=False)
    console.print("\n[bold]What the figures say[/bold]")
    for label, sentence in res.sentences:
        console.print(f"  [bold]{escape(label)}[/bold]: {escape(sentence)}", highlight=False)
    _print_decoding(res, console)
    return res.sentences


def _print_decoding(res: Any, console: Any) -> None:
    """The free-vs-constrained table and one reading per protocol (nothing when one mode only)."""
    from rich.table import Table

    if not res.decoding:
        return
    tbl = Table(title="Free vs constrained decoding (same pairs; Δ = constrained − free, 95% paired bootstrap "
                      "intervals; figures in %)", title_justify="left", header_style="bold")
    for name in ("protocol", "pairs", "unparsed free → constr.", "ΔC", "Δφ", "ΔA", "ΔT", "T free → constr.",
                 "constr. C / φ / A"):
        tbl.add_column(name, justify="left" if name == "protocol" else "right")
    for r in res.decoding:
        tbl.add_row(escape(str(r["protocol"])), str(r["n_pairs"]),
                    f"{_pct(r['unparsed_free'])} → {_pct(r['unparsed_constrained'])}",
                    *(_delta(r, f) for f in ("C", "phi", "A", "T")),
                    f"{_pct(r['T_free'])} → {_pct(r['T_constrained'])}",
                    " / ".join(_pct(r[f"{f}_constrained"]) for f in ("C", "phi", "A")))
    console.print(tbl)
    for r in res.decoding:
        console.print(f"  [bold]{escape(str(r['protocol']))}[/bold]: {escape(str(r['reading']))}", highlight=False)
    # one line per mechanism, the output kinds it covered in brackets ("... (label, json, xml)")
    for name, ks in res.mechanisms.items():
        console.print(f"  constrained by: {escape(name)}" + (f" ({', '.join(ks)})" if ks else ""),
                      style="dim", highlight=False)


def _pct(v: Any) -> str:
    return "—" if v is None or v != v else f"{100 * float(v):.0f}"


def _delta(r: dict[str, Any], f: str) -> str:
    d, lo, hi = r[f"d{f}"], r[f"d{f}_lo"], r[f"d{f}_hi"]
    if d is None or d != d:
        return "—"
    ci = "" if lo != lo else f" [{100 * lo:+.0f}, {100 * hi:+.0f}]"
    return f"{100 * d:+.0f}{ci}"


def demo(
    run_dir: RunDirOption = None,
    pairs: Annotated[int, typer.Option(min=1, help="How many of the 28 demo pairs (balanced over categories "
                                                   "and label positions).")] = DEFAULT_PAIRS,
    repetitions: Annotated[int, typer.Option(min=1, help="Repetitions per (pair, protocol, order).")]
    = DEFAULT_REPETITIONS,
    temperature: Annotated[float, typer.Option(min=0.0, help="Sampling temperature.")] = DEFAULT_TEMPERATURE,
    judge: Annotated[str, typer.Option(help="Judge id to audit.")] = DEMO_JUDGE,
    protocols: Annotated[str, typer.Option(help="Comma-separated protocol ids.")] = ",".join(DEMO_PROTOCOLS),
    decoding: Annotated[list[Decoding] | None, typer.Option(
        case_sensitive=False, show_default=False,
        help="Decoding mode, repeatable: free, constrained (default: both).")] = None,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="Do not show a progress bar.")] = False,
    bootstrap: Bootstrap = BOOTSTRAP_DEFAULT,
    legacy_o: Annotated[Path | None, typer.Option("-o", hidden=True)] = None,
) -> None:
    """Audit the embedded local judge on the demo pairs over all five pairwise protocols (run directory
    default: runs/demo).  The figures go to stdout, progress to stderr."""
    from ..engine import run_config
    from .output import data_console, message_console

    if legacy_o is not None:
        run_dir = legacy_spelling(f"demo -o {legacy_o}", legacy_o, "demo --run-dir", run_dir)
    run_dir = run_dir or Path("runs/demo")
    out = message_console(soft_wrap=True)
    wide = data_console()
    plist = [p.strip() for p in protocols.split(",") if p.strip()]
    dlist = [str(d) for d in dict.fromkeys(decoding or DEMO_DECODINGS)]
    cfg = demo_config(pairs=pairs, repetitions=repetitions, temperature=temperature, judge=judge,
                      protocols=plist, decodings=dlist)
    n_trials = min(pairs, 28) * len(plist) * 2 * repetitions * len(dlist)
    out.print(f"[bold]verdictlab demo[/bold]: judge {escape(judge)} on {min(pairs, 28)} demo pairs x {len(plist)} "
              f"protocols x 2 orders x {repetitions} repetitions x {len(dlist)} decoding modes "
              f"({escape(', '.join(dlist))}) at temperature {temperature:g} = {n_trials} judgments -> "
              f"{escape(str(run_dir))}", highlight=False)
    t0 = time.perf_counter()
    summary = run_config(cfg, run_dir, progress=not no_progress)
    out.print(f"{summary.n_written} judged now, {summary.n_skipped} reused from the store, "
              f"{summary.n_parse_failed} unreadable, {summary.n_failed} failed calls "
              f"({time.perf_counter() - t0:.1f}s)", highlight=False)
    if summary.stopped:
        out.print(f"[yellow]stopped early[/yellow]: {summary.stopped}; rerun `verdictlab demo` to resume.",
                  highlight=False)
    print_results(run_dir, console=wide, n_bootstrap=bootstrap)
    out.print(f"\nStored in {run_dir / 'run.sqlite'} (every raw output, verdict and parse status). "
              f"More: `verdictlab report {run_dir} --format html`.", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("demo", epilog=exit_codes(EXIT_INPUT, EXIT_STORE, EXIT_INTERRUPTED))(demo)
