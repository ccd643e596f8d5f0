"""Build the report of one run: a plain dict that the terminal, JSON, HTML and plot renderers share.

The figures themselves come from :func:`verdictlab.stats.reliability` (and, when present, the
agreement/bias function of :mod:`verdictlab.stats`); this module only gathers them per cell, adds
the run's audit trail (store meta, engine accounting), the validation-protocol checklist, the
format dispersion and the items that break the judge.  It never computes a reliability figure
itself.

Everything in the report is JSON-ready: fractions in [0, 1], ``None`` for undefined figures
(NaN), no numpy scalars, and no secret (API keys, tokens, passwords are removed from the meta).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..stats import agreement_by_cell, failure_region, reliability
from ..stats.regions import DEFAULT_C_HIGH, DEFAULT_PHI_LOW, REGIONS
from ..store import RunStore, open_store

REPORT_SCHEMA_VERSION = 1
CELL_KEY: tuple[str, ...] = ("judge", "protocol", "dataset", "temperature")
UNPARSED_POLICIES: tuple[str, ...] = ("exclude", "wrong")

#: Failure-region thresholds on (C, phi): the documented defaults of
#: :func:`verdictlab.stats.failure_region` (consistent when C >= c_high, order-invariant when
#: phi <= phi_low).
DEFAULT_REGION_THRESHOLDS: dict[str, float] = {"c_threshold": DEFAULT_C_HIGH, "phi_threshold": DEFAULT_PHI_LOW}
REGION_NAMES: tuple[str, ...] = tuple(REGIONS)

# -- secrets ----------------------------------------------------------------------------------

_SECRET_KEY = re.compile(r"(api[_-]?key|secret|passw|authoriz|credential|bearer|access[_-]?token|"
                         r"auth[_-]?token|session[_-]?token|^token$|private[_-]?key)", re.IGNORECASE)
_SECRET_VALUE = re.compile(r"(sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{8,}|hf_[A-Za-z0-9]{8,}|"
                           r"gsk_[A-Za-z0-9]{8,}|AIza[0-9A-Za-z_\-]{20,}|"
                           r"(?i:bearer)\s+[A-Za-z0-9._\-]{8,})")
REDACTED = "[redacted]"


def redact(value: Any) -> Any:
    """Drop secret-looking keys and mask secret-looking strings, recursively.

    Keys named like ``api_key``, ``secret``, ``password``, ``authorization``, ``token`` are dropped;
    strings that look like provider keys (``sk-...``, ``hf_...``, ``Bearer ...``) are masked.
    """
    if isinstance(value, Mapping):
        return {str(k): redact(v) for k, v in value.items() if not _SECRET_KEY.search(str(k))}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return _SECRET_VALUE.sub(REDACTED, value)
    return value


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


def cells_from_frame(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """One JSON-ready dict per row of a reliability frame, sorted by dataset, judge, protocol,
    temperature.  All columns are kept (figures as fractions, intervals as ``X_lo``/``X_hi``)."""
    if frame is None or frame.empty:
        return []
    missing = [c for c in CELL_KEY if c not in frame.columns]
    if missing:
        raise ValueError(f"reliability frame lacks cell column(s) {missing}")
    f = frame.copy()
    sort_cols = [c for c in ("dataset", "judge", "protocol", "temperature", "step") if c in f.columns]
    f = f.sort_values(sort_cols, kind="stable").reset_index(drop=True)
    cells = []
    for rec in f.to_dict(orient="records"):
        cell = plain(rec)
        cell["temperature"] = float(cell["temperature"]) if cell.get("temperature") is not None else None
        cells.append(cell)
    return cells


def cell_key(cell: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(cell.get(k) for k in CELL_KEY) + ((cell.get("step") or "",) if "step" in cell else ())


# -- figures from verdictlab.stats ---------------------------------------------------------------

def reliability_frame(judgments: pd.DataFrame, *, unparsed: str, confidence: float, n_bootstrap: int,
                      seed: int) -> pd.DataFrame:
    """Per-cell reliability figures (:func:`verdictlab.stats.reliability`, q measured when needed)."""
    return reliability(judgments, unparsed=unparsed, q="auto", confidence=confidence, n_bootstrap=n_bootstrap,
                       seed=seed)


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


def agreement_frame(judgments: pd.DataFrame, *, unparsed: str,
                    items: pd.DataFrame | None = None) -> pd.DataFrame | None:
    """The per-cell agreement/bias frame of :func:`verdictlab.stats.agreement_by_cell` (with the
    items' response texts for verbosity bias when the store has them)."""
    if judgments.empty:
        return None
    its = items if items is not None and not items.empty and "response_a" in items.columns else None
    return agreement_by_cell(judgments, unparsed=unparsed, items=its)


def _attach_agreement(cells: list[dict[str, Any]], agr: pd.DataFrame | None) -> None:
    if agr is None or agr.empty:
        return
    by_key: dict[tuple[Any, ...], dict[str, Any]] = {}
    for rec in agr.to_dict(orient="records"):
        rec = plain(rec)
        key = (rec["judge"], rec["protocol"], rec["dataset"], float(rec["temperature"]), rec.get("step") or "")
        by_key[key] = {k: v for k, v in rec.items() if k not in CELL_KEY and k != "step"}
    for cell in cells:
        key = (cell["judge"], cell["protocol"], cell["dataset"], float(cell["temperature"]),
               cell.get("step") or "")
        if key in by_key:
            cell["agreement"] = by_key[key]


def region_thresholds() -> dict[str, float]:
    """Thresholds of the failure regions (the defaults of :func:`verdictlab.stats.failure_region`)."""
    return dict(DEFAULT_REGION_THRESHOLDS)


def classify_region(C: float | None, phi: float | None, *, c_threshold: float,
                    phi_threshold: float) -> str | None:
    """Failure region of a cell on (C, phi) by :func:`verdictlab.stats.failure_region`; ``None`` when
    either figure is undefined."""
    if C is None or phi is None:
        return None
    return str(failure_region(float(C), float(phi), c_high=c_threshold, phi_low=phi_threshold))


# -- engine accounting ------------------------------------------------------------------------

def engine_accounting(attempts: pd.DataFrame, judgments: pd.DataFrame) -> list[dict[str, Any]]:
    """Per judge: trials stored, attempts, trials ok first time, retried, failed for good (with the
    last error), parse failures.  Uses the store's ``attempts`` table when it has rows; otherwise
    the judgments' own ``attempts``/``error`` columns."""
    rows: list[dict[str, Any]] = []
    judges = sorted(set(judgments["judge"].dropna()) | (set(attempts["judge"].dropna())
                                                         if not attempts.empty else set()))
    for judge in judges:
        j = judgments[judgments["judge"] == judge]
        row: dict[str, Any] = {"judge": judge, "trials": int(len(j))}
        row["parse_failures"] = int((j["parse_status"] == "failed").sum())
        row["parse_repaired"] = int((j["parse_status"] == "repaired").sum())
        row["parse_fallback"] = int((j["parse_status"] == "fallback").sum())
        a = attempts[attempts["judge"] == judge] if not attempts.empty else attempts
        if a is not None and not a.empty:
            a = a.sort_values(["trial_id", "attempt", "id"] if "id" in a.columns else ["trial_id", "attempt"])
            per = a.groupby("trial_id", sort=False)
            last = per.tail(1).set_index("trial_id")
            n_att = per.size()
            ok_last = last["outcome"].astype(str).str.lower().isin(["ok", "success", "succeeded"])
            row["source"] = "attempts table"
            row["attempts"] = int(len(a))
            row["ok_first_try"] = int((ok_last & (n_att.reindex(last.index) == 1)).sum())
            row["retried_then_ok"] = int((ok_last & (n_att.reindex(last.index) > 1)).sum())
            failed = last[~ok_last]
            row["failed_for_good"] = int(len(failed))
            errs = failed["error"].dropna().astype(str)
            row["last_error"] = redact(errs.iloc[-1]) if len(errs) else None
            kinds = a["error_kind"].dropna().astype(str)
            row["error_kinds"] = dict(Counter(kinds)) if len(kinds) else {}
        else:
            att = pd.to_numeric(j["attempts"], errors="coerce")
            err = j["error"].notna() & j["verdict"].isna() & (j["parse_status"] != "failed")
            row["source"] = "judgments table"
            row["attempts"] = int(att.fillna(1).sum()) if len(j) else 0
            row["ok_first_try"] = int(((att.fillna(1) <= 1) & ~err).sum())
            row["retried_then_ok"] = int(((att.fillna(1) > 1) & ~err).sum())
            row["failed_for_good"] = int(err.sum())
            errs = j.loc[err, "error"].dropna().astype(str)
            row["last_error"] = redact(errs.iloc[-1]) if len(errs) else None
            row["error_kinds"] = {}
        row["cost_usd"] = plain(pd.to_numeric(j["cost_usd"], errors="coerce").sum(min_count=1))
        row["tokens_in"] = plain(pd.to_numeric(j["tokens_in"], errors="coerce").sum(min_count=1))
        row["tokens_out"] = plain(pd.to_numeric(j["tokens_out"], errors="coerce").sum(min_count=1))
        row["cache_hits"] = int(pd.to_numeric(j["cache_hit"], errors="coerce").fillna(0).sum())
        rows.append(row)
    return rows


# -- format dispersion -----------------------------------------------------------------------

def format_dispersion(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ΔT_fmt = max − min of T over protocols for each (judge, dataset, temperature), with the
    protocols reaching T_min and T_max.  Cells whose T is undefined are left out (and counted);
    ΔT_fmt is ``None`` unless at least two protocols have a defined T."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for c in cells:
        groups.setdefault((c["judge"], c["dataset"], c["temperature"]), []).append(c)
    out = []
    for (judge, dataset, temp), cs in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        defined = [c for c in cs if c.get("T") is not None]
        rec: dict[str, Any] = {"judge": judge, "dataset": dataset, "temperature": temp,
                               "n_protocols": len(cs), "n_protocols_with_T": len(defined),
                               "T_by_protocol": {c["protocol"]: c.get("T") for c in cs}}
        if defined:
            lo = min(defined, key=lambda c: c["T"])
            hi = max(defined, key=lambda c: c["T"])
            # a spread needs two protocols with a defined T; one alone has no dispersion to show
            rec.update(T_min=lo["T"], T_max=hi["T"], protocol_min=lo["protocol"],
                       protocol_max=hi["protocol"],
                       delta_T_fmt=hi["T"] - lo["T"] if len(defined) >= 2 else None)
        else:
            rec.update(T_min=None, T_max=None, protocol_min=None, protocol_max=None, delta_T_fmt=None)
        out.append(rec)
    return out


def mark_best(cells: list[dict[str, Any]]) -> None:
    """Set ``best_T_in_dataset`` on the cell(s) with the highest T of each dataset (only where the
    dataset has at least two cells with a defined T: "best" is a comparison)."""
    best: dict[str, float] = {}
    n_defined: dict[str, int] = {}
    for c in cells:
        t = c.get("T")
        if t is not None:
            best[c["dataset"]] = max(best.get(c["dataset"], -math.inf), t)
            n_defined[c["dataset"]] = n_defined.get(c["dataset"], 0) + 1
    for c in cells:
        t = c.get("T")
        c["best_T_in_dataset"] = bool(t is not None and n_defined[c["dataset"]] > 1
                                      and math.isclose(t, best[c["dataset"]], abs_tol=1e-12))


# -- validation-protocol checklist ---------------------------------------------------------------

def validation_checklist(cells: list[dict[str, Any]], judgments: pd.DataFrame) -> list[dict[str, Any]]:
    """The minimum validation protocol, line by line, with pass/fail for this run."""
    items: list[dict[str, Any]] = []

    kappas = [c.get("agreement", {}).get("kappa") for c in cells]
    have_agreement = any("agreement" in c for c in cells)
    finite_k = [k for k in kappas if k is not None]
    items.append({
        "check": "Chance-corrected agreement (Cohen's κ / Krippendorff's α) reported, not only exact match",
        "passed": bool(finite_k),
        "detail": (f"κ reported for {len(finite_k)} of {len(cells)} cells" if have_agreement
                   else "no agreement figures in this report (stats agreement function unavailable "
                        "or no labelled pairs)"),
    })

    if judgments.empty:
        both = False
        detail = "no judgments"
    else:
        orders = judgments.groupby(list(CELL_KEY), dropna=False)["order"].agg(lambda s: set(s.dropna()))
        lacking = [k for k, v in orders.items() if v != {"AB", "BA"}]
        both = not lacking
        detail = ("every cell ran both orders (AB and BA)" if both else
                  f"{len(lacking)} of {len(orders)} cells lack an order, e.g. {_fmt_key(lacking[0])}")
    items.append({"check": "Both presentation orders run (position swap)", "passed": both, "detail": detail})

    reps = [c.get("repetitions") for c in cells if c.get("repetitions") is not None]
    min_rep = min(reps) if reps else 0
    items.append({"check": "At least 3 repetitions per trial (stochastic consistency measurable)",
                  "passed": bool(reps) and min_rep >= 3,
                  "detail": f"fewest repetitions in a cell: {min_rep}" if reps else "no cells"})

    datasets = sorted({c["dataset"] for c in cells})
    items.append({"check": "At least 2 contrasting benchmarks",
                  "passed": len(datasets) >= 2,
                  "detail": f"{len(datasets)} dataset(s): {', '.join(map(str, datasets)) or '—'}"})

    pb = [c.get("agreement", {}).get("position_bias") for c in cells]
    n_pb = sum(p is not None for p in pb)
    phis = [c.get("phi") for c in cells if c.get("phi") is not None]
    paradox = [c for c in cells if c.get("agreement", {}).get("consistency_bias_paradox")]
    checked = (n_pb == len(cells) and n_pb > 0) or (not have_agreement and len(phis) == len(cells) and phis)
    if paradox:
        extra = (f"; consistency–bias paradox (test–retest > 0.95 with position bias > 0.10) in "
                 f"{len(paradox)} cell(s), e.g. {_fmt_key(cell_key(paradox[0]))}")
    else:
        extra = ""
    items.append({"check": "Position bias checked even where test–retest is high",
                  "passed": bool(checked),
                  "detail": (f"position bias measured in {n_pb} of {len(cells)} cells" if have_agreement
                             else f"flip rate φ measured in {len(phis)} of {len(cells)} cells") + extra})

    failed = [c for c in cells if (c.get("parse_failure_rate") or 0) > 0]
    items.append({"check": "Unparsed verdicts counted and disclosed (never guessed)",
                  "passed": all(c.get("n_unparsed") is not None for c in cells) and bool(cells),
                  "detail": f"{sum((c.get('n_unparsed') or 0) for c in cells)} unparsed judgments; "
                            f"{len(failed)} cell(s) with parse failures"})
    return items


def _fmt_key(key: Any) -> str:
    return " × ".join(str(k) for k in key) if isinstance(key, tuple) else str(key)


# -- items that break the judge -------------------------------------------------------------------

MAX_RAW_CHARS = 4000


def _mode(seq: list[str]) -> str | None:
    """Modal value as in :mod:`verdictlab.stats`: ``"split"`` when two or more values share the top
    count, ``None`` when nothing is left (every verdict unparsed and excluded)."""
    if not seq:
        return None
    counts = Counter(seq).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return "split"
    return counts[0][0]


def broken_items(judgments: pd.DataFrame, items: pd.DataFrame, *, unparsed: str = "exclude",
                 limit: int = 300) -> dict[str, Any]:
    """Pairs whose verdict flipped under the swap or was unstable across repetitions, with the
    question, both responses and every raw output (parsed or not), per order.

    Follows the figures' rules: under ``unparsed="exclude"`` unparsed verdicts are left out of the
    modes and of the stability test (they are still shown); under ``"wrong"`` they are a value of
    their own (two unparsed modes agree, as phi counts them).  *Flipped* = the pair is not
    order-invariant: modal verdicts of AB and BA differ, or one is split (a tie for the top count).  *Unstable* = an order has more than one distinct value.

    Returns ``{"n_total": ..., "n_flipped": ..., "n_unstable": ..., "n_shown": ..., "rows": [...]}``;
    flipped pairs come first.  Raw outputs longer than ``MAX_RAW_CHARS`` are cut (and say so).
    """
    empty = {"n_total": 0, "n_flipped": 0, "n_unstable": 0, "n_shown": 0, "limit": limit, "rows": []}
    if judgments.empty:
        return empty
    j = judgments.copy()
    j["step"] = j["step"].fillna("")
    j["v"] = j["verdict"].astype("object").where(j["verdict"].notna(), "unparsed")
    j = j.sort_values(["rep"], kind="stable")
    key = ["judge", "protocol", "dataset", "temperature", "step", "item_id"]
    counted = j[j["verdict"].notna()] if unparsed == "exclude" else j
    by_order = counted.groupby(key + ["order"], sort=False, dropna=False)["v"].agg(list)
    per_item: dict[tuple[Any, ...], dict[str, list[str]]] = {}
    for k, vs in by_order.items():
        per_item.setdefault(k[:-1], {})[k[-1]] = vs
    flagged: list[tuple[tuple[Any, ...], bool, bool]] = []
    for k, orders in per_item.items():
        unstable = any(len(set(v)) > 1 for v in orders.values())
        m_ab, m_ba = _mode(orders.get("AB", [])), _mode(orders.get("BA", []))
        flipped = (m_ab is not None and m_ba is not None
                   and (m_ab != m_ba or m_ab == "split"))
        if flipped or unstable:
            flagged.append((k, flipped, unstable))
    n_flipped = sum(f for _, f, _ in flagged)
    n_unstable = sum(u for _, _, u in flagged)
    flagged.sort(key=lambda t: (not t[1], not t[2], tuple(map(str, t[0]))))
    shown = flagged[:limit]
    if not shown:
        return {**empty, "n_total": 0}
    # the rows of the shown pairs: one merge, one sort, one to_dict (no per-pair pandas work)
    shown_keys = pd.DataFrame([k for k, _, _ in shown], columns=key).astype({"temperature": float})
    sub = j.astype({"temperature": float}).merge(shown_keys, on=key, how="inner")
    sub = sub.sort_values(["order", "rep"], kind="stable")
    raw_groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for rec in sub[key + ["order", "rep", "verdict", "parse_status", "parse_detail", "raw_output",
                         "category", "label"]].to_dict(orient="records"):
        raw_groups.setdefault(tuple(rec[c] for c in key), []).append(rec)
    item_lookup: dict[tuple[str, str], dict[str, Any]] = {}
    if items is not None and not items.empty:
        for rec in items.to_dict(orient="records"):
            item_lookup[(str(rec.get("dataset")), str(rec.get("item_id")))] = rec
    rows = []
    for k, flipped, unstable in shown:
        judge, protocol, dataset, temperature, step, item_id = k
        it = item_lookup.get((str(dataset), str(item_id)), {})
        recs = raw_groups.get((judge, protocol, dataset, float(temperature), step, item_id), [])
        order_view: dict[str, list[dict[str, Any]]] = {"AB": [], "BA": []}
        for rec in recs:
            raw = rec.get("raw_output")
            raw = "" if raw is None or (isinstance(raw, float) and math.isnan(raw)) else str(raw)
            cut = len(raw) > MAX_RAW_CHARS
            order_view.setdefault(rec["order"], []).append(plain({
                "rep": rec.get("rep"), "verdict": rec.get("verdict"),
                "parse_status": rec.get("parse_status"), "parse_detail": rec.get("parse_detail"),
                "raw_output": raw[:MAX_RAW_CHARS] + (" … [cut]" if cut else ""),
            }))
        cats = [r["category"] for r in recs if isinstance(r.get("category"), str)]
        cat = cats[0] if cats else it.get("category")
        label = it.get("label")
        if label is None:
            labels = [r["label"] for r in recs if isinstance(r.get("label"), str)]
            label = labels[0] if labels else None
        rows.append(plain({
            "judge": judge, "protocol": protocol, "dataset": dataset, "temperature": temperature,
            "step": step, "item_id": item_id, "category": cat, "label": label,
            "flipped": flipped, "unstable": unstable,
            "modal_AB": _mode(per_item[k]["AB"]) if "AB" in per_item[k] else None,
            "modal_BA": _mode(per_item[k]["BA"]) if "BA" in per_item[k] else None,
            "question": it.get("question"), "response_a": it.get("response_a"),
            "response_b": it.get("response_b"), "orders": order_view,
        }))
    return {"n_total": len(flagged), "n_flipped": int(n_flipped), "n_unstable": int(n_unstable),
            "n_shown": len(rows), "limit": limit, "rows": rows}


# -- further tables (remedies, juries, flask, geval, probes, debate, rubric, pointwise) ------------

#: title and one-line reading of each table of :func:`verdictlab.remedies.extra_tables`
FURTHER_TABLES: dict[str, tuple[str, str]] = {
    "remedies": ("Remedies", "How running both orders, averaging P(A) over orders, or a majority over k "
                             "repetitions moves A, φ, C, T and the tie rate, and what each costs in calls per "
                             "verdict (d = change against no remedy)."),
    "juries": ("Juries", "Majority votes of k samples of one judge (homogeneous) or of several judges: observed "
                         "accuracy beside the prediction under independence and the ρ-corrected prediction "
                         "(ρ = error correlation between jurors)."),
    "flask": ("FLASK criteria", "Per-criterion calls and the verdict aggregated over criteria."),
    "geval": ("G-Eval contradictions", "Calls whose stated winner contradicts their own 1–5 scores."),
    "probes": ("Probes", "Controlled edits of the pairs and how often the verdict moves with them."),
    "debate": ("Debate", "Rounds of debate and how the verdict changes across them."),
    "rubric": ("Rubric (pointwise)", "PASS / FAIL / UNKNOWN per criterion against the human labels."),
    "pointwise": ("Pointwise grades", "Graded pointwise verdicts against the human labels."),
}


def _pointwise_mask(judgments: pd.DataFrame, items: list[Any]) -> pd.Series:
    try:
        from ..remedies import pointwise_mask
    except ImportError:  # pragma: no cover - part of the package
        v = judgments["verdict"]
        return v.notna() & ~v.isin(["A", "B", "tie"])
    return pointwise_mask(judgments, items)


def frame_table(df: pd.DataFrame) -> dict[str, Any]:
    """A DataFrame as ``{"columns": [...], "rows": [[...], ...]}`` with JSON-ready values."""
    return {"columns": [str(c) for c in df.columns],
            "rows": [plain(list(r)) for r in df.itertuples(index=False, name=None)]}


def further_tables(judgments: pd.DataFrame, items: list[Any]) -> dict[str, Any]:
    """The run's further tables from :func:`verdictlab.remedies.extra_tables` (each as
    :func:`frame_table`), or ``{"error": ...}`` if they could not be computed -- a report never
    fails for them."""
    try:
        from ..remedies import extra_tables
    except ImportError:  # pragma: no cover - part of the package
        return {}
    try:
        tables = extra_tables(judgments, items)
    except Exception as e:  # noqa: BLE001 - shown in the report instead of breaking it
        return {"error": redact(f"{type(e).__name__}: {e}")}
    return {name: frame_table(df) for name, df in tables.items()}


# -- run meta ------------------------------------------------------------------------------------

def run_meta(store: RunStore, judgments: pd.DataFrame) -> dict[str, Any]:
    """Key-free meta of the run: the store's meta table (secrets removed) plus what the judgments
    show (judges, datasets, protocols, temperatures, counts) and the versions of this report."""
    import platform

    from .. import __version__ as vl_version  # type: ignore[attr-defined]

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

def build_report(store_or_run_dir: RunStore | str | Path, *, unparsed: str = "exclude",
                 confidence: float = 0.95, n_bootstrap: int = 1000, seed: int = 0,
                 max_broken_items: int = 300,
                 frame: pd.DataFrame | None = None) -> dict[str, Any]:
    """Everything a report shows, as a JSON-ready dict.

    Parameters
    ----------
    store_or_run_dir : an open :class:`RunStore` or a run directory holding ``run.sqlite``.
    unparsed : ``"exclude"`` (default; unparsed verdicts are left out and counted) or ``"wrong"``.
    confidence : level of the intervals (Wilson for proportions, pair-level bootstrap for T).
    n_bootstrap : bootstrap resamples for the T interval.
    seed : bootstrap seed.
    max_broken_items : at most this many "items that break the judge" are kept.
    frame : a precomputed reliability frame (skips :func:`verdictlab.stats.reliability`).
    """
    if unparsed not in UNPARSED_POLICIES:
        raise ValueError(f"unparsed must be one of {UNPARSED_POLICIES}, got {unparsed!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    own = not isinstance(store_or_run_dir, RunStore)
    store = open_store(store_or_run_dir) if own else store_or_run_dir
    try:
        all_judgments = store.judgments()
        attempts = store.attempts()
        items = store.items_frame()
        item_objects = store.items()
        meta = run_meta(store, all_judgments)
    finally:
        if own:
            store.close()
    # pairwise figures only see pairwise rows; pointwise (rubric / graded) items get their own tables
    point = _pointwise_mask(all_judgments, item_objects)
    judgments = all_judgments[~point] if point.any() else all_judgments
    if frame is None:
        frame = (reliability_frame(judgments, unparsed=unparsed, confidence=confidence,
                                   n_bootstrap=n_bootstrap, seed=seed)
                 if len(judgments) else pd.DataFrame(columns=list(CELL_KEY)))
    cells = cells_from_frame(frame)
    if len(judgments):
        _attach_agreement(cells, agreement_frame(judgments, unparsed=unparsed, items=items))
    thresholds = region_thresholds()
    for c in cells:
        c["region"] = classify_region(c.get("C"), c.get("phi"), **thresholds)
    mark_best(cells)
    meta["engine"] = (engine_accounting(attempts, all_judgments) if len(all_judgments) or len(attempts)
                      else [])
    parse_counts = (all_judgments["parse_status"].value_counts(dropna=False) if len(all_judgments)
                    else pd.Series())
    meta["parse_status_counts"] = {str(k): int(v) for k, v in parse_counts.items()}
    meta["n_pointwise_judgments"] = int(point.sum())
    rules = (all_judgments["fallback_rule"].dropna().astype(str) if len(all_judgments)
             else pd.Series(dtype=object))
    meta["fallback_rules"] = {k: int(v) for k, v in rules.value_counts().items()}
    labels = judge_labels(sorted({str(c["judge"]) for c in cells} | set(meta.get("judges", []))))
    for c in cells:
        c["judge_label"] = labels.get(str(c["judge"]), str(c["judge"]))
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "judge_labels": labels,
        "run": meta,
        "unparsed": unparsed,
        "confidence": confidence,
        "n_bootstrap": n_bootstrap,
        "seed": seed,
        "cells": cells,
        "region_thresholds": thresholds,
        "format_dispersion": format_dispersion(cells),
        "checklist": validation_checklist(cells, judgments),
        "broken_items": broken_items(judgments, items, unparsed=unparsed, limit=max_broken_items),
        "extra_tables": further_tables(all_judgments, item_objects) if len(all_judgments) else {},
    }


#: keys of :func:`build_report` that ``verdictlab report --json`` prints (the stable JSON schema)
JSON_KEYS: tuple[str, ...] = ("schema_version", "run", "unparsed", "cells")


def report_json(report: Mapping[str, Any]) -> dict[str, Any]:
    """The stable JSON document: ``{"schema_version", "run", "unparsed", "cells"}``.

    ``run`` carries the key-free meta, the engine accounting, the interval settings and the
    validation checklist and the further analyses (``run.analyses``: remedies, juries, ...); each cell carries its figures (fractions in [0, 1], ``null`` when
    undefined), intervals (``X_lo``/``X_hi``), Ns and, when available, ``agreement``."""
    run = dict(report["run"])
    run["intervals"] = {"confidence": report.get("confidence"), "n_bootstrap": report.get("n_bootstrap"),
                        "seed": report.get("seed")}
    run["checklist"] = report.get("checklist", [])
    run["format_dispersion"] = report.get("format_dispersion", [])
    # remedies, juries, FLASK criteria, G-Eval contradictions, probes, debate, rubric agreement:
    # each {"columns": [...], "rows": [[...]]}, present only when the run supports it
    run["analyses"] = report.get("extra_tables", {})
    return plain({"schema_version": report["schema_version"], "run": run, "unparsed": report["unparsed"],
                  "cells": report["cells"]})
