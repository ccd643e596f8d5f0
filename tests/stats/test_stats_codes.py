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


def test_group_codes_dense_relabel_is_np_unique() -> None:
    """Small key ranges are relabelled without a sort: the same codes and first rows as np.unique.
    Keys (judge, temperature): rows 0..5 = (b, 2), (a, 10), (b, 2), (None, 10), (a, 2), (a, 10);
    sorted combinations (a, 2) 0, (a, 10) 1, (b, 2) 2, (None, 10) 3 (missing last);
    first rows: (a, 2) row 4, (a, 10) row 1, (b, 2) row 0, (None, 10) row 3."""
    df = pd.DataFrame({"judge": pd.Series(["b", "a", "b", None, "a", "a"], dtype="category"),
                       "temperature": [2.0, 10.0, 2.0, 10.0, 2.0, 10.0]})
    codes, keys = group_codes(df, ["judge", "temperature"])
    assert codes.tolist() == [2, 1, 2, 3, 0, 1]
    assert keys["temperature"].tolist() == [2.0, 10.0, 2.0, 10.0]
    assert keys["judge"].tolist()[:3] == ["a", "a", "b"] and pd.isna(keys["judge"].iloc[3])
    rng = np.random.default_rng(3)
    big = pd.DataFrame({"j": pd.Categorical(rng.choice(["x", "y", "z"], 5000), categories=["z", "y", "x", "w"]),
                        "i": rng.integers(0, 40, 5000)})
    got, got_keys = group_codes(big, ["j", "i"])
    composite = (big["j"].cat.codes.to_numpy() * 41 + big["i"].to_numpy()).astype(np.int64)
    _, first, inverse = np.unique(composite, return_index=True, return_inverse=True)
    assert got.tolist() == inverse.tolist()
    assert got_keys.equals(big.iloc[first][["j", "i"]].reset_index(drop=True))


@pytest.mark.parametrize("values, message", [
    (["A", "B", None, "tie"], None),
    (["A", "x", None, "y"], "row 1 has 'x'"),
    ([None, "A", "x"], "row 2 has 'x'"),        # an unknown value is named before a missing one
])
def test_verdict_and_order_codes_of_a_categorical_equal_the_texts(values: list[str | None],
                                                                  message: str | None) -> None:
    from verdictlab.stats._frame import order_codes, verdict_codes

    text = pd.Series(values, dtype=object)
    cat = pd.Series(pd.Categorical(values, categories=["y", "tie", "x", "B", "A", "unused"]))
    if message is None:
        assert verdict_codes(cat).tolist() == verdict_codes(text).tolist() == [0, 1, 3, 2]
        with pytest.raises(ValueError, match="order: row 0 has 'A'"):
            order_codes(cat)
    else:
        for s in (text, cat):
            with pytest.raises(ValueError, match=message):
                verdict_codes(s)
    orders = ["BA", None, "AB"]
    for s in (pd.Series(orders, dtype=object), pd.Series(orders, dtype="category")):
        with pytest.raises(ValueError, match="order: row 1 is missing"):
            order_codes(s)
    assert order_codes(pd.Series(["BA", "AB"], dtype="category")).tolist() == [1, 0]
