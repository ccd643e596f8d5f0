"""Importers: external verdict logs -> judgment rows in a run store, by format name.

``import_into("llmbar", "results/", run_dir="runs/llmbar")`` reads the source completely (any problem
raises :class:`verdictlab.core.items.ItemError` naming file, row and field, before anything is written),
then writes items, judgments and ``imported_from`` / ``imports`` meta.  Importing the same source
twice adds nothing: a trial already in the store is never duplicated; a row that differs from the
stored trial refuses the import unless ``replace=True`` (``--replace``).

Formats: ``llmbar`` (published LLMBar result files), ``fastchat`` (MT-Bench ``*_pair.jsonl``
judgments), ``pandalm``, ``judgebench``, ``inspect`` (inspect_ai logs), ``csv`` / ``jsonl`` /
``parquet`` (one judgment per row).  Every importer that reads files takes ``file_pattern`` (keys from
each file's name; :mod:`._file_keys` says which value wins).  An importer is a function
``(path, **options) -> ImportBatch``; they register lazily as ``"module:function"`` strings, each with
the options it takes (:class:`~verdictlab.importers.options.ImporterOption`: name, type, help,
default), from which ``verdictlab import`` builds its flags.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.registry import Registry, first_doc_line
from .options import (
    ANSWERS_OPTION,
    COMMON_OPTIONS,
    FILE_PATTERN_OPTION,
    TABLE_OPTIONS,
    VOTES_OPTIONS,
    ImporterOption,
)

if TYPE_CHECKING:
    from ..core.items import PairItem, PointItem
    from ._batch import ImportBatch, ImportResult, judgment_row, shown_first_won, write_batch

# The registrations and the options they declare are read by the command line when it builds its flags:
# this package imports nothing heavy until an importer runs.  The row builders and the writer (store,
# pandas) are imported when first used (PEP 562).
_LAZY = {"ImportBatch", "ImportResult", "judgment_row", "shown_first_won", "write_batch"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import _batch

    value = getattr(_batch, name)
    globals()[name] = value
    return value


def _adopt_plugin(registry: Registry[Any], name: str, importer: Any) -> None:
    """An importer of an installed plugin (entry-point group ``verdictlab.importers``), with the options it
    declares as its ``options`` attribute (a sequence of :class:`ImporterOption`; flags of ``verdictlab
    import`` like a built-in's)."""
    if not callable(importer):
        raise TypeError(f"an import format plugin must name a function, got a {type(importer).__name__}")
    register_importer(name, importer, first_doc_line(importer), options=tuple(getattr(importer, "options", ())))


Importer = Callable[..., "ImportBatch"]
IMPORTERS: Registry[Importer] = Registry("import format", plugins="verdictlab.importers", adopt=_adopt_plugin)
_OPTIONS: dict[str, tuple[ImporterOption, ...]] = {}


def register_importer(name: str, importer: str | Importer, description: str = "", *,
                      extra: str | None = None, options: Sequence[ImporterOption] = ()) -> None:
    """Register ``importer`` (the function or ``"module:function"``) under ``name``, with the options it
    takes beside :data:`~verdictlab.importers.options.COMMON_OPTIONS` (the command line builds its flags
    from them)."""
    names = [o.name for o in (*COMMON_OPTIONS, *options)]
    if len(set(names)) != len(names):
        raise ValueError(f"importer {name!r}: an option is declared twice (or shadows a common one): {names}")
    IMPORTERS.register(name, importer, description=description, extra=extra)
    _OPTIONS[name] = tuple(options)


def importer_options(name: str) -> tuple[ImporterOption, ...]:
    """Every option the importer ``name`` takes: the common ones, then its own."""
    IMPORTERS.entry(name)                  # an unknown name is an UnknownNameError
    return (*COMMON_OPTIONS, *_OPTIONS.get(name, ()))


def importer_names() -> list[str]:
    return IMPORTERS.names()


def describe_importers() -> dict[str, str]:
    return IMPORTERS.describe()


def get_importer(name: str) -> Importer:
    return IMPORTERS.get(name)


def attach_items(batch: ImportBatch, items: list[PairItem | PointItem]) -> ImportBatch:
    """Give rows without a label, category or systems those of the item with the same ``item_id`` (e.g.
    human MT-Bench labels for FastChat judgments), and store those items under the rows' dataset."""
    from ..core.items import PairItem
    by_id = {it.item_id: it for it in items}
    datasets_by_item: dict[str, set[str]] = {}
    matched = 0
    for r in batch.judgments:
        it = by_id.get(r["item_id"])
        if it is None:
            continue
        matched += 1
        datasets_by_item.setdefault(it.item_id, set()).add(r["dataset"])
        if r.get("label") is None and isinstance(it, PairItem):
            r["label"] = it.label
        if r.get("category") is None:
            r["category"] = it.category
        if isinstance(it, PairItem):
            for name in ("system_a", "system_b"):
                if r.get(name) is None:
                    r[name] = getattr(it, name)
    new_items = list(batch.items)
    for item_id, names in datasets_by_item.items():
        for name in sorted(names):
            new_items.append(by_id[item_id].model_copy(update={"dataset": name}))
    batch.items = new_items
    batch.notes.append(f"items attached: {len(datasets_by_item)} item(s) matched {matched} of "
                       f"{len(batch.judgments)} judgment(s)")
    return batch


def _builtin_parquet() -> bool:
    """The ``parquet`` format is still verdictlab's table importer (not one a user registered over it)."""
    target = IMPORTERS.entry("parquet").target
    if isinstance(target, str):
        return target == _PARQUET
    from .tabular import import_parquet

    return target is import_parquet


def _keywords(importer: Importer) -> set[str]:
    """The keyword arguments ``importer`` names (an importer that reads ``file_pattern`` itself, the
    table importers, names it; for the others the import layer applies it, :mod:`._file_keys`)."""
    import inspect

    try:
        return set(inspect.signature(importer).parameters)
    except (TypeError, ValueError):
        return set()


def import_into(format: str, path: str | Path, *, run_dir: str | Path,
                items: list[PairItem | PointItem] | None = None, replace: bool = False,
                **options: Any) -> ImportResult:
    """Read ``path`` with the importer for ``format`` and write it into ``run_dir`` (rows that differ
    from stored trials refuse the import unless ``replace``; see :func:`write_batch`).  A Parquet
    table into a store without judgments takes the bulk path (:mod:`._bulk`) when it can: the same
    rows, column by column.  ``path`` (and ``items_path``) may name a fetched dataset
    (:func:`verdictlab.datasets.fetched.resolve_source`)."""
    from ..datasets.fetched import resolve_source
    from ._batch import check_options, write_batch

    path = resolve_source(path) or path              # a fetched dataset's name stands for its files
    if format == "votes":      # votes relabel a run's items: no judgment rows (importers.votes)
        from .votes import attach_votes

        return attach_votes(path, run_dir=run_dir, **options)
    importer = get_importer(format)
    if options.get("items_path") is not None:
        options["items_path"] = resolve_source(options["items_path"])
    check_options(options, path=str(path))
    if format == "parquet" and _builtin_parquet():
        from ._bulk import bulk_import_parquet

        done = bulk_import_parquet(path, run_dir=run_dir, items=items, replace=replace, **options)
        if done is not None:
            return done
    pattern = None
    if options.get("file_pattern") is not None and "file_pattern" not in _keywords(importer):
        # the layer gives each file's rows its name's keys
        from ._file_keys import judgment_pattern, stand_ins

        pattern = judgment_pattern(options.pop("file_pattern"), options)
        options.update(stand_ins(pattern, _keywords(importer)))
    batch = importer(path, **options)
    if pattern is not None:
        from ._file_keys import apply_file_keys

        batch = apply_file_keys(batch, pattern)
    if items:
        attach_items(batch, items)
    return write_batch(batch, run_dir, replace=replace)


register_importer("llmbar", "verdictlab.importers.llmbar:import_llmbar",
                  "published LLMBar runs: *.result.json (or evaluators/<judge>/<strategy>/result.json), "
                  "both presentation orders, last element of 'results'",
                  options=(ImporterOption("split", help="the split of a file whose name does not say it."),
                           FILE_PATTERN_OPTION))
register_importer("fastchat", "verdictlab.importers.fastchat:import_fastchat",
                  "FastChat MT-Bench model_judgment/*_pair.jsonl (g1/g2 games = both orders)",
                  options=(FILE_PATTERN_OPTION,))
register_importer("pandalm", "verdictlab.importers.pandalm:import_pandalm",
                  "PandaLM verdict files (idx, <judge>_result 1|2|Tie|garbage), joined to testset-v1 "
                  "(--items-path); one order; garbage -> tie (PandaLM's rule, recorded) or --garbage unparsed",
                  options=(ImporterOption("garbage", ("tie", "unparsed"), default="tie",
                                          help="an unreadable output is a tie (PandaLM's rule, recorded as a "
                                               "fallback) or unparsed."),
                           ImporterOption("items_path", metavar="PATH",
                                          help="the test set (testset-v1.json) to join."),
                           FILE_PATTERN_OPTION))
register_importer("judgebench", "verdictlab.importers.judgebench:import_judgebench",
                  "JudgeBench output *.jsonl (pair + two games; game 2's decision mapped back from the "
                  "swapped presentation)", options=(FILE_PATTERN_OPTION,))
register_importer("inspect", "verdictlab.importers.inspect_log:import_inspect",
                  "inspect_ai eval logs (.eval / .json) scored by a model-graded scorer: every epoch's grade "
                  "is a repetition (needs the 'inspect' extra)",
                  options=(ImporterOption("scorer", help="the scorer whose grades to import (default: every "
                                                         "scorer, one protocol each)."),
                           ImporterOption("label_scorer", metavar="SCORER",
                                          help="the scorer whose grade is the gold label (C/1/true PASS, I/0/false "
                                               "FAIL), not a judgment; the other scorers' grades are read the same "
                                               "way (e.g. a match scorer checking a model-graded one)."),
                           ImporterOption("transcripts", type=bool,
                                          help="the graded object is the agent's whole run: items carry the "
                                               "sample's transcript (messages, tool calls, tool results)."),
                           FILE_PATTERN_OPTION))
register_importer("fastchat-reviews", "verdictlab.importers.fastchat_reviews:import_fastchat_reviews",
                  "FastChat-style review folders (review_id, question_id, answer1_id, answer2_id, text, score as a "
                  "pair or three-class), one file per system pair; systems and order from the answer ids "
                  "(--answers); [-1, -1] unread", options=(ANSWERS_OPTION, FILE_PATTERN_OPTION))
register_importer("prd", "verdictlab.importers.prd:import_prd",
                  "the PRD peer-review study's Vicuna-80 release (data/vicuna80/): five reviewers' reviews in both "
                  "orders, the crowd votes as the items' votes, gold = sign of their mean", options=(FILE_PATTERN_OPTION,))
register_importer("alpaca-eval", "verdictlab.importers.alpaca_eval:import_alpaca_eval",
                  "one model's public AlpacaEval annotations.json (instruction, output_1/2, generator_1/2, annotator, "
                  "preference 1..2, soft or hard) -> judgments with systems and P(A)", options=(FILE_PATTERN_OPTION,))
register_importer("votes", "verdictlab.importers.votes:attach_votes",
                  "human annotators' votes on a run's pairs (item_id, annotator, vote; or one column per annotator, "
                  "--annotators) -> the items' votes and a gold label by --gold-rule (majority, majority-or-none, "
                  "mean-sign, unanimous; ', ties dropped')", options=VOTES_OPTIONS)
register_importer("csv", "verdictlab.importers.tabular:import_csv",
                  "CSV, one judgment per row (item_id, judge, protocol, dataset, order, rep, "
                  "temperature, verdict, label, ...)", options=TABLE_OPTIONS)
register_importer("jsonl", "verdictlab.importers.tabular:import_jsonl",
                  "JSON Lines, one judgment per line (same columns as csv)", options=TABLE_OPTIONS)
_PARQUET = "verdictlab.importers.tabular:import_parquet"
register_importer("parquet", _PARQUET,
                  "Parquet, one judgment per row (same columns as csv)", options=TABLE_OPTIONS)

__all__ = [
    "IMPORTERS",
    "ImportBatch",
    "ImporterOption",
    "ImportResult",
    "attach_items",
    "describe_importers",
    "get_importer",
    "import_into",
    "importer_names",
    "importer_options",
    "judgment_row",
    "register_importer",
    "shown_first_won",
    "write_batch",
]
