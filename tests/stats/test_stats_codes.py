"""Integer codes of key columns (stats._frame): a categorical's own codes stand in for a sorted factorize."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from verdictlab.stats._frame import group_codes, sorted_codes


def _rank(codes: np.ndarray) -> list[int]:
    """Dense ranks of codes (what a sort of the values gives, gaps closed)."""
    return np.unique(codes, return_inverse=True)[1].ravel().tolist()


@pytest.mark.parametrize("values", [
    pd.Series(["b", "a", None, "c", "a"], dtype="category"),                        # sorted categories, a NULL
    pd.Series(pd.Categorical(["b", "a", "b"], categories=["a", "b", "z"])),          # an unused category
    pd.Series(pd.Categorical(["b", "a", None], categories=["b", "a"])),              # categories not sorted
    pd.Series([0.7, 0.0, np.nan, 0.7]),
    pd.Series(["x", None, "w"], dtype=object),
])
def test_sorted_codes_order_as_a_sorted_factorize(values: pd.Series) -> None:
    # factorize(sort=True, use_na_sentinel=False): ["a", "b", "c", NaN] -> a 0, b 1, c 2, NaN 3
    want, uniques = pd.factorize(values, sort=True, use_na_sentinel=False)
    codes, n = sorted_codes(values)
    assert _rank(codes) == want.tolist()
    assert codes.max(initial=0) < n and n >= len(uniques)


def test_sorted_codes_of_a_categorical_sort_in_its_categories_order() -> None:
    # categories [b, a]: factorize(sort=True) and a groupby put b first, NULL last -- so do the codes
    values = pd.Series(pd.Categorical(["b", "a", None, "a"], categories=["b", "a"]))
    assert _rank(sorted_codes(values)[0]) == [0, 1, 2, 1]


def test_group_codes_same_for_categorical_and_text_keys() -> None:
    df = pd.DataFrame({"judge": ["j2", "j1", "j2", None], "t": [0.0, 0.7, 0.0, 0.0]})
    text_codes, text_keys = group_codes(df, ["judge", "t"])
    cat_codes, cat_keys = group_codes(df.astype({"judge": "category"}), ["judge", "t"])
    # (j1, 0.7) 0, (j2, 0.0) 1, (NULL, 0.0) 2
    assert text_codes.tolist() == cat_codes.tolist() == [1, 0, 1, 2]
    assert text_keys.astype(object).fillna("-").values.tolist() == cat_keys.astype(object).fillna("-").values.tolist()
