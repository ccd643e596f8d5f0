"""The command-line grammar, defined once (``docs/cli.md``; ``tests/test_cli_grammar.py`` walks every
command and holds it to these definitions).

* An existing run is the positional ``RUN`` (:data:`RunArg`); a command that creates a run takes
  ``--run-dir`` (:data:`RunDirOption`).
* Every output file is ``-o/--out PATH`` (:data:`OutOption`) and its form ``--format`` with the choices
  listed in help; :func:`output_format` refuses a file name whose extension says another form, and picks
  the form from the extension when ``--format`` is not given.  Without ``--out``, data goes to stdout.
* ``--unparsed``, ``--bootstrap``, ``--seed`` and ``--confidence`` are one option each, with one type,
  one help text and one default (:data:`Unparsed` ... with :data:`UNPARSED_DEFAULT` ...), wherever they
  appear.
* Data goes to stdout, messages (progress, "written to", warnings, deprecation notices) to stderr.
* Every command's help ends with its exit codes (:func:`exit_codes`, the meanings of ``docs/errors.md``).

The old spellings accepted for one release (hidden options, hidden positionals) are declared beside the
command that had them and announce themselves with :func:`deprecated`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from typer.core import TyperCommand

from ..core.policy import FigurePolicy
from ..core.vocab import UnparsedPolicy
from ..errors import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, exit_meanings
from ._errors import say

# -- runs -----------------------------------------------------------------------------------------
RUN_HELP = "Run directory holding run.sqlite."
RunArg = Annotated[Path, typer.Argument(metavar="RUN", help=RUN_HELP, show_default=False)]
RunDirOption = Annotated[Path | None, typer.Option(
    "--run-dir", metavar="DIR", help="Run directory to create or resume (default: runs/<config name>).",
    show_default=False)]

#: ``--set KEY=VALUE`` of the commands that read a run config (``verdictlab.config.apply_overrides``)
SetOption = Annotated[list[str] | None, typer.Option(
    "--set", metavar="KEY=VALUE",
    help="Change a setting of CONFIG for this command, KEY a dotted path (numbers index lists), VALUE read as "
         "YAML, e.g. --set judges.0.id=openai-compatible:m@http://127.0.0.1:9000/v1 --set repetitions=5; "
         "repeatable.")]

# -- output files -----------------------------------------------------------------------------------
OutOption = Annotated[Path | None, typer.Option(
    "--out", "-o", metavar="PATH", show_default=False,
    help="Write to this file (its extension must agree with --format; without --format it chooses the "
         "form); - writes to stdout.")]
#: ``-o -``: the data goes to stdout
STDOUT = Path("-")


def is_stdout(out: Path | None) -> bool:
    """``-o -``: write the data to stdout (a command whose output is a file by default, or a directory,
    says so or refuses it)."""
    return out is not None and str(out) == "-"


class TableOrJson(StrEnum):
    """The form of a command's printed result: a terminal table or JSON."""

    table = "table"
    json = "json"


FormatOption = Annotated[TableOrJson, typer.Option(
    "--format", help="Print a terminal table or JSON.", case_sensitive=False)]
FORMAT_DEFAULT = TableOrJson.table

#: file extensions and the --format they say
EXTENSIONS: Mapping[str, str] = {
    ".html": "html", ".htm": "html", ".json": "json", ".md": "markdown", ".markdown": "markdown",
    ".txt": "table", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet",
    ".pq": "parquet",
}

F = TypeVar("F", bound=StrEnum)


def output_format(out: Path | None, fmt: F | None, choices: type[F], default: F) -> F:
    """The form to write: ``fmt`` when given, else the one ``out``'s extension names, else ``default``.
    A usage error (exit 2) when the extension names another form than ``--format``, or a form this
    command does not write: a ``.csv`` file never receives JSON Lines."""
    said = EXTENSIONS.get(out.suffix.lower()) if out is not None else None
    if said is None:
        return fmt if fmt is not None else default
    names = [c.value for c in choices]
    if fmt is None:
        if said not in names:
            raise typer.BadParameter(f"{out} is named like a {said} file, which this command does not write; "
                                     f"choose --format {'|'.join(names)} and a matching extension",
                                     param_hint="'--out'")
        return choices(said)
    if said != fmt.value:
        raise typer.BadParameter(f"{out} is named like a {said} file but --format is {fmt.value}; rename the "
                                 f"file or change --format", param_hint="'--out'")
    return fmt


# -- reading a user's file: --map, --map-values, --id-from (the import's and the label files') ------------
class IdFrom(StrEnum):
    """Where a file without an item_id column takes its ids (``datasets.columns.ID_SOURCES``)."""

    hash = "hash"
    row = "row"


def _parsed(parse: Any, values: list[str], flag: str) -> Any:
    """``parse(values)`` (one of :mod:`verdictlab.importers.options`' parsers, the import's own reading),
    text it cannot read a bad value of ``flag``."""
    from ..errors import UsageError

    try:
        return parse(values)
    except UsageError as exc:
        raise typer.BadParameter(str(exc), param_hint=flag) from None


LabelMapOption = Annotated[list[str] | None, typer.Option(
    "--map", metavar="FIELD=COLUMN",
    help="--human: the file's column of item_id, label or dataset, e.g. --map item_id=question_id --map "
         "label=score; repeatable (as import's --map).")]
LabelMapValuesOption = Annotated[list[str] | None, typer.Option(
    "--map-values", metavar="label:RAW=VALUE,...",
    help="--human: what the file's labels mean, e.g. --map-values label:1=A,2=B,0=tie (as import's).")]
LabelIdFromOption = Annotated[IdFrom | None, typer.Option(
    "--id-from", show_default=False,
    help="--human without an id column (a bare list of labels): number the records (row: 1, 2, ...) or hash "
         "the question and both responses (hash), as import does.")]


def label_reading(human: Path | None, map_: list[str] | None, map_values: list[str] | None,
                  id_from: IdFrom | None) -> dict[str, Any]:
    """The keyword arguments that read a ``--human`` file as it is (``field_map``, ``value_map``,
    ``id_from``); a usage error when they are given without ``--human``."""
    given = [f for f, v in (("--map", map_), ("--map-values", map_values), ("--id-from", id_from)) if v]
    if given and human is None:
        raise typer.BadParameter("reads the --human file: give it with --human FILE", param_hint=f"'{given[0]}'")
    from ..importers.options import parse_field_map, parse_value_map

    return {"field_map": _parsed(parse_field_map, map_ or [], "--map"),
            "value_map": _parsed(parse_value_map, map_values or [], "--map-values"),
            "id_from": id_from.value if id_from is not None else "column"}


# -- shared figures options ---------------------------------------------------------------------------
def _open_unit(value: float) -> float:
    if not 0 < value < 1:     # also NaN
        raise typer.BadParameter(f"must be in (0, 1), got {value}")
    return value


Unparsed = Annotated[UnparsedPolicy, typer.Option(
    "--unparsed", case_sensitive=False,
    help="Unparsed verdicts: 'exclude' (counted, left out of the figures) or 'wrong' (counted as wrong).")]
UNPARSED_DEFAULT = UnparsedPolicy.EXCLUDE

Bootstrap = Annotated[int, typer.Option("--bootstrap", min=0, metavar="N",
                                        help="Bootstrap resamples behind each interval (0: none).")]
BOOTSTRAP_DEFAULT = 1000

def seed_option(what: str = "every random draw (bootstrap, folds, generated data)") -> Any:
    """``--seed N`` (an integer >= 0, default :data:`SEED_DEFAULT`); its help says which draws ``what`` it
    seeds in this command."""
    return typer.Option("--seed", metavar="N", min=0, help=f"Seed of {what}; >= 0.")


Seed = Annotated[int, seed_option()]
SEED_DEFAULT = 0

Confidence = Annotated[float, typer.Option("--confidence", callback=_open_unit, metavar="LEVEL",
                                           help="Confidence level of the intervals, in (0, 1).")]
CONFIDENCE_DEFAULT = 0.95


def figure_policy(*, unparsed: UnparsedPolicy = UNPARSED_DEFAULT, confidence: float = CONFIDENCE_DEFAULT,
                  bootstrap: int = BOOTSTRAP_DEFAULT, seed: int = SEED_DEFAULT) -> FigurePolicy:
    """The one :class:`~verdictlab.core.policy.FigurePolicy` of a command, from its shared options (a value the
    policy refuses is a usage error naming it)."""
    try:
        return FigurePolicy(unparsed=unparsed, confidence=confidence, n_bootstrap=bootstrap, seed=seed)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None

# -- old spellings, accepted for one release ---------------------------------------------------------
class Command(TyperCommand):
    """A command whose hidden parameters (old spellings) stay out of its usage line as well as its help."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if not getattr(param, "hidden", False):
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


LegacyJson = Annotated[bool, typer.Option("--json", hidden=True, help="Deprecated: --format json.")]


def deprecated(old: str, new: str) -> None:
    """One line on stderr: the old spelling still works for this release; say the new one."""
    say(f"deprecated: {old} -- use {new} (the old spelling goes in the next release)")


def given(name: str) -> bool:
    """Whether the running command's parameter ``name`` (its Python name) was given on the command line
    or by its environment variable, rather than left at its default."""
    from typer._click.core import ParameterSource
    from typer._click.globals import get_current_context

    ctx = get_current_context(silent=True)
    source = ctx.get_parameter_source(name) if ctx is not None else None
    return source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def legacy_spelling(old: str, old_value: Any, new: str, new_value: Any, *, new_given: bool | None = None) -> Any:
    """An old spelling given with the value it says (``--json`` says ``json``, ``-f csv`` says ``csv``):
    a usage error (exit 2) when the new spelling was given too (``new_given``; default: ``new_value`` is
    not None) and says something else -- never one of the two silently; else the deprecation line, and
    the value."""
    if (new_value is not None if new_given is None else new_given) and _said(new_value) != _said(old_value):
        raise typer.BadParameter(f"{old} says {_said(old_value)} but {new} says {_said(new_value)}; give only "
                                 f"{new} (the old spelling goes in the next release)", param_hint=f"'{new.split()[-1]}'")
    deprecated(old, f"{new} {_said(old_value)}")
    return old_value


def _said(value: Any) -> str:
    return str(value.value if isinstance(value, StrEnum) else value)


def format_or_json(fmt: F, legacy_json: bool, choices: type[F]) -> F:
    """``--format``, or ``choices.json`` when the deprecated ``--json`` flag was given (a usage error
    with a ``--format`` that says another form)."""
    if not legacy_json:
        return fmt
    return choices(legacy_spelling("--json", "json", "--format", fmt, new_given=given("fmt")))


# -- help -----------------------------------------------------------------------------------------
#: every exit code and its few words, from the error tree (:func:`verdictlab.errors.exit_meanings`)
EXIT_MEANINGS: Mapping[int, str] = exit_meanings()
BASE_CODES = (EXIT_OK, EXIT_INTERNAL, EXIT_USAGE)


def exit_codes(*codes: int) -> str:
    """The help epilog listing a command's exit codes (0, 1 and 2 for every command, then ``codes``)."""
    listed = sorted({*BASE_CODES, *codes})
    return "Exit codes: " + ", ".join(f"{c} {EXIT_MEANINGS[c]}" for c in listed) + " (docs/errors.md)."
