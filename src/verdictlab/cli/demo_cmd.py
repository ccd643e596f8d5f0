"""`verdictlab demo`: audit the embedded local judge on the packaged demo pairs.

Runs every pairwise protocol (direct, vf-json, vf-xml, cot-json, cot-xml) in both orders with
several repetitions at a temperature above 0 through the normal engine, so the run lands in a
normal run store (``runs/demo`` by default) and resumes if interrupted or rerun.  Then it prints
the reliability table and one plain sentence per protocol on what the figures say
(:mod:`verdictlab.report.verdicts_text`).

Defaults (16 of the 28 pairs, 3 repetitions, temperature 0.7: 480 judgments) keep the first run
under ten minutes on two CPU cores with the 135M-parameter embedded model (12 pairs took 3.4 min on
an idle 2-core machine); ``--pairs 28`` uses every pair.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

DEMO_JUDGE = "llamacpp:smollm2-135m"
DEMO_PROTOCOLS = ("direct", "vf-json", "vf-xml", "cot-json", "cot-xml")
DEFAULT_PAIRS = 16
DEFAULT_REPETITIONS = 3
DEFAULT_TEMPERATURE = 0.7


def demo_config(*, pairs: int = DEFAULT_PAIRS, repetitions: int = DEFAULT_REPETITIONS,
                temperature: float = DEFAULT_TEMPERATURE, judge: str = DEMO_JUDGE,
                protocols: tuple[str, ...] | list[str] = DEMO_PROTOCOLS, seed: int = 42) -> Any:
    """The demo's :class:`~verdictlab.config.RunConfig`, built in code."""
    from ..config import RunConfig

    return RunConfig(name="demo", datasets=[{"name": "demo", "pairs": int(pairs)}],
                     judges=[{"id": judge, "concurrency": 1 if judge.startswith("llamacpp:") else 8}],
                     protocols=list(protocols), orders=["AB", "BA"], temperatures=[float(temperature)],
                     repetitions=int(repetitions), seed=seed)


def print_results(run_dir: Path, *, console: Any, n_bootstrap: int = 500) -> list[tuple[str, str]]:
    """Print the figures table and one sentence per protocol; return the sentences."""
    from ..report.verdicts_text import protocol_sentences

    try:
        from ..report import build_report
        from ..report.terminal import figures_table, policy_line
    except ImportError:  # pragma: no cover - report package missing: print the stats frame
        import pandas as pd

        from ..stats.reliability import reliability
        from ..store import RunStore

        with RunStore(run_dir) as st:
            frame = reliability(st.judgments(), n_bootstrap=0)
        with pd.option_context("display.width", 200, "display.max_columns", 40):
            console.print(frame[["judge", "protocol", "temperature", "n_pairs", "n_judgments", "n_unparsed",
                                 "C", "phi", "A", "T"]].to_string(index=False))
        cells = frame.to_dict("records")
    else:
        rep = build_report(run_dir, n_bootstrap=n_bootstrap)
        cells = rep["cells"]
        console.print(figures_table(cells, title="Reliability per protocol (C, φ, A, T in %; "
                                                 "95% intervals in brackets)"))
        console.print(policy_line(rep), style="dim", highlight=False)
    try:
        from ..report.verdicts_text import top_parse_failures
        from ..store import RunStore

        with RunStore(run_dir) as st:
            reasons = top_parse_failures(st.judgments())
        cells = [{**c, "top_parse_failure": reasons.get((c.get("judge"), c.get("protocol"), c.get("dataset"),
                                                         c.get("temperature")))} for c in cells]
    except Exception:  # noqa: BLE001 - the reasons are a nicety; never fail the demo over them
        pass
    order = {p: i for i, p in enumerate(DEMO_PROTOCOLS)}
    cells = sorted(cells, key=lambda c: (order.get(str(c.get("protocol")), 99), str(c.get("protocol"))))
    sentences = protocol_sentences(cells)
    console.print("\n[bold]What the figures say[/bold]")
    for label, sentence in sentences:
        console.print(f"  [bold]{label}[/bold]: {sentence}", highlight=False)
    return sentences


def demo(
    run_dir: Annotated[Path, typer.Option("--run-dir", "-o", help="Where the run store goes.")] = Path("runs/demo"),
    pairs: Annotated[int, typer.Option(min=1, help="How many of the 28 demo pairs (balanced over categories "
                                                   "and label positions).")] = DEFAULT_PAIRS,
    repetitions: Annotated[int, typer.Option(min=1, help="Repetitions per (pair, protocol, order).")]
    = DEFAULT_REPETITIONS,
    temperature: Annotated[float, typer.Option(min=0.0, help="Sampling temperature.")] = DEFAULT_TEMPERATURE,
    judge: Annotated[str, typer.Option(help="Judge id to audit.")] = DEMO_JUDGE,
    protocols: Annotated[str, typer.Option(help="Comma-separated protocol ids.")] = ",".join(DEMO_PROTOCOLS),
    no_progress: Annotated[bool, typer.Option("--no-progress", help="Do not show a progress bar.")] = False,
    bootstrap: Annotated[int, typer.Option(min=0, help="Bootstrap resamples for the T interval.")] = 500,
) -> None:
    """Audit the embedded local judge on the demo pairs over all five pairwise protocols."""
    from rich.console import Console

    from ..engine import EngineError, run_config
    from ..items import ItemError
    from ..judges.base import JudgeConfigError

    out = Console(soft_wrap=True)
    wide = Console(width=max(Console().width, 150))
    err = Console(stderr=True, soft_wrap=True)
    plist = [p.strip() for p in protocols.split(",") if p.strip()]
    try:
        cfg = demo_config(pairs=pairs, repetitions=repetitions, temperature=temperature, judge=judge,
                          protocols=plist)
    except ValueError as exc:
        err.print(f"[red]error[/red]: {exc}", highlight=False)
        raise typer.Exit(2) from None
    n_trials = min(pairs, 28) * len(plist) * 2 * repetitions
    out.print(f"[bold]verdictlab demo[/bold]: judge {judge} on {min(pairs, 28)} demo pairs x {len(plist)} "
              f"protocols x 2 orders x {repetitions} repetitions at temperature {temperature:g} "
              f"= {n_trials} judgments -> {run_dir}", highlight=False)
    t0 = time.perf_counter()
    try:
        summary = run_config(cfg, run_dir, progress=not no_progress)
    except (ItemError, EngineError, JudgeConfigError) as exc:
        err.print(f"[red]error[/red]: {exc}", highlight=False)
        raise typer.Exit(2) from None
    out.print(f"{summary.n_written} judged now, {summary.n_skipped} reused from the store, "
              f"{summary.n_parse_failed} unreadable, {summary.n_failed} failed calls "
              f"({time.perf_counter() - t0:.1f}s)", highlight=False)
    if summary.stopped:
        out.print(f"[yellow]stopped early[/yellow]: {summary.stopped}; rerun `verdictlab demo` to resume.",
                  highlight=False)
    print_results(run_dir, console=wide, n_bootstrap=bootstrap)
    out.print(f"\nStored in {run_dir / 'run.sqlite'} (every raw output, verdict and parse status). "
              f"More: `verdictlab report {run_dir} --html`.", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
