"""`verdictlab export RUN_DIR --format parquet|jsonl|csv [--out PATH]` -- judgments, stable schema."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer


class ExportFormat(StrEnum):
    parquet = "parquet"
    jsonl = "jsonl"
    csv = "csv"


def export_cmd(
    run_dir: Annotated[Path, typer.Argument(help="Run directory holding run.sqlite.")],
    format: Annotated[ExportFormat, typer.Option("--format", "-f", help="Output format.")] = ExportFormat.parquet,
    out: Annotated[Path | None, typer.Option("--out", help="Output file (default RUN_DIR/judgments.<format>).")]
    = None,
) -> None:
    """Write every judgment of the run with the documented columns, in JUDGMENT_COLUMNS order."""
    from ..export import export_judgments
    from ..store import StoreError
    from ._errors import EXIT_STORE, check_writable, fail, say

    check_writable(out if out is not None else run_dir / f"judgments.{format.value}")
    try:
        path = export_judgments(run_dir, format=format.value, out=out)
    except StoreError as exc:
        fail(exc, EXIT_STORE)
    say(f"wrote {path}", err=False)


def register(app: typer.Typer) -> None:
    app.command("export")(export_cmd)
