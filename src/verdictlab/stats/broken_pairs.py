"""The pairs that break a judge: flipped under the swap or unstable across repetitions, with the rows
behind them.

The flags are those of :func:`verdictlab.stats.modal_verdicts` under the unparsed policy, read straight
from the integer arrays of :func:`verdictlab.stats.reliability.unit_table`: *flipped* = the pair is not
order-invariant in its cell (P = 0: the modal verdicts of AB and BA differ, or one is split);
*unstable* = an order's verdicts are not all equal (N = 0).  Under unparsed ``exclude`` unparsed
verdicts are left out of both (their rows are still returned); under ``"wrong"`` they are a value of
their own (two unparsed modes agree, as phi counts them).  A unit is (cell, step, item): free and
constrained decoding are different cells.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import CELL_KEY
from ._frame import with_cell_columns
from .reliability import pair_events, unit_table

__all__ = ["BROKEN_PAIR_KEY", "BrokenPairs", "broken_pairs", "text_order"]

#: what names a pair in its cell
BROKEN_PAIR_KEY: tuple[str, ...] = (*CELL_KEY, "step", "item_id")
#: the stored columns returned for every judgment of a broken pair
_ROW_COLUMNS = ("order", "rep", "verdict", "parse_status", "parse_detail", "raw_output", "category", "label")
_ITEM_COLUMNS = ("question", "response_a", "response_b", "category", "label", "meta")
#: the names of unit_table's mode codes 0..3 (-1, a split mode, is "split")
_MODE_NAMES = np.array(["A", "B", "tie", "unparsed"], dtype=object)
#: what joins the key texts of a pair into its sort key (below every printable character)
_SEP = "\x1f"


@dataclass(frozen=True)
class BrokenPairs:
    """``n_flipped`` / ``n_unstable`` / ``n_total`` broken pairs (a pair is counted once in its cell);
    ``pairs``: at most ``limit`` of them, flipped first, then unstable, then by their key's text (the
    :data:`BROKEN_PAIR_KEY` values as text joined by ``\\x1f``), each a dict with
    :data:`BROKEN_PAIR_KEY`, ``flipped``, ``unstable``, ``modal_AB``, ``modal_BA`` (None when the pair
    has no verdict in that order), the item's fields (``question``, ``response_a``, ``response_b``,
    ``category``, ``label``, ``meta``; None when the items do not have them) and ``rows``: its
    judgments (``order``, ``rep``, ``verdict``, ``parse_status``, ``parse_detail``, ``raw_output``,
    ``category``, ``label``) sorted by order and repetition."""

    n_total: int = 0
    n_flipped: int = 0
    n_unstable: int = 0
    pairs: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class _Flags:
    """Per pair code of :func:`unit_table`: flipped, unstable and the modal verdict code of each order
    (unit_table's mode codes; -2 when the pair has no unit in that order)."""

    flipped: np.ndarray
    unstable: np.ndarray
    modal: dict[str, np.ndarray]


def _flags(u: dict[str, np.ndarray]) -> _Flags:
    """flipped = both orders present and not order-invariant; unstable = a unit whose verdicts differ."""
    up, uo, m = u["unit_pair"], u["unit_order"], u["mode"]
    n_pairs = len(u["pair_cell"])
    ev = pair_events(u)
    unstable = np.zeros(n_pairs, dtype=bool)
    unstable[up[~u["N"].astype(bool)]] = True
    modal = {}
    for code, name in enumerate(("AB", "BA")):
        mo = np.full(n_pairs, -2, dtype=np.int64)
        mo[up[uo == code]] = m[uo == code]
        modal[name] = mo
    return _Flags(flipped=ev.both & ~ev.P, unstable=unstable, modal=modal)


def _mode_names(codes: np.ndarray) -> list[Any]:
    names = np.where(codes == -1, "split", _MODE_NAMES[np.clip(codes, 0, 3)]).astype(object)
    names[codes == -2] = None
    return list(names)


def _field_ranks(values: pd.Series, *, last: bool = False) -> np.ndarray:
    """Ranks (0..n-1, equal texts equal; -1 missing) of the values as text, ``\\x1f`` appended unless
    ``last``: ranked field by field this way, rows order as their texts joined by ``\\x1f`` (see
    :func:`text_order`)."""
    text = values.astype(str)             # a missing value stays missing
    return pd.factorize(text if last else text + _SEP, sort=True)[0].astype(np.int64)


def text_order(texts: pd.DataFrame) -> np.ndarray:
    """Integer codes whose order is that of the rows' values as text joined by ``\\x1f`` (the broken
    pairs' sort key; equal texts, equal codes; a row with a missing value has a missing key: it comes
    last), without building the joined strings.

    Ranked field by field with ``\\x1f`` appended (the last field as it is), rows order as their
    joined texts: the first field whose texts differ decides both orders (with the separator appended
    the two texts differ at a position inside both), so temperature ``10.0`` < ``2.0`` and item ``"10"``
    < ``"9"`` as in the joined text.  A text holding ``\\x1f`` itself breaks that argument: then the
    joined texts are ranked."""
    if texts.empty:
        return np.zeros(len(texts), dtype=np.int64)
    if _holds_separator(texts):
        return _joined_ranks(texts)
    last = len(texts.columns) - 1
    return _dense([_field_ranks(texts[c], last=k == last) for k, c in enumerate(texts.columns)])


def _holds_separator(texts: pd.DataFrame) -> bool:
    return any(texts[c].astype(str).str.contains(_SEP, regex=False).any() for c in texts.columns)


def _joined_ranks(texts: pd.DataFrame) -> np.ndarray:
    joined = texts.iloc[:, 0].astype(str).astype(object)
    for c in texts.columns[1:]:
        joined = joined + _SEP + texts[c].astype(str).astype(object)
    codes = pd.factorize(joined, sort=True)[0].astype(np.int64)
    return np.where(codes < 0, codes.max(initial=-1) + 1, codes)


def _dense(ranks: list[np.ndarray]) -> np.ndarray:
    """Dense codes of the rows of several rank columns, in their lexicographic order; a row with a
    missing rank (-1) after all others, all such rows equal (a missing text makes the joined text
    missing)."""
    rows = np.stack(ranks, axis=1)
    missing = (rows < 0).any(axis=1)
    rows[missing] = -1
    order = np.lexsort(rows.T[::-1])
    rows = rows[order]
    new = np.ones(len(rows), dtype=bool)
    new[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    codes = np.empty(len(rows), dtype=np.int64)
    codes[order] = np.cumsum(new) - 1
    if missing.any():                   # the missing rows were code 0: moved after the others
        codes = np.where(missing, codes.max(), codes - 1)
    return codes


def _cell_key_frame(cells: pd.DataFrame) -> pd.DataFrame:
    """The cell key frame with ``step`` ('' when the run has no steps), in :data:`BROKEN_PAIR_KEY` order."""
    out = cells if "step" in cells.columns else cells.assign(step="")
    return out[list(BROKEN_PAIR_KEY[:-1])].reset_index(drop=True)


def _pair_keys(cell_keys: pd.DataFrame, items: pd.Series, u: dict[str, np.ndarray],
               pairs: np.ndarray) -> pd.DataFrame:
    """The :data:`BROKEN_PAIR_KEY` values of the pair codes ``pairs`` (the cell key frame's dtypes)."""
    keys = cell_keys.iloc[u["pair_cell"][pairs]].reset_index(drop=True)
    keys["item_id"] = items.iloc[u["pair_row"][pairs]].to_numpy()
    return keys


def _sorted_flagged(cell_keys: pd.DataFrame, items: pd.Series, u: dict[str, np.ndarray],
                    f: _Flags) -> np.ndarray:
    """The flagged pair codes: flipped first, then unstable, then by their key's text (:func:`text_order`);
    equal texts in pair code order, the order the pairs were met in before."""
    flagged = np.flatnonzero(f.flipped | f.unstable)
    item_text = pd.Series(items.iloc[u["pair_row"][flagged]].to_numpy(), dtype=object)
    if _holds_separator(cell_keys) or _holds_separator(item_text.to_frame()):
        rank = _joined_ranks(_pair_keys(cell_keys, items, u, flagged))
    else:
        # the cells' fields ranked once per cell (not per pair), the item last
        cell_rank = np.stack([_field_ranks(cell_keys[c]) for c in cell_keys.columns], axis=1)
        pc = u["pair_cell"][flagged]
        rank = _dense([*(cell_rank[pc, k] for k in range(cell_rank.shape[1])), _field_ranks(item_text, last=True)])
    return flagged[np.lexsort((rank, ~f.unstable[flagged], ~f.flipped[flagged]))]


def _item_fields(items: pd.DataFrame | None) -> pd.DataFrame:
    cols = ["dataset", "item_id", *_ITEM_COLUMNS]
    if items is None or items.empty:
        return pd.DataFrame(columns=cols)
    it = items.reindex(columns=cols).astype({"dataset": str, "item_id": str})
    return it.drop_duplicates(["dataset", "item_id"]).rename(columns={c: f"item_{c}" for c in _ITEM_COLUMNS})


def _pair_rows(judgments: pd.DataFrame, u: dict[str, np.ndarray], shown: np.ndarray) -> dict[int, list[dict[str, Any]]]:
    """The judgments of the shown pair codes, per pair sorted by order and repetition (one selection,
    one sort, one to_dict: no per-pair pandas work)."""
    wanted = np.zeros(len(u["pair_cell"]), dtype=bool)
    wanted[shown] = True
    rows_at = np.flatnonzero(wanted[u["row_pair"]])
    cols = [c for c in _ROW_COLUMNS if c in judgments.columns]
    sub = judgments.iloc[rows_at][cols].assign(_pair=u["row_pair"][rows_at])
    sub = sub.sort_values(["order", "rep"], kind="stable")
    rows: dict[int, list[dict[str, Any]]] = {}
    for rec in sub.to_dict(orient="records"):
        rows.setdefault(int(rec["_pair"]), []).append({c: rec.get(c) for c in _ROW_COLUMNS})
    return rows


def broken_pairs(judgments: pd.DataFrame, items: pd.DataFrame | None = None, *,
                 policy: FigurePolicy = DEFAULT_POLICY, limit: int = 300) -> BrokenPairs:
    """:class:`BrokenPairs` of a pairwise judgments frame; ``items`` is ``RunStore.items_frame()``
    (dataset, item_id, question, response_a, response_b, category, label, meta).  A pair's category
    and label are its judgments' when they carry them, else the item's."""
    if judgments.empty:
        return BrokenPairs()
    j = with_cell_columns(judgments)
    if "step" not in j.columns:
        j = j.assign(step="")
    cells, u = unit_table(j, policy=policy, by=CELL_KEY)
    f = _flags(u)
    n_flipped, n_unstable = int(f.flipped.sum()), int(f.unstable.sum())
    n_total = int((f.flipped | f.unstable).sum())
    if n_total == 0:
        return BrokenPairs()
    cell_keys = _cell_key_frame(cells)
    shown_codes = _sorted_flagged(cell_keys, j["item_id"], u, f)[:limit]
    rows = _pair_rows(j, u, shown_codes)
    key = list(BROKEN_PAIR_KEY)
    shown = _pair_keys(cell_keys, j["item_id"], u, shown_codes).astype({"temperature": float})
    shown = shown.assign(flipped=f.flipped[shown_codes], unstable=f.unstable[shown_codes],
                         modal_AB=_mode_names(f.modal["AB"][shown_codes]),
                         modal_BA=_mode_names(f.modal["BA"][shown_codes]), _code=shown_codes,
                         _ds=shown["dataset"].astype(str), _id=shown["item_id"].astype(str))
    shown = shown.merge(_item_fields(items), left_on=["_ds", "_id"], right_on=["dataset", "item_id"], how="left",
                        suffixes=("", "_item")).drop(columns=["_ds", "_id", "dataset_item", "item_id_item"])
    pairs = []
    for rec in shown.to_dict(orient="records"):
        recs = rows.get(int(rec["_code"]), [])
        cats = [r["category"] for r in recs if isinstance(r.get("category"), str)]
        labels = [r["label"] for r in recs if isinstance(r.get("label"), str)]
        item = {c: (None if _missing(rec.get(f"item_{c}")) else rec.get(f"item_{c}")) for c in _ITEM_COLUMNS}
        pairs.append({**{c: rec[c] for c in key}, "flipped": bool(rec["flipped"]), "unstable": bool(rec["unstable"]),
                      "modal_AB": rec["modal_AB"], "modal_BA": rec["modal_BA"], **item,
                      "category": cats[0] if cats else item["category"],
                      "label": item["label"] if item["label"] is not None else (labels[0] if labels else None),
                      "rows": recs})
    return BrokenPairs(n_total=n_total, n_flipped=n_flipped, n_unstable=n_unstable, pairs=pairs)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)
