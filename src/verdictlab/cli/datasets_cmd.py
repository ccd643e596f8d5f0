"""`verdictlab datasets list|show|validate` -- the registered loaders and what they read."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from ..errors import UsageError, VerdictlabError
from ._errors import EXIT_INPUT, printable, problem_list
from .options import FORMAT_DEFAULT, FormatOption, LegacyJson, TableOrJson, exit_codes, format_or_json
from .output import data_console

datasets_app = typer.Typer(help="Dataset loaders: list them, look at a source, validate a file.",
                           no_args_is_help=True, rich_markup_mode=None)

OptionList = Annotated[list[str] | None, typer.Option(
    "--option", "-O", metavar="KEY=VALUE",
    help="Loader option KEY=VALUE (VALUE read as YAML: 42, [a, b], drop); repeatable.")]


def parse_options(pairs: list[str] | None) -> dict[str, Any]:
    """``["tie_policy=drop", "sample=200"]`` -> ``{"tie_policy": "drop", "sample": 200}``."""
    import yaml

    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected KEY=VALUE, got {pair!r}")
        try:
            out[key.strip()] = yaml.safe_load(value) if value.strip() else None
        except yaml.YAMLError:
            out[key.strip()] = value
    return out


MapList = Annotated[list[str] | None, typer.Option(
    "--map", metavar="COLUMN=SOURCE", help="COLUMN=SOURCE_COLUMN: the file's column that holds a field, e.g. --map question=prompt; "
                  "repeatable (the loader option field_map).")]

#: the generic loader that reads a file given instead of a loader name (`datasets validate pairs.csv`)
FILE_LOADERS = {".jsonl": "jsonl", ".csv": "csv", ".tsv": "csv", ".parquet": "parquet"}


def loader_and_path(name: str, path: str | None) -> tuple[str, str | None]:
    """``(loader, path)``: NAME is a loader, or a ``.jsonl`` / ``.csv`` / ``.tsv`` / ``.parquet`` file
    read by the generic loader of its kind (one pair per row)."""
    from pathlib import Path

    from ..datasets import dataset_names

    if name in dataset_names():
        return name, path
    suffix = Path(name).suffix.lower()
    if suffix in FILE_LOADERS:
        if path is not None:
            raise typer.BadParameter(f"{name!r} is a file; give either a file or a loader name with --path",
                                     param_hint="--path")
        return FILE_LOADERS[suffix], name
    return name, path           # an unknown loader: load_dataset says which ones exist


def _load(name: str, path: str | None, hub: str | None, options: list[str] | None,
          map_: list[str] | None = None) -> Any:
    from ..datasets import load_dataset
    from ..importers.options import parse_field_map

    opts = parse_options(options)
    if hub:
        opts["hub"] = hub
    if map_:
        try:
            opts["field_map"] = {**(opts.get("field_map") or {}), **parse_field_map(map_)}
        except UsageError as exc:
            raise typer.BadParameter(str(exc), param_hint="--map") from None
    loader, path = loader_and_path(name, path)
    return load_dataset(loader, path=path, **opts)


def _short(text: str | None, n: int = 160) -> str:
    if text is None:
        return "-"
    t = " ".join(str(text).split())
    return t if len(t) <= n else t[: n - 1] + "…"


def _print_summary(summary: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    con = data_console(soft_wrap=True)
    t = Table(title=Text(printable(f"dataset {summary['dataset']}")), show_header=False)
    t.add_column("key", style="bold")
    t.add_column("value")
    for key in ("source", "n_items", "labels", "n_ties", "n_dropped", "dropped_reasons", "reordered",
                "seed", "kind", "response_a_chars", "response_b_chars", "response_chars", "categories",
                "notes"):
        if key in summary:
            v = summary[key]
            if isinstance(v, dict) and key.endswith("_chars"):
                v = ", ".join(f"{k} {float(x):.0f}" for k, x in v.items())
            elif isinstance(v, list):
                v = "\n".join(map(str, v)) or "-"
            elif isinstance(v, dict):
                v = ", ".join(f"{k}: {x}" for k, x in v.items()) or "-"
            t.add_row(key, Text(printable(v)))
    con.print(t)


def _json_error(exc: VerdictlabError) -> None:
    """``--format json``: the error as ``{"ok": false, "error", "problems"}`` on stdout (every problem, one
    alone too); the caller then raises it, so stderr says it and the exit code is its own, as without
    ``--format json``."""
    typer.echo(json.dumps({"ok": False, "error": str(exc), "problems": problem_list(exc)}, ensure_ascii=False))


@datasets_app.command("list", epilog=exit_codes())
def list_cmd(fmt: FormatOption = FORMAT_DEFAULT, legacy_json: LegacyJson = False) -> None:
    """Registered dataset loaders and what each reads."""
    from rich.table import Table

    from ..datasets import describe_loaders

    loaders = describe_loaders()
    if format_or_json(fmt, legacy_json, TableOrJson) is TableOrJson.json:
        typer.echo(json.dumps(loaders, indent=2))
        return
    t = Table(title="dataset loaders")
    t.add_column("name", style="bold")
    t.add_column("reads")
    for name, desc in loaders.items():
        t.add_row(name, desc)
    data_console(soft_wrap=True).print(t)


@datasets_app.command("show", epilog=exit_codes(EXIT_INPUT))
def show_cmd(
    name: Annotated[str, typer.Argument(help="Loader name (see `verdictlab datasets list`).")],
    path: Annotated[str | None, typer.Option("--path", "-p", help="Source file or folder.")] = None,
    hub: Annotated[str | None, typer.Option("--hub", help="Hugging Face hub id (needs network + the hub extra).")] = None,
    n: Annotated[int, typer.Option("--n", help="How many items to show.")] = 3,
    option: OptionList = None,
    map_: MapList = None,
    fmt: FormatOption = FORMAT_DEFAULT,
    legacy_json: LegacyJson = False,
) -> None:
    """Load a dataset (a loader name, or your own FILE) and show its summary and first items."""
    as_json = format_or_json(fmt, legacy_json, TableOrJson) is TableOrJson.json

    try:
        load = _load(name, path, hub, option, map_)
    except VerdictlabError as exc:
        if as_json:
            _json_error(exc)
        raise
    items = load.items[: max(n, 0)]
    if as_json:
        typer.echo(json.dumps({"ok": True, "summary": load.summary(),
                               "items": [it.model_dump() for it in items]}, indent=2, ensure_ascii=False,
                              default=str))
        return
    from rich.table import Table
    from rich.text import Text

    _print_summary(load.summary())
    t = Table(title=f"first {len(items)} item(s)")
    for col in ("item_id", "label", "category", "question", "response_a / response"):
        t.add_column(col, overflow="fold")
    for it in items:
        resp = getattr(it, "response_a", None)
        if resp is None:
            resp = getattr(it, "response", None)
        else:
            resp = f"A: {_short(resp, 100)}\nB: {_short(getattr(it, 'response_b', None), 100)}"
        t.add_row(*(Text(printable(c)) for c in (it.item_id, it.label, it.category or "-", _short(it.question),
                                                   resp)))
    data_console(soft_wrap=True).print(t)


@datasets_app.command("validate", epilog=exit_codes(EXIT_INPUT))
def validate_cmd(
    name: Annotated[str, typer.Argument(help="Loader name (see `verdictlab datasets list`), or your own "
                                             "FILE (.jsonl, .csv, .tsv, .parquet: one pair per row).")],
    path: Annotated[str | None, typer.Option("--path", "-p", help="Source file or folder.")] = None,
    hub: Annotated[str | None, typer.Option("--hub", help="Hugging Face hub id (needs network + the hub extra).")] = None,
    option: OptionList = None,
    map_: MapList = None,
    fmt: FormatOption = FORMAT_DEFAULT,
    legacy_json: LegacyJson = False,
) -> None:
    """Check a source: exit 3 listing every problem found (file, row, field, and the fix), else print
    its summary."""
    as_json = format_or_json(fmt, legacy_json, TableOrJson) is TableOrJson.json

    try:
        load = _load(name, path, hub, option, map_)
    except VerdictlabError as exc:
        if as_json:
            _json_error(exc)
        raise
    summary = load.summary()
    if as_json:
        typer.echo(json.dumps({"ok": True, "summary": summary}, indent=2, ensure_ascii=False, default=str))
        return
    _print_summary(summary)
    typer.echo(f"ok: {summary['n_items']} item(s)")


def register(app: typer.Typer) -> None:
    app.add_typer(datasets_app, name="datasets")
