"""The typed report: what :func:`verdictlab.report.build_report` gathers and every renderer reads.

A :class:`Report` holds :class:`Cell`\\ s -- each with its :class:`~verdictlab.core.vocab.CellKey`, its
figures as :class:`Interval`\\ s (point, low, high, N, and the reason when missing or only a bound), its
agreement, region, comparison with the best of its dataset, display names, sentence and the columns of
the registered cell-column analyses (a typed mapping) -- and the decision, the run and the figures
across cells, typed the same way.  Every sentence and every "undefined because" rule is filled in when the
report is built (:mod:`verdictlab.report.readings`); the renderers print.  Nothing here computes a figure:
every number comes from :mod:`verdictlab.stats` or a registered analysis (:mod:`verdictlab.analyses`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ..core.policy import FigurePolicy
from ..core.vocab import CellKey

__all__ = ["REPORT_SCHEMA_VERSION", "Agreement", "AnalysisTable", "BrokenItems", "Cell", "CellNames", "CheckItem",
           "DatasetDecision", "DecisionEntry", "DefinitionFigure", "DispersionRow", "GraderBlock", "Interval", "LeaderboardBlock",
           "MissingFigure",
           "Report", "RunInfo", "Scalar", "VersusBest"]

#: version of the JSON document of ``verdictlab report --format json``; additions keep it, a change of
#: meaning or a removal bumps it
REPORT_SCHEMA_VERSION = 1

#: a value a report carries for a column: a number, a word, a flag, or nothing (undefined)
Scalar = float | int | str | bool | None


@dataclass(frozen=True, slots=True)
class Interval:
    """One figure: ``point`` (a fraction, None when missing), its interval ``low``/``high`` (None when the
    report has none), the ``n`` it stands on, and -- when it is not a plain measurement -- why:
    ``missing`` (the reason the figure is not measured: :class:`~verdictlab.core.vocab.Missing`) or
    ``upper_bound`` (the reason the point is only an upper bound, e.g. T with C unmeasured)."""

    point: float | None
    low: float | None = None
    high: float | None = None
    n: int | None = None
    missing: str | None = None
    upper_bound: str | None = None

    @property
    def defined(self) -> bool:
        return self.point is not None


@dataclass(frozen=True, slots=True)
class CellNames:
    """The names a cell is shown under: the display names of its judge, protocol and dataset
    (:mod:`verdictlab.report.names`), its ``configuration`` (judge · protocol and what tells it from the
    run's other cells) and the same with ids (``configuration_id``)."""

    judge: str
    protocol: str
    dataset: str
    configuration: str
    configuration_id: str


@dataclass(frozen=True, slots=True)
class Agreement:
    """The cell's row of :func:`verdictlab.stats.agreement_by_cell` (``values``: every column, as the JSON
    has it) with its undefined rules filled in: ``paradox`` is None -- neither yes nor no -- where test-retest
    or position bias is undefined (``paradox_reason`` says which), and ``position_note`` says why position
    bias is undefined (one order)."""

    values: Mapping[str, Scalar]
    paradox: bool | None
    paradox_reason: str | None = None
    position_note: str | None = None

    def get(self, name: str) -> Scalar:
        return self.values.get(name)


@dataclass(frozen=True, slots=True)
class VersusBest:
    """The cell's row of :func:`verdictlab.stats.versus_best`: the paired comparison with the best T of its
    dataset (every column, as the JSON has it)."""

    values: Mapping[str, Scalar]

    @property
    def best(self) -> bool:
        return bool(self.values.get("best"))

    def get(self, name: str) -> Scalar:
        return self.values.get(name)


@dataclass(frozen=True, slots=True)
class DefinitionFigure:
    """A figure as a published paper defines it (one row of :func:`verdictlab.analyses.definitions.
    definitions_table` for this cell): ``values`` (every column, as the JSON has it), ``figure`` (the value
    with its interval and N; missing with its reason where the cell has no readable reply)."""

    definition: str
    variant: str
    figure: Interval
    values: Mapping[str, Scalar]


@dataclass(slots=True)
class Cell:
    """One cell of the report (see the module docstring).  ``figures``: the figures of
    :func:`verdictlab.stats.reliability` as Intervals (missing ones with their reason); ``numbers``: its
    counts and settings (``n_pairs``, ``repetitions``, ``unparsed_policy``, bootstrap bounds ...) as they
    are; ``extra``: the columns of the registered cell-column analyses (every declared column, None where
    an analysis has no row for the cell); ``definitions``: None unless published definitions were asked
    for; ``missing`` / ``upper_bounds``: figure -> reason (:func:`verdictlab.stats.figure_reasons`)."""

    key: CellKey
    step: str
    figures: dict[str, Interval]
    numbers: dict[str, Scalar]
    names: CellNames | None = None
    agreement: Agreement | None = None
    region: str | None = None
    regions_possible: tuple[str, ...] | None = None
    vs_best: VersusBest | None = None
    best_T_in_dataset: bool = False
    sentence: str = ""
    extra: dict[str, Scalar] = field(default_factory=dict)
    definitions: tuple[DefinitionFigure, ...] | None = None
    missing: dict[str, str] = field(default_factory=dict)
    upper_bounds: dict[str, str] = field(default_factory=dict)
    #: the commonest parse failure of the cell, ``(reason, count)``, when a caller looked it up
    #: (:func:`verdictlab.stats.top_parse_failures`; the demo does): its sentence names it
    top_parse_failure: tuple[str, int] | None = None

    def value(self, name: str) -> Scalar:
        """A figure's point, else a number, else an extra column's value, else a key part; None when the
        cell has none of that name."""
        got = self.figures.get(name)
        if got is not None:
            return got.point
        if name in self.numbers:
            return self.numbers[name]
        if name in self.extra:
            return self.extra[name]
        if name == "step":
            return self.step
        return getattr(self.key, name, None) if name in CellKey.__dataclass_fields__ else None

    def figure(self, name: str) -> Interval:
        """A figure as an Interval (an extra column with ``name_lo``/``name_hi`` too); an empty Interval when
        the cell has no such figure."""
        got = self.figures.get(name)
        if got is not None:
            return got
        v = self.extra.get(name)
        if isinstance(v, int | float) and not isinstance(v, bool):
            lo, hi = self.extra.get(f"{name}_lo"), self.extra.get(f"{name}_hi")
            return Interval(float(v), _num(lo), _num(hi))
        return Interval(None)

    @property
    def dataset(self) -> str:
        return self.key.dataset

    @property
    def judge(self) -> str:
        return self.key.judge

    @property
    def protocol(self) -> str:
        return self.key.protocol

    @property
    def temperature(self) -> float | None:
        return self.key.temperature

    @property
    def decoding(self) -> str:
        return self.key.decoding


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


@dataclass(frozen=True, slots=True)
class DecisionEntry:
    """One configuration in a dataset's decision (:func:`verdictlab.report.readings.decision`): its rank
    ``number`` by T (1 = best), its place in the report's cells (``cell_index``), names, T, region, the
    ``group`` it falls in (use / avoid / below_best / not_measured), the ``rule`` and ``reason`` that put it
    there, the ``brief`` reason of a one-line list and what a user should still know (``caution``)."""

    number: int
    cell_index: int
    configuration: str
    configuration_id: str
    key: CellKey
    step: str
    T: Interval
    T_text: str
    region: str | None
    region_short: str | None
    group: str
    rule: str
    reason: str
    brief: str
    caution: str


@dataclass(frozen=True, slots=True)
class MissingFigure:
    """A figure not measured for some configurations of a dataset: the figure, the reason (one word of
    :class:`~verdictlab.core.vocab.Missing`), what that means, and which configurations (``every``: all)."""

    figure: str
    reason: str
    why: str
    configurations: tuple[str, ...]
    every: bool
    line: str


@dataclass(frozen=True, slots=True)
class DatasetDecision:
    """The decision for one dataset: the ``headline``, the configurations in each group, what was not
    measured, the ``ranking`` sentence (T, or T's upper bound where C was not measured) and the family of the
    paired tests against the best."""

    dataset: str
    dataset_name: str
    headline: str
    ranking: str
    #: whether some configuration is ranked by T's upper bound (the HTML's panel says so only then)
    ranked_by_bound: bool
    alpha: float
    family_size: int
    use: tuple[DecisionEntry, ...]
    avoid: tuple[DecisionEntry, ...]
    below_best: tuple[DecisionEntry, ...]
    not_measured: tuple[DecisionEntry, ...]
    missing: tuple[MissingFigure, ...]

    def group(self, name: str) -> tuple[DecisionEntry, ...]:
        got: tuple[DecisionEntry, ...] = getattr(self, name)
        return got


@dataclass(frozen=True, slots=True)
class LeaderboardBlock:
    """The decision panel's leaderboard block for one judge configuration whose pairs name their systems
    (:func:`verdictlab.report.readings.leaderboard_blocks`): the ``systems`` best first, the separable
    ``tiers``, and the sentences -- the ranking with its intervals, which systems are distinguishable,
    and whether the order, a repetition, the humans or the protocol change the ranking."""

    dataset: str
    configuration: str
    systems: tuple[str, ...]
    tiers: tuple[tuple[str, ...], ...]
    ranking: str
    distinguishable: str
    changes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GraderBlock:
    """The decision panel's grader block for one dataset and criterion
    (:func:`verdictlab.report.readings.grader_blocks`): the ``headline``, what the graders are ranked by,
    and one line per grader, best first -- its rank, figure with interval, and in plain words why to avoid
    it (``avoid`` true) or why it has no rank."""

    dataset: str
    criterion: str
    headline: str
    ranked_by: str
    lines: tuple[str, ...]
    avoid: tuple[bool, ...]


@dataclass(frozen=True, slots=True)
class CheckItem:
    """One line of the validation-protocol checklist (:func:`verdictlab.report.readings.validation_checklist`)."""

    check: str
    passed: bool
    detail: str


@dataclass(frozen=True, slots=True)
class DispersionRow:
    """ΔT_fmt of one (judge, dataset, temperature[, step], decoding) from
    :func:`verdictlab.stats.format_dispersion`, with T per protocol."""

    judge: str
    dataset: str
    temperature: float
    decoding: str | None
    step: str | None
    n_protocols: int
    n_protocols_with_T: int
    T_by_protocol: Mapping[str, float | None]
    T_min: float | None
    T_max: float | None
    protocol_min: str | None
    protocol_max: str | None
    delta_T_fmt: float | None


class AnalysisTable(TypedDict, total=False):
    """One registered analysis in the report (``run.analyses[name]`` in JSON)."""

    title: str
    description: str
    columns: list[str]
    rows: list[list[Any]]
    error: str


class BrokenItems(TypedDict):
    """Pairs that flipped under the swap or were unstable across repetitions, with their raw outputs."""

    n_total: int
    n_flipped: int
    n_unstable: int
    n_shown: int
    limit: int
    rows: list[dict[str, Any]]


@dataclass(slots=True)
class RunInfo:
    """The run the report is about: its directory, its key-free ``meta`` (the store's meta table, secrets
    removed), what the judgments show (judges, datasets, protocols, temperatures, counts), the engine
    accounting and audit counts, and the versions of this report (``fields`` of the JSON's ``run``)."""

    run_dir: str
    meta: dict[str, Any]
    n_judgments: int
    judges: list[str]
    datasets: list[str]
    protocols: list[str]
    temperatures: list[float]
    report_versions: dict[str, str]
    engine: list[dict[str, Any]] = field(default_factory=list)
    parse_status_counts: dict[str, int] = field(default_factory=dict)
    n_pointwise_judgments: int = 0
    fallback_rules: dict[str, int] = field(default_factory=dict)
    audit: dict[str, Any] = field(default_factory=dict)
    other: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Report:
    """Everything a report shows (see the module docstring): the ``run``, the figure ``policy``, the
    ``cells`` and what is read across them -- the decision per dataset, the format dispersion, the
    checklist, the items that break the judge, the registered analyses' tables, the figures across cells
    the plots are read by and, with published definitions asked for, their catalogue."""

    run: RunInfo
    policy: FigurePolicy
    cells: list[Cell] = field(default_factory=list)
    #: the short names shown for ids: ``{"judge": {id: name}, "protocol": {...}, "dataset": {...}}``
    display_names: dict[str, dict[str, str]] = field(default_factory=dict)
    decision: list[DatasetDecision] = field(default_factory=list)
    #: the leaderboard block per judge configuration, where the pairs name their systems
    leaderboards: list[LeaderboardBlock] = field(default_factory=list)
    #: the grader block per dataset and criterion, where the run has pointwise graders
    graders: list[GraderBlock] = field(default_factory=list)
    region_thresholds: dict[str, float] = field(default_factory=dict)
    format_dispersion: list[DispersionRow] = field(default_factory=list)
    checklist: list[CheckItem] = field(default_factory=list)
    broken_items: BrokenItems | None = None
    extra_tables: dict[str, AnalysisTable] = field(default_factory=dict)
    #: figures across cells the plots are read by (:mod:`verdictlab.stats.across_cells`)
    across_cells: dict[str, Any] = field(default_factory=dict)
    #: counts summed over the cells (:func:`verdictlab.stats.cell_totals`): judgments, unparsed, pairs
    totals: dict[str, int] = field(default_factory=dict)
    #: the catalogue of the published definitions asked for (``report --definitions``)
    definitions: list[dict[str, Any]] = field(default_factory=list)
    #: sentences about the whole report, filled once (:mod:`verdictlab.report.readings`)
    notes: dict[str, str] = field(default_factory=dict)
    schema_version: int = REPORT_SCHEMA_VERSION

    @property
    def judge_labels(self) -> dict[str, str]:
        return self.display_names.get("judge", {})


def cells_in(cells: Sequence[Cell], dataset: str) -> list[Cell]:
    """The cells of one dataset, in report order."""
    return [c for c in cells if c.key.dataset == dataset]
