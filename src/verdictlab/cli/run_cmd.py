"""`verdictlab run CONFIG`: run (or resume) an audit described by a YAML config."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ..config import ConfigError, load_config
from ..store import STORE_FILENAME


def _remove_store(run_dir: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        p = run_dir / (STORE_FILENAME + suffix)
        if p.exists():
            p.unlink()


def run(
    config: Annotated[Path, typer.Argument(help="YAML run config (datasets, judges, protocols, design).")],
    run_dir: Annotated[Path | None, typer.Option("--run-dir", "-o",
                                                 help="Where the run store goes (default: runs/<name>).")] = None,
    plan: Annotated[bool, typer.Option("--plan", help="Only print trial counts and a token/cost estimate.")] = False,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="Do not show a progress bar.")] = False,
    fresh: Annotated[bool, typer.Option("--fresh", help="Start over instead of resuming (refuses if a store "
                                                       "exists, unless --force).")] = False,
    force: Annotated[bool, typer.Option("--force", help="With --fresh: delete an existing run store.")] = False,
    retry_failed: Annotated[bool, typer.Option("--retry-failed",
                                               help="Judge again the trials whose calls failed for good "
                                                    "(errors, not unparseable answers).")] = False,
) -> None:
    """Run an audit.  Resumes by default: trials already in the store are skipped."""
    from ..engine import EngineError, RunLock, run_config
    from ..items import ItemError
    from ..judges.base import JudgeConfigError

    out = Console(soft_wrap=True)
    err = Console(stderr=True, soft_wrap=True)
    try:
        cfg = load_config(config)
    except ConfigError as exc:
        err.print(f"[red]config error[/red]\n{exc}", markup=True, highlight=False)
        raise typer.Exit(2) from None
    rd = run_dir if run_dir is not None else Path("runs") / cfg.name
    if fresh and (rd / STORE_FILENAME).exists() and not plan:
        if not force:
            err.print(f"{rd} already holds a run store; rerun without --fresh to resume, "
                      "or add --force to delete it and start over.", highlight=False)
            raise typer.Exit(2)
        try:
            with RunLock(rd):                  # never delete a store another run is writing
                _remove_store(rd)
        except EngineError as exc:
            err.print(f"[red]error[/red]: {exc}", markup=True, highlight=False)
            raise typer.Exit(2) from None
    try:
        summary = run_config(cfg, rd, progress=not no_progress, plan_only=plan, retry_failed=retry_failed)
    except (ItemError, EngineError, JudgeConfigError, ConfigError) as exc:
        err.print(f"[red]error[/red]: {exc}", markup=True, highlight=False)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:      # while loading datasets / models, before any judging
        err.print("interrupted before judging started; nothing was judged.", highlight=False)
        raise typer.Exit(130) from None

    if plan:
        assert summary.plan is not None
        out.print(f"plan for {cfg.name!r} -> {rd}", highlight=False)
        for line in summary.plan.lines():
            out.print(line, highlight=False)
        return

    out.print(f"run {cfg.name!r}: {summary.n_written} trials judged this run, "
              f"{summary.n_skipped} already done (skipped), {summary.n_remaining} remaining", highlight=False)
    out.print(f"  failed calls: {summary.n_failed}   parse failures: {summary.n_parse_failed}   "
              f"cache hits: {summary.n_cache_hits}   calls: {summary.calls}   "
              f"tokens: {summary.tokens_in + summary.tokens_out:,}   cost: ${summary.cost_usd:.4f}   "
              f"time: {summary.elapsed_s:.1f}s", highlight=False)
    out.print(f"  stored in {rd / STORE_FILENAME}", highlight=False)
    if summary.n_retried_failed:
        out.print(f"  {summary.n_retried_failed} previously failed trials were judged again", highlight=False)
    if summary.n_failed:
        out.print(f"[yellow]{summary.n_failed} trials failed[/yellow] (no answer after retries; see the "
                  "'error' column). Rerun with --retry-failed to try them again.", highlight=False)
    if summary.stopped:
        out.print(f"[yellow]stopped early[/yellow]: {summary.stopped}. Rerun the same command to resume"
                  + (" (after raising the budget in the config)." if "budget:" in summary.stopped
                     else "."), highlight=False)
    out.print(f"next: verdictlab report {rd}", highlight=False)
    if summary.stopped == "interrupted":
        raise typer.Exit(130)        # 128 + SIGINT
    if summary.stopped == "terminated":
        raise typer.Exit(143)        # 128 + SIGTERM


def register(app: typer.Typer) -> None:
    app.command("run")(run)
