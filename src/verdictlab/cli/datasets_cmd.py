"""`verdictlab datasets list|show|validate|fetch` -- the registered loaders, what they read, and the
public benchmarks verdictlab downloads (pinned, verified: :mod:`verdictlab.datasets.fetch`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import EXIT_CORRUPT, EXIT_DOWNLOAD, UsageError, VerdictlabError
from ._errors import EXIT_INPUT, printable, problem_list
from .options import FORMAT_DEFAULT, FormatOption, LegacyJson, TableOrJson, exit_codes, format_or_json
from .output import data_console

datasets_app = typer.Typer(help="Dataset loaders: list them, look at a source, validate a file, fetch a "
                                "public benchmark.",
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


PathOption = Annotated[str | None, typer.Option(
    "--path", "-p", help="Source file or folder, or the name of a fetched dataset (default: the fetched "
                         "dataset of the loader's name, see `verdictlab datasets fetch`).")]

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


SUMMARY_KEYS = ("source", "n_items", "labels", "n_ties", "n_dropped", "dropped_reasons", "reordered", "seed",
                "kind", "response_a_chars", "response_b_chars", "response_chars", "categories", "notes")


def _print_summary(summary: dict[str, Any], keys: tuple[str, ...] = SUMMARY_KEYS) -> None:
    from rich.table import Table
    from rich.text import Text

    con = data_console(soft_wrap=True)
    t = Table(title=Text(printable(f"dataset {summary['dataset']}")), show_header=False)
    t.add_column("key", style="bold")
    t.add_column("value")
    for key in keys:
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
    """Registered dataset loaders and what each reads, and the public benchmarks `datasets fetch` downloads,
    fetched or not.  --format json: the loaders by name."""
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
    con = data_console(soft_wrap=True)
    con.print(t)
    con.print(_fetch_table())


def _fetch_table() -> Any:
    """The pinned benchmarks: what they are, who reads them, and whether they are fetched (where: `datasets
    show NAME`)."""
    from rich.table import Table
    from rich.text import Text

    from ..datasets.fetched import is_fetched
    from ..datasets.pins import PINNED

    t = Table(title="public benchmarks (verdictlab datasets fetch NAME; where: datasets show NAME)")
    for col in ("name", "fetched", "what", "read by", "licence", "size"):
        t.add_column(col, overflow="fold")
    for name, ds in sorted(PINNED.items()):
        t.add_row(Text(name), "yes" if is_fetched(ds) else "no", Text(ds.what), Text(ds.reads), Text(ds.licence),
                  f"{ds.size / 1e6:.1f} MB")
    return t


@datasets_app.command("show", epilog=exit_codes(EXIT_INPUT))
def show_cmd(
    name: Annotated[str, typer.Argument(help="Loader name (see `verdictlab datasets list`).")],
    path: PathOption = None,
    hub: Annotated[str | None, typer.Option("--hub", help="Hugging Face hub id (needs network + the hub extra).")] = None,
    n: Annotated[int, typer.Option("--n", help="How many items to show.")] = 3,
    option: OptionList = None,
    map_: MapList = None,
    fmt: FormatOption = FORMAT_DEFAULT,
    legacy_json: LegacyJson = False,
) -> None:
    """Load a dataset (a loader name, or your own FILE) and show its summary and first items."""
    as_json = format_or_json(fmt, legacy_json, TableOrJson) is TableOrJson.json

    if _show_pinned(name, path, hub, as_json=as_json):
        return
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


def _show_pinned(name: str, path: str | None, hub: str | None, *, as_json: bool) -> bool:
    """``datasets show NAME`` for a fetchable dataset that no loader reads (judge logs, a study's release):
    where it comes from and where its files are.  False when NAME is a loader (or a path is given)."""
    from ..datasets import dataset_names
    from ..datasets.fetched import cache_dir, is_fetched
    from ..datasets.pins import PINNED

    ds = PINNED.get(name)
    if ds is None or name in dataset_names() or path is not None or hub is not None:
        return False
    fetched = is_fetched(ds)
    info = {"dataset": name, "what": ds.what, "read by": f"verdictlab {ds.reads} {name} ...",
            "upstream": ds.upstream, "pin": ds.pin, "licence": ds.licence, "files": len(ds.files),
            "bytes": ds.size, "fetched": fetched,
            "path": str(cache_dir(ds) / (ds.source or "")) if fetched else None}
    if as_json:
        typer.echo(json.dumps({"ok": True, "summary": info}, indent=2, ensure_ascii=False))
    else:
        _print_summary({**info, "source": info["path"] or f"not fetched: verdictlab datasets fetch {name}"},
                       keys=("what", "read by", "upstream", "pin", "licence", "files", "bytes", "source"))
    return True


@datasets_app.command("validate", epilog=exit_codes(EXIT_INPUT))
def validate_cmd(
    name: Annotated[str, typer.Argument(help="Loader name (see `verdictlab datasets list`), or your own "
                                             "FILE (.jsonl, .csv, .tsv, .parquet: one pair per row).")],
    path: PathOption = None,
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


#: seconds without a byte before a download is given up (verdictlab.datasets.fetch.DEFAULT_TIMEOUT)
FETCH_TIMEOUT = 30.0


class _TerminalProgress:
    """A byte-counting bar per dataset on stderr (a terminal only); a line per fetched dataset always."""

    def __init__(self) -> None:
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        from .output import message_console

        console = message_console()
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                            TimeRemainingColumn(), console=console, transient=True,
                            disable=not console.is_terminal)
        self.task: Any = None

    def __enter__(self) -> _TerminalProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def begin(self, dataset: Any, total: int, done: int) -> None:
        self.task = self.bar.add_task(f"fetching {dataset.name}", total=total, completed=done)

    def advance(self, n: int) -> None:
        if self.task is not None:
            self.bar.advance(self.task, n)

    def end(self, result: Any) -> None:
        from ._errors import say

        if self.task is not None:
            self.bar.remove_task(self.task)
            self.task = None
        got = (f"{result.downloaded} file(s) downloaded ({result.bytes_read / 1e6:.1f} MB)"
               if result.downloaded else "already fetched")
        say(f"{result.name}: {got}; {result.downloaded + result.present} file(s) at {result.directory}")


@datasets_app.command("fetch", epilog=exit_codes(EXIT_INPUT, EXIT_DOWNLOAD, EXIT_CORRUPT))
def fetch_cmd(
    names: Annotated[list[str], typer.Argument(
        metavar="NAME", show_default=False,
        help="Datasets to download (see `verdictlab datasets list`: llmbar, pandalm, prd, ...).")],
    to: Annotated[Path | None, typer.Option(
        "--to", metavar="DIR", show_default=False,
        help="Write the files to DIR/NAME/ instead of the cache (such a folder can serve as a --mirror).")] = None,
    mirror: Annotated[str | None, typer.Option(
        "--mirror", metavar="URL|DIR", show_default=False,
        help="Read the files from a copy holding NAME/<upstream path>: an http(s) base URL or a folder (a "
             "folder may also be a copy of the upstream repository) (default: $VERDICTLAB_DATASETS_MIRROR, "
             "else upstream).")] = None,
    timeout: Annotated[float, typer.Option(
        "--timeout", metavar="SECONDS", min=0.001, help="Give up on a server that sends nothing for this long.")
    ] = FETCH_TIMEOUT,
    fmt: FormatOption = FORMAT_DEFAULT,
) -> None:
    """Download public benchmarks, pinned to an upstream commit, each file checked against its SHA-256,
    into the cache ($VERDICTLAB_CACHE_DIR, else $XDG_CACHE_HOME/verdictlab, else ~/.cache/verdictlab;
    NAME/<pin>/).  An interrupted fetch resumes where it stopped; no file gets its final name before it
    is verified.  Once fetched, a dataset's name stands for its path (`verdictlab datasets show llmbar`,
    `verdictlab import llmbar llmbar-results --run-dir runs/llmbar`)."""
    from ..datasets.fetch import fetch_datasets

    as_json = fmt is TableOrJson.json
    try:
        with _TerminalProgress() as progress:
            results = fetch_datasets(names, to=to, mirror=mirror, timeout=timeout, progress=progress)
    except VerdictlabError as exc:
        if as_json:
            _json_error(exc)
        raise
    if as_json:
        typer.echo(json.dumps({"ok": True, "datasets": [
            {"name": r.name, "pin": r.pin, "directory": str(r.directory), "downloaded": r.downloaded,
             "present": r.present, "bytes_read": r.bytes_read} for r in results]}, indent=2))


def register(app: typer.Typer) -> None:
    app.add_typer(datasets_app, name="datasets")
