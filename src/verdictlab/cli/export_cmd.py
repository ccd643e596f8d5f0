"""`verdictlab export RUN [--format parquet|jsonl|csv] [-o PATH] [--partition-by judge,dataset]` --
judgments, stable schema."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from ._errors import EXIT_INPUT, EXIT_STORE
from .options import OutOption, RunArg, deprecated, exit_codes, output_format


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
    (default file: RUN/judgments.<format>)."""
    from ..store.export import MANIFEST, check_partition_by, export_judgments
    from ._errors import check_writable, say

    if legacy_f is not None:
        deprecated(f"-f {legacy_f.value}", f"--format {legacy_f.value}")
        fmt = fmt or legacy_f
    form = output_format(out, fmt, ExportFormat, ExportFormat.parquet)
    cols: list[str] = []
    if partition_by is not None:
        cols = check_partition_by(partition_by.split(","), format=form.value)
    if cols:      # a new directory: its manifest file must be writable
        check_writable((out if out is not None else run_dir / "judgments") / MANIFEST)
    else:
        check_writable(out if out is not None else run_dir / f"judgments.{form.value}")
    path = export_judgments(run_dir, format=form.value, out=out, partition_by=cols)
    say(f"judgments written to {path}")


def register(app: typer.Typer) -> None:
    app.command("export", epilog=exit_codes(EXIT_INPUT, EXIT_STORE))(export_cmd)
