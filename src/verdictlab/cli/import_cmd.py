"""`verdictlab import FORMAT PATH --run-dir DIR` -- external verdict logs into a run store."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from ._errors import EXIT_INPUT, EXIT_INTERRUPTED, EXIT_STORE, EXIT_TERMINATED
from .options import (
    FORMAT_DEFAULT,
    FormatOption,
    LegacyJson,
    TableOrJson,
    deprecated,
    exit_codes,
    format_or_json,
)

TABLE_FORMATS = ("csv", "jsonl", "parquet")


class Order(StrEnum):
    """The presentation order of a whole table (``vocab.ORDERS``)."""

    AB = "AB"
    BA = "BA"


class VerdictTerms(StrEnum):
    """What a table's verdict A means (``importers.tabular.VERDICT_TERMS``)."""

    canonical = "canonical"
    positional = "positional"


class IdFrom(StrEnum):
    """Where a table without an item_id column takes its ids (``importers.tabular.ID_SOURCES``)."""

    hash = "hash"
    row = "row"


class Garbage(StrEnum):
    """PandaLM: what an unreadable output becomes (``importers.pandalm.GARBAGE_RULES``)."""

    tie = "tie"
    unparsed = "unparsed"


def _field_map(pairs: list[str]) -> dict[str, str]:
    fm: dict[str, str] = {}
    for pair in pairs:
        col, sep, src = pair.partition("=")
        if not sep or not col.strip() or not src.strip():
            raise typer.BadParameter(f"expected COLUMN=SOURCE_COLUMN, got {pair!r}", param_hint="--map")
        fm[col.strip()] = src.strip()
    return fm


def _value_map(specs: list[str]) -> dict[str, dict[str, str]]:
    """``["verdict:0=tie,1=A,2=B"]`` -> ``{"verdict": {"0": "tie", "1": "A", "2": "B"}}`` (an empty
    value, ``3=``, maps to empty: unparsed / unlabelled)."""
    out: dict[str, dict[str, str]] = {}
    for spec in specs:
        column, sep, pairs = spec.partition(":")
        if not sep or not column.strip() or not pairs.strip():
            raise typer.BadParameter(f"expected COLUMN:RAW=VALUE,RAW=VALUE (e.g. verdict:0=tie,1=A,2=B), got {spec!r}",
                                     param_hint="--map-values")
        for pair in pairs.split(","):
            raw, eq, word = pair.partition("=")
            if not eq or not raw.strip():
                raise typer.BadParameter(f"expected RAW=VALUE in {spec!r}, got {pair!r}", param_hint="--map-values")
            out.setdefault(column.strip(), {})[raw.strip()] = word.strip()
    return out


def _options(format: str, given: dict[str, Any], map_: list[str] | None,
             map_values: list[str] | None = None) -> dict[str, Any]:
    """The importer options from the flags that were given; a flag the format does not take is a
    usage error (never silently ignored)."""
    only = {"order": TABLE_FORMATS, "verdicts": TABLE_FORMATS, "id_from": TABLE_FORMATS, "split": ("llmbar",),
            "garbage": ("pandalm",), "scorer": ("inspect",), "label_scorer": ("inspect",),
            "transcripts": ("inspect",)}
    opts: dict[str, Any] = {}
    for key, val in given.items():
        if val is None:
            continue
        if key in only and format not in only[key]:
            raise typer.BadParameter(f"applies to the {', '.join(only[key])} format(s)",
                                     param_hint=f"--{key.replace('_', '-')}")
        opts[key] = val
    for flag, values, option, parse in (("--map", map_, "field_map", _field_map),
                                        ("--map-values", map_values, "value_map", _value_map)):
        if values:
            if format not in TABLE_FORMATS:
                raise typer.BadParameter("applies to the csv, jsonl and parquet formats", param_hint=flag)
            opts[option] = parse(values)
    return opts


def _summary(result: Any, run_dir: Path) -> list[str]:
    if result.n_inserted == 0 and result.n_replaced == 0:
        head = (f"nothing imported: all {result.n_rows} judgment(s) from {result.source} are already in "
                f"{run_dir} with the same content (no-op)")
    else:
        head = (f"imported {result.n_inserted} new judgment(s) from {result.source} ({result.format}); "
                f"{result.n_replaced} replaced (--replace); {result.n_identical} identical already in the "
                f"store; {result.n_unparsed} unparsed; {result.n_items} item(s)")
    lines = [head]
    lines += [f"  cell: judge={j} protocol={p} dataset={d} temperature={t:g}" for j, p, d, t in result.cells]
    lines += [f"  {note}" for note in result.notes]
    lines.append(f"next: verdictlab report {run_dir}")
    return lines


def _result_json(result: Any) -> str:
    return json.dumps({"ok": True, "format": result.format, "source": result.source,
                       "run_dir": result.run_dir, "n_rows": result.n_rows,
                       "n_inserted": result.n_inserted, "n_replaced": result.n_replaced,
                       "n_identical": result.n_identical, "n_skipped": result.n_skipped,
                       "n_items": result.n_items, "n_unparsed": result.n_unparsed,
                       "cells": [list(c) for c in result.cells], "notes": list(result.notes)},
                      indent=2, ensure_ascii=False)


def import_cmd(
    format: Annotated[str, typer.Argument(
        metavar="FORMAT", show_default=False,
        help="Source format: llmbar, fastchat, pandalm, judgebench, inspect, csv, jsonl or parquet.")],
    path: Annotated[Path, typer.Argument(metavar="PATH", show_default=False, help="Source file or folder.")],
    run_dir: Annotated[Path | None, typer.Option(
        "--run-dir", metavar="DIR", show_default=False,
        help="Run directory to write into (created if needed; required).")] = None,
    judge: Annotated[str | None, typer.Option(help="Judge id (overrides what the source/path says).")] = None,
    protocol: Annotated[str | None, typer.Option(help="Protocol id (overrides the source).")] = None,
    dataset: Annotated[str | None, typer.Option(help="Dataset name (overrides the default).")] = None,
    temperature: Annotated[float | None, typer.Option(
        help="Sampling temperature of the imported judgments, in [0, 2] (default 0 where the source does "
             "not say; the import notes it).")] = None,
    rep: Annotated[int | None, typer.Option(help="Repetition index for the whole file, >= 0 (tables: when "
                                            "there is no rep column; default 0, noted).")] = None,
    order: Annotated[Order | None, typer.Option(
        show_default=False, help="Tables: presentation order of the whole file (when there is no order "
                                 "column).")] = None,
    verdicts: Annotated[VerdictTerms | None, typer.Option(
        show_default=False,
        help="Tables: canonical (A = response_a, default) or positional (A = the response shown first; "
             "converted with the order).")] = None,
    split: Annotated[str | None, typer.Option(help="llmbar: split of a file whose name does not say it.")] = None,
    garbage: Annotated[Garbage | None, typer.Option(
        show_default=False, help="pandalm: an unreadable output is a tie (PandaLM's rule, default, recorded as "
                                 "a fallback) or unparsed.")] = None,
    scorer: Annotated[str | None, typer.Option(help="inspect: the scorer whose grades to import "
                                               "(default: every scorer, one protocol each).")] = None,
    label_scorer: Annotated[str | None, typer.Option(
        "--label-scorer", metavar="SCORER",
        help="inspect: the scorer whose grade is the gold label (C/1/true PASS, I/0/false FAIL), not a judgment "
             "(e.g. a match scorer checking a model-graded one).")] = None,
    transcripts: Annotated[bool | None, typer.Option(
        "--transcripts", show_default=False,
        help="inspect: the graded object is the agent's whole run: items carry the sample's transcript "
             "(messages, tool calls, tool results).")] = None,
    map_: Annotated[list[str] | None, typer.Option(
        "--map", metavar="COLUMN=SOURCE",
        help="Tables: COLUMN=SOURCE_COLUMN for any column, e.g. --map verdict=winner; repeatable.")] = None,
    map_values: Annotated[list[str] | None, typer.Option(
        "--map-values", metavar="COLUMN:RAW=VALUE,...",
        help="Tables: what the values of verdict, label or order mean, COLUMN:RAW=VALUE,... e.g. --map-values "
             "verdict:0=tie,1=A,2=B; repeatable.")] = None,
    id_from: Annotated[IdFrom | None, typer.Option(
        "--id-from", show_default=False,
        help="Tables without an item_id column: derive ids from hash (question + both responses, the same "
             "in either order) or row (the record number).")] = None,
    items: Annotated[str | None, typer.Option(
        metavar="LOADER",
        help="Attach items and gold labels from this dataset loader (e.g. mtbench-human), matched by item_id.")
    ] = None,
    items_path: Annotated[str | None, typer.Option(
        metavar="PATH", help="Source path for --items; for pandalm the test set (testset-v1.json) to join.")
    ] = None,
    replace: Annotated[bool, typer.Option(
        "--replace", help="Replace stored judgments that differ from the imported rows (otherwise the "
                          "import refuses and writes nothing).")] = False,
    fmt: FormatOption = FORMAT_DEFAULT,
    legacy_o: Annotated[Path | None, typer.Option("-o", hidden=True)] = None,
    legacy_json: LegacyJson = False,
) -> None:
    """Import judgments.  Every row is checked before anything is written; a malformed source exits 3
    with every problem listed (file, row and field named).  Re-importing: identical rows are a no-op that
    says so; rows that differ from the stored trials refuse the import (count + one example) unless
    --replace.  The summary goes to stderr; --format json prints the result on stdout."""
    from ..core.items import ItemError
    from ..importers import describe_importers, import_into
    from ._errors import EXIT_USAGE, fail, problem_lines, say

    form = format_or_json(fmt, legacy_json, TableOrJson)
    if legacy_o is not None:
        deprecated(f"import -o {legacy_o}", f"import --run-dir {legacy_o}")
        run_dir = run_dir or legacy_o
    if run_dir is None:
        raise typer.BadParameter("the run directory to write into is required", param_hint="'--run-dir'")
    known = describe_importers()
    if format not in known:
        fail(f"unknown import format {format!r}; known: {', '.join(known)}", EXIT_USAGE)
    given = {"judge": judge, "protocol": protocol, "dataset": dataset, "temperature": temperature, "rep": rep,
             "order": order, "verdicts": verdicts, "id_from": id_from, "split": split, "garbage": garbage,
             "scorer": scorer, "label_scorer": label_scorer, "transcripts": transcripts}
    opts = _options(format, {k: v.value if isinstance(v, StrEnum) else v for k, v in given.items()},
                    map_, map_values)
    if format == "pandalm" and items_path and not items:
        opts["items_path"] = items_path
    try:
        attach = None
        if items:
            from ..datasets import load_dataset

            attach = load_dataset(items, path=items_path).items
        result = import_into(format, path, run_dir=run_dir, items=attach, replace=replace, **opts)
    except ItemError as exc:
        if form is TableOrJson.json:
            typer.echo(json.dumps({"ok": False, "error": str(exc), "problems": problem_lines(exc)},
                                  ensure_ascii=False))
        fail(exc, EXIT_INPUT)
    if form is TableOrJson.json:
        typer.echo(_result_json(result))
        return
    for line in _summary(result, run_dir):
        say(line)


def register(app: typer.Typer) -> None:
    app.command("import", epilog=exit_codes(EXIT_INPUT, EXIT_STORE, EXIT_INTERRUPTED, EXIT_TERMINATED))(import_cmd)
