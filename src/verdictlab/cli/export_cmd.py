"""`verdictlab export RUN [--format parquet|jsonl|csv] [-o PATH] [--partition-by judge,dataset]` --
judgments, stable schema."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from ._errors import EXIT_INPUT, EXIT_STORE
from .options import OutOption, RunArg, exit_codes, is_stdout, legacy_spelling, output_format


class ExportFormat(StrEnum):
    parquet = "parquet"
    jsonl = "jsonl"
    csv = "csv"


def export_cmd(
    run_dir: RunArg,
    fmt: Annotated[ExportFormat | None, typer.Option(
        "--format", case_sensitive=False, show_default=False,
        help="parquet, jsonl or csv. Default: from --out's extension, else parquet.")] = None,
    out: OutOption = None,
    partition_by: Annotated[str | None, typer.Option(
        "--partition-by", metavar="COLUMNS",
        help="Parquet only: comma-separated columns (judge, dataset, protocol, decoding) to write Hive-style "
             "partitions by, e.g. judge,dataset; then --out is a new directory (default RUN/judgments).")] = None,
    legacy_f: Annotated[ExportFormat | None, typer.Option("-f", hidden=True, case_sensitive=False)] = None,
) -> None:
    """Write every judgment of the run with the documented columns, in JUDGMENT_COLUMNS order
    (default file: RUN/judgments.<format>; -o - writes to stdout)."""
    import sys

    from ..errors import UsageError
    from ..store.export import MANIFEST, check_partition_by, export_judgments, write_judgments
    from ._errors import check_writable, say

    if legacy_f is not None:
        fmt = legacy_spelling(f"-f {legacy_f.value}", legacy_f, "--format", fmt)
    form = output_format(out, fmt, ExportFormat, ExportFormat.parquet)
    cols: list[str] = []
    if partition_by is not None:
        cols = check_partition_by(partition_by.split(","), format=form.value)
    if is_stdout(out):
        if cols:
            raise UsageError("--partition-by writes a directory of files; give it with -o DIR (- is stdout)")
        if form is ExportFormat.parquet and sys.stdout.isatty():
            raise UsageError("Parquet is binary: redirect stdout to a file or a program, or choose --format "
                             "jsonl|csv")
        n = write_judgments(run_dir, sys.stdout.buffer, format=form.value)
        sys.stdout.flush()
        say(f"{n} judgments written to stdout")
        return
    if cols:      # a new directory: its manifest file must be writable
        check_writable((out if out is not None else run_dir / "judgments") / MANIFEST)
    else:
        check_writable(out if out is not None else run_dir / f"judgments.{form.value}")
    path = export_judgments(run_dir, format=form.value, out=out, partition_by=cols)
    say(f"judgments written to {path}")


def register(app: typer.Typer) -> None:
    app.command("export", epilog=exit_codes(EXIT_INPUT, EXIT_STORE))(export_cmd)
