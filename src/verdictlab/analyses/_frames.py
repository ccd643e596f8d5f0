"""Helpers shared by the analyses that derive judgment rows (remedies, the FLASK aggregate): a leaf
module, so the analyses import it and never each other in a circle.

Derived frames are built column by column (no Python loop over rows): the trial ids in bulk with
:func:`verdictlab.core.design.trial_ids`, a text that depends on a few values per row formatted once per
distinct combination (:func:`per_distinct`), and a text column that is categorical (a compact read of the
store) stays categorical (:func:`text_filled`, :func:`suffixed`).  A caller that needs only some
columns (the remedy table needs the figure columns) asks for them with ``columns`` and skips the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..core.design import trial_ids
from ..core.judgment import JUDGMENT_COLUMN_NAMES, judgment_frame
from ..core.vocab import DECISIVE, VERDICTS, Order, first_shown
from ..stats._frame import group_codes, with_cell_columns

#: the columns :func:`verdictlab.stats.reliability` reads of a derived frame (with the cell key)
FIGURE_COLUMNS: tuple[str, ...] = ("judge", "dataset", "item_id", "protocol", "order", "temperature", "rep", "step",
                                   "label", "verdict", "decoding")


def text_filled(values: pd.Series, fill: str) -> pd.Series:
    """A text column with its missing values set to ``fill``: categorical stays categorical (the
    category added when new), anything else becomes ``str``."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        cat = values if fill in values.cat.categories else values.cat.add_categories([fill])
        return cat.fillna(fill)
    return values.astype(object).fillna(fill).astype(str)


def suffixed(values: pd.Series, suffix: str) -> pd.Series:
    """``values + suffix`` for a text column; a categorical is renamed per category (its categories
    kept in sorted order, as a compact store read gives them) instead of once per row."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        cats = values.cat.remove_unused_categories()
        renamed = cats.cat.rename_categories([f"{c}{suffix}" for c in cats.cat.categories])
        return renamed.cat.reorder_categories(sorted(renamed.cat.categories))
    return values.astype(str) + suffix


def per_distinct(fn: Callable[..., Any], *columns: Any) -> np.ndarray:
    """``fn(*values)`` of every row, called once per distinct combination of the ``columns`` values
    (the rows' texts are then taken from those few results): an object array.  ``fn`` gets the
    values as they are in ``columns`` (a missing value stays ``None`` or NaN, as given)."""
    values = [np.asarray(c, dtype=object) for c in columns]
    n = len(values[0])
    if n == 0:
        return np.empty(0, dtype=object)
    codes = np.zeros(n, dtype=np.int64)
    for v in values:
        c, u = pd.factorize(v, use_na_sentinel=False)
        codes = codes * (len(u) + 1) + c
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    texts = np.empty(len(first), dtype=object)
    texts[:] = [fn(*(v[i] for v in values)) for i in first]
    return texts[inverse.ravel()]


def _prep(judgments: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The rows to derive from: every judgment column (``columns=None``; missing ones NULL), or the
    input's columns when a caller asks for part of them; ``step`` filled ('' for none) and ``decoding``
    whole (:func:`verdictlab.stats.with_cell_columns`: a frame from the store has it already)."""
    df = judgments.copy()
    if columns is None:
        for c in JUDGMENT_COLUMN_NAMES:
            if c not in df.columns:
                df[c] = None
    df["step"] = text_filled(df["step"], "") if "step" in df.columns else ""
    return with_cell_columns(df)


def _finish(df: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The derived frame: every judgment column with its trial id (``columns=None``), or just
    ``columns`` (the trial id only when asked for)."""
    if columns is not None:
        out = df[[c for c in columns if c in df.columns]]
        if "trial_id" in columns and len(out):
            out = out.assign(trial_id=derived_trial_ids(df))
        return out.reset_index(drop=True)
    if len(df):
        df["trial_id"] = derived_trial_ids(df)
    return judgment_frame(df).reset_index(drop=True)


def derived_trial_ids(df: pd.DataFrame) -> np.ndarray:
    """:func:`verdictlab.core.design.trial_id` of every row, in bulk per decoding mode."""
    out = np.empty(len(df), dtype=object)
    decoding = np.asarray(df["decoding"], dtype=object)
    judge, dataset, item_id, protocol, order = (np.asarray(df[c], dtype=object)
                                                for c in ("judge", "dataset", "item_id", "protocol", "order"))
    temperature = np.asarray(df["temperature"], dtype=float)
    rep = np.asarray(df["rep"], dtype=np.int64)
    step = np.asarray(df["step"], dtype=object)
    for mode in pd.unique(decoding):
        at = np.flatnonzero(decoding == mode)
        out[at] = trial_ids(judge[at].tolist(), dataset[at].tolist(), item_id[at].tolist(), protocol[at].tolist(),
                            order[at].tolist(), temperature[at].tolist(), rep[at].tolist(), step[at].tolist(),
                            decoding=str(mode))
    return out


def _empty(columns: Sequence[str] | None = None) -> pd.DataFrame:
    names = list(JUDGMENT_COLUMN_NAMES) if columns is None else list(columns)
    frame = pd.DataFrame({c: pd.Series(dtype=object) for c in names})
    return judgment_frame(frame) if columns is None else frame


#: the columns of :func:`vote_frame`
VOTE_COLUMNS: tuple[str, ...] = ("dataset", "item_id", "annotator", "vote", "label_rule")


def vote_frame(items: Sequence[object]) -> pd.DataFrame:
    """Every annotator vote of the pair items (``PairItem.votes``), one row each, in item order:
    :data:`VOTE_COLUMNS`, ``vote`` in canonical terms."""
    from ..core.items import PairItem

    rows = [(it.dataset, it.item_id, v.annotator, v.vote, it.label_rule)
            for it in items if isinstance(it, PairItem) for v in it.votes]
    return pd.DataFrame(rows, columns=list(VOTE_COLUMNS), dtype=object)


def pointwise_mask(judgments: pd.DataFrame, items: Sequence[object] | None = None) -> pd.Series:
    """True for rows of pointwise items (rubric / graded verdicts), which pairwise statistics such as
    :func:`verdictlab.stats.reliability` must not see.  With ``items`` (``RunStore.items()``) the item
    kind decides; without, a verdict outside A / B / tie / null does."""
    if items is not None:
        from ..core.items import PointItem

        point = {(it.dataset, str(it.item_id)) for it in items if isinstance(it, PointItem)}
        if point:
            keys = pd.MultiIndex.from_arrays([judgments["dataset"].astype(str), judgments["item_id"].astype(str)])
            return pd.Series(keys.isin(list(point)), index=judgments.index)
        return pd.Series(False, index=judgments.index)
    v = judgments["verdict"]
    return v.notna() & ~v.isin(VERDICTS)


def paired_positions(df: pd.DataFrame, key: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The positions (``iloc``) of the AB and the BA row of every ``key`` judged in both orders (the
    first row of a key in each order), aligned pair by pair in the order of the AB rows.  Matched by
    integer codes of the key (one sort), not by a join of the two orders' key indexes."""
    codes, distinct = group_codes(df, key)
    is_ab = (df["order"] == Order.AB).to_numpy(dtype=bool)
    is_ba = (df["order"] == Order.BA).to_numpy(dtype=bool)
    ab = np.flatnonzero(is_ab)
    ab = ab[np.sort(np.unique(codes[ab], return_index=True)[1])]     # first AB row per key, in row order
    ba = np.flatnonzero(is_ba)
    ba_codes, ba_first = np.unique(codes[ba], return_index=True)
    ba_of = np.full(len(distinct), -1, dtype=np.int64)
    ba_of[ba_codes] = ba[ba_first]                                   # first BA row per key
    match = ba_of[codes[ab]]
    both = match >= 0
    return ab[both], match[both]


def _twice(values: Any) -> Any:
    """A per-pair column repeated for the pair's two derived rows (AB rows first, then BA); a text
    column becomes categorical (factorized once per pair, not once per row), a scalar stays a scalar."""
    if values is None or np.ndim(values) == 0:
        return values
    arr = np.asarray(values)
    if arr.dtype != object:
        return np.concatenate([arr, arr])
    codes, uniques = pd.factorize(arr, use_na_sentinel=True)
    return pd.Categorical.from_codes(np.concatenate([codes, codes]), categories=pd.Index(uniques, dtype=object))


def both_order_rows(df: pd.DataFrame, ab: np.ndarray, ba: np.ndarray, combined: dict[str, Any],
                    protocol_suffix: str) -> pd.DataFrame:
    """The derived rows of an order-combining remedy: the AB rows ``ab`` then the BA rows ``ba`` of
    ``df`` (positions, :func:`paired_positions`), each pair's two rows carrying its ``combined`` columns
    (one value per pair: verdict, parse status, ...), the protocol suffixed and ``shown_first_won`` the
    first-shown winner of the combined verdict (NaN when it is not A or B)."""
    n = len(ab)
    out = df.iloc[np.concatenate([ab, ba])].reset_index(drop=True)
    out["order"] = pd.Categorical.from_codes(np.repeat(np.array([0, 1], dtype=np.int8), n),
                                             categories=pd.Index([Order.AB.value, Order.BA.value], dtype=object))
    out["protocol"] = suffixed(out["protocol"], protocol_suffix)
    for name, values in combined.items():
        if name in out.columns:
            out[name] = _twice(values)
    verdict = np.asarray(combined["verdict"], dtype=object)
    decisive = np.isin(verdict, DECISIVE)
    out["shown_first_won"] = np.concatenate([np.where(decisive, (verdict == first_shown(o)).astype(float), np.nan)
                                             for o in (Order.AB.value, Order.BA.value)])
    return out
