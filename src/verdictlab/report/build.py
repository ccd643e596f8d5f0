"""Build the report of one run: a typed :class:`~verdictlab.report.model.Report` that the terminal,
markdown, JSON, HTML and plot renderers share.

The report only gathers.  Every figure comes from :mod:`verdictlab.stats` -- the cell figures
(:func:`~verdictlab.stats.reliability`), agreement and bias (:func:`~verdictlab.stats.agreement_by_cell`),
failure regions and their thresholds (:func:`~verdictlab.stats.failure_region`), the best cell of a
dataset (:func:`~verdictlab.stats.best_in_group`), format dispersion
(:func:`~verdictlab.stats.format_dispersion`), modal verdicts (:func:`~verdictlab.stats.modal_verdicts`),
the plain sentences and the checklist (:mod:`verdictlab.stats.readings`) -- or from the registered
analyses (:mod:`verdictlab.analyses`), which get the same policy (unparsed, confidence, bootstrap,
seed) as the cell figures.  This module adds the run's audit trail (store meta, engine accounting)
and the raw outputs of the items that break the judge.

Everything in the report is JSON-ready: fractions in [0, 1], ``None`` for undefined figures
(NaN), no numpy scalars, and no secret (API keys, tokens, passwords are removed from the meta).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import analyses
from .._redact import redact_value
from ..stats import agreement_by_cell, best_in_group, failure_region, modal_verdicts, reliability
from ..stats import format_dispersion as stats_format_dispersion
from ..stats.accounting import engine_accounting as stats_engine_accounting
from ..stats.accounting import fallback_rule_counts, parse_status_counts
from ..stats.adaptive import with_adaptive_figures
from ..stats.readings import cell_sentence, validation_checklist
from ..stats.regions import DEFAULT_C_HIGH, DEFAULT_PHI_LOW, REGIONS
from ..store import RunStore, open_store
from ..vocab import CELL_KEY as VOCAB_CELL_KEY
from ..vocab import DEFAULT_UNPARSED, ORDERS
from .model import REPORT_SCHEMA_VERSION, AnalysisTable, BrokenItems, CheckItem, DispersionRow, Report

CELL_KEY: tuple[str, ...] = VOCAB_CELL_KEY
UNPARSED_POLICIES: tuple[str, ...] = analyses.UNPARSED_POLICIES

#: Failure-region thresholds on (C, phi), under the names the plots take: the documented defaults
#: of :func:`verdictlab.stats.failure_region` (consistent when C >= c_high, order-invariant when
#: phi <= phi_low).
DEFAULT_REGION_THRESHOLDS: dict[str, float] = {"c_threshold": DEFAULT_C_HIGH, "phi_threshold": DEFAULT_PHI_LOW}
REGION_NAMES: tuple[str, ...] = tuple(REGIONS)

__all__ = ["AGREEMENT_FIELDS", "CELL_KEY", "REPORT_SCHEMA_VERSION", "Report", "broken_items", "build_report",
           "cells_from_frame", "classify_region", "engine_accounting", "format_dispersion", "judge_labels",
           "mark_best", "plain", "redact", "report_json", "validation_checklist"]

# -- secrets ----------------------------------------------------------------------------------

# the one scrubber (verdictlab._redact): secret-named keys dropped, secret-looking strings masked
redact = redact_value


# -- JSON-ready values --------------------------------------------------------------------------

def plain(value: Any) -> Any:
    """numpy/pandas scalars -> Python; NaN/NA -> None (recursively for dicts and lists)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating | float):
        f = float(value)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    return value


def frame_table(df: pd.DataFrame) -> dict[str, Any]:
    """A DataFrame as ``{"columns": [...], "rows": [[...], ...]}`` with JSON-ready values."""
    return {"columns": [str(c) for c in df.columns],
            "rows": [plain(list(r)) for r in df.itertuples(index=False, name=None)]}


# -- cells -----------------------------------------------------------------------------------------

def cell_columns(judgments: pd.DataFrame) -> list[str]:
    """The columns naming a cell: :data:`CELL_KEY`, plus ``decoding`` when the judgments carry it."""
    return [*CELL_KEY, *(["decoding"] if "decoding" in judgments.columns else [])]


def _sort_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in ("dataset", "judge", "protocol", "temperature", "step", "decoding") if c in frame.columns]


def cells_from_frame(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """One JSON-ready dict per row of a reliability frame, sorted by dataset, judge, protocol,
    temperature.  All columns are kept (figures as fractions, intervals as ``X_lo``/``X_hi``)."""
    if frame is None or frame.empty:
        return []
    missing = [c for c in CELL_KEY if c not in frame.columns]
    if missing:
        raise ValueError(f"reliability frame lacks cell column(s) {missing}")
    f = frame.sort_values(_sort_columns(frame), kind="stable").reset_index(drop=True)
    cells = []
    for rec in f.to_dict(orient="records"):
        cell = plain(rec)
        cell["temperature"] = float(cell["temperature"]) if cell.get("temperature") is not None else None
        cells.append(cell)
    return cells


def _key_of(rec: Mapping[str, Any], cols: Sequence[str]) -> tuple[Any, ...]:
    return tuple(float(rec[c]) if c == "temperature" and rec.get(c) is not None else rec.get(c)
                 for c in cols) + (rec.get("step") or "",)


def cell_key(cell: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(cell.get(k) for k in CELL_KEY) + ((cell.get("step") or "",) if "step" in cell else ())


def _attach(cells: list[dict[str, Any]], frame: pd.DataFrame | None, *, under: str | None) -> None:
    """Merge the rows of ``frame`` (keyed by the cell columns it shares with the cells, and ``step``)
    into the cells: as a sub-dict ``cell[under]``, or as top-level keys when ``under`` is None."""
    if frame is None or frame.empty or not cells:
        return
    cols = [c for c in (*CELL_KEY, "decoding") if c in frame.columns and c in cells[0]]
    by_key: dict[tuple[Any, ...], dict[str, Any]] = {}
    for rec in frame.to_dict(orient="records"):
        rec = plain(rec)
        by_key[_key_of(rec, cols)] = {k: v for k, v in rec.items() if k not in (*CELL_KEY, "decoding", "step")}
    for cell in cells:
        got = by_key.get(_key_of(cell, cols))
        if got is None:
            continue
        if under:
            cell[under] = got
        else:
            cell.update({k: v for k, v in got.items() if k not in cell})


def reliability_frame(judgments: pd.DataFrame, *, unparsed: str, confidence: float, n_bootstrap: int,
                      seed: int, by: Sequence[str] = CELL_KEY) -> pd.DataFrame:
    """Per-cell reliability figures: :func:`verdictlab.stats.reliability` with q measured when needed."""
    return reliability(judgments, unparsed=unparsed, q="auto", confidence=confidence, n_bootstrap=n_bootstrap,
                       seed=seed, by=by)


#: Agreement/bias columns of :func:`verdictlab.stats.agreement_by_cell` shown beside C, phi, A, T,
#: with the label used in tables.
AGREEMENT_FIELDS: tuple[tuple[str, str], ...] = (
    ("exact_match", "exact match"),
    ("kappa", "Cohen κ"),
    ("alpha", "Krippendorff α"),
    ("kappa_deflation", "κ deflation"),
    ("position_bias", "position bias"),
    ("test_retest", "test–retest"),
    ("consistency_bias_paradox", "paradox"),
    ("verbosity_bias", "verbosity r"),
)


#: Cell columns from registered cell-column analyses (and the decoding mode) that the renderers show
#: when a cell has them, with their table labels.
EXTRA_CELL_FIELDS: tuple[tuple[str, str], ...] = (
    ("decoding", "decoding"),
    ("design", "design"),
    ("A_3class", "A 3-class"),
    ("macro_f1", "macro F1"),
    ("C_expected", "C expected"),
    ("phi_expected", "φ expected"),
    ("A_expected", "A expected"),
    ("T_expected", "T expected"),
)


def extra_cell_fields(cells: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The :data:`EXTRA_CELL_FIELDS` some cell has a value for (``decoding`` only when a cell is not
    ``free``)."""
    out = []
    for k, lab in EXTRA_CELL_FIELDS:
        vals = [c.get(k) for c in cells if c.get(k) is not None]
        if vals and (k not in ("decoding", "design") or any(v not in ("free", "fixed") for v in vals)):
            out.append((k, lab))
    return out


def region_thresholds() -> dict[str, float]:
    """Thresholds of the failure regions (the defaults of :func:`verdictlab.stats.failure_region`)."""
    return dict(DEFAULT_REGION_THRESHOLDS)


def classify_region(C: float | None, phi: float | None, *, c_threshold: float = DEFAULT_C_HIGH,
                    phi_threshold: float = DEFAULT_PHI_LOW) -> str | None:
    """Failure region of a cell on (C, phi) by :func:`verdictlab.stats.failure_region`; ``None`` when
    either figure is undefined."""
    if C is None or phi is None:
        return None
    return str(failure_region(float(C), float(phi), c_high=c_threshold, phi_low=phi_threshold))


def mark_best(cells: list[dict[str, Any]]) -> None:
    """Set ``best_T_in_dataset`` from :func:`verdictlab.stats.best_in_group` (the highest T of each
    dataset, only where the dataset has at least two cells with a defined T)."""
    if not cells:
        return
    f = pd.DataFrame({"dataset": [str(c["dataset"]) for c in cells],
                      "T": [np.nan if c.get("T") is None else c["T"] for c in cells]})
    for c, best in zip(cells, best_in_group(f, by="dataset", value="T"), strict=True):
        c["best_T_in_dataset"] = bool(best)


def format_dispersion(cells: list[dict[str, Any]]) -> list[DispersionRow]:
    """ΔT_fmt per (judge, dataset, temperature[, step, decoding]) from
    :func:`verdictlab.stats.format_dispersion` over the report's cells, with T per protocol."""
    if not cells:
        return []
    f = pd.DataFrame([{k: c.get(k) for k in (*CELL_KEY, "step", "decoding", "T") if k in c} for c in cells])
    f["T"] = pd.to_numeric(f["T"], errors="coerce")
    by = ["judge", "dataset", "temperature"] + [c for c in ("step", "decoding") if c in f.columns]
    if "step" in f.columns:
        f["step"] = f["step"].fillna("")
    d = stats_format_dispersion(f, by=by)
    t_by: dict[tuple[Any, ...], dict[str, Any]] = {}
    for c in cells:
        t_by.setdefault(tuple(str(c.get(k) or "") for k in by), {})[str(c["protocol"])] = c.get("T")
    out: list[DispersionRow] = []
    for rec in d.to_dict(orient="records"):
        r = plain(rec)
        row: dict[str, Any] = {k: r.get(k) for k in by}
        row.update(n_protocols=int(r["n_protocols"]), n_protocols_with_T=int(r["n_protocols_with_T"]),
                   T_by_protocol=t_by.get(tuple(str(r.get(k) or "") for k in by), {}),
                   T_min=r["T_min"], T_max=r["T_max"], protocol_min=r["protocol_min"],
                   protocol_max=r["protocol_max"], delta_T_fmt=r["delta_T_fmt"])
        out.append(row)  # type: ignore[arg-type]
    return out


# -- engine accounting ------------------------------------------------------------------------

def engine_accounting(attempts: pd.DataFrame, judgments: pd.DataFrame) -> list[dict[str, Any]]:
    """:func:`verdictlab.stats.accounting.engine_accounting`, each row scrubbed of anything secret-shaped
    and made JSON-ready (the report shows error texts)."""
    return [plain(redact(row)) for row in stats_engine_accounting(attempts, judgments)]


# -- items that break the judge -------------------------------------------------------------------

MAX_RAW_CHARS = 4000


def _pair_flags(judgments: pd.DataFrame, key: list[str], unparsed: str) -> pd.DataFrame:
    """Per (cell, item): flipped / unstable and the modal verdict of each order, from
    :func:`verdictlab.stats.modal_verdicts` (the units behind C and phi)."""
    mv = modal_verdicts(judgments, unparsed=unparsed, by=key[:-1])
    if mv.empty:
        return pd.DataFrame(columns=[*key, "flipped", "unstable", "modal_AB", "modal_BA"])
    if "step" not in mv.columns:
        mv["step"] = ""
    mv["flip"] = mv["order_invariant"].eq(False).fillna(False).astype(bool)
    mv["unstable"] = ~mv["consistent"].astype(bool)
    g = mv.groupby(key, sort=False, dropna=False)
    flags = g.agg(flipped=("flip", "any"), unstable=("unstable", "any"))
    modes = mv.pivot_table(index=key, columns="order", values="mode", aggfunc="first", dropna=False)
    for o in ORDERS:
        flags[f"modal_{o}"] = modes[o].reindex(flags.index) if o in modes.columns else None
    return flags.reset_index()


def _raw_view(recs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    order_view: dict[str, list[dict[str, Any]]] = {o: [] for o in ORDERS}
    for rec in recs:
        raw = rec.get("raw_output")
        raw = "" if raw is None or (isinstance(raw, float) and math.isnan(raw)) else str(raw)
        cut = len(raw) > MAX_RAW_CHARS
        order_view.setdefault(rec["order"], []).append(plain({
            "rep": rec.get("rep"), "verdict": rec.get("verdict"),
            "parse_status": rec.get("parse_status"), "parse_detail": rec.get("parse_detail"),
            "raw_output": raw[:MAX_RAW_CHARS] + (" … [cut]" if cut else ""),
        }))
    return order_view


def broken_items(judgments: pd.DataFrame, items: pd.DataFrame, *, unparsed: str = DEFAULT_UNPARSED,
                 limit: int = 300) -> BrokenItems:
    """Pairs whose verdict flipped under the swap or was unstable across repetitions, with the
    question, both responses and every raw output (parsed or not), per order.

    The flags are those of :func:`verdictlab.stats.modal_verdicts` under the report's policy:
    *flipped* = the pair is not order-invariant (P = 0: modal verdicts of AB and BA differ, or one is
    split); *unstable* = an order's verdicts are not all equal (N = 0).  Under ``unparsed="exclude"``
    unparsed verdicts are left out of both (they are still shown); under ``"wrong"`` they are a value
    of their own (two unparsed modes agree, as phi counts them).

    Returns ``{"n_total", "n_flipped", "n_unstable", "n_shown", "limit", "rows"}``; flipped pairs come
    first.  Raw outputs longer than ``MAX_RAW_CHARS`` are cut (and say so).
    """
    empty: BrokenItems = {"n_total": 0, "n_flipped": 0, "n_unstable": 0, "n_shown": 0, "limit": limit, "rows": []}
    if judgments.empty:
        return empty
    j = judgments.copy()
    j["step"] = j["step"].fillna("") if "step" in j.columns else ""
    j = j.sort_values(["rep"], kind="stable")
    # a unit is (cell, item, order): with a decoding column, free and constrained verdicts are other cells
    key = ["judge", "protocol", "dataset", "temperature", "step",
           *(["decoding"] if "decoding" in j.columns else []), "item_id"]
    flags = _pair_flags(j, key, unparsed)
    flagged = flags[flags["flipped"] | flags["unstable"]].copy()
    if flagged.empty:
        return empty
    flagged["_s"] = flagged[key].astype(str).agg("\x1f".join, axis=1)
    flagged = flagged.sort_values(["flipped", "unstable", "_s"], ascending=[False, False, True], kind="stable")
    shown = flagged.head(limit)
    # the rows of the shown pairs: one merge, one sort, one to_dict (no per-pair pandas work)
    sub = j.astype({"temperature": float}).merge(shown[key].astype({"temperature": float}), on=key, how="inner")
    sub = sub.sort_values(["order", "rep"], kind="stable")
    raw_groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    cols = [c for c in (*key, "order", "rep", "verdict", "parse_status", "parse_detail", "raw_output",
                        "category", "label") if c in sub.columns]
    for rec in sub[cols].to_dict(orient="records"):
        raw_groups.setdefault(tuple(rec[c] for c in key), []).append(rec)
    item_lookup: dict[tuple[str, str], dict[str, Any]] = {}
    if items is not None and not items.empty:
        for rec in items.to_dict(orient="records"):
            item_lookup[(str(rec.get("dataset")), str(rec.get("item_id")))] = rec
    rows = []
    for rec in shown.to_dict(orient="records"):
        k = tuple(float(rec[c]) if c == "temperature" else rec[c] for c in key)
        it = item_lookup.get((str(rec["dataset"]), str(rec["item_id"])), {})
        recs = raw_groups.get(k, [])
        cats = [r["category"] for r in recs if isinstance(r.get("category"), str)]
        label = it.get("label")
        if label is None:
            labels = [r["label"] for r in recs if isinstance(r.get("label"), str)]
            label = labels[0] if labels else None
        raw_meta = it.get("meta")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        rows.append(plain({
            **{c: rec[c] for c in key}, "category": cats[0] if cats else it.get("category"), "label": label,
            # a paraphrase probe keeps the question it rewrote, for the audit trail
            "original_question": meta.get("original_question"), "paraphrase_source": meta.get("paraphrase_source"),
            "flipped": bool(rec["flipped"]), "unstable": bool(rec["unstable"]),
            "modal_AB": rec.get("modal_AB"), "modal_BA": rec.get("modal_BA"),
            "question": it.get("question"), "response_a": it.get("response_a"),
            "response_b": it.get("response_b"), "orders": _raw_view(recs),
        }))
    return {"n_total": len(flagged), "n_flipped": int(flagged["flipped"].sum()),
            "n_unstable": int(flagged["unstable"].sum()), "n_shown": len(rows), "limit": limit, "rows": rows}


# -- analyses ------------------------------------------------------------------------------------

#: title and one-line reading of each registered analysis (kept for templates and scripts that
#: read it; the registry is the source)
def further_titles() -> dict[str, tuple[str, str]]:
    return {a.name: (a.title, a.description) for a in analyses.registered()}


def analysis_tables(inp: analyses.AnalysisInput) -> dict[str, AnalysisTable]:
    """Every registered analysis the run supports, as ``{"title", "description", "columns", "rows"}``
    (or ``{"title", "error"}`` for one that failed: a report never fails for an analysis)."""
    titles = further_titles()
    out: dict[str, AnalysisTable] = {}
    for name, t in analyses.run_analyses(inp).items():
        title, desc = titles.get(name, (name, ""))
        if isinstance(t, str):
            out[name] = {"title": title, "description": desc, "error": redact(t)}
        else:
            out[name] = {"title": title, "description": desc, **frame_table(t)}  # type: ignore[typeddict-item]
    return out


def _cell_column_frames(inp: analyses.AnalysisInput) -> list[pd.DataFrame]:
    frames = []
    for cc in analyses.registered_cell_columns():
        try:
            f = cc.fn(inp)
        except Exception:  # noqa: BLE001 - extra cell columns never break the report
            continue
        if f is not None and len(f):
            frames.append(f)
    return frames


# -- run meta ------------------------------------------------------------------------------------

def _package_version() -> str:
    """verdictlab's version from the installed package metadata (the report never imports the package
    root, which imports the report)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("verdictlab")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        return "unknown"


def run_meta(store: RunStore, judgments: pd.DataFrame) -> dict[str, Any]:
    """Key-free meta of the run: the store's meta table (secrets removed) plus what the judgments
    show (judges, datasets, protocols, temperatures, counts) and the versions of this report."""
    import platform

    vl_version = _package_version()

    meta = redact(store.all_meta())
    out: dict[str, Any] = {"run_dir": str(store.run_dir), "meta": plain(meta)}
    out["n_judgments"] = int(len(judgments))
    for col, name in (("judge", "judges"), ("dataset", "datasets"), ("protocol", "protocols")):
        out[name] = sorted(map(str, judgments[col].dropna().unique())) if len(judgments) else []
    out["temperatures"] = sorted(float(t) for t in judgments["temperature"].dropna().unique()) \
        if len(judgments) else []
    out["report_versions"] = {"verdictlab": str(vl_version), "python": platform.python_version(),
                              "numpy": np.__version__, "pandas": pd.__version__}
    return out


def _abbreviate(judge: str) -> str:
    """``sim:skill=0.7,position_lock=0.35,noise=0.1`` -> ``sim:s=0.7,pl=0.35,n=0.1`` (key initials)."""
    head, sep, tail = judge.partition(":")
    if not sep or "=" not in tail:
        return judge
    parts = []
    for kv in tail.split(","):
        k, eq, v = kv.partition("=")
        parts.append(("".join(w[:1] for w in k.split("_")) + "=" + v) if eq else kv)
    return f"{head}:{','.join(parts)}"


def judge_labels(judges: list[str], *, width: int = 26) -> dict[str, str]:
    """Short display names for judge ids.  Ids up to ``width`` characters stay as they are; longer
    ``key=value`` ids get their keys abbreviated to initials (``sim:s=0.7,pl=0.35,...``); what is
    still too long is cut with an ellipsis, numbered (``J1 ...``) if cutting made two names equal.
    Reports list the full ids beside the short names."""
    cut: dict[str, str] = {}
    for j in judges:
        lab = j if len(j) <= width else _abbreviate(j)
        cut[j] = lab if len(lab) <= width else lab[: width - 1] + "…"
    if len(set(cut.values())) < len(cut):
        cut = {j: (lab if lab == j else f"J{i + 1} {lab[: width - 4]}…")
               for i, (j, lab) in enumerate(cut.items())}
    return cut


# -- the report ----------------------------------------------------------------------------------

def _check_args(unparsed: str, confidence: float) -> None:
    if unparsed not in UNPARSED_POLICIES:
        raise ValueError(f"unparsed must be one of {UNPARSED_POLICIES}, got {unparsed!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


def _load(store_or_run_dir: RunStore | str | Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame,
                                                               list[Any], dict[str, Any]]:
    own = not isinstance(store_or_run_dir, RunStore)
    store = store_or_run_dir if isinstance(store_or_run_dir, RunStore) else open_store(store_or_run_dir)
    try:
        judgments = store.judgments()
        if "decoding" in judgments.columns:
            judgments["decoding"] = judgments["decoding"].fillna("free")
        return judgments, store.attempts(), store.items_frame(), list(store.items()), run_meta(store, judgments)
    finally:
        if own:
            store.close()


def _cells(judgments: pd.DataFrame, inp: analyses.AnalysisInput, frame: pd.DataFrame | None,
           items_frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The cells: reliability figures, agreement, region, best mark, sentence, extra columns."""
    by = cell_columns(judgments)
    if frame is None:
        frame = (reliability_frame(judgments, unparsed=inp.unparsed, confidence=inp.confidence,
                                   n_bootstrap=inp.n_bootstrap, seed=inp.seed, by=by)
                 if len(judgments) else pd.DataFrame(columns=by))
    frame = frame.copy()
    if len(frame) and inp.extra.get("adaptive_design"):
        # an adaptive run: C and T of its cells from the C pairs (stats.adaptive), not from truncated units
        frame = with_adaptive_figures(frame, inp.extra["adaptive_design"], judgments, unparsed=inp.unparsed,
                                      confidence=inp.confidence, n_bootstrap=inp.n_bootstrap, seed=inp.seed)
    if len(frame):
        region = failure_region(frame["C"].to_numpy(float), frame["phi"].to_numpy(float),
                                c_high=DEFAULT_C_HIGH, phi_low=DEFAULT_PHI_LOW)
        frame["region"] = np.where(np.asarray(region) == "undefined", None, region)
    cells = cells_from_frame(frame)
    if len(judgments):
        its = items_frame if items_frame is not None and "response_a" in items_frame.columns else None
        _attach(cells, agreement_by_cell(judgments, unparsed=inp.unparsed, items=its, by=by), under="agreement")
    for f in _cell_column_frames(inp):
        _attach(cells, f, under=None)
    mark_best(cells)
    for c in cells:
        c["sentence"] = cell_sentence(c)
    return cells


def build_report(store_or_run_dir: RunStore | str | Path, *, unparsed: str = DEFAULT_UNPARSED,
                 confidence: float = 0.95, n_bootstrap: int = 1000, seed: int = 0,
                 max_broken_items: int = 300, frame: pd.DataFrame | None = None,
                 expected_reps: int | None = None) -> Report:
    """Everything a report shows, as a typed :class:`~verdictlab.report.model.Report`.

    Parameters
    ----------
    store_or_run_dir : an open :class:`RunStore` or a run directory holding ``run.sqlite``.
    unparsed : ``"exclude"`` (default; unparsed verdicts are left out and counted) or ``"wrong"``.
        Applies to every figure: the cells and every registered analysis.
    confidence : level of the intervals (Wilson for proportions, pair-level bootstrap for T).
    n_bootstrap : bootstrap resamples for the T interval.
    seed : bootstrap seed.
    max_broken_items : at most this many "items that break the judge" are kept.
    frame : a precomputed reliability frame (skips :func:`verdictlab.stats.reliability`).
    expected_reps : R for the expected figures (``analyses.expected``); default the cell's own.
    """
    _check_args(unparsed, confidence)
    all_judgments, attempts, items_frame, item_objects, meta = _load(store_or_run_dir)
    inp = analyses.AnalysisInput(all_judgments, items=item_objects, items_frame=items_frame, unparsed=unparsed,
                                 confidence=confidence, n_bootstrap=n_bootstrap, seed=seed,
                                 extra={**({"expected_reps": expected_reps} if expected_reps else {}),
                                        "adaptive_design": (meta.get("meta") or {}).get("adaptive_design")})
    # pairwise figures only see pairwise rows; pointwise (rubric / graded) items get their own tables
    point = inp.point_mask
    judgments = all_judgments[~point] if point.any() else all_judgments
    cells = _cells(judgments, inp, frame, items_frame)
    meta["engine"] = (engine_accounting(attempts, all_judgments) if len(all_judgments) or len(attempts)
                      else [])
    meta["parse_status_counts"] = parse_status_counts(all_judgments)
    meta["n_pointwise_judgments"] = int(point.sum())
    meta["fallback_rules"] = fallback_rule_counts(all_judgments)
    labels = judge_labels(sorted({str(c["judge"]) for c in cells} | set(meta.get("judges", []))))
    for c in cells:
        c["judge_label"] = labels.get(str(c["judge"]), str(c["judge"]))
    checklist: list[CheckItem] = validation_checklist(  # type: ignore[assignment]
        cells, judgments, cell_key=cell_columns(judgments))
    return Report(
        run=meta, unparsed=unparsed, confidence=confidence, n_bootstrap=n_bootstrap, seed=seed,
        cells=cells, judge_labels=labels, region_thresholds=region_thresholds(),
        format_dispersion=format_dispersion(cells), checklist=checklist,
        broken_items=broken_items(judgments, items_frame, unparsed=unparsed, limit=max_broken_items),
        extra_tables=analysis_tables(inp) if len(all_judgments) else {},
    )


#: keys of :func:`build_report` that ``verdictlab report --format json`` prints (the stable JSON schema)
JSON_KEYS: tuple[str, ...] = ("schema_version", "run", "unparsed", "cells")


def report_json(report: Mapping[str, Any]) -> dict[str, Any]:
    """The stable JSON document: ``{"schema_version", "run", "unparsed", "cells"}``.

    ``run`` carries the key-free meta, the engine accounting, the interval settings, the validation
    checklist, the format dispersion and the registered analyses (``run.analyses[name]``: title,
    description, columns, rows); each cell carries its figures (fractions in [0, 1], ``null`` when
    undefined), intervals (``X_lo``/``X_hi``), Ns, region, sentence and, when available, ``agreement``
    and the columns of registered cell-column analyses."""
    run = dict(report["run"])
    run["intervals"] = {"confidence": report.get("confidence"), "n_bootstrap": report.get("n_bootstrap"),
                        "seed": report.get("seed")}
    run["checklist"] = report.get("checklist", [])
    run["format_dispersion"] = report.get("format_dispersion", [])
    run["analyses"] = report.get("extra_tables", {})
    return plain({"schema_version": report["schema_version"], "run": run, "unparsed": report["unparsed"],
                  "cells": report["cells"]})
