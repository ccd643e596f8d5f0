"""Internal helpers: turn a judgments frame into dense integer codes (no Python loops over rows)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..core.vocab import CELL_KEY, DEFAULT_DECODING, ORDERS

#: verdict codes used inside the statistics (canonical terms)
VERDICT_CODES: dict[str, int] = {"A": 0, "B": 1, "tie": 2}
UNPARSED = 3  # code of an unparsed verdict (only used by ``unparsed="wrong"``)
#: an unparsed verdict as a value of its own (``unparsed="wrong"``): equal to another unparsed verdict,
#: never to a label, a side or a grade
UNPARSED_VALUE = "\x00unparsed"
N_CODES = 4
ORDER_CODES: dict[str, int] = {o: k for k, o in enumerate(ORDERS)}   # AB 0, BA 1


def group_codes(df: pd.DataFrame, cols: Sequence[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Dense codes 0..G-1 for the combinations of ``cols`` (lexicographically sorted, NaN last)
    and the frame of the G distinct key rows."""
    n = len(df)
    if not cols:
        return np.zeros(n, dtype=np.int64), pd.DataFrame(index=[0] if n else [])
    composite = np.zeros(n, dtype=np.int64)
    top = 1
    for c in cols:
        codes, n_levels = sorted_codes(df[c])
        composite = composite * (n_levels + 1) + codes
        top *= n_levels + 1
    if top <= 8 * n + 1024:
        inverse, first = _dense_relabel(composite, top)
    else:
        _, first, inverse = np.unique(composite, return_index=True, return_inverse=True)
    keys = df.iloc[first][list(cols)].reset_index(drop=True)
    return inverse.astype(np.int64).ravel(), keys


def _dense_relabel(composite: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(composite, return_inverse=True, return_index=True)``'s inverse and first-row index
    for values in 0..top-1, in O(n + top) instead of a sort: the rank of each value among the present
    ones, and each present value's first row (written last to first: the first row's write lands last)."""
    present = np.zeros(top, dtype=bool)
    present[composite] = True
    rank = np.cumsum(present) - 1
    first_row = np.zeros(top, dtype=np.int64)
    first_row[composite[::-1]] = np.arange(len(composite) - 1, -1, -1)
    return rank[composite], first_row[present]


def sorted_codes(values: pd.Series) -> tuple[np.ndarray, int]:
    """``(codes, n)``: integer codes 0..n-1 in the order of ``pd.factorize(values, sort=True,
    use_na_sentinel=False)`` -- sorted values, missing last; a categorical sorts in its categories'
    order -- not necessarily dense.  A categorical gives its own codes (no hashing of the rows; unused
    categories leave gaps)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        n = len(values.dtype.categories)
        codes = values.cat.codes.to_numpy().astype(np.int64)
        return np.where(codes < 0, n, codes), n + 1
    codes, uniques = pd.factorize(values, sort=True, use_na_sentinel=False)
    return codes.astype(np.int64), len(uniques)


def combine(*codes: np.ndarray) -> np.ndarray:
    """Dense codes for tuples of integer code arrays."""
    composite = np.asarray(codes[0], dtype=np.int64)
    for c in codes[1:]:
        composite = composite * (int(c.max(initial=0)) + 1) + c
    top = int(composite.max(initial=-1)) + 1
    if top <= 8 * len(composite) + 1024:
        # dense relabel in O(n + top) instead of a sort: same result as np.unique's inverse
        present = np.zeros(top, dtype=bool)
        present[composite] = True
        if present.all():
            # every value 0..top-1 is there, so each one's rank is itself: the gather is skipped (every
            # cell x item and pair x order of a complete run; 15 calls of remedies at 5.4M judgments)
            return composite if len(codes) > 1 else composite.copy()
        rank = np.cumsum(present) - 1
        return rank[composite].astype(np.int64, copy=False)
    _, inverse = np.unique(composite, return_inverse=True)
    return inverse.astype(np.int64).ravel()


def _map_codes(values: pd.Series, mapping: dict[str, int], *, missing_code: int | None, what: str,
               expected: str) -> np.ndarray:
    """Map a column through ``mapping`` via factorize (fast on arrow strings: one lookup per
    distinct value).  Missing -> ``missing_code`` (None: an error); an unknown value is an error
    naming the row."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        return _map_categorical(values, mapping, missing_code=missing_code, what=what, expected=expected)
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    table = np.empty(len(uniques) + 1, dtype=np.int64)
    for k, u in enumerate(uniques):
        if u in mapping:
            table[k] = mapping[u]
        else:
            pos = int(np.flatnonzero(codes == k)[0])
            raise ValueError(f"{what}: row {pos} has {u!r}; expected {expected}")
    if missing_code is None and (codes < 0).any():
        pos = int(np.flatnonzero(codes < 0)[0])
        raise ValueError(f"{what}: row {pos} is missing; expected {expected}")
    table[-1] = -1 if missing_code is None else missing_code
    return table[codes]


def _map_categorical(values: pd.Series, mapping: dict[str, int], *, missing_code: int | None, what: str,
                     expected: str) -> np.ndarray:
    """:func:`_map_codes` of a categorical through its own codes (no hashing of the rows): the same
    codes and the same errors (the first row with an unknown value, else the first missing one)."""
    cats = values.dtype.categories
    codes = values.cat.codes.to_numpy()
    unknown = -2
    table = np.array([mapping.get(c, unknown) for c in cats] + [-1 if missing_code is None else missing_code],
                     dtype=np.int64)
    out = table[codes]                                   # code -1 (missing) reads the last entry
    if (out == unknown).any():
        pos = int(np.flatnonzero(out == unknown)[0])
        raise ValueError(f"{what}: row {pos} has {cats[codes[pos]]!r}; expected {expected}")
    if missing_code is None and (codes < 0).any():
        pos = int(np.flatnonzero(codes < 0)[0])
        raise ValueError(f"{what}: row {pos} is missing; expected {expected}")
    return out


def verdict_codes(values: pd.Series, *, what: str = "verdict") -> np.ndarray:
    """A/B/tie -> 0/1/2, missing -> UNPARSED; anything else is an error naming the value."""
    return _map_codes(values, VERDICT_CODES, missing_code=UNPARSED, what=what,
                      expected="'A', 'B', 'tie' or null")


def label_codes(values: pd.Series, *, ties: bool = False) -> np.ndarray:
    """Gold labels: A -> 0, B -> 1 (``ties``: tie -> 2, a class of its own); tie, missing or anything else
    -> -1 (unlabelled for accuracy).  Read through the labels' distinct values, so a categorical column,
    also one whose every value is missing, gives the same codes as text."""
    classes = VERDICT_CODES if ties else {"A": 0, "B": 1}
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    table = np.array([classes.get(u, -1) for u in uniques] + [-1], dtype=np.int64)
    return table[codes]


def order_codes(values: pd.Series) -> np.ndarray:
    return _map_codes(values, ORDER_CODES, missing_code=None, what="order", expected="'AB' or 'BA'")


def with_cell_columns(df: pd.DataFrame, by: Sequence[str] = CELL_KEY) -> pd.DataFrame:
    """``df`` with its ``decoding`` column made whole when ``by`` names it: added as ``free`` when the
    frame has none, NULLs read as ``free`` (runs stored before decoding became a factor).  So every
    figure of a cell carries the full cell key (:data:`verdictlab.core.vocab.CELL_KEY`) whatever the frame."""
    if "decoding" not in by:
        return df
    if "decoding" not in df.columns:
        return df.assign(decoding=DEFAULT_DECODING)
    if df["decoding"].isna().any():
        return df.assign(decoding=df["decoding"].astype(object).fillna(DEFAULT_DECODING))
    return df


def require_columns(df: pd.DataFrame, cols: Sequence[str], *, who: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{who}: judgments frame lacks column(s) {missing}")


def safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den with NaN where den == 0 (an undefined figure is NaN, never a silent 0)."""
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out
