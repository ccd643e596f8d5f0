"""Judges or protocols compared on the same items, across one or more runs (``verdictlab compare``):
paired exact McNemar tests on parse-shared (item, order) units, Holm-corrected across the family
(:func:`verdictlab.stats.paired_mcnemar`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.items import ItemError
from ..core.policy import DEFAULT_POLICY, FigurePolicy

COMPARE_BY: tuple[str, ...] = ("judge", "protocol")
TEST = "exact McNemar on parse-shared (item, order) units, modal verdict over reps"


def _config_order(meta: dict[str, Any], by: str) -> list[str]:
    cfg = meta.get("config") or {}
    entries = cfg.get("judges" if by == "judge" else "protocols") or []
    out = []
    for e in entries:
        if isinstance(e, dict):
            e = e.get("id")
        if isinstance(e, str):
            out.append(e)
    return out


def load_runs(run_dirs: Sequence[str | Path], by: str) -> tuple[pd.DataFrame, list[str]]:
    """Judgments of all runs (one frame, a ``run`` column added) and the entity order (config order,
    run by run).

    When the same judge/protocol id occurs in more than one run it is labelled ``<run>/<id>`` so the
    two are compared, not merged."""
    from ..store import open_store

    dirs = [Path(d) for d in run_dirs]
    frames, orders = [], []
    for d in dirs:
        with open_store(d) as store:
            df = store.judgments()
            order = _config_order(store.all_meta(), by)
        df["run"] = d.name or str(d)
        frames.append(df)
        seen = list(pd.unique(df[by]))
        orders.append([e for e in order if e in seen] + [e for e in seen if e not in order])
    allj = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    counts: dict[str, int] = {}
    for o in orders:
        for e in o:
            counts[e] = counts.get(e, 0) + 1
    if any(c > 1 for c in counts.values()):
        dup = allj[by].map(counts).fillna(1) > 1
        allj.loc[dup, by] = allj.loc[dup, "run"] + "/" + allj.loc[dup, by].astype(str)
        orders = [[(f"{(dirs[i].name or str(dirs[i]))}/{e}" if counts[e] > 1 else e) for e in o]
                  for i, o in enumerate(orders)]
    flat = [e for o in orders for e in o]
    return allj, list(dict.fromkeys(flat))


def compare_runs(run_dirs: Sequence[str | Path], *, by: str = "judge", all_pairs: bool = False,
                 policy: FigurePolicy = DEFAULT_POLICY, alpha: float = 0.05) -> pd.DataFrame:
    """:func:`~verdictlab.stats.paired_mcnemar` over the runs' judgments: neighbours in config order (or
    ``all_pairs``), per dataset; ``attrs["order"]`` is the entity order and ``attrs["pairs"]`` the number
    of pairs compared.  Runs without any judgment are an :class:`~verdictlab.core.items.ItemError`."""
    from ..stats import paired_mcnemar

    if by not in COMPARE_BY:
        raise ValueError(f"by must be one of {COMPARE_BY}, got {by!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    judgments, order = load_runs(run_dirs, by)
    if judgments.empty:
        raise ItemError("no judgments in the given run(s)")
    res = paired_mcnemar(judgments, by=by, order=order, all_pairs=all_pairs, policy=policy, alpha=alpha)
    res.attrs["order"] = order
    return res


def _clean(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return _clean(v.item())
    return v


def comparison_json(res: pd.DataFrame, *, by: str, policy: FigurePolicy, alpha: float) -> dict[str, Any]:
    """The result of :func:`compare_runs` as the JSON document of ``compare --format json``."""
    return {"by": by, "pairs": res.attrs["pairs"], "unparsed": policy.unparsed.value, "alpha": alpha, "family_size": len(res),
            "correction": "holm", "test": TEST, "order": res.attrs["order"],
            "comparisons": [{k: _clean(v) for k, v in rec.items()} for rec in res.to_dict("records")]}


__all__ = ["COMPARE_BY", "compare_runs", "comparison_json", "load_runs"]
