"""`verdictlab import FORMAT PATH --run-dir DIR` -- external verdict logs into a run store."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from ..importers.options import ImporterOption
from ._errors import EXIT_INPUT, EXIT_INTERRUPTED, EXIT_STORE, EXIT_TERMINATED
from .options import (
    FORMAT_DEFAULT,
    FormatOption,
    LegacyJson,
    TableOrJson,
    exit_codes,
    format_or_json,
    legacy_spelling,
)

#: the command's own flags; an importer option declared with one of these flags takes its value from it
#: (pandalm's ``items_path`` is the ``--items-path`` test set when no ``--items`` loader is given)
SHARED_FLAGS = {"--items-path": "items_path"}
_PARAM_PREFIX = "importer_option_"


def _flags() -> dict[str, tuple[ImporterOption, list[str]]]:
    """Every importer option by its flag, with the formats that declare it (the first declaration's help
    and type stand for all; two declarations of one flag must agree on type and repetition)."""
    from ..importers import importer_names, importer_options

    flags: dict[str, tuple[ImporterOption, list[str]]] = {}
    for name in importer_names():
        for opt in importer_options(name):
            first = flags.setdefault(opt.flag_name, (opt, []))
            if (first[0].name, first[0].type, first[0].repeatable) != (opt.name, opt.type, opt.repeatable):
                raise ValueError(f"importers {first[1]} and {name!r} declare {opt.flag_name} differently")
            first[1].append(name)
    return flags


def _annotation(opt: ImporterOption, formats: list[str], every: bool) -> tuple[Any, Any]:
    """The typer annotation and default of the parameter for one importer option."""
    where = "" if every else ", ".join(formats) + ": "
    default = f" Default: {opt.default}." if opt.default is not None and not isinstance(opt.default, bool) else ""
    info = typer.Option(opt.flag_name, help=f"{where}{opt.help}{default}", metavar=opt.metavar,
                        show_default=False)
    if opt.repeatable:
        return Annotated[list[str] | None, info], None
    if opt.type is bool:
        return Annotated[bool, info], False
    if opt.choices:
        words = StrEnum(f"{opt.name.title().replace('_', '')}Choice", {w: w for w in opt.choices})  # type: ignore[misc]
        return Annotated[words | None, info], None
    return Annotated[opt.type | None, info], None     # type: ignore[operator]


def _signature(command: Callable[..., None]) -> inspect.Signature:
    """``command``'s signature with one keyword parameter per importer option registered now
    (:mod:`verdictlab.importers.options`), so typer makes a flag of each; the command receives them in
    its ``**given``."""
    flags = _flags()
    n_formats = len({f for _, formats in flags.values() for f in formats})
    base = inspect.signature(command, eval_str=True)
    params = [p for p in base.parameters.values() if p.kind is not p.VAR_KEYWORD]
    names = sorted({f for _, formats in flags.values() for f in formats})
    params[0] = params[0].replace(annotation=Annotated[str, typer.Argument(
        metavar="FORMAT", show_default=False, help=f"Source format: {', '.join(names)}.")])
    for flag, (opt, formats) in flags.items():
        if flag in SHARED_FLAGS:
            continue
        annotation, default = _annotation(opt, formats, every=len(formats) == n_formats)
        params.append(inspect.Parameter(_PARAM_PREFIX + opt.name, inspect.Parameter.KEYWORD_ONLY,
                                        annotation=annotation, default=default))
    return base.replace(parameters=params)


class ImportCommand:
    """The ``import`` command as typer sees it: the function below with the flags of every importer
    registered when the command line is built (an importer registered after ``verdictlab.cli.main`` was
    imported -- a plugin, a test's toy -- has its flags too)."""

    def __init__(self, command: Callable[..., None]) -> None:
        self._command = command
        self.__name__ = command.__name__
        self.__qualname__ = command.__qualname__
        self.__module__ = command.__module__
        self.__doc__ = command.__doc__

    @property
    def __signature__(self) -> inspect.Signature:
        return _signature(self._command)

    @property
    def __annotations__(self) -> dict[str, Any]:  # type: ignore[override]  # read by typing.get_type_hints
        return {n: p.annotation for n, p in self.__signature__.parameters.items()}

    def __call__(self, **kwargs: Any) -> None:
        self._command(**kwargs)


def importer_arguments(format: str, given: dict[str, Any], shared: dict[str, Any]) -> dict[str, Any]:
    """The importer's keyword arguments from the flags that were given (``given``: parameter name ->
    value, ``shared``: the command's own flags of :data:`SHARED_FLAGS`); a flag the format does not take
    is a usage error (never silently ignored), text an option cannot read is a bad value of its flag."""
    from ..errors import UsageError
    from ..importers import importer_options

    mine = {o.name: o for o in importer_options(format)}
    flags = _flags()
    out: dict[str, Any] = {}
    for key, value in given.items():
        if value is None or value is False or value == []:
            continue
        name = key.removeprefix(_PARAM_PREFIX)
        opt = mine.get(name)
        if opt is None:
            flag, formats = next((f, fs) for f, (o, fs) in flags.items() if o.name == name)
            which = formats[0] if len(formats) == 1 else f"{', '.join(formats[:-1])} and {formats[-1]}"
            raise typer.BadParameter(f"applies to the {which} format{'s' if len(formats) > 1 else ''}",
                                     param_hint=flag)
        try:
            out[name] = opt.value(value.value if isinstance(value, StrEnum) else value)
        except UsageError as exc:
            raise typer.BadParameter(str(exc), param_hint=opt.flag_name) from None
    for name in SHARED_FLAGS.values():
        if shared.get(name) is not None and name in mine:
            out[name] = shared[name]
    return out


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
        help="Source format: a registered importer (its name; the list is filled in when the command is "
             "built).")],
    path: Annotated[Path, typer.Argument(metavar="PATH", show_default=False, help="Source file or folder.")],
    run_dir: Annotated[Path | None, typer.Option(
        "--run-dir", metavar="DIR", show_default=False,
        help="Run directory to write into (created if needed; required).")] = None,
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
    **given: Any,
) -> None:
    """Import judgments.  Every row is checked before anything is written; a malformed source exits 3
    with every problem listed (file, row and field named).  Re-importing: identical rows are a no-op that
    says so; rows that differ from the stored trials refuse the import (count + one example) unless
    --replace.  The summary goes to stderr; --format json prints the result on stdout.  The other flags
    are the importers' own options (each says which formats take it)."""
    from ..errors import UsageError, VerdictlabError
    from ..importers import describe_importers, import_into
    from ._errors import problem_list, say

    form = format_or_json(fmt, legacy_json, TableOrJson)
    if legacy_o is not None:
        run_dir = legacy_spelling(f"import -o {legacy_o}", legacy_o, "import --run-dir", run_dir)
    if run_dir is None:
        raise typer.BadParameter("the run directory to write into is required", param_hint="'--run-dir'")
    known = describe_importers()
    if format not in known:
        raise UsageError(f"unknown import format {format!r}; known: {', '.join(known)}")
    opts = importer_arguments(format, given, {"items_path": None if items else items_path})
    try:
        attach = None
        if items:
            from ..datasets import load_dataset

            attach = load_dataset(items, path=items_path).items
        result = import_into(format, path, run_dir=run_dir, items=attach, replace=replace, **opts)
    except VerdictlabError as exc:     # --format json: the error on stdout too, then the one error path
        if form is TableOrJson.json:
            typer.echo(json.dumps({"ok": False, "error": str(exc), "problems": problem_list(exc)},
                                  ensure_ascii=False))
        raise
    if form is TableOrJson.json:
        typer.echo(_result_json(result))
        return
    for line in _summary(result, run_dir):
        say(line)


def register(app: typer.Typer) -> None:
    app.command("import", epilog=exit_codes(EXIT_INPUT, EXIT_STORE, EXIT_INTERRUPTED, EXIT_TERMINATED))(
        ImportCommand(import_cmd))
