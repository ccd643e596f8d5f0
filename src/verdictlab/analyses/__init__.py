"""The analyses room: post-hoc analyses of a run's stored judgments, each registered with a title.

An analysis reads judgments (never calls a judge) and takes the same figure policy as the cell figures
-- the unparsed policy, the interval confidence, the bootstrap count and the seed, one
:class:`~verdictlab.core.policy.FigurePolicy` -- through one :class:`AnalysisInput`.  The report (:func:`verdictlab.report.build_report`) runs every
registered analysis and shows its table in the JSON (``run.analyses[name]``), the HTML ("Further
analyses", under its title and description) and the terminal (listed by name).

An analysis tabulates figures it takes from :mod:`verdictlab.stats` (a mean, a rate, an interval, a
vote or a verdict rule is a statistic: it goes to ``stats`` with its known-value test).  Every row
about a cell carries the full cell key (:data:`verdictlab.core.vocab.CELL_KEY`); a table whose rows compare
cells across one key column (free against constrained decoding; a jury of several judges) says so
with ``spans=``, and leaves that column out or empty.

Adding an analysis touches one module and its test::

    # src/verdictlab/analyses/my_thing.py
    from verdictlab.analyses import AnalysisInput, register

    @register("my_thing", title="My thing", description="One line saying how to read the table.")
    def my_thing(inp: AnalysisInput) -> pd.DataFrame | None:
        return my_stat_table(inp.pairs, policy=inp.policy)   # one FigurePolicy: unparsed, confidence, ...

Every public module of this package (a name without a leading underscore) is imported by
:func:`registered` (no list to edit), and then every module an installed package names in the
``verdictlab.analyses`` entry-point group (``NAME = "package.module"``: importing it registers its
tables with :func:`register`).  The entries live in :data:`ANALYSES` and :data:`CELL_COLUMNS`,
instances of the one registry mechanism (:class:`verdictlab.core.registry.Registry`).  An analysis returns a DataFrame (empty or ``None`` = the run
does not support it: left out of the report).  A second kind, :func:`register_cell_columns`, adds
columns to the report's cells (one row per cell key, merged into each cell dict).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.registry import Registry
from ..core.vocab import CELL_KEY

__all__ = ["ANALYSES", "CELL_COLUMNS", "Analysis", "AnalysisInput", "CellColumn", "CellColumns", "CellFormat", "register", "register_cell_columns", "registered",
           "registered_cell_columns", "run_analyses", "extra_tables"]

DEBATE_PROTOCOL = "debate"
#: the policy of :func:`extra_tables` unless told otherwise: no bootstrap intervals (quick tables)
NO_BOOTSTRAP = FigurePolicy(n_bootstrap=0)


@dataclass(frozen=True)
class AnalysisInput:
    """What every analysis gets: the run's judgments and items, and the figure policy (one
    :class:`~verdictlab.core.policy.FigurePolicy`, passed on to every stats function as ``policy=``).

    ``judgments`` is every stored row (``RunStore.judgments()``); the views ``pairs`` (pairwise rows,
    debate rows left out), ``points`` (pointwise items: rubric / graded) and ``debate`` split it.
    ``items`` is ``RunStore.items()`` (item objects) and ``items_frame`` ``RunStore.items_frame()``."""

    judgments: pd.DataFrame
    items: Sequence[Any] | None = None
    items_frame: pd.DataFrame | None = None
    policy: FigurePolicy = DEFAULT_POLICY
    extra: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def point_mask(self) -> pd.Series:
        from ._frames import pointwise_mask

        if self.judgments.empty:
            return pd.Series(False, index=self.judgments.index)
        return pointwise_mask(self.judgments, self.items)

    @cached_property
    def pairs(self) -> pd.DataFrame:
        """Pairwise rows without debate rows."""
        p = self.judgments[~self.point_mask]
        return p[p["protocol"] != DEBATE_PROTOCOL]

    @cached_property
    def points(self) -> pd.DataFrame:
        """Rows of pointwise items (rubric PASS/FAIL/UNKNOWN and graded verdicts)."""
        return self.judgments[self.point_mask]

    @cached_property
    def votes(self) -> pd.DataFrame:
        """The human annotators' votes on the run's pair items, one row each: ``dataset, item_id,
        annotator, vote`` (canonical ``A`` / ``B`` / ``tie``) and ``label_rule``, the rule that made the
        item's gold label from them (:data:`verdictlab.core.vocab.GOLD_RULES`; None when the label was
        given directly).  Empty (with those columns) when no item has votes."""
        from ._frames import vote_frame

        return vote_frame(self.items or ())

    @cached_property
    def debate(self) -> pd.DataFrame:
        p = self.judgments[~self.point_mask]
        return p[p["protocol"] == DEBATE_PROTOCOL]


AnalysisFn = Callable[[AnalysisInput], "pd.DataFrame | None"]
#: draws an analysis' report table (``{"columns": [...], "rows": [[...]], ...}``) as a matplotlib figure
FigureFn = Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Analysis:
    """A registered analysis: ``name`` (its key in ``run.analyses``), ``title``, ``description``
    (one line on how to read it), ``order`` (position in the report) and ``fn``; ``spans``: the cell-key
    columns its rows compare across (left out of, or empty in, its rows), e.g. ``("decoding",)`` for a
    free-against-constrained table."""

    name: str
    title: str
    description: str
    fn: AnalysisFn
    order: int = 100
    figure: FigureFn | None = None
    figure_title: str = ""
    spans: tuple[str, ...] = ()

    def __call__(self, inp: AnalysisInput) -> pd.DataFrame | None:
        return self.fn(inp)


#: how the report prints a registered cell column: a fraction as a percentage (its ``KEY_lo``/``KEY_hi``
#: as the interval when the frame has them), a number with three decimals, a count, or a word
CellFormat = Literal["percent", "number", "count", "text"]


@dataclass(frozen=True)
class CellColumn:
    """A column of a cell-column analysis that the report's tables show -- in the terminal, Markdown and
    HTML, beside the JSON, which carries every declared column: ``key`` (the frame's column), ``label``
    (words, the header), ``format`` (:data:`CellFormat`), ``priority`` (1: always shown; a narrow
    table drops 3 first) and ``title`` (what it means, for tooltips)."""

    key: str
    label: str
    format: CellFormat = "percent"
    priority: int = 3
    title: str = ""

    def __post_init__(self) -> None:
        if self.format not in ("percent", "number", "count", "text"):
            raise ValueError(f"cell column {self.key!r}: format must be percent, number, count or text, "
                             f"got {self.format!r}")


@dataclass(frozen=True)
class CellColumns:
    """Registered extra cell columns: ``fn(inp)`` returns a frame with the full cell key
    (:data:`verdictlab.core.vocab.CELL_KEY`, and ``step`` when the cells have steps) plus the new columns,
    at most one row per cell; ``columns`` names the new columns (every report cell carries them,
    ``None`` where the frame has no row for it) and ``shown`` the ones the report's tables show, with
    their labels and formats."""

    name: str
    fn: AnalysisFn
    columns: tuple[str, ...] = ()
    shown: tuple[CellColumn, ...] = ()


#: the registered analyses and cell-column analyses (the one registry mechanism, :mod:`verdictlab.core.registry`)
ANALYSES: Registry[Analysis] = Registry("analysis", plugins="verdictlab.analyses", adopt=lambda *_: None)
CELL_COLUMNS: Registry[CellColumns] = Registry("cell-column analysis")
_LOADED = False


def register(name: str, *, title: str, description: str = "", order: int = 100, figure: FigureFn | None = None,
             figure_title: str = "", spans: Sequence[str] = ()) -> Callable[[AnalysisFn], AnalysisFn]:
    """Decorator: register ``fn(inp: AnalysisInput) -> DataFrame | None`` as analysis ``name``.

    ``figure`` (optional): ``figure(table) -> matplotlib Figure`` drawn from the analysis' report table
    (``{"columns", "rows"}``, as in the JSON); the HTML report and ``--plots`` show it under
    ``figure_title`` (default: the title) whenever the table has rows.  ``spans`` (optional): the
    cell-key columns the table's rows compare across (see :class:`Analysis`).  Registering a name
    again replaces the earlier one."""
    if not name or not isinstance(name, str):
        raise ValueError("an analysis needs a non-empty name")
    unknown = [c for c in spans if c not in CELL_KEY]
    if unknown:
        raise ValueError(f"analysis {name!r}: spans must name cell-key columns {CELL_KEY}, got {unknown}")

    def deco(fn: AnalysisFn) -> AnalysisFn:
        ANALYSES.register(name, Analysis(name=name, title=title, description=description, fn=fn, order=order,
                                         figure=figure, figure_title=figure_title or title, spans=tuple(spans)),
                          description=title)
        return fn

    return deco


def register_cell_columns(name: str, *, columns: Sequence[str | CellColumn] = ()
                          ) -> Callable[[AnalysisFn], AnalysisFn]:
    """Decorator: ``fn(inp) -> DataFrame`` keyed by the cell columns; its other columns are added to
    every matching report cell.  ``columns`` names them: a name reaches the JSON; a :class:`CellColumn`
    (a name with its label and format) reaches every table of the report too -- terminal, Markdown, HTML
    -- with no other file to edit."""
    names = tuple(c.key if isinstance(c, CellColumn) else str(c) for c in columns)
    shown = tuple(c for c in columns if isinstance(c, CellColumn))

    def deco(fn: AnalysisFn) -> AnalysisFn:
        CELL_COLUMNS.register(name, CellColumns(name=name, fn=fn, columns=names, shown=shown),
                              description=", ".join(names))
        return fn

    return deco


def _load_all() -> list[str]:
    """Import every public module of this package (they register themselves); returns the
    ``"module: error"`` strings of modules that failed to import."""
    global _LOADED
    errors: list[str] = []
    if _LOADED:
        return errors
    for mod in pkgutil.iter_modules(__path__):
        if mod.name.startswith("_"):
            continue
        try:
            importlib.import_module(f"{__name__}.{mod.name}")
        except Exception as e:  # noqa: BLE001 - one broken analysis must not hide the others
            errors.append(f"{mod.name}: {type(e).__name__}: {e}")
    _LOADED = not errors
    ANALYSES.load_plugins()    # after the package's own: installed plugins register theirs on import
    return errors


def registered() -> list[Analysis]:
    """Every registered analysis, in report order (``order``, then name)."""
    _load_all()
    return sorted((ANALYSES.get(n) for n in ANALYSES.names()), key=lambda a: (a.order, a.name))


def registered_cell_columns() -> list[CellColumns]:
    """Every registered cell-column analysis, by name."""
    _load_all()
    return [CELL_COLUMNS.get(n) for n in CELL_COLUMNS.names()]


def get(name: str) -> Analysis:
    """The analysis registered as ``name`` (``KeyError`` naming the known ones otherwise)."""
    _load_all()
    return ANALYSES.get(name)


def run_analyses(inp: AnalysisInput, names: Sequence[str] | None = None) -> dict[str, pd.DataFrame | str]:
    """Run the registered analyses (or ``names``) on ``inp``: ``{name: table}`` for tables with rows,
    ``{name: "ErrorType: message"}`` for an analysis that raised (a report never fails for one)."""
    out: dict[str, pd.DataFrame | str] = {}
    for err in _load_all():
        out[err.split(":", 1)[0]] = err.split(": ", 1)[1]
    for a in registered():
        if names is not None and a.name not in names:
            continue
        try:
            t = a(inp)
        except Exception as e:  # noqa: BLE001 - shown in the report instead of breaking it
            out[a.name] = f"{type(e).__name__}: {e}"
            continue
        if t is not None and len(t):
            out[a.name] = t
    return out


def extra_tables(judgments: pd.DataFrame, items: Sequence[Any] | None = None, *,
                 policy: FigurePolicy = NO_BOOTSTRAP) -> dict[str, pd.DataFrame]:
    """Every analysis table the run supports, by name, empty ones left out (the tables of
    :func:`run_analyses` without the ones that failed; an analysis that raises raises here)."""
    inp = AnalysisInput(judgments, items=items, policy=policy)
    out: dict[str, pd.DataFrame] = {}
    for a in registered():
        t = a(inp)
        if t is not None and len(t):
            out[a.name] = t
    return out
