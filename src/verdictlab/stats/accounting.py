"""Audit counts of a run: per-judge engine accounting (attempts, retries, failures, spend), the
parse-status / fallback-rule tallies and the parser success rate, the commonest parse failure of each
cell, and the cells that lack a presentation order.  Pure functions over the stored tables (errors
are stored scrubbed; the report scrubs what it shows once more)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..core.vocab import CELL_KEY, ORDERS, ParseStatus
from ._frame import with_cell_columns

__all__ = ["CELL_TOTALS", "ParseAudit", "cell_totals", "cells_lacking_an_order", "engine_accounting", "fallback_rule_counts", "parse_audit",
           "parse_status_counts", "top_parse_failures"]


def _num(value: Any) -> float | None:
    """A summed column as a float (None when nothing was summed)."""
    if value is None or value is pd.NA or (isinstance(value, float | np.floating) and np.isnan(value)):
        return None
    return float(value)


def parse_status_counts(judgments: pd.DataFrame) -> dict[str, int]:
    """How many judgments have each parse status (``None`` counted as the string 'None')."""
    if not len(judgments):
        return {}
    return {str(k): int(v) for k, v in judgments["parse_status"].value_counts(dropna=False).items()}


def fallback_rule_counts(judgments: pd.DataFrame) -> dict[str, int]:
    """How many judgments rest on each named fallback or verdict rule."""
    if not len(judgments):
        return {}
    rules = judgments["fallback_rule"].dropna().astype(str)
    return {k: int(v) for k, v in rules.value_counts().items()}


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
        row["parse_failures"] = int((j["parse_status"] == ParseStatus.FAILED).sum())
        row["parse_repaired"] = int((j["parse_status"] == ParseStatus.REPAIRED).sum())
        row["parse_fallback"] = int((j["parse_status"] == ParseStatus.FALLBACK).sum())
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
            row["last_error"] = errs.iloc[-1] if len(errs) else None
            kinds = a["error_kind"].dropna().astype(str)
            row["error_kinds"] = dict(Counter(kinds)) if len(kinds) else {}
        else:
            att = pd.to_numeric(j["attempts"], errors="coerce")
            err = j["error"].notna() & j["verdict"].isna() & (j["parse_status"] != ParseStatus.FAILED)
            row["source"] = "judgments table"
            row["attempts"] = int(att.fillna(1).sum()) if len(j) else 0
            row["ok_first_try"] = int(((att.fillna(1) <= 1) & ~err).sum())
            row["retried_then_ok"] = int(((att.fillna(1) > 1) & ~err).sum())
            row["failed_for_good"] = int(err.sum())
            errs = j.loc[err, "error"].dropna().astype(str)
            row["last_error"] = errs.iloc[-1] if len(errs) else None
            row["error_kinds"] = {}
        row["cost_usd"] = _num(pd.to_numeric(j["cost_usd"], errors="coerce").sum(min_count=1))
        row["tokens_in"] = _num(pd.to_numeric(j["tokens_in"], errors="coerce").sum(min_count=1))
        row["tokens_out"] = _num(pd.to_numeric(j["tokens_out"], errors="coerce").sum(min_count=1))
        row["cache_hits"] = int(pd.to_numeric(j["cache_hit"], errors="coerce").fillna(0).sum())
        rows.append(row)
    return rows


@dataclass(frozen=True)
class ParseAudit:
    """How many judgments were read: ``n_parsed`` = every status but ``failed``, and the parser success
    rate ``n_parsed / n_judgments`` (NaN for no judgments)."""

    n_judgments: int
    n_parsed: int
    n_unparsed: int
    parser_success_rate: float


def parse_audit(judgments: pd.DataFrame) -> ParseAudit:
    """:class:`ParseAudit` of a judgments frame."""
    n = int(len(judgments))
    failed = int((judgments["parse_status"] == ParseStatus.FAILED).sum()) if n else 0
    return ParseAudit(n, n - failed, failed, (n - failed) / n if n else float("nan"))


def top_parse_failures(judgments: pd.DataFrame, *, by: Sequence[str] = CELL_KEY) -> dict[tuple[Any, ...], tuple[str, int]]:
    """The commonest parse-failure reason of each cell (``by``, the full cell key by default; the
    temperature as a float) with its count: ``{cell values: (reason, count)}``.  The reason is the
    ``parse_detail`` of the failed judgments with the quoted output excerpt cut off (60 characters at
    most); cells without a failure are left out."""
    if judgments is None or len(judgments) == 0 or "parse_detail" not in judgments:
        return {}
    failed = with_cell_columns(judgments[judgments["parse_status"] == ParseStatus.FAILED], by)
    if failed.empty:
        return {}
    reasons = failed["parse_detail"].fillna("").astype(str).str.split(" | ", regex=False).str[0]
    reasons = reasons.str.replace(r" in '.*$| \(.*$|\s+$", "", regex=True).str.slice(0, 60)
    keys = [failed[k].astype(float) if k == "temperature" else failed[k] for k in by]
    counts = reasons.groupby(keys).value_counts(sort=True)
    top = counts.groupby(level=list(range(len(by))), sort=False).head(1)
    return {tuple(k[:-1]): (str(k[-1]), int(v)) for k, v in top.items()}


def cells_lacking_an_order(judgments: pd.DataFrame, *, by: Sequence[str] = CELL_KEY) -> tuple[int, list[tuple[Any, ...]]]:
    """``(number of cells, the cells judged in fewer than both presentation orders)``: cells are the
    ``by`` combinations of ``judgments`` (the full cell key by default), the lacking ones as value tuples
    in sorted order."""
    if judgments.empty:
        return 0, []
    j = with_cell_columns(judgments, by)
    shown = j["order"].where(j["order"].isin(ORDERS))
    orders = shown.groupby([j[k] for k in by], dropna=False).nunique()
    lacking = [k if isinstance(k, tuple) else (k,) for k, n in orders.items() if n < len(ORDERS)]
    return len(orders), lacking


#: the counts :func:`cell_totals` adds up over cells
CELL_TOTALS: tuple[str, ...] = ("n_judgments", "n_unparsed", "n_pairs", "n_labelled_pairs")


def cell_totals(cells: pd.DataFrame) -> dict[str, int]:
    """The counts of :data:`CELL_TOTALS` summed over the rows of a cell-figures frame
    (:func:`verdictlab.stats.reliability`); a count the frame lacks is left out."""
    return {c: int(pd.to_numeric(cells[c], errors="coerce").fillna(0).sum()) for c in CELL_TOTALS
            if c in cells.columns}
