"""`verdictlab batch export CONFIG --run-dir DIR --out requests.jsonl` and
`verdictlab batch import RESULTS.jsonl --run-dir DIR`: a run's pending requests as an
OpenAI batch JSONL file (which `vllm run-batch` also reads), and its results back into judgments through
the normal parsing path.  Library side: :mod:`verdictlab.engine.batch_files`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._errors import EXIT_INPUT, EXIT_STORE, EXIT_USAGE, fail, say

batch_app = typer.Typer(help="Offline batch files: export a run's pending requests, import the results.",
                        no_args_is_help=True)


@batch_app.command("export")
def export(
    config: Annotated[Path, typer.Argument(help="The run config (YAML).")],
    run_dir: Annotated[Path, typer.Option("--run-dir", help="The run directory (created if needed).")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the requests (JSONL).")],
    judge: Annotated[str | None, typer.Option("--judge", help="Export only this judge's requests.")] = None,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Export again the requests whose "
                                                                       "imported result was an error.")] = False,
) -> None:
    """Write the run's pending requests in the OpenAI batch format ({custom_id, method, url, body})."""
    from ..config import ConfigError, load_config
    from ..engine import EngineError
    from ..engine.batch_files import export_requests

    try:
        cfg = load_config(config)
    except ConfigError as exc:
        fail(exc, EXIT_INPUT)
    if run_dir.exists() and not run_dir.is_dir():
        fail(f"--run-dir {run_dir} is a file, not a directory", EXIT_USAGE)
    try:
        res = export_requests(cfg, run_dir, out, judge=judge, retry_failed=retry_failed)
    except EngineError as exc:
        fail(exc, EXIT_INPUT)
    except OSError as exc:
        fail(f"{out}: cannot write the requests file ({exc.strerror or exc})", EXIT_INPUT)
    say(f"wrote {res.n_written} request(s) for {', '.join(res.judges)} to {res.out} "
        f"({res.n_done} trial(s) already judged in {run_dir})")
    say(f"next: e.g. `vllm run-batch -i {res.out} -o results.jsonl --model MODEL`, then "
        f"`verdictlab batch import results.jsonl --run-dir {run_dir}`")


@batch_app.command("import")
def import_(
    results: Annotated[Path, typer.Argument(help="A batch output file (OpenAI Batch API / vllm run-batch).")],
    run_dir: Annotated[Path, typer.Option("--run-dir", help="The run directory the requests came from.")],
) -> None:
    """Turn batch results into judgments of the run (errors and unreadable answers stored as failures)."""
    from ..engine import EngineError
    from ..engine.batch_files import BatchFileError, import_results

    try:
        res = import_results(results, run_dir)
    except BatchFileError as exc:
        fail(exc, EXIT_INPUT)
    except EngineError as exc:
        fail(exc, EXIT_STORE if "run store" in str(exc) or "exported" in str(exc) else EXIT_INPUT)
    say(f"imported {res.n_answered + res.n_failed} result(s) into {run_dir}: {res.n_answered} answered "
        f"({res.n_parse_failed} unparseable), {res.n_failed} failed (error lines; export again with "
        f"--retry-failed), {res.n_already} already judged (skipped)")


def register(app: typer.Typer) -> None:
    app.add_typer(batch_app, name="batch")
