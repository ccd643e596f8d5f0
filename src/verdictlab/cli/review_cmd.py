"""`verdictlab review RUN_DIR` -- export the judge/human disagreements for the label-or-rubric loop
(the rows and their kinds: :mod:`verdictlab.analyses.review`)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer


class ReviewFormat(StrEnum):
    csv = "csv"
    jsonl = "jsonl"


def review(
    run_dir: Annotated[Path, typer.Argument(help="Run directory holding run.sqlite.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Output file (default RUN_DIR/review.<format>).")] = None,
    fmt: Annotated[ReviewFormat | None, typer.Option("--format", help="csv or jsonl (default: from --out, else csv).")] = None,
    protocol: Annotated[str | None, typer.Option(help="Only this protocol.")] = None,
    judge: Annotated[str | None, typer.Option(help="Only this judge.")] = None,
    unparsed: Annotated[bool, typer.Option("--unparsed", help="Also export labelled rows the parser could not read.")] = False,
) -> None:
    """Export the judge/human disagreements, the judge's reasoning beside the human label and critique."""
    from ..analyses.review import export_review
    from ._errors import check_writable, say

    if fmt is None:
        fmt = ReviewFormat.jsonl if out is not None and out.suffix.lower() in (".jsonl", ".json") else ReviewFormat.csv
    check_writable(out or (run_dir / f"review.{fmt.value}"))
    res = export_review(run_dir, out=out, fmt=fmt.value, protocol=protocol, judge=judge, include_unparsed=unparsed)
    summary = ", ".join(f"{k}: {v}" for k, v in res.counts.items()) or "none"
    say(f"{res.n_rows} disagreement(s) written to {res.path} ({summary})", err=False)


def register(app: typer.Typer) -> None:
    app.command("review")(review)
