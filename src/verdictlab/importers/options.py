"""The options an importer takes, declared where it is registered: the command line builds its flags
from them (``verdictlab import FORMAT PATH --flag VALUE``), and ``import_into(FORMAT, PATH, name=value)``
takes the same names.

    register_importer("toy-tsv", "mypkg.toy:import_toy_tsv", "a TSV of verdicts",
                      options=(ImporterOption("sep", help="the column separator", default="\\t"),))

An option is a keyword argument of the importer function (``name``); its flag is ``--name`` with ``_``
written ``-`` unless ``flag`` says otherwise.  ``type`` is ``str``, ``int``, ``float``, ``bool`` (a
flag without a value) or a tuple of the allowed words.  ``repeatable`` flags may be given several times
and arrive as a list; ``parse`` turns what was typed (a string, or the list) into the value the importer
takes, raising :class:`~verdictlab.errors.UsageError` for text it cannot read.  ``help`` is one
sentence (the command line puts the formats that take the option before it).  ``default`` is the
importer's own default, shown in ``--help``; a flag that is not given is not passed.  A flag given for a
format that does not declare it is a usage error, never silently ignored.

:data:`COMMON_OPTIONS` are taken by every importer (the cell's judge, protocol, dataset, temperature
and repetition when the source does not say); :data:`TABLE_OPTIONS` by the csv, jsonl and parquet
tables; :data:`FILE_PATTERN_OPTION` by every importer that reads files (keys from each file's name: the
table importers read it themselves, for the others the import layer applies it, :mod:`._file_keys`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError

OptionType = type | tuple[str, ...]


@dataclass(frozen=True)
class ImporterOption:
    """One option of an importer (module docstring)."""

    name: str
    type: OptionType = str
    help: str = ""
    default: Any = None
    flag: str | None = None
    metavar: str | None = None
    repeatable: bool = False
    parse: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"an importer option's name is a Python keyword name, got {self.name!r}")
        if not (isinstance(self.type, tuple) and self.type and all(isinstance(w, str) for w in self.type)) \
                and self.type not in (str, int, float, bool):
            raise ValueError(f"option {self.name!r}: type must be str, int, float, bool or a tuple of words, "
                             f"got {self.type!r}")

    @property
    def flag_name(self) -> str:
        """The command-line flag: ``flag``, else ``--`` and the name with ``-`` for ``_``."""
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def choices(self) -> tuple[str, ...]:
        return self.type if isinstance(self.type, tuple) else ()

    def value(self, given: Any) -> Any:
        """What the importer receives for the text ``given`` on the command line."""
        return self.parse(given) if self.parse is not None else given


def parse_field_map(pairs: Sequence[str]) -> dict[str, str]:
    """``["verdict=winner"]`` -> ``{"verdict": "winner"}`` (``--map COLUMN=SOURCE_COLUMN``)."""
    out: dict[str, str] = {}
    for pair in pairs:
        col, sep, src = pair.partition("=")
        if not sep or not col.strip() or not src.strip():
            raise UsageError(f"expected COLUMN=SOURCE_COLUMN, got {pair!r}")
        out[col.strip()] = src.strip()
    return out


def parse_value_map(specs: Sequence[str]) -> dict[str, dict[str, str]]:
    """``["verdict:0=tie,1=A,2=B"]`` -> ``{"verdict": {"0": "tie", "1": "A", "2": "B"}}`` (an empty
    value, ``3=``, maps to empty: unparsed / unlabelled)."""
    out: dict[str, dict[str, str]] = {}
    for spec in specs:
        column, sep, pairs = spec.partition(":")
        if not sep or not column.strip() or not pairs.strip():
            raise UsageError(f"expected COLUMN:RAW=VALUE,RAW=VALUE (e.g. verdict:0=tie,1=A,2=B), got {spec!r}")
        for pair in pairs.split(","):
            raw, eq, word = pair.partition("=")
            if not eq or not raw.strip():
                raise UsageError(f"expected RAW=VALUE in {spec!r}, got {pair!r}")
            out.setdefault(column.strip(), {})[raw.strip()] = word.strip()
    return out


COMMON_OPTIONS: tuple[ImporterOption, ...] = (
    ImporterOption("judge", help="Judge id (overrides what the source/path says)."),
    ImporterOption("protocol", help="Protocol id (overrides the source)."),
    ImporterOption("dataset", help="Dataset name (overrides the default)."),
    ImporterOption("temperature", float, help="Sampling temperature of the imported judgments, in [0, 2] "
                                              "(default 0 where the source does not say; the import notes it)."),
    ImporterOption("rep", int, help="Repetition index for the whole file, >= 0 (tables: when there is no rep "
                                    "column; default 0, noted)."),
)

ANSWERS_OPTION = ImporterOption(
    "answers", metavar="PATH",
    help="answer records (answer_id, model_id, text) by id -- a file or a folder of answer_*.jsonl / "
         "*generations*.jsonl; --map answer_first_id=COLUMN,answer_second_id=COLUMN (as shown) or answer_a_id / "
         "answer_b_id (canonical) join a row's two responses to their systems and texts.")

FIELD_MAP_OPTION = ImporterOption(
    "field_map", flag="--map", metavar="COLUMN=SOURCE", repeatable=True, parse=parse_field_map,
    help="COLUMN=SOURCE_COLUMN for any column, e.g. --map verdict=winner; repeatable.")

VALUE_MAP_OPTION = ImporterOption(
    "value_map", flag="--map-values", metavar="COLUMN:RAW=VALUE,...", repeatable=True, parse=parse_value_map,
    help="what the values of verdict, label or order mean, COLUMN:RAW=VALUE,... e.g. --map-values "
         "verdict:0=tie,1=A,2=B; repeatable.")

FILE_PATTERN_OPTION = ImporterOption(
    "file_pattern", metavar="REGEX",
    help="a regular expression with named groups searched in the name of each file read (PATH may be a "
         "folder), giving keys for its rows, e.g. 'answer_(?P<system_first>.+)-vs-answer_"
         "(?P<system_second>.+)-(?P<judge>[^-]+)-reviewer'; groups: judge, dataset, protocol, order, "
         "item_id, system_a, system_b, system_first, system_second, category, step, rep, temperature "
         "(votes: item_id, dataset, annotator, system_a, system_b); the name fills a key a row leaves empty (a "
         "different value is an error), and judge, protocol, dataset, temperature or rep act as their flag for that "
         "file; a file whose name does not match is an error.")

TABLE_OPTIONS: tuple[ImporterOption, ...] = (
    ImporterOption("order", ("AB", "BA"), help="presentation order of the whole file (when there is no order "
                                               "column)."),
    ImporterOption("verdicts", ("canonical", "positional"), default="canonical",
                   help="canonical (A = response_a) or positional (A = the response shown first; converted "
                        "with the order)."),
    ImporterOption("id_from", ("hash", "row", "pair"),
                   help="without an item_id column: derive ids from hash (question + both responses, "
                        "the same in either order) or row (the record number); pair: the item_id column is the "
                        "question's id, the item id adds the two systems in sorted order."),
    FIELD_MAP_OPTION,
    VALUE_MAP_OPTION,
    FILE_PATTERN_OPTION,
    ANSWERS_OPTION,
)


def parse_column_list(text: str) -> list[str]:
    """``"h1,h2, h3"`` -> ``["h1", "h2", "h3"]`` (``--annotators``)."""
    cols = [c.strip() for c in str(text).split(",") if c.strip()]
    if not cols:
        raise UsageError(f"expected COL,COL,..., got {text!r}")
    return cols


VOTES_OPTIONS: tuple[ImporterOption, ...] = (
    ImporterOption("gold_rule", metavar="RULE",
                   help="the rule that makes each pair's gold label from its votes: majority (default), "
                        "majority-or-none, mean-sign or unanimous, optionally + ', ties dropped'."),
    ImporterOption("annotators", metavar="COL,COL,...", parse=parse_column_list,
                   help="one column per annotator (otherwise one vote per row: item_id, annotator, vote)."),
    FIELD_MAP_OPTION,
    VALUE_MAP_OPTION,
    FILE_PATTERN_OPTION,
)


__all__ = ["ANSWERS_OPTION", "COMMON_OPTIONS", "FIELD_MAP_OPTION", "FILE_PATTERN_OPTION", "TABLE_OPTIONS", "VALUE_MAP_OPTION", "VOTES_OPTIONS",
           "ImporterOption", "parse_column_list", "parse_field_map", "parse_value_map"]
