"""The pairs that break a judge: flipped under the swap or unstable across repetitions, with the rows
behind them.

The flags are those of :func:`verdictlab.stats.modal_verdicts` under the unparsed policy: *flipped* =
the pair is not order-invariant in its cell (P = 0: the modal verdicts of AB and BA differ, or one is
split); *unstable* = an order's verdicts are not all equal (N = 0).  Under ``unparsed="exclude"``
unparsed verdicts are left out of both (their rows are still returned); under ``"wrong"`` they are a
value of their own (two unparsed modes agree, as phi counts them).  A unit is (cell, step, item): free
and constrained decoding are different cells.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..vocab import CELL_KEY, DEFAULT_UNPARSED, ORDERS
from ._frame import with_cell_columns
from .by_cell import modal_verdicts

__all__ = ["BROKEN_PAIR_KEY", "BrokenPairs", "broken_pairs"]

#: what names a pair in its cell
BROKEN_PAIR_KEY: tuple[str, ...] = (*CELL_KEY, "step", "item_id")
#: the stored columns returned for every judgment of a broken pair
_ROW_COLUMNS = ("order", "rep", "verdict", "parse_status", "parse_detail", "raw_output", "category", "label")
_ITEM_COLUMNS = ("question", "response_a", "response_b", "category", "label", "meta")


@dataclass(frozen=True)
class BrokenPairs:
    """``n_flipped`` / ``n_unstable`` / ``n_total`` broken pairs (a pair is counted once in its cell);
    ``pairs``: at most ``limit`` of them, flipped first, each a dict with :data:`BROKEN_PAIR_KEY`,
    ``flipped``, ``unstable``, ``modal_AB``, ``modal_BA``, the item's fields (``question``,
    ``response_a``, ``response_b``, ``category``, ``label``, ``meta``; None when the items do not
    have them) and ``rows``: its judgments (``order``, ``rep``, ``verdict``, ``parse_status``,
    ``parse_detail``, ``raw_output``, ``category``, ``label``) sorted by order and repetition."""

    n_total: int = 0
    n_flipped: int = 0
    n_unstable: int = 0
    pairs: list[dict[str, Any]] = field(default_factory=list)


def _flags(j: pd.DataFrame, unparsed: str) -> pd.DataFrame:
    """Per pair: flipped / unstable and the modal verdict of each order."""
    key = list(BROKEN_PAIR_KEY)
    mv = modal_verdicts(j, unparsed=unparsed, by=key[:-2])
    if mv.empty:
        return pd.DataFrame(columns=[*key, "flipped", "unstable", "modal_AB", "modal_BA"])
    if "step" not in mv.columns:
        mv["step"] = ""
    mv["flip"] = mv["order_invariant"].eq(False).fillna(False).astype(bool)
    mv["unstable"] = ~mv["consistent"].astype(bool)
    flags = mv.groupby(key, sort=False, dropna=False).agg(flipped=("flip", "any"), unstable=("unstable", "any"))
    modes = mv.pivot_table(index=key, columns="order", values="mode", aggfunc="first", dropna=False)
    for o in ORDERS:
        flags[f"modal_{o}"] = modes[o].reindex(flags.index) if o in modes.columns else None
    return flags.reset_index()


def _item_fields(items: pd.DataFrame | None) -> pd.DataFrame:
    cols = ["dataset", "item_id", *_ITEM_COLUMNS]
    if items is None or items.empty:
        return pd.DataFrame(columns=cols)
    it = items.reindex(columns=cols).astype({"dataset": str, "item_id": str})
    return it.drop_duplicates(["dataset", "item_id"]).rename(columns={c: f"item_{c}" for c in _ITEM_COLUMNS})


def broken_pairs(judgments: pd.DataFrame, items: pd.DataFrame | None = None, *,
                 unparsed: str = DEFAULT_UNPARSED, limit: int = 300) -> BrokenPairs:
    """:class:`BrokenPairs` of a pairwise judgments frame; ``items`` is ``RunStore.items_frame()``
    (dataset, item_id, question, response_a, response_b, category, label, meta).  A pair's category
    and label are its judgments' when they carry them, else the item's."""
    if judgments.empty:
        return BrokenPairs()
    key = list(BROKEN_PAIR_KEY)
    j = with_cell_columns(judgments).assign(step=judgments["step"].fillna("") if "step" in judgments.columns
                                            else "").sort_values(["rep"], kind="stable")
    flags = _flags(j, unparsed)
    flagged = flags[flags["flipped"] | flags["unstable"]].copy()
    if flagged.empty:
        return BrokenPairs()
    flagged["_s"] = _joined(flagged[key].astype(str))
    flagged = flagged.sort_values(["flipped", "unstable", "_s"], ascending=[False, False, True], kind="stable")
    shown = flagged.head(limit).drop(columns="_s")
    # the rows of the shown pairs: one merge, one sort, one to_dict (no per-pair pandas work)
    cols = [c for c in (*key, *_ROW_COLUMNS) if c in j.columns]
    sub = j[cols].astype({"temperature": float}).merge(shown[key].astype({"temperature": float}), on=key)
    sub = sub.sort_values(["order", "rep"], kind="stable")
    rows: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for rec in sub.to_dict(orient="records"):
        rows.setdefault(tuple(rec[c] for c in key), []).append({c: rec.get(c) for c in _ROW_COLUMNS})
    fields = _item_fields(items)
    shown = shown.astype({"temperature": float}).assign(_ds=shown["dataset"].astype(str),
                                                        _id=shown["item_id"].astype(str))
    shown = shown.merge(fields, left_on=["_ds", "_id"], right_on=["dataset", "item_id"], how="left",
                        suffixes=("", "_item")).drop(columns=["_ds", "_id", "dataset_item", "item_id_item"])
    pairs = []
    for rec in shown.to_dict(orient="records"):
        recs = rows.get(tuple(rec[c] for c in key), [])
        cats = [r["category"] for r in recs if isinstance(r.get("category"), str)]
        labels = [r["label"] for r in recs if isinstance(r.get("label"), str)]
        item = {c: (None if _missing(rec.get(f"item_{c}")) else rec.get(f"item_{c}")) for c in _ITEM_COLUMNS}
        pairs.append({**{c: rec[c] for c in key}, "flipped": bool(rec["flipped"]), "unstable": bool(rec["unstable"]),
                      "modal_AB": rec.get("modal_AB"), "modal_BA": rec.get("modal_BA"), **item,
                      "category": cats[0] if cats else item["category"],
                      "label": item["label"] if item["label"] is not None else (labels[0] if labels else None),
                      "rows": recs})
    return BrokenPairs(n_total=len(flagged), n_flipped=int(flagged["flipped"].sum()),
                       n_unstable=int(flagged["unstable"].sum()), pairs=pairs)


def _joined(texts: pd.DataFrame) -> pd.Series:
    """Each row's texts joined by ``\\x1f`` (the pairs' sort key), column by column: a row-wise
    ``agg("\\x1f".join, axis=1)`` builds a Series per row (25 s for the 43,000 broken pairs of 540,000
    judgments)."""
    out = texts.iloc[:, 0].astype(object)
    for name in texts.columns[1:]:
        out = out + "\x1f" + texts[name].astype(object)
    return out


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)
