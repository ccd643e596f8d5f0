"""`verdictlab export RUN_DIR --format parquet|jsonl|csv [--out PATH] [--partition-by judge,dataset]` --
judgments, stable schema."""

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
    out: Annotated[Path | None, typer.Option("--out", help="Output file (default RUN_DIR/judgments.<format>; "
                                             "with --partition-by a new directory, default RUN_DIR/judgments).")]
    = None,
    partition_by: Annotated[str | None, typer.Option(
        "--partition-by", help="Parquet only: comma-separated columns (judge, dataset, protocol, decoding) to "
                               "write Hive-style partitions by, e.g. judge,dataset.")] = None,
) -> None:
    """Write every judgment of the run with the documented columns, in JUDGMENT_COLUMNS order."""
    from ..export import MANIFEST, check_partition_by, export_judgments
    from ..store import StoreError
    from ._errors import EXIT_INPUT, EXIT_STORE, EXIT_USAGE, check_writable, fail, say

    cols: list[str] = []
    if partition_by is not None:
        try:
            cols = check_partition_by(partition_by.split(","), format=format.value)
        except ValueError as exc:
            fail(exc, EXIT_USAGE)
    if cols:      # a new directory: its manifest file must be writable
        check_writable((out if out is not None else run_dir / "judgments") / MANIFEST)
    else:
        check_writable(out if out is not None else run_dir / f"judgments.{format.value}")
    try:
        path = export_judgments(run_dir, format=format.value, out=out, partition_by=cols)
    except StoreError as exc:
        fail(exc, EXIT_STORE)
    except ValueError as exc:     # the --out directory holds files already
        fail(exc, EXIT_INPUT)
    say(f"wrote {path}", err=False)


def register(app: typer.Typer) -> None:
    app.command("export")(export_cmd)
