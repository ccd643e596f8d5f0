"""`verdictlab run CONFIG [--run-dir DIR]`: run (or resume) an audit described by a YAML config; `--plan`
prints what it would cost without calling anything."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from ..errors import IncompleteRunError, UsageError
from ._errors import (
    EXIT_INCOMPLETE,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_STORE,
    EXIT_TERMINATED,
    fail,
    printable,
)
from .options import RunDirOption, SetOption, exit_codes, legacy_spelling
from .output import data_console, message_console


class Executor(StrEnum):
    """Where trials run (the config's ``executor``)."""

    local = "local"
    ray = "ray"


def _with_executor(cfg: Any, executor: Executor | None, ray_address: str | None) -> Any:
    """The config with ``--executor`` / ``--ray-address`` applied."""
    from ..engine.config import check_ray_address

    if ray_address is not None and (executor or cfg.executor) != "ray":
        raise UsageError("--ray-address needs --executor ray (or executor: ray in the config)")
    update: dict[str, Any] = {}
    if executor is not None:
        update["executor"] = executor.value
    if ray_address is not None:
        update["ray"] = cfg.ray.model_copy(update={"address": check_ray_address(ray_address)})
    return cfg.model_copy(update=update) if update else cfg


def run(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", show_default=False,
                                           help="YAML run config (datasets, judges, protocols, design).")],
    run_dir: RunDirOption = None,
    plan: Annotated[bool, typer.Option("--plan", help="Only print what the run would do: calls, tokens, dollars "
                                                      "and duration (offline: no key, no call).")] = False,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="Do not show a progress bar.")] = False,
    fresh: Annotated[bool, typer.Option("--fresh", help="Start over instead of resuming (refuses if a store "
                                                       "exists, unless --force).")] = False,
    force: Annotated[bool, typer.Option("--force", help="With --fresh: delete an existing run store.")] = False,
    retry_failed: Annotated[bool, typer.Option("--retry-failed",
                                               help="Judge again the trials whose calls failed for good "
                                                    "(errors, not unparseable answers).")] = False,
    executor: Annotated[Executor | None, typer.Option(
        "--executor", show_default=False,
        help="Where trials run: local or ray (default: the config's executor).")] = None,
    ray_address: Annotated[str | None, typer.Option("--ray-address", help="With --executor ray: the address of "
                                                                          "a running Ray cluster.")] = None,
    pilot: Annotated[bool, typer.Option("--pilot", help="With --plan and precision: in the config: judge the "
                                                        "adaptive design's pilot first and plan from it (the "
                                                        "run reuses it).")] = False,
    set_: SetOption = None,
    legacy_o: Annotated[Path | None, typer.Option("-o", hidden=True)] = None,
) -> None:
    """Run an audit.  Resumes by default: trials already in the store are skipped.  The plan goes to
    stdout; the run's progress and summary to stderr.

    Exits 0 when every trial of the grid has a stored answer, 4 when trials are left undone or
    failed for good (rerun to resume / with --retry-failed), 130/143 when interrupted."""
    from ..engine import run_config
    from ..engine.config import load_config
    from ..engine.run import remove_run_store
    from ..store import STORE_FILENAME

    if legacy_o is not None:
        run_dir = legacy_spelling(f"run -o {legacy_o}", legacy_o, "run --run-dir", run_dir)
    cfg = _with_executor(load_config(config, overrides=set_ or ()), executor, ray_address)
    if pilot and not plan:
        raise UsageError("--pilot goes with --plan (it judges the adaptive design's pilot, then prints the plan)")
    rd = run_dir if run_dir is not None else Path("runs") / cfg.name
    _check_run_dir(rd, given=run_dir is not None)
    if fresh and (rd / STORE_FILENAME).exists() and not plan:
        if not force:
            raise UsageError(f"{rd} already holds a run store; rerun without --fresh to resume, "
                             "or add --force to delete it and start over.")
        remove_run_store(rd)               # under the run lock: never a store another run is writing
    try:
        summary = run_config(cfg, rd, progress=not no_progress, plan_only=plan, retry_failed=retry_failed,
                             pilot=pilot)
    except KeyboardInterrupt as exc:   # while loading datasets / models, before any judging (SIGTERM: Stopped)
        fail(f"{getattr(exc, 'reason', 'interrupted')} before judging started; nothing was judged.",
             getattr(exc, "exit_code", EXIT_INTERRUPTED))

    if plan:
        assert summary.plan is not None
        data = data_console(wide=False, soft_wrap=True, markup=False, highlight=False)
        data.print(printable(f"plan for {cfg.name!r} -> {rd}"))
        for line in summary.plan.lines():
            data.print(printable(line))
        return
    _print_summary(message_console(soft_wrap=True, markup=False, highlight=False), cfg.name, rd, summary)
    if summary.stopped == "interrupted":
        raise typer.Exit(EXIT_INTERRUPTED)
    if summary.stopped == "terminated":
        raise typer.Exit(EXIT_TERMINATED)
    _exit_if_incomplete(summary)


def _check_run_dir(rd: Path, *, given: bool) -> None:
    """A run directory that exists must be a directory (not a file)."""
    if rd.exists() and not rd.is_dir():
        what = "--run-dir" if given else "the default run directory"
        raise UsageError(f"{what} {rd} is a file, not a directory; choose another --run-dir")


def _print_summary(out: Console, name: str, rd: Path, summary: Any) -> None:
    from ..store import STORE_FILENAME

    out.print(f"run {name!r}: {summary.n_written} trials judged this run, "
              f"{summary.n_skipped} already done (skipped), {summary.n_remaining} remaining")
    out.print(f"  failed calls: {summary.n_failed}   parse failures: {summary.n_parse_failed}   "
              f"cache hits: {summary.n_cache_hits}   calls: {summary.calls_text()}   "
              f"tokens: {summary.tokens_in + summary.tokens_out:,}   cost: ${summary.cost_usd:.4f}   "
              f"time: {summary.elapsed_s:.1f}s")
    out.print(f"  stored in {rd / STORE_FILENAME}")
    for note in summary.notes:
        out.print(f"  {printable(note)}")
    if summary.n_retried_failed:
        out.print(f"  {summary.n_retried_failed} previously failed trials were judged again")
    if summary.n_failed:
        out.print(f"{summary.n_failed} trials failed (no answer after retries; see the 'error' column). "
                  "Rerun with --retry-failed to try them again.", style="yellow")
    if summary.stopped:     # may quote a server's error text: control characters shown as escapes
        out.print(f"stopped early: {printable(summary.stopped)}. Rerun the same command to resume"
                  + (" (after raising the budget in the config)." if "budget:" in summary.stopped
                     else "."), style="yellow")
    out.print(f"next: verdictlab report {rd}")


def _exit_if_incomplete(summary: Any) -> None:
    """Exit 4 when the grid is not fully answered: trials not judged, or calls failed for good (in
    this session or an earlier one: ``summary.n_failed_stored``)."""
    failed = summary.n_failed_stored
    if summary.n_remaining == 0 and failed == 0:
        return
    parts = []
    if summary.n_remaining:
        parts.append(f"{summary.n_remaining} of {summary.n_trials} trials not judged (rerun to resume)")
    if failed:
        parts.append(f"{failed} trials without an answer (rerun with --retry-failed)")
    raise IncompleteRunError(f"incomplete run: {'; '.join(parts)}")


def register(app: typer.Typer) -> None:
    app.command("run", epilog=exit_codes(EXIT_INPUT, EXIT_INCOMPLETE, EXIT_STORE, EXIT_INTERRUPTED,
                                         EXIT_TERMINATED))(run)
