"""`verdictlab import FORMAT PATH --run-dir DIR` -- external verdict logs into a run store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer


def import_cmd(
    format: Annotated[str, typer.Argument(
        help="Source format: llmbar, fastchat, csv, jsonl or parquet (`verdictlab import --help`).")],
    path: Annotated[Path, typer.Argument(help="Source file or folder.")],
    run_dir: Annotated[Path, typer.Option("--run-dir", "-o", help="Run directory to write into "
                                          "(created if needed; importing twice adds nothing).")],
    judge: Annotated[str | None, typer.Option(help="Judge id (overrides what the source/path says).")] = None,
    protocol: Annotated[str | None, typer.Option(help="Protocol id (overrides the source).")] = None,
    dataset: Annotated[str | None, typer.Option(help="Dataset name (overrides the default).")] = None,
    temperature: Annotated[float | None, typer.Option(
        help="Sampling temperature of the imported judgments (default 0 for llmbar/fastchat).")] = None,
    split: Annotated[str | None, typer.Option(help="llmbar: split of a file whose name does not say it.")] = None,
    map_: Annotated[list[str] | None, typer.Option(
        "--map", help="Table formats: COLUMN=SOURCE_COLUMN, e.g. --map verdict=winner; repeatable.")] = None,
    items: Annotated[str | None, typer.Option(
        help="Attach items and gold labels from this dataset loader (e.g. mtbench-human), matched by item_id.")
    ] = None,
    items_path: Annotated[str | None, typer.Option(help="Source path for --items.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the import result as JSON.")] = False,
) -> None:
    """Import judgments.  Every row is checked before anything is written; a malformed source exits 1
    with file, row and field named."""
    from ..importers import describe_importers, import_into
    from ..items import ItemError

    known = describe_importers()
    if format not in known:
        typer.echo(f"error: unknown import format {format!r}; known: {', '.join(known)}", err=True)
        raise typer.Exit(2)
    opts: dict[str, object] = {}
    for key, val in (("judge", judge), ("protocol", protocol), ("dataset", dataset),
                     ("temperature", temperature), ("split", split)):
        if val is not None:
            opts[key] = val
    if map_:
        if format not in ("csv", "jsonl", "parquet"):
            raise typer.BadParameter("--map applies to the csv, jsonl and parquet formats", param_hint="--map")
        fm: dict[str, str] = {}
        for pair in map_:
            col, sep, src = pair.partition("=")
            if not sep or not col.strip() or not src.strip():
                raise typer.BadParameter(f"expected COLUMN=SOURCE_COLUMN, got {pair!r}", param_hint="--map")
            fm[col.strip()] = src.strip()
        opts["field_map"] = fm
    try:
        attach = None
        if items:
            from ..datasets import load_dataset

            attach = load_dataset(items, path=items_path).items
        result = import_into(format, path, run_dir=run_dir, items=attach, **opts)
    except (ItemError, KeyError) as exc:
        msg = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        if as_json:
            typer.echo(json.dumps({"ok": False, "error": msg}, ensure_ascii=False))
        else:
            typer.echo(f"error: {msg}", err=True)
        raise typer.Exit(1) from None
    if as_json:
        typer.echo(json.dumps({"ok": True, "format": result.format, "source": result.source,
                               "run_dir": result.run_dir, "n_rows": result.n_rows,
                               "n_inserted": result.n_inserted, "n_skipped": result.n_skipped,
                               "n_items": result.n_items, "n_unparsed": result.n_unparsed,
                               "cells": [list(c) for c in result.cells], "notes": list(result.notes)},
                              indent=2, ensure_ascii=False))
        return
    typer.echo(f"imported {result.n_inserted} judgment(s) from {result.source} ({result.format}); "
               f"{result.n_skipped} already in the store; {result.n_unparsed} unparsed; "
               f"{result.n_items} item(s)")
    for judge_, protocol_, dataset_, temp in result.cells:
        typer.echo(f"  cell: judge={judge_} protocol={protocol_} dataset={dataset_} temperature={temp:g}")
    for note in result.notes:
        typer.echo(f"  {note}")
    typer.echo(f"next: verdictlab report {run_dir}")


def register(app: typer.Typer) -> None:
    app.command("import")(import_cmd)
