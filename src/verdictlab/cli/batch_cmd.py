"""`verdictlab batch export CONFIG --run-dir DIR -o requests.jsonl` and
`verdictlab batch import RUN RESULTS.jsonl`: a run's pending requests as an
OpenAI batch JSONL file (which `vllm run-batch` also reads), and its results back into judgments through
the normal parsing path.  Library side: :mod:`verdictlab.engine.batch_files`."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ..errors import UsageError
from ._errors import EXIT_INPUT, EXIT_STORE, say
from .options import (
    OutOption,
    RunArg,
    RunDirOption,
    SetOption,
    deprecated,
    exit_codes,
    is_stdout,
    output_format,
)

batch_app = typer.Typer(help="Offline batch files: export a run's pending requests, import the results.",
                        no_args_is_help=True, rich_markup_mode=None)


class BatchFormat(StrEnum):
    """The batch file form: OpenAI batch JSON Lines (which `vllm run-batch` also reads)."""

    jsonl = "jsonl"


@batch_app.command("export", epilog=exit_codes(EXIT_INPUT, EXIT_STORE))
def export(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", show_default=False, help="The run config (YAML).")],
    run_dir: RunDirOption = None,
    out: OutOption = None,
    fmt: Annotated[BatchFormat, typer.Option("--format", case_sensitive=False,
                                             help="The requests file's form.")] = BatchFormat.jsonl,
    judge: Annotated[str | None, typer.Option("--judge", help="Export only this judge's requests.")] = None,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Export again the requests whose "
                                                                       "imported result was an error.")] = False,
    set_: SetOption = None,
) -> None:
    """Write the run's pending requests in the OpenAI batch format ({custom_id, method, url, body}) to --out
    (required)."""
    from ..engine.batch_files import export_requests
    from ..engine.config import load_config

    if out is None or is_stdout(out):
        raise typer.BadParameter("give the requests file with -o/--out PATH (a file: the run records it, and "
                                 "`batch import` checks the results against it)", param_hint="'--out'")
    output_format(out, fmt, BatchFormat, BatchFormat.jsonl)
    cfg = load_config(config, overrides=set_ or ())
    run_dir = run_dir or Path("runs") / cfg.name
    if run_dir.exists() and not run_dir.is_dir():
        raise UsageError(f"--run-dir {run_dir} is a file, not a directory")
    res = export_requests(cfg, run_dir, out, judge=judge, retry_failed=retry_failed)
    say(f"wrote {res.n_written} request(s) for {', '.join(res.judges)} to {res.out} "
        f"({res.n_done} trial(s) already judged in {run_dir})")
    say(f"next: e.g. `vllm run-batch -i {res.out} -o results.jsonl --model MODEL`, then "
        f"`verdictlab batch import {run_dir} results.jsonl`")


@batch_app.command("import", epilog=exit_codes(EXIT_INPUT, EXIT_STORE))
def import_(
    run_dir: RunArg,
    results: Annotated[Path | None, typer.Argument(
        metavar="RESULTS", show_default=False,
        help="A batch output file (OpenAI Batch API / vllm run-batch); required.")] = None,
    legacy_run_dir: Annotated[Path | None, typer.Option("--run-dir", hidden=True)] = None,
) -> None:
    """Turn batch results into judgments of RUN, the run the requests came from (errors and unreadable
    answers stored as failures)."""
    from ..engine.batch_files import import_results

    if legacy_run_dir is not None:
        if results is not None:
            raise typer.BadParameter("give the run directory once: batch import RUN RESULTS")
        deprecated(f"batch import {run_dir} --run-dir {legacy_run_dir}",
                   f"batch import {legacy_run_dir} {run_dir}")
        run_dir, results = legacy_run_dir, run_dir
    if results is None:
        raise typer.BadParameter("expected RUN RESULTS (the run directory, then the batch output file)")

    res = import_results(results, run_dir)
    say(f"imported {res.n_answered + res.n_failed} result(s) into {run_dir}: {res.n_answered} answered "
        f"({res.n_parse_failed} unparseable), {res.n_failed} failed (error lines; export again with "
        f"--retry-failed), {res.n_already} already judged (skipped)")


def register(app: typer.Typer) -> None:
    app.add_typer(batch_app, name="batch")
