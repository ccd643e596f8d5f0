"""Judge/human disagreements of a run, for the label-or-rubric loop (``verdictlab review``).

Each row puts the judge's reasoning beside the human label and critique, so a domain expert can
decide, item by item, whether the label or the rubric is wrong.  Kinds of disagreement:

``judge_passed_human_failed``  (rubric) the dangerous direction: the judge let through what a person failed
``judge_failed_human_passed``  (rubric)
``judge_unknown``              (rubric) the judge answered UNKNOWN on a labelled item (more context needed?)
``grade_mismatch``             (pointwise grades) judge grade != human grade
``wrong_winner``               (pairwise) judge verdict != gold label (a judge ``tie`` on a decided pair too)
``unparsed``                   (only with ``include_unparsed``) no verdict could be read

Human critiques are read from the item's ``meta["critique"]`` (or ``meta["critiques"][criterion]``).
:func:`review_frame` builds the rows from a judgments frame and the run's items;
:func:`export_review` reads a run directory and writes them as CSV (formula cells made inert,
:func:`verdictlab.store.export.csv_safe`) or JSON Lines.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

REVIEW_FORMATS: tuple[str, ...] = ("csv", "jsonl")

REVIEW_COLUMNS: tuple[str, ...] = (
    "kind", "judge", "dataset", "protocol", "item_id", "step", "order", "temperature", "rep",
    "human_label", "judge_verdict", "judge_reasoning", "human_critique", "question", "response",
    "response_a", "response_b", "reference", "parse_status", "raw_output",
)


def _reasoning(raw: Any) -> str:
    from ..protocols.rubric import extract_reasoning

    if not isinstance(raw, str):
        return ""
    text = extract_reasoning(raw)
    if text == raw.strip():  # pairwise XML or JSON with a rationale field
        m = re.search(r"<rationale>(.*?)(?:</rationale>|$)", raw, re.DOTALL)
        if m:
            return m.group(1).strip()
    return text


def _pair_kind(rec: dict[str, Any], verdict: Any, include_unparsed: bool) -> tuple[str | None, Any]:
    """(kind of disagreement or None, human label) for a pairwise row."""
    human = rec.get("label")
    if human not in ("A", "B"):
        return None, human
    if verdict is None:
        return ("unparsed" if include_unparsed else None), human
    return ("wrong_winner" if verdict != human else None), human


def _point_kind(item: Any, rec: dict[str, Any], verdict: Any, step: str,
                include_unparsed: bool) -> tuple[str | None, Any]:
    """(kind of disagreement or None, human label) for a rubric or graded pointwise row."""
    from ..protocols.pointwise import grade_text
    from ..protocols.rubric import RESULTS, human_label

    if verdict in RESULTS or str(rec.get("protocol", "")).startswith("rubric"):
        human = human_label(item, step)
        if human not in ("PASS", "FAIL"):
            return None, human
        if verdict is None:
            return ("unparsed" if include_unparsed else None), human
        if verdict == "UNKNOWN":
            return "judge_unknown", human
        if verdict != human:
            return ("judge_passed_human_failed" if verdict == "PASS" else "judge_failed_human_passed"), human
        return None, human
    human = grade_text(item.label)
    if human is None:
        return None, human
    if verdict is None:
        return ("unparsed" if include_unparsed else None), human
    return ("grade_mismatch" if grade_text(verdict) != human else None), human


def review_frame(judgments: pd.DataFrame, items: list[Any], *, include_unparsed: bool = False) -> pd.DataFrame:
    """Disagreement rows (columns :data:`REVIEW_COLUMNS`) from a judgments frame and the run's items."""
    from ..core.items import PairItem
    from ..protocols.rubric import human_critique

    by_id = {(it.dataset, str(it.item_id)): it for it in items}
    rows = []
    for rec in judgments.to_dict("records"):
        item = by_id.get((rec["dataset"], str(rec["item_id"])))
        step = rec.get("step") or ""
        verdict = rec.get("verdict")
        verdict = None if verdict is None or (isinstance(verdict, float) and verdict != verdict) else verdict
        if isinstance(item, PairItem) or item is None:
            kind, human = _pair_kind(rec, verdict, include_unparsed)
        else:
            kind, human = _point_kind(item, rec, verdict, step, include_unparsed)
        if kind is None:
            continue
        is_pair = isinstance(item, PairItem)
        rows.append({
            "kind": kind, "judge": rec["judge"], "dataset": rec["dataset"], "protocol": rec["protocol"],
            "item_id": rec["item_id"], "step": step, "order": rec.get("order"), "temperature": rec.get("temperature"),
            "rep": rec.get("rep"), "human_label": human, "judge_verdict": verdict,
            "judge_reasoning": _reasoning(rec.get("raw_output")),
            "human_critique": human_critique(item, step) if item is not None else "",
            "question": getattr(item, "question", None), "response": getattr(item, "response", None),
            "response_a": item.response_a if is_pair else None,  # type: ignore[union-attr]
            "response_b": item.response_b if is_pair else None,  # type: ignore[union-attr]
            "reference": getattr(item, "reference", None), "parse_status": rec.get("parse_status"),
            "raw_output": rec.get("raw_output"),
        })
    return pd.DataFrame(rows, columns=list(REVIEW_COLUMNS))


@dataclass(frozen=True)
class ReviewExport:
    """What :func:`export_review` wrote: the file (None: a stream such as stdout), the number of rows and
    the count per kind."""

    path: Path | None
    n_rows: int
    counts: dict[str, int] = field(default_factory=dict)


def write_review(frame: pd.DataFrame, target: str | Path | TextIO, *, fmt: str = "csv") -> Path | None:
    """Write review rows to ``target`` (a path, parent folders created; or an open text stream such as
    stdout, then None is returned): CSV with formula cells made inert, or JSON Lines with null for
    missing values."""
    if fmt not in REVIEW_FORMATS:
        raise ValueError(f"review format must be one of {REVIEW_FORMATS}, got {fmt!r}")
    if not isinstance(target, str | Path):
        _write_rows(frame, target, fmt)
        return None
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        _write_rows(frame, fh, fmt)
    return path


def _write_rows(frame: pd.DataFrame, fh: TextIO, fmt: str) -> None:
    from ..store.export import csv_safe

    if fmt == "csv":
        csv_safe(frame).to_csv(fh, index=False, lineterminator="\n")     # cells starting with = + - @ made inert
        return
    for rec in frame.to_dict("records"):
        fh.write(json.dumps({k: (None if isinstance(v, float) and v != v else v) for k, v in rec.items()},
                            ensure_ascii=False, default=str) + "\n")


def export_review(run_dir: str | Path, *, out: str | Path | TextIO | None = None, fmt: str = "csv",
                  protocol: str | None = None, judge: str | None = None,
                  include_unparsed: bool = False) -> ReviewExport:
    """The disagreements of a run directory (only ``protocol`` / ``judge`` when given) written to
    ``out`` (default ``RUN_DIR/review.<fmt>``; an open text stream such as stdout)."""
    from ..store import open_store

    with open_store(run_dir) as store:
        df = store.judgments()
        items = store.items()
    if protocol is not None:
        df = df[df["protocol"] == protocol]
    if judge is not None:
        df = df[df["judge"] == judge]
    frame = review_frame(df, items, include_unparsed=include_unparsed)
    path = write_review(frame, out if out is not None else Path(run_dir) / f"review.{fmt}", fmt=fmt)
    counts = {str(k): int(v) for k, v in sorted(frame["kind"].value_counts().to_dict().items())} if len(frame) else {}
    return ReviewExport(path, len(frame), counts)


__all__ = ["REVIEW_COLUMNS", "REVIEW_FORMATS", "ReviewExport", "export_review", "review_frame", "write_review"]
