"""Build the report of one run: a typed :class:`~verdictlab.report.model.Report` that the terminal,
markdown, JSON, HTML and plot renderers share.

The report only gathers.  Every figure comes from :mod:`verdictlab.stats` -- the cell figures
(:func:`~verdictlab.stats.reliability`) and why a figure is missing or only an upper bound
(:func:`~verdictlab.stats.figure_reasons`), agreement and bias (:func:`~verdictlab.stats.agreement_by_cell`),
failure regions (:func:`~verdictlab.stats.cell_regions`), the best cell of a dataset
(:func:`~verdictlab.stats.best_in_group`), format dispersion (:func:`~verdictlab.stats.format_dispersion`),
the figures across cells the plots are read by, the items that break the judge
(:func:`~verdictlab.stats.broken_pairs`), the audit counts (:mod:`verdictlab.stats.accounting`) -- or
from the registered analyses (:mod:`verdictlab.analyses`), which get the same
:class:`~verdictlab.core.policy.FigurePolicy` as the cell figures, and, when asked for, the figures as
published papers define them (:mod:`verdictlab.analyses.definitions`).  Every sentence and every
"undefined because" rule comes from :mod:`verdictlab.report.readings`, filled in once here.  This module
adds the run's audit trail (store meta) and types everything for the renderers.

No secret reaches the report (API keys, tokens, passwords are removed from the meta and error texts).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import analyses
from ..analyses.definitions import catalogue as definitions_catalogue
from ..analyses.definitions import definitions_table, resolve_definitions
from ..analyses.grader_decision import grader_decision
from ..analyses.leaderboard import leaderboard_audits
from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.redact import redact_value
from ..core.vocab import CELL_KEY, ORDERS, CellKey
from ..stats import (
    CELL_TOTALS,
    agreement_by_cell,
    best_in_group,
    broken_pairs,
    cell_regions,
    cell_regions_possible,
    cell_totals,
    cells_lacking_an_order,
    engine_accounting,
    fallback_rule_counts,
    figure_reasons,
    format_dispersion,
    joint_gap,
    parse_audit,
    parse_status_counts,
    region_thresholds,
    reliability,
    spread_by,
    temperature_effect,
    unit_table,
    upper_bound_reasons,
    versus_best,
    with_adaptive_figures,
    with_cell_columns,
)
from ..store import RunStore, open_store
from ..store.column_cache import cached_figure_reader, figure_frame
from . import readings
from .columns import CELL_FIGURES
from .json_doc import json_ready, report_json
from .lanes import SecondLane, lanes_for
from .model import (
    REPORT_SCHEMA_VERSION,
    AnalysisTable,
    BrokenItems,
    Cell,
    CellNames,
    DefinitionFigure,
    DispersionRow,
    Interval,
    LeaderboardBlock,
    Report,
    RunInfo,
    Scalar,
    VersusBest,
)
from .names import NAME_WIDTHS, configuration_name, display_names, names_from_config, shown_parts
from .notebook import NotebookReport

__all__ = ["REPORT_SCHEMA_VERSION", "Report", "broken_items", "build_report", "cells_from_frame", "dispersion_rows",
           "engine_rows", "frame_table", "judge_labels", "mark_best", "report_json"]


def frame_table(df: pd.DataFrame) -> dict[str, Any]:
    """A DataFrame as ``{"columns": [...], "rows": [[...], ...]}`` with JSON-ready values."""
    return {"columns": [str(c) for c in df.columns],
            "rows": [json_ready(list(r)) for r in df.itertuples(index=False, name=None)]}


# -- cells -----------------------------------------------------------------------------------------

_SORT = ("dataset", "judge", "protocol", "temperature", "step", "decoding")
#: the columns of a figure frame that are not a cell's numbers (its key and its figures)
_FIGURE_KEYS = frozenset(k for col in CELL_FIGURES for k in (col.key, f"{col.key}_lo", f"{col.key}_hi"))


def _scalar(value: Any) -> Scalar:
    v = json_ready(value)
    return v if v is None or isinstance(v, float | int | str | bool) else str(v)


def _interval(rec: Mapping[str, Any], key: str, *, n: str | None, missing: str | None, bound: str | None) -> Interval:
    def num(k: str) -> float | None:
        v = json_ready(rec.get(k))
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

    count = json_ready(rec.get(n)) if n else None
    if missing is not None:         # unmeasured is never a number, whatever a frame made by hand holds
        return Interval(point=None, n=int(count) if isinstance(count, int | float) and not isinstance(count, bool)
                        else None, missing=missing)
    point = num(key)
    return Interval(point=point, low=num(f"{key}_lo"), high=num(f"{key}_hi"),
                    n=int(count) if isinstance(count, int | float) and not isinstance(count, bool) else None,
                    missing=missing if point is None else None, upper_bound=bound if point is not None else None)


def cells_from_frame(frame: pd.DataFrame) -> list[Cell]:
    """One :class:`~verdictlab.report.model.Cell` per row of a reliability frame, sorted by dataset, judge,
    protocol, temperature, step, decoding (a frame without ``decoding`` is free decoding): its figures as Intervals with the reason each missing one is
    missing and each upper bound is one (:func:`verdictlab.stats.figure_reasons`), every other column
    as its numbers.  The frame names every cell-key column (a frame of :func:`verdictlab.stats.reliability`
    does)."""
    if frame is None or frame.empty:
        return []
    frame = with_cell_columns(frame)      # a frame without decoding is free decoding
    missing_keys = [c for c in CELL_KEY if c not in frame.columns]
    if missing_keys:
        raise ValueError(f"reliability frame lacks cell column(s) {missing_keys}")
    f = frame.sort_values([c for c in _SORT if c in frame.columns], kind="stable").reset_index(drop=True)
    reasons, bounds = figure_reasons(f), upper_bound_reasons(f)
    cells = []
    for rec, why, bound in zip(f.to_dict(orient="records"), reasons, bounds, strict=True):
        figures = {col.key: _interval(rec, col.key, n=col.n, missing=why.get(col.key), bound=bound.get(col.key))
                   for col in CELL_FIGURES if col.key in rec}
        numbers = {k: _scalar(v) for k, v in rec.items()
                   if k not in _FIGURE_KEYS and k not in CELL_KEY and k not in ("step", "region", "regions_possible",
                                                                                 "vs_best")}
        vs = rec.get("vs_best")
        reach = rec.get("regions_possible")
        cells.append(Cell(key=CellKey.of(rec), step=str(rec.get("step") or ""), figures=figures, numbers=numbers,
                          region=rec.get("region") or None, regions_possible=tuple(reach) if reach else None,
                          vs_best=VersusBest(json_ready(vs)) if isinstance(vs, Mapping) else None,
                          missing=dict(why), upper_bounds=dict(bound)))
    return cells


def _cell_of(rec: Mapping[str, Any]) -> tuple[CellKey, str]:
    """The cell a record is about: its :class:`~verdictlab.core.vocab.CellKey` and its step ('' for none)."""
    return CellKey.of(rec), str(rec.get("step") or "")


def _rows_by_cell(frame: pd.DataFrame | None, name: str, *, one: bool) -> dict[tuple[CellKey, str], Any]:
    """The rows of ``frame`` by the cell they are about (full cell key and step), without the cell columns:
    one dict per cell (``one``; two rows for one cell refused) or a list of them.  A frame without the
    full cell key is refused (``ValueError``): joined on part of the key, one row would be given to
    several cells."""
    if frame is None or frame.empty:
        return {}
    missing = [c for c in CELL_KEY if c not in frame.columns]
    if missing:
        raise ValueError(f"{name}: rows lack cell-key column(s) {missing}; every row about a cell carries "
                         f"{', '.join(CELL_KEY)}")
    out: dict[tuple[CellKey, str], Any] = {}
    for rec in frame.to_dict(orient="records"):
        key = _cell_of(rec)
        row = {k: v for k, v in json_ready(rec).items() if k not in (*CELL_KEY, "step")}
        if one:
            if key in out:
                raise ValueError(f"{name}: two rows for the cell {key[0].label()}{' ' + key[1] if key[1] else ''}")
            out[key] = row
        else:
            out.setdefault(key, []).append(row)
    return out


def mark_best(cells: list[Cell]) -> None:
    """Set ``best_T_in_dataset`` from :func:`verdictlab.stats.best_in_group` (the highest T of each
    dataset, only where the dataset has at least two cells with a defined T)."""
    if not cells:
        return
    f = pd.DataFrame({"dataset": [c.key.dataset for c in cells],
                      "T": [np.nan if c.figure("T").point is None else c.figure("T").point for c in cells]})
    for c, best in zip(cells, best_in_group(f, by="dataset", value="T"), strict=True):
        c.best_T_in_dataset = bool(best)


def _cells_frame(cells: Sequence[Cell], columns: Sequence[str]) -> pd.DataFrame:
    """The report's cells back as a frame of ``columns`` (key columns, ``step``, figures as floats)."""
    rows = []
    for c in cells:
        rec: dict[str, Any] = {**c.key.as_dict(), "step": c.step}
        rows.append({k: rec[k] if k in rec else c.value(k) for k in columns})
    f = pd.DataFrame(rows, columns=list(columns))
    for k in f.columns:
        if k not in (*CELL_KEY, "step") or k == "temperature":
            f[k] = pd.to_numeric(f[k], errors="coerce")
    return f


def dispersion_rows(cells: list[Cell]) -> list[DispersionRow]:
    """ΔT_fmt per (judge, dataset, temperature[, step], decoding) from
    :func:`verdictlab.stats.format_dispersion` over the report's cells, with T per protocol."""
    if not cells:
        return []
    steps = any(c.step for c in cells)
    f = _cells_frame(cells, (*CELL_KEY, "step", "T"))
    by = ["judge", "dataset", "temperature", *(["step"] if steps else []), "decoding"]
    d = format_dispersion(f, by=by)
    t_by: dict[tuple[str, ...], dict[str, float | None]] = {}
    for c in cells:
        key = tuple(str(getattr(c.key, k) if k != "step" else c.step) for k in by)
        t_by.setdefault(key, {})[c.key.protocol] = c.figure("T").point
    out = []
    for rec in d.to_dict(orient="records"):
        r = json_ready(rec)
        key = tuple(str(r.get(k) if r.get(k) is not None else "") for k in by)
        out.append(DispersionRow(judge=str(r["judge"]), dataset=str(r["dataset"]), temperature=r["temperature"],
                                 decoding=r.get("decoding"), step=r.get("step"),
                                 n_protocols=int(r["n_protocols"]), n_protocols_with_T=int(r["n_protocols_with_T"]),
                                 T_by_protocol=t_by.get(key, {}), T_min=r["T_min"], T_max=r["T_max"],
                                 protocol_min=r["protocol_min"], protocol_max=r["protocol_max"],
                                 delta_T_fmt=r["delta_T_fmt"]))
    return out


def across_cells(cells: list[Cell]) -> dict[str, Any]:
    """The figures across cells the plots are read by (:mod:`verdictlab.stats.across_cells`): the gap
    between T and T_joint, the temperature effect and the spread of T per judge."""
    if not cells:
        return {}
    f = _cells_frame(cells, (*CELL_KEY, "step", "C", "phi", "A", "q", "T", "T_joint"))
    return json_ready({"joint_gap": asdict(joint_gap(f)), "temperature_effect": asdict(temperature_effect(f)),
                       "judge_spread": spread_by(f, by="judge", value="T").to_dict(orient="records")})


def engine_rows(attempts: pd.DataFrame, judgments: pd.DataFrame) -> list[dict[str, Any]]:
    """:func:`verdictlab.stats.engine_accounting`, each row scrubbed of anything secret-shaped and made
    JSON-ready (the report shows error texts)."""
    return [json_ready(redact_value(row)) for row in engine_accounting(attempts, judgments)]


# -- items that break the judge -------------------------------------------------------------------

MAX_RAW_CHARS = 4000


def _cut(raw: Any) -> str:
    """A raw output as shown: empty when missing, cut after ``MAX_RAW_CHARS`` (and saying so)."""
    raw = "" if raw is None or (isinstance(raw, float) and math.isnan(raw)) else str(raw)
    return raw[:MAX_RAW_CHARS] + (" … [cut]" if len(raw) > MAX_RAW_CHARS else "")


def _raw_view(recs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    order_view: dict[str, list[dict[str, Any]]] = {o: [] for o in ORDERS}
    for rec in recs:
        order_view.setdefault(rec["order"], []).append(json_ready({
            "rep": rec.get("rep"), "verdict": rec.get("verdict"),
            "parse_status": rec.get("parse_status"), "parse_detail": rec.get("parse_detail"),
            "raw_output": _cut(rec.get("raw_output")),
        }))
    return order_view


def broken_items(judgments: pd.DataFrame, items: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY,
                 limit: int = 300) -> BrokenItems:
    """The pairs of :func:`verdictlab.stats.broken_pairs` (flipped under the swap or unstable across
    repetitions) shaped for the renderers: the question, both responses and every raw output (parsed
    or not), per order, raw outputs longer than ``MAX_RAW_CHARS`` cut (and saying so).

    Returns ``{"n_total", "n_flipped", "n_unstable", "n_shown", "limit", "rows"}``; flipped pairs come
    first."""
    bp = broken_pairs(judgments, items, policy=policy, limit=limit)
    rows = []
    for pair in bp.pairs:
        raw_meta = pair.get("meta")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        rows.append(json_ready({
            **{c: pair[c] for c in (*CELL_KEY, "step", "item_id")}, "category": pair["category"],
            "label": pair["label"],
            # a paraphrase probe keeps the question it rewrote, for the audit trail
            "original_question": meta.get("original_question"), "paraphrase_source": meta.get("paraphrase_source"),
            "flipped": pair["flipped"], "unstable": pair["unstable"],
            "modal_AB": pair["modal_AB"], "modal_BA": pair["modal_BA"],
            "question": pair["question"], "response_a": pair["response_a"], "response_b": pair["response_b"],
            "orders": _raw_view(pair["rows"]),
        }))
    return {"n_total": bp.n_total, "n_flipped": bp.n_flipped, "n_unstable": bp.n_unstable, "n_shown": len(rows),
            "limit": limit, "rows": rows}


# -- analyses ------------------------------------------------------------------------------------

def _with_readings(name: str, table: pd.DataFrame) -> pd.DataFrame:
    """The table with the report's ``reading`` of each row when readings has one for this analysis."""
    read = readings.TABLE_READINGS.get(name)
    if read is None or table.empty:
        return table
    return table.assign(reading=[read(r) for r in table.to_dict(orient="records")])


def analysis_tables(inp: analyses.AnalysisInput, lane: SecondLane) -> dict[str, AnalysisTable]:
    """Every registered analysis the run supports, as ``{"title", "description", "columns", "rows"}``
    (or ``{"title", "error"}`` for one that failed: a report never fails for an analysis), in the
    registered order; each table is the job ``analysis:NAME`` of :func:`report_jobs`."""
    titles = {a.name: (a.title, a.description) for a in analyses.registered()}
    tables = analyses.run_analyses(inp, names=[])      # the modules that failed to import, if any
    for name in titles:
        tables.update({n: t for n, t in lane.result(f"analysis:{name}").items() if n == name})
    out: dict[str, AnalysisTable] = {}
    for name, t in tables.items():
        title, desc = titles.get(name, (name, ""))
        if isinstance(t, str):
            out[name] = {"title": title, "description": desc, "error": redact_value(t)}
        else:
            table = frame_table(_with_readings(name, t))
            out[name] = {"title": title, "description": desc, "columns": table["columns"], "rows": table["rows"]}
    return out


def _attach_cell_columns(cells: list[Cell], lane: SecondLane) -> dict[str, AnalysisTable]:
    """The registered cell-column analyses (job ``cell_columns:NAME``) into the cells' ``extra``: every
    cell gets each declared column (None where the analysis has no row for it).  Returns the ones that
    failed, as report tables with an error (shown like a failing analysis)."""
    failed: dict[str, AnalysisTable] = {}
    declared: list[str] = []
    for cc in analyses.registered_cell_columns():
        declared += [c for c in cc.columns if c not in declared]
        try:
            rows = _rows_by_cell(lane.result(f"cell_columns:{cc.name}"), f"cell columns {cc.name!r}", one=True)
        except Exception as e:  # noqa: BLE001 - extra cell columns never break the report
            failed[f"cell_columns:{cc.name}"] = {"title": f"Cell columns: {cc.name}", "description": "",
                                                 "error": redact_value(f"{type(e).__name__}: {e}")}
            continue
        for c in cells:
            got = rows.get((c.key, c.step))
            if got is not None:
                c.extra.update({k: _scalar(v) for k, v in got.items() if k not in c.extra})
    for c in cells:
        for k in declared:
            c.extra.setdefault(k, None)
    return failed


def _same_extra(cells: list[Cell]) -> None:
    """Every cell gets every extra column and number some cell has (``None`` where undefined for it): one
    JSON shape."""
    extra = list(dict.fromkeys(k for c in cells for k in c.extra))
    numbers = list(dict.fromkeys(k for c in cells for k in c.numbers))
    for c in cells:
        for k in extra:
            c.extra.setdefault(k, None)
        for k in numbers:
            c.numbers.setdefault(k, None)


# -- run meta ------------------------------------------------------------------------------------

def _package_version() -> str:
    """verdictlab's version from the installed package metadata (the report never imports the package
    root, which imports the report)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("verdictlab")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        return "unknown"


def run_meta(store: RunStore, judgments: pd.DataFrame) -> RunInfo:
    """Key-free meta of the run: the store's meta table (secrets removed) plus what the judgments
    show (judges, datasets, protocols, temperatures, counts) and the versions of this report."""
    import platform

    meta = json_ready(redact_value(store.all_meta()))

    def values(col: str) -> list[str]:
        return sorted(map(str, judgments[col].dropna().unique())) if len(judgments) else []

    return RunInfo(
        run_dir=str(store.run_dir), meta=meta, n_judgments=int(len(judgments)), judges=values("judge"),
        datasets=values("dataset"), protocols=values("protocol"),
        temperatures=sorted(float(t) for t in judgments["temperature"].dropna().unique()) if len(judgments) else [],
        report_versions={"verdictlab": _package_version(), "python": platform.python_version(),
                         "numpy": np.__version__, "pandas": pd.__version__})


def judge_labels(judges: list[str], *, width: int = NAME_WIDTHS["judge"],
                 given: Mapping[str, str] | None = None) -> dict[str, str]:
    """Short display names for judge ids (:func:`verdictlab.report.names.display_names`): never
    ambiguous; reports list the full ids beside them."""
    return display_names(judges, width=width, given=given)


def _name_all(cells: list[Cell], run: RunInfo) -> dict[str, dict[str, str]]:
    """The display names of the run's judges (a config ``label:`` wins), protocols and datasets, and
    each cell's names (those three and its configuration)."""
    plural = {"judge": run.judges, "protocol": run.protocols, "dataset": run.datasets}
    ids = {k: sorted({str(getattr(c.key, k)) for c in cells} | set(map(str, plural[k]))) for k in plural}
    names = {k: display_names(v, width=NAME_WIDTHS[k], given=names_from_config(run.meta or {})
                              if k == "judge" else None) for k, v in ids.items()}
    parts_of = [{**c.key.as_dict(), "step": c.step} for c in cells]
    parts = shown_parts(parts_of)
    for c, rec in zip(cells, parts_of, strict=True):
        c.names = CellNames(judge=names["judge"][c.key.judge], protocol=names["protocol"][c.key.protocol],
                            dataset=names["dataset"][c.key.dataset],
                            configuration=configuration_name(rec, names, parts),
                            configuration_id=configuration_name(rec, {}, parts))
    return names


# -- the report ----------------------------------------------------------------------------------

def _load(store: RunStore, cache: Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame,
                                                               list[Any], RunInfo]:
    """The run's judgments (their figure columns, :func:`verdictlab.store.column_cache.figure_frame`: kept
    under ``cache`` between reports when given; the store filled the defaults of missing columns),
    attempts, items and meta.

    A cached figure frame is read on a second thread while this one reads and validates the items (the
    Parquet read leaves the interpreter free): at 5.4M judgments, 2.9-3.4 s of wall time against 4.1-5.4 s
    one after the other."""
    reader = cached_figure_reader(store, cache=cache) if cache is not None else None
    judgments: pd.DataFrame | None = None
    if reader is not None:
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="verdictlab-figure-frame") as pool:
            read = pool.submit(reader)
            items = store.items()    # read and validated once: the items frame is made from these objects
            with contextlib.suppress(Exception):     # a damaged cache: figure_frame rebuilds it below
                judgments = read.result()
    else:
        items = store.items()
    if judgments is None:
        judgments = figure_frame(store, cache=cache)
    return judgments, store.attempts(), store.items_frame(items), items, run_meta(store, judgments)


def _with_texts(store: RunStore, broken: BrokenItems) -> BrokenItems:
    """The shown broken items with every judgment's raw output and parse detail, read from the store for
    those pairs only (the figure frame has neither)."""
    for row, texts in zip(broken["rows"], store.pair_texts(broken["rows"]), strict=True):
        for order, recs in row["orders"].items():
            for rec in recs:
                raw, detail = texts.get((order, rec["rep"]), (None, rec.get("parse_detail")))
                rec["raw_output"] = _cut(raw)
                rec["parse_detail"] = detail
    return broken


def _figure_frame(judgments: pd.DataFrame, inp: analyses.AnalysisInput, frame: pd.DataFrame | None
                  ) -> tuple[pd.DataFrame, int]:
    """The cells' figure frame (reliability, the adaptive design's C and T, regions, the paired
    comparison with the dataset's best) and the size of the paired tests' family."""
    units = None             # the unit table reliability is computed from: versus_best reads it too
    if frame is None and len(judgments):
        units = unit_table(judgments, policy=inp.policy)
        frame = reliability(judgments, q="auto", policy=inp.policy, units=units)
    elif frame is None:
        frame = pd.DataFrame(columns=list(CELL_KEY))
    frame = frame.copy()
    if len(frame) and inp.extra.get("adaptive_design"):
        # an adaptive run: C and T of its cells from the C pairs (stats.adaptive), not from truncated units
        frame = with_adaptive_figures(frame, inp.extra["adaptive_design"], judgments, policy=inp.policy)
    family = 0
    if len(frame):
        region = pd.Series(cell_regions(frame), index=frame.index, dtype=object)
        frame["region"] = region.where(region != "undefined", None)
        frame["regions_possible"] = [tuple(r) or None for r in cell_regions_possible(frame)]
        vs = versus_best(judgments, frame, policy=inp.policy, units=units)
        frame["vs_best"] = vs.drop(columns=["best_row"]).to_dict(orient="records")
        family = int(vs.attrs["family_size"])
    return frame, family


def _cells(judgments: pd.DataFrame, inp: analyses.AnalysisInput, frame: pd.DataFrame | None,
           lane: SecondLane) -> tuple[list[Cell], dict[str, AnalysisTable], int]:
    """The cells (reliability figures with their missing reasons, agreement, region and the regions its
    intervals reach, the paired comparison with its dataset's best, best mark, extra columns; every cell
    with the same keys), the cell-column analyses that failed and the size of the paired tests' family.
    Their sentences are filled once the names are known (:func:`_gathered`)."""
    frame, family = _figure_frame(judgments, inp, frame)
    lane.help()                  # with a second process: the jobs it has not taken yet run here, last first
    cells = cells_from_frame(frame)
    if len(judgments):
        agreement = _rows_by_cell(lane.result("agreement"), "agreement", one=True)
        for c in cells:
            got = agreement.get((c.key, c.step))
            c.agreement = readings.agreement_of(got) if got is not None else None
    failed = _attach_cell_columns(cells, lane)
    mark_best(cells)
    _same_extra(cells)
    return cells, failed, family


def _attach_definitions(cells: list[Cell], table: pd.DataFrame) -> None:
    """Each cell's figures as the published definitions asked for define them (``[]`` for a cell none of
    them supports); a definition's figure not measured says why (``missing``)."""
    rows = _rows_by_cell(table, "definitions", one=False)
    for c in cells:
        c.definitions = tuple(
            DefinitionFigure(definition=str(r["definition"]), variant=str(r.get("variant") or ""),
                             figure=Interval(point=r.get("value"), low=r.get("lo"), high=r.get("hi"),
                                             n=r.get("n"), missing=r.get("missing")),
                             values=r)
            for r in rows.get((c.key, c.step), []))


def build_report(store_or_run_dir: RunStore | str | Path, *, policy: FigurePolicy = DEFAULT_POLICY,
                 max_broken_items: int = 300, frame: pd.DataFrame | None = None,
                 expected_reps: int | None = None, definitions: str | Sequence[str] | None = None,
                 cache: Path | None = None, progress: Callable[[str], None] | None = None,
                 leaderboard: Mapping[str, Any] | None = None) -> Report:
    """Everything a report shows, as a typed :class:`~verdictlab.report.model.Report`.

    Parameters
    ----------
    store_or_run_dir : an open :class:`RunStore` or a run directory holding ``run.sqlite``.
    policy : the :class:`~verdictlab.core.policy.FigurePolicy` of every figure (the cells and every
        registered analysis): what an unparsed verdict counts as (left out and counted, the default, or
        wrong), the level of the intervals (Wilson for proportions, pair-level bootstrap for T), the
        bootstrap resamples and their seed.
    max_broken_items : at most this many "items that break the judge" are kept.
    frame : a precomputed reliability frame (skips :func:`verdictlab.stats.reliability`).
    expected_reps : R for the expected figures (``analyses.expected``); default the cell's own.
    definitions : ``"all"`` or names of published definitions (:mod:`verdictlab.analyses.definitions`):
        each cell gets ``definitions`` (the figures as those papers define them) and the report their
        catalogue.  An unknown name raises ``KeyError`` naming the known ones, before anything is read.
    cache : a folder (``verdictlab.store.column_cache.cache_root("columns")``) where the judgments' figure
        columns are kept between reports of an unchanged store; None reads them from the store.
    progress : called with a short line naming each step as it starts ("reading the run", then "figures
        of N judgments", saying when two processes share them), e.g. to show it beside a spinner.
    leaderboard : the leaderboard analyses' settings (:mod:`verdictlab.analyses.leaderboard`):
        ``tie_rule``, ``baseline``, ``alpaca_reference`` (an :class:`~verdictlab.stats.AlpacaReference`).
    """
    names = resolve_definitions(definitions) if definitions is not None else []
    opts: dict[str, Any] = {"policy": policy, "max_broken_items": max_broken_items, "frame": frame,
                            "expected_reps": expected_reps, "names": names, "cache": cache,
                            "progress": progress or (lambda _step: None), "leaderboard": dict(leaderboard or {})}
    with one_blas_thread():
        if isinstance(store_or_run_dir, RunStore):
            return _build(store_or_run_dir, **opts)
        with open_store(store_or_run_dir) as store:
            return _build(store, **opts)


def one_blas_thread() -> contextlib.AbstractContextManager[Any]:
    """BLAS on one thread while a report is built (the forked second process inherits it).

    The report's matrix products are skinny (a few resamples x 100,000 pairs times 100,000 x 8 sums):
    OpenBLAS's threads spin more than they share.  Reliability alone on the 5.4M-judgment run: 20.1 s of
    CPU with its two threads against 9.5 s with one, at the same wall time; the whole ``report --format
    json``, 106 s of CPU against 70 s.  A figure from a BLAS fit (Platt scaling's ECE) no longer depends on
    how many cores the machine has."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def _build(store: RunStore, *, policy: FigurePolicy, max_broken_items: int, frame: pd.DataFrame | None,
           expected_reps: int | None, names: list[str], cache: Path | None,
           progress: Callable[[str], None], leaderboard: dict[str, Any]) -> Report:
    progress("reading the run")
    all_judgments, attempts, items_frame, item_objects, run = _load(store, cache)
    inp = analyses.AnalysisInput(all_judgments, items=item_objects, items_frame=items_frame, policy=policy,
                                 extra={**({"expected_reps": expected_reps} if expected_reps else {}),
                                        "adaptive_design": (run.meta or {}).get("adaptive_design"), **leaderboard})
    # pairwise figures only see pairwise rows; pointwise (rubric / graded) items get their own tables
    point = inp.point_mask
    judgments = all_judgments[~point] if point.any() else all_judgments
    jobs = report_jobs(inp, judgments, items_frame, attempts, max_broken_items=max_broken_items)
    two = lanes_for(len(all_judgments)) == 2
    progress(f"figures of {len(all_judgments):,} judgments" + (" in two processes" if two else ""))
    with SecondLane(jobs, use=two, here_only=HERE_ONLY_JOBS) as lane:
        return _gathered(store, inp, all_judgments, judgments, run, lane, frame=frame, names=names)


#: the jobs the second process never takes: scikit-learn's fits (OpenMP) in the human-label analyses
HERE_ONLY_JOBS: tuple[str, ...] = ("analysis:human_labels", "analysis:human_labels_reliability")
#: the jobs the second process takes first, longest first, so that the two processes end together (this one
#: runs the cells' figures, then helps from the back of the list): alone at 5.4M judgments, CPU s, classes
#: 6.4, remedies 5.2, judge against judge 3.3, juries 2.8, agreement 2.4, cost curves 2.3, broken items 1.1
#: -- measured as the 5.4M reports of docs/scale.md were
FIRST_JOBS: tuple[str, ...] = ("cell_columns:classes", "analysis:remedies", "analysis:judge_vs_judge",
                               "analysis:juries", "agreement", "analysis:cost_curves", "broken_items")


def report_jobs(inp: analyses.AnalysisInput, judgments: pd.DataFrame, items_frame: pd.DataFrame,
                attempts: pd.DataFrame, *, max_broken_items: int) -> dict[str, Callable[[], Any]]:
    """The report's jobs that need only the loaded frames, by name (``agreement``, ``broken_items``,
    ``engine_rows``, ``cells_lacking_an_order``, ``cell_columns:NAME``, ``analysis:NAME``), in the
    order a second process takes them (:class:`verdictlab.report.lanes.SecondLane`).  ``judgments`` are the
    pairwise rows, ``inp.judgments`` every row."""
    its = items_frame if items_frame is not None and "response_a" in items_frame.columns else None
    every = inp.judgments
    jobs: dict[str, Callable[[], Any]] = {
        "agreement": lambda: agreement_by_cell(judgments, policy=inp.policy, items=its) if len(judgments) else None,
        "broken_items": lambda: broken_items(judgments, items_frame, policy=inp.policy, limit=max_broken_items),
        "engine_rows": lambda: engine_rows(attempts, every) if len(every) or len(attempts) else [],
        "cells_lacking_an_order": lambda: cells_lacking_an_order(judgments),
    }
    for cc in analyses.registered_cell_columns():
        jobs[f"cell_columns:{cc.name}"] = functools.partial(cc.fn, inp)
    jobs["leaderboard_audits"] = functools.partial(leaderboard_audits, inp)
    jobs["grader_decision"] = functools.partial(grader_decision, inp)
    for a in analyses.registered():
        jobs[f"analysis:{a.name}"] = functools.partial(analyses.run_analyses, inp, names=[a.name])
    first = [n for n in FIRST_JOBS if n in jobs]
    here = [n for n in jobs if n in HERE_ONLY_JOBS]
    return {n: jobs[n] for n in [*first, *(n for n in jobs if n not in first and n not in here), *here]}


def _gathered(store: RunStore, inp: analyses.AnalysisInput, all_judgments: pd.DataFrame, judgments: pd.DataFrame,
              run: RunInfo, lane: SecondLane, *, frame: pd.DataFrame | None, names: list[str]) -> Report:
    policy = inp.policy
    cells, failed_columns, family = _cells(judgments, inp, frame, lane)
    if names and len(judgments):
        _attach_definitions(cells, definitions_table(inp, names))
    run.engine = lane.result("engine_rows")
    run.parse_status_counts = parse_status_counts(all_judgments)
    run.n_pointwise_judgments = len(inp.points)
    run.fallback_rules = fallback_rule_counts(all_judgments)
    run.audit = json_ready(asdict(parse_audit(all_judgments)))
    shown = _name_all(cells, run)
    for c in cells:
        c.sentence = readings.cell_sentence(c)
    report = NotebookReport(
        run=run, policy=policy, cells=cells, display_names=shown,
        decision=readings.decision(cells, alpha=policy.alpha, family_size=family),
        region_thresholds=region_thresholds(), format_dispersion=dispersion_rows(cells),
        checklist=readings.validation_checklist(cells, lane.result("cells_lacking_an_order")),
        broken_items=_with_texts(store, lane.result("broken_items")),
        extra_tables={**(analysis_tables(inp, lane) if len(all_judgments) else {}), **failed_columns},
        across_cells=across_cells(cells),
        totals=cell_totals(_cells_frame(cells, CELL_TOTALS)) if cells else {},
        definitions=definitions_catalogue(names) if names else [])
    report.leaderboards = _leaderboard_blocks(report, lane)
    report.graders = readings.grader_blocks(lane.result("grader_decision"), report.display_names)
    report.notes = readings.report_notes(report)
    return report


def _leaderboard_blocks(report: Report, lane: SecondLane) -> list[LeaderboardBlock]:
    """The decision panel's leaderboard blocks: the typed audit per configuration (job
    ``leaderboard_audits``) read with the ``leaderboard_agreement`` table's rows (protocol against protocol)."""
    audits = lane.result("leaderboard_audits")
    if not audits:
        return []
    table = report.extra_tables.get("leaderboard_agreement") or {}
    cols = table.get("columns", [])
    rows = [dict(zip(cols, r, strict=True)) for r in table.get("rows", [])]
    return readings.leaderboard_blocks(audits, rows, report.display_names)
