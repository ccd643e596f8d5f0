"""The typed report: what :func:`verdictlab.report.build_report` gathers and every renderer reads.

:class:`Report` is a dataclass that also reads like the mapping the renderers and scripts have always
used (``report["cells"]``, ``report.get("format_dispersion", [])``); its parts are ``TypedDict``s, so
they are plain JSON-ready dicts at run time and typed for the checker.  Nothing here computes a
figure: every number comes from :mod:`verdictlab.stats` or a registered analysis
(:mod:`verdictlab.analyses`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypedDict

from ..core.policy import FigurePolicy

#: version of the JSON document of ``verdictlab report --format json``; additions keep it, a change of
#: meaning or a removal bumps it
REPORT_SCHEMA_VERSION = 1


class AnalysisTable(TypedDict, total=False):
    """One registered analysis in the report (``run.analyses[name]`` in JSON)."""

    title: str
    description: str
    columns: list[str]
    rows: list[list[Any]]
    error: str


class DispersionRow(TypedDict, total=False):
    """ΔT_fmt of one (judge, dataset, temperature[, step], decoding) from
    :func:`verdictlab.stats.format_dispersion`, with T per protocol."""

    judge: str
    dataset: str
    temperature: float
    n_protocols: int
    n_protocols_with_T: int
    T_by_protocol: dict[str, float | None]
    T_min: float | None
    T_max: float | None
    protocol_min: str | None
    protocol_max: str | None
    delta_T_fmt: float | None


class CheckItem(TypedDict):
    """One line of the validation-protocol checklist (:func:`verdictlab.report.readings.validation_checklist`)."""

    check: str
    passed: bool
    detail: str


class BrokenItems(TypedDict):
    """Pairs that flipped under the swap or were unstable across repetitions, with their raw outputs."""

    n_total: int
    n_flipped: int
    n_unstable: int
    n_shown: int
    limit: int
    rows: list[dict[str, Any]]


@dataclass
class Report(Mapping[str, Any]):
    """Everything a report shows.  Read it by attribute or by key (a read-only mapping over the
    fields).  ``cells`` are JSON-ready dicts, one per cell: the columns of
    :func:`verdictlab.stats.reliability` (fractions, ``None`` when undefined), ``agreement`` (the
    cell's row of :func:`verdictlab.stats.agreement_by_cell`), ``region``, ``best_T_in_dataset``,
    ``regions_possible`` (the regions the intervals of C and phi reach), ``vs_best`` (its row of
    :func:`verdictlab.stats.versus_best`), ``sentence`` (:mod:`verdictlab.report.readings`),
    ``display`` (short names: judge, protocol, dataset, configuration), ``judge_label`` and the columns
    added by registered cell-column analyses -- every cell the same keys, ``None`` where undefined; with
    published definitions asked for, ``definitions`` (one row per definition and variant: value,
    interval, N) -- and the report's ``definitions`` is their catalogue (source, rules, the note on
    what each counts differently from A)."""

    run: dict[str, Any]
    #: how every figure was computed (:class:`~verdictlab.core.policy.FigurePolicy`)
    policy: FigurePolicy
    cells: list[dict[str, Any]] = field(default_factory=list)
    judge_labels: dict[str, str] = field(default_factory=dict)
    #: the short names shown for ids: ``{"judge": {id: name}, "protocol": {...}, "dataset": {...}}``
    #: (:mod:`verdictlab.report.names`)
    display_names: dict[str, dict[str, str]] = field(default_factory=dict)
    #: per dataset: the configurations to use, to avoid, below the best, not measured
    #: (:func:`verdictlab.report.readings.decision`)
    decision: list[dict[str, Any]] = field(default_factory=list)
    region_thresholds: dict[str, float] = field(default_factory=dict)
    format_dispersion: list[DispersionRow] = field(default_factory=list)
    checklist: list[CheckItem] = field(default_factory=list)
    broken_items: BrokenItems | dict[str, Any] = field(default_factory=dict)
    extra_tables: dict[str, AnalysisTable] = field(default_factory=dict)
    #: figures across cells the plots are read by (:mod:`verdictlab.stats.across_cells`)
    across_cells: dict[str, Any] = field(default_factory=dict)
    #: counts summed over the cells (:func:`verdictlab.stats.cell_totals`): judgments, unparsed, pairs
    totals: dict[str, int] = field(default_factory=dict)
    #: the catalogue of the published definitions asked for (``report --definitions``)
    definitions: list[dict[str, Any]] = field(default_factory=list)
    schema_version: int = REPORT_SCHEMA_VERSION

    def __getitem__(self, key: str) -> Any:
        if key in self._names():
            return getattr(self, key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def as_dict(self) -> dict[str, Any]:
        """The report as a plain dict (the fields, shallow)."""
        return {k: getattr(self, k) for k in self._names()}

    # -- in a notebook --------------------------------------------------------------------------------
    def __repr__(self) -> str:
        """One line (the dataclass' own repr would print every cell, into every notebook's text output)."""
        return (f"Report(run_dir={self.run.get('run_dir')!r}, {len(self.cells)} cells, "
                f"{self.run.get('n_judgments', 0):,} judgments)")

    def _repr_html_(self) -> str:
        """Jupyter's view: the HTML report, decision panel first, self-contained in a frame of the cell
        (:func:`verdictlab.report.html.notebook_html`)."""
        from .html import notebook_html

        return notebook_html(self)

    def to_pandas(self, what: str = "cells") -> Any:
        """A pandas DataFrame: ``"cells"``, one row per cell (the cell key, every figure and interval;
        nested parts flattened as ``agreement.kappa``, ``vs_best.p``...), or ``"judgments"``, every
        stored judgment of the run (:meth:`verdictlab.store.RunStore.judgments`)."""
        import pandas as pd

        if what == "cells":
            return pd.json_normalize(self.cells, max_level=1) if self.cells else pd.DataFrame()
        if what == "judgments":
            from ..store import open_store

            with open_store(self.run["run_dir"]) as store:
                return store.judgments()
        raise ValueError(f"to_pandas gives 'cells' or 'judgments', not {what!r}")
