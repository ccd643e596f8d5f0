"""`verdictlab review RUN [--format csv|jsonl] [-o PATH]` -- export the judge/human disagreements for the
label-or-rubric loop (the rows and their kinds: :mod:`verdictlab.workflows.review`)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from ._errors import EXIT_INPUT, EXIT_STORE
from .options import (
    UNPARSED_DEFAULT,
    OutOption,
    RunArg,
    Unparsed,
    deprecated,
    exit_codes,
    figure_policy,
    is_stdout,
    output_format,
)


class ReviewFormat(StrEnum):
    csv = "csv"
    jsonl = "jsonl"


def review(
    run_dir: RunArg,
    fmt: Annotated[ReviewFormat | None, typer.Option(
        "--format", case_sensitive=False, show_default=False,
        help="csv or jsonl. Default: from --out's extension, else csv.")] = None,
    out: OutOption = None,
    protocol: Annotated[str | None, typer.Option(help="Only this protocol.")] = None,
    judge: Annotated[str | None, typer.Option(help="Only this judge.")] = None,
    unparsed: Unparsed = UNPARSED_DEFAULT,
) -> None:
    """Export the judge/human disagreements, the judge's reasoning beside the human label and critique
    (default file: RUN/review.<format>).  With --unparsed wrong, labelled verdicts the parser could not
    read count as disagreements and are exported too."""
    import sys

    from ..workflows.review import export_review
    from ._errors import check_writable, say

    if out is not None and out.suffix.lower() == ".json" and fmt in (None, ReviewFormat.jsonl):
        deprecated(f"review -o {out.name} (JSON Lines in a .json file)", "a .jsonl name or --format jsonl")
        form = ReviewFormat.jsonl
    else:
        form = output_format(out, fmt, ReviewFormat, ReviewFormat.csv)
    check_writable(out or (run_dir / f"review.{form.value}"))
    res = export_review(run_dir, out=sys.stdout if is_stdout(out) else out, fmt=form.value, protocol=protocol,
                        judge=judge, include_unparsed=not figure_policy(unparsed=unparsed).drops_unparsed)
    summary = ", ".join(f"{k}: {v}" for k, v in res.counts.items()) or "none"
    say(f"{res.n_rows} disagreement(s) written to {res.path or 'stdout'} ({summary})")


def register(app: typer.Typer) -> None:
    app.command("review", epilog=exit_codes(EXIT_INPUT, EXIT_STORE))(review)
