"""Judge drift between runs: what ``verdictlab drift`` computes, as functions a notebook can call.

Two sides (:func:`drift_pair_report`): two runs of one judge (two versions, dates or vendors), two
runs with the same judges (each judge against itself), or two judges of one run.  One series
(:func:`drift_series_report`): three or more runs of one judge on a fixed anchor set, charted in the
order given.  :func:`drift_report` opens the run directories and picks the mode.  Every figure comes
from :mod:`verdictlab.stats.drift` (and the Holm adjustment from :mod:`verdictlab.stats.significance`).

Same items, or no comparison
----------------------------
A drift figure compares verdicts on *the same items*.  Before any figure, the items judged on both sides
(the full key: dataset and item id) are compared (:func:`item_differences`): their gold label (from the
judgments), and, where both run stores keep the items, the question and the responses.  An item whose
content differs -- swapped responses, a flipped label, an edited question -- would turn a changed item
into a "changed verdict".  Such items are refused by default (:class:`DriftItemsError`, naming the
first item and what differs); with ``changed_items="exclude"`` they are left out on both sides and
counted in the report's ``item_check``.  (The resume check of ``verdictlab run`` compares whole items,
meta included; here only what a verdict depends on is compared, so the same benchmark loaded by two
verdictlab versions still pairs.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import pandas as pd

from ..analyses import DEBATE_PROTOCOL
from ..core.items import ItemError
from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..errors import UsageError

CELL: tuple[str, ...] = ("protocol", "dataset", "temperature")
CHARTS: tuple[str, ...] = ("cusum", "ewma")
class ChangedItems(StrEnum):
    """What drift does with items that differ between the runs: refuse to compare, or leave them out."""

    REFUSE = "refuse"
    EXCLUDE = "exclude"


CHANGED_ITEMS: tuple[str, ...] = tuple(c.value for c in ChangedItems)
#: the item fields a verdict depends on, compared between the runs (pairs; a point item has ``response``)
CONTENT_FIELDS: tuple[str, ...] = ("question", "response_a", "response_b", "response", "label")


class DriftError(UsageError):
    """The runs cannot be compared as asked (which judges, which cells, which options)."""


class DriftItemsError(ItemError):
    """Items judged on both sides differ in content; the message names the first one and what differs."""


@dataclass(frozen=True)
class DriftRun:
    """One run in a drift comparison: its name (the run directory as given), its pairwise judgments
    (debate rows left out) and its stored items (empty when the store keeps none)."""

    name: str
    judgments: pd.DataFrame
    items: tuple[Any, ...] = ()


@dataclass(frozen=True)
class ItemDifference:
    """An item judged on both sides whose content differs: its key and the fields that differ."""

    dataset: str
    item_id: str
    fields: tuple[str, ...]

    def __str__(self) -> str:
        return f"item {self.item_id!r} of dataset {self.dataset!r} ({', '.join(self.fields)} differ)"


@dataclass(frozen=True)
class _Side:
    judge_a: str
    judge_b: str
    frame_a: pd.DataFrame
    frame_b: pd.DataFrame
    run_a: DriftRun
    run_b: DriftRun
    excluded: tuple[ItemDifference, ...] = field(default=())


def load_drift_run(run_dir: str | Path) -> DriftRun:
    """The pairwise judgments and items of one run directory (a missing or unreadable store is a
    :class:`~verdictlab.store.StoreError`)."""
    from ..store import open_store

    with open_store(run_dir) as store:
        df = store.judgments()
        items = tuple(store.items())
    return DriftRun(str(run_dir), df[df["protocol"] != DEBATE_PROTOCOL], items)


# -- same items --------------------------------------------------------------------------------------------
def _labels(frame: pd.DataFrame) -> dict[tuple[str, str], Any]:
    """``{(dataset, item_id): gold label}`` from judgments (the first stated label of an item)."""
    if frame.empty:
        return {}
    keyed = frame.assign(_ds=frame["dataset"].astype(str), _id=frame["item_id"].astype(str))
    first = keyed.sort_values("label", na_position="last", kind="stable").drop_duplicates(["_ds", "_id"])
    return {(d, i): (None if pd.isna(v) else v) for d, i, v in zip(first["_ds"], first["_id"], first["label"],
                                                                  strict=True)}


def _contents(items: Sequence[Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(str(it.dataset), str(it.item_id)): {f: getattr(it, f, None) for f in CONTENT_FIELDS if f != "label"}
            for it in items}


def item_differences(run_a: DriftRun, run_b: DriftRun, frame_a: pd.DataFrame | None = None,
                     frame_b: pd.DataFrame | None = None) -> tuple[list[ItemDifference], bool]:
    """The items judged on both sides (``frame_a`` / ``frame_b``, default the runs' judgments) whose
    content differs, and whether the texts could be compared (both stores keep the items; else only the
    labels were)."""
    fa = run_a.judgments if frame_a is None else frame_a
    fb = run_b.judgments if frame_b is None else frame_b
    la, lb = _labels(fa), _labels(fb)
    ca, cb = _contents(run_a.items), _contents(run_b.items)
    texts = bool(ca) and bool(cb)
    out = []
    for key in sorted(set(la) & set(lb)):
        fields = [f for f in ("question", "response_a", "response_b", "response")
                  if texts and key in ca and key in cb and ca[key][f] != cb[key][f]]
        if la[key] != lb[key]:
            fields.append("label")
        if fields:
            out.append(ItemDifference(key[0], key[1], tuple(fields)))
    return out, texts


def _without(frame: pd.DataFrame, changed: Sequence[ItemDifference]) -> pd.DataFrame:
    drop = {(d.dataset, d.item_id) for d in changed}
    keys = zip(frame["dataset"].astype(str), frame["item_id"].astype(str), strict=True)
    return frame[[k not in drop for k in keys]]


def _check_items(side: _Side, changed_items: str) -> _Side:
    """The side with changed items refused (default) or left out on both sides."""
    if side.run_a.name == side.run_b.name:          # two judges of one run: the same items
        return side
    changed, _ = item_differences(side.run_a, side.run_b, side.frame_a, side.frame_b)
    if not changed:
        return side
    if ChangedItems(changed_items) is ChangedItems.EXCLUDE:
        return _Side(side.judge_a, side.judge_b, _without(side.frame_a, changed), _without(side.frame_b, changed),
                     side.run_a, side.run_b, tuple(changed))
    raise DriftItemsError(f"{len(changed)} item(s) judged in both runs differ from {side.run_a.name} (first: "
                          f"{changed[0]}); drift compares verdicts on the same items: judge the same items in both "
                          "runs, or leave the changed ones out (--exclude-changed-items)", path=side.run_b.name)


# -- which judges face each other ----------------------------------------------------------------------------
def _one_judge(df: pd.DataFrame, run: str, judge: str | None) -> tuple[str, pd.DataFrame]:
    judges = sorted(df["judge"].dropna().astype(str).unique())
    if judge is not None:
        if judge not in judges:
            raise DriftError(f"{run}: no judgments by judge {judge!r}; judges there: {', '.join(judges) or 'none'}")
        return judge, df[df["judge"] == judge]
    if len(judges) != 1:
        raise DriftError(f"{run} holds {len(judges)} judges ({', '.join(judges) or 'none'}); say which with "
                         "--judge-a / --judge-b")
    return judges[0], df


def drift_sides(runs: Sequence[DriftRun], judge_a: str | None = None,
                judge_b: str | None = None) -> list[_Side]:
    """The two-side comparisons: one run with two named judges, two runs with one judge each (or the
    named ones), or two runs with the same several judges (each judge against itself)."""
    if len(runs) == 1:
        (run,) = runs
        if not (judge_a and judge_b):
            raise DriftError("one run: name the two judges to compare with --judge-a and --judge-b")
        ja, fa = _one_judge(run.judgments, run.name, judge_a)
        jb, fb = _one_judge(run.judgments, run.name, judge_b)
        return [_Side(ja, jb, fa, fb, run, run)]
    if len(runs) != 2:
        raise DriftError(f"two sides need one or two runs, got {len(runs)}")
    ra, rb = runs
    judges_a, judges_b = sorted(ra.judgments["judge"].unique()), sorted(rb.judgments["judge"].unique())
    if judge_a is None and judge_b is None and judges_a == judges_b and len(judges_a) > 1:
        return [_Side(j, j, ra.judgments[ra.judgments["judge"] == j], rb.judgments[rb.judgments["judge"] == j], ra, rb)
                for j in judges_a]
    ja, fa = _one_judge(ra.judgments, ra.name, judge_a)
    jb, fb = _one_judge(rb.judgments, rb.name, judge_b or (judge_a if judge_a in set(judges_b) else None))
    return [_Side(ja, jb, fa, fb, ra, rb)]


# -- reports -----------------------------------------------------------------------------------------------
def json_ready(v: Any) -> Any:
    """Plain JSON values: numpy scalars and arrays as Python, NaN as None, tuples as lists."""
    if isinstance(v, Mapping):
        return {k: json_ready(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [json_ready(x) for x in v]
    if hasattr(v, "tolist"):
        return json_ready(v.tolist())
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def _cells_of(frame: pd.DataFrame) -> set[tuple[Any, ...]]:
    return set(map(tuple, frame[list(CELL)].drop_duplicates().to_numpy().tolist())) if len(frame) else set()


def _no_shared_cell(sides: Sequence[_Side]) -> DriftError:
    """Why no cell could be compared: the two sides judged no cell in common, or (the cells match) one side
    or both has no parsed verdict in them -- said as such, with the way to count unparsed verdicts."""
    def shown(cells: set[tuple[Any, ...]]) -> str:
        return "; ".join(f"{p} · {d} · T={t:g}" for p, d, t in sorted(cells, key=str)[:3]) or "none"

    s = sides[0]
    shared = _cells_of(s.frame_a) & _cells_of(s.frame_b)
    if not shared:
        return DriftError(f"no cell (protocol x dataset x temperature) was judged on both sides: {s.run_a.name} "
                          f"({s.judge_a}) has {shown(_cells_of(s.frame_a))}; {s.run_b.name} ({s.judge_b}) has "
                          f"{shown(_cells_of(s.frame_b))}")
    unread = []
    for name, judge, frame in ((s.run_a.name, s.judge_a, s.frame_a), (s.run_b.name, s.judge_b, s.frame_b)):
        if _n_parsed(frame, shared) == 0 and f"{name} ({judge})" not in unread:
            unread.append(f"{name} ({judge})")
    who = " and of ".join(unread) if unread else "one side"
    return DriftError(f"nothing to compare: every verdict of {who} in the cells both sides judged "
                      f"({shown(shared)}) is unparsed, so no item has a verdict on both sides; --unparsed wrong "
                      "counts unparsed verdicts as wrong answers")


def _n_parsed(frame: pd.DataFrame, cells: set[tuple[Any, ...]]) -> int:
    """The parsed verdicts of ``frame`` in ``cells``."""
    inside = [c in cells for c in map(tuple, frame[list(CELL)].to_numpy().tolist())]
    return int(frame.loc[inside, "verdict"].notna().sum()) if len(frame) else 0


def _all_unread(sides: Sequence[_Side]) -> bool:
    """Some side of every comparison has no parsed verdict in the cells both sides judged."""
    for s in sides:
        shared = _cells_of(s.frame_a) & _cells_of(s.frame_b)
        if _n_parsed(s.frame_a, shared) and _n_parsed(s.frame_b, shared):
            return False
    return True


def _item_check(sides: Sequence[_Side], changed_items: str) -> dict[str, Any]:
    pairs = [s for s in sides if s.run_a.name != s.run_b.name]
    texts = all(bool(s.run_a.items) and bool(s.run_b.items) for s in pairs)
    excluded = [d for s in sides for d in s.excluded]
    return {"compared": ("none: two judges of one run" if not pairs else
                         "question, responses and label" if texts else
                         "labels only (a run store keeps no item text)"),
            "changed_items": changed_items, "n_changed": len(excluded),
            "excluded": [{"dataset": d.dataset, "item_id": d.item_id, "fields": list(d.fields)}
                         for d in excluded[:20]]}


def drift_pair_report(runs: Sequence[DriftRun], *, judge_a: str | None = None, judge_b: str | None = None,
                      margin: float = 0.02, alpha: float = 0.05, policy: FigurePolicy = DEFAULT_POLICY,
                      changed_items: str = "refuse") -> dict[str, Any]:
    """The drift figures of a two-side comparison as a JSON-ready dict (``mode = "pair"``): per cell
    :func:`~verdictlab.stats.drift.drift_pair` with the McNemar p-values Holm-adjusted over all cells of
    the comparison, the protocol-ranking change by A and by T, and the items check."""
    from ..stats.drift import drift_pair, ranking_change
    from ..stats.significance import holm_adjust

    sides = [_check_items(s, changed_items) for s in drift_sides(runs, judge_a, judge_b)]
    tables = [drift_pair(s.frame_a, s.frame_b, margin=margin, alpha=alpha, policy=policy).assign(judge_a=s.judge_a, judge_b=s.judge_b) for s in sides]
    cells = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    if cells.empty or (policy.drops_unparsed and not (cells["n_units"] > 0).any() and _all_unread(sides)):
        raise _no_shared_cell(sides)
    if not (cells["n_units"] > 0).any():
        raise DriftError("no item was judged on both sides (the cells match, the item ids do not)")
    cells["mcnemar_p_holm"] = holm_adjust(cells["mcnemar_p"].to_numpy(float))   # one family over all cells
    rank_rows = []
    for (ja, jb), g in cells.groupby(["judge_a", "judge_b"], sort=False):
        for fig in ("A", "T"):
            rank_rows += [{"judge_a": ja, "judge_b": jb, **r} for r in ranking_change(g, figure=fig).to_dict("records")]
    front = ["judge_a", "judge_b"]
    cells = cells[front + [c for c in cells.columns if c not in front]]
    return {"mode": "pair", "runs": [r.name for r in runs], "margin": margin, "alpha": alpha,
            "unparsed": policy.unparsed.value, "n_boot": policy.n_bootstrap, "correction": "holm over all cells",
            "equivalence": f"TOST at alpha={alpha}: {100 * (1 - 2 * alpha):g}% paired-bootstrap interval of "
                           f"delta_A inside +-{margin:g} -> yes; wholly outside -> no; else inconclusive",
            "item_check": _item_check(sides, changed_items),
            "cells": [json_ready(r) for r in cells.to_dict("records")],
            "ranking_change": [json_ready(r) for r in rank_rows]}


def _series_frames(runs: Sequence[DriftRun], judge: str | None, changed_items: str) -> tuple[list[str], list[Any],
                                                                                              list[ItemDifference]]:
    """The judge and frame of each run, every run's items checked against the first run's."""
    judges, frames = [], []
    for run in runs:
        j, f = _one_judge(run.judgments, run.name, judge)
        judges.append(j)
        frames.append(f)
    excluded: list[ItemDifference] = []
    for k in range(1, len(runs)):
        side = _check_items(_Side(judges[0], judges[k], frames[0], frames[k], runs[0], runs[k]), changed_items)
        excluded += side.excluded
    if excluded:
        frames = [_without(f, excluded) for f in frames]
    return judges, frames, excluded


def drift_series_report(runs: Sequence[DriftRun], *, judge: str | None = None, chart: str = "cusum",
                        baseline: int = 1, policy: FigurePolicy = DEFAULT_POLICY,
                        params: Mapping[str, float] | None = None,
                        changed_items: str = "refuse") -> dict[str, Any]:
    """A control chart of agreement with the anchor labels per (protocol, dataset, temperature) cell over
    the runs, in the order given (``mode = "series"``; :func:`~verdictlab.stats.drift.drift_series`)."""
    from ..stats.drift import drift_series

    if baseline >= len(runs):
        raise DriftError(f"a series of {len(runs)} run(s) with --baseline {baseline}: the chart needs at least one "
                         "run after the baseline runs")
    judges, frames, excluded = _series_frames(runs, judge, changed_items)
    common = set.intersection(*[_cells_of(f) for f in frames])
    if not common:
        raise DriftError("no cell (protocol x dataset x temperature) was judged in every run")
    charts = []
    for cell in sorted(common, key=str):
        sel = [f[(f["protocol"] == cell[0]) & (f["dataset"] == cell[1]) & (f["temperature"] == cell[2])]
               for f in frames]
        try:
            ch = drift_series(sel, method=chart, baseline=baseline, policy=policy, **dict(params or {}))
        except ValueError as exc:   # e.g. a run without a labelled anchor item in this cell
            raise DriftError(f"{cell[0]} · {cell[1]} · T={cell[2]:g}: {exc}") from None
        charts.append(json_ready({
            "protocol": cell[0], "dataset": cell[1], "temperature": cell[2], "method": ch.method,
            "baseline_accuracy": ch.baseline, "accuracy": ch.accuracy, "n_items": ch.n, "z": ch.z,
            "upper": ch.upper, "lower": ch.lower, "flagged": ch.flagged,
            "first_flagged_run": None if ch.first_flagged is None else runs[ch.first_flagged].name,
            "first_flagged_index": ch.first_flagged,
            "onset_run": None if ch.onset is None else runs[ch.onset].name, "onset_index": ch.onset,
            "params": ch.params}))
    return {"mode": "series", "runs": [r.name for r in runs], "judges": judges, "chart": chart,
            "baseline_runs": baseline, "unparsed": policy.unparsed.value,
            "item_check": {"compared": "every run against the first", "changed_items": changed_items,
                           "n_changed": len(excluded),
                           "excluded": [{"dataset": d.dataset, "item_id": d.item_id, "fields": list(d.fields)}
                                        for d in excluded[:20]]},
            "charts": charts}


def check_drift_options(*, margin: float, alpha: float, n_boot: int, baseline: int, chart: str = "cusum",
                        changed_items: str = "refuse") -> None:
    """:class:`DriftError` for an option out of range: margin in (0, 1] (NaN and infinities refused),
    alpha in (0, 0.5), at least one bootstrap resample and one baseline run, known words (the figure
    policy is checked when it is built: :class:`~verdictlab.core.policy.FigurePolicy`)."""
    if not (0 < margin <= 1):
        raise DriftError(f"--margin must be in (0, 1] (a difference in accuracy), got {margin}")
    if not (0 < alpha < 0.5):
        raise DriftError(f"--alpha must be in (0, 0.5), got {alpha}")
    if n_boot < 1 or baseline < 1:
        raise DriftError(f"--bootstrap and --baseline must be >= 1, got {n_boot} and {baseline}")
    if chart not in CHARTS or changed_items not in CHANGED_ITEMS:
        raise DriftError(f"chart must be one of {CHARTS} and changed_items one of {CHANGED_ITEMS}")


def drift_report(run_dirs: Sequence[str | Path], *, series: bool = False, judge_a: str | None = None,
                 judge_b: str | None = None, margin: float = 0.02, alpha: float = 0.05,
                 policy: FigurePolicy = DEFAULT_POLICY, chart: str = "cusum", baseline: int = 1,
                 changed_items: str = "refuse") -> dict[str, Any]:
    """``verdictlab drift``: one or two run directories -> :func:`drift_pair_report`; three or more (or
    ``series``) -> :func:`drift_series_report` of ``judge_a``'s verdicts.  Options are checked first
    (:func:`check_drift_options`)."""
    check_drift_options(margin=margin, alpha=alpha, n_boot=policy.n_bootstrap, baseline=baseline, chart=chart,
                        changed_items=changed_items)
    if not run_dirs:
        raise DriftError("give one run (with --judge-a/--judge-b), two runs, or a series of runs")
    runs = [load_drift_run(d) for d in run_dirs]
    if len(runs) >= 3 or series:
        return drift_series_report(runs, judge=judge_a, chart=chart, baseline=baseline, policy=policy,
                                   changed_items=changed_items)
    return drift_pair_report(runs, judge_a=judge_a, judge_b=judge_b, margin=margin, alpha=alpha, policy=policy,
                             changed_items=changed_items)


__all__ = ["CHANGED_ITEMS", "CHARTS", "ChangedItems", "DriftError", "DriftItemsError", "DriftRun", "ItemDifference",
           "check_drift_options", "drift_pair_report", "drift_report", "drift_series_report", "drift_sides",
           "item_differences", "json_ready", "load_drift_run"]
