"""The column-wise helpers the derived (remedy, FLASK) frames are built with: each gives what the row-by-row
code it replaced gave, on the inputs where the two could part (missing values, categoricals, constrained
decoding)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from verdictlab.analyses._frames import derived_trial_ids, per_distinct, suffixed, text_filled
from verdictlab.core.design import trial_id


def test_per_distinct_calls_once_per_combination_and_keeps_row_order() -> None:
    calls: list[tuple[object, object]] = []

    def fmt(s: object, n: object) -> str:
        calls.append((s, n))
        return f"{s}: {n}"

    status = np.array(["ok", "tie", "ok", None, "ok", None], dtype=object)
    n = np.array([3, 2, 3, 1, 2, 1])
    out = per_distinct(fmt, status, n)
    # rows: (ok,3) (tie,2) (ok,3) (None,1) (ok,2) (None,1) -> 4 distinct combinations
    assert out.tolist() == ["ok: 3", "tie: 2", "ok: 3", "None: 1", "ok: 2", "None: 1"]
    assert sorted(calls, key=str) == sorted([("ok", 3), ("tie", 2), (None, 1), ("ok", 2)], key=str)
    assert per_distinct(fmt, np.array([], dtype=object)).tolist() == []


def test_suffixed_renames_categories_and_matches_the_string_sum() -> None:
    plain = pd.Series(["vf-json", "direct", "vf-json"])
    cat = plain.astype("category")
    got = suffixed(cat, "+both-orders")
    assert isinstance(got.dtype, pd.CategoricalDtype)
    assert got.astype(str).tolist() == (plain + "+both-orders").tolist()
    assert list(got.cat.categories) == ["direct+both-orders", "vf-json+both-orders"]   # sorted
    assert suffixed(plain, "+x").tolist() == ["vf-json+x", "direct+x", "vf-json+x"]


def test_text_filled_keeps_a_categorical_and_fills_missing() -> None:
    cat = pd.Series(["a", None, "b"], dtype="category")
    got = text_filled(cat, "")
    assert isinstance(got.dtype, pd.CategoricalDtype) and got.tolist() == ["a", "", "b"]
    assert text_filled(pd.Series(["a", None, np.nan]), "free").tolist() == ["a", "free", "free"]


def test_derived_trial_ids_equal_trial_id_row_by_row() -> None:
    df = pd.DataFrame({
        "judge": ["sim:a", "sim:b", "sim:a"], "dataset": ["d", "d", "e"], "item_id": ["1", "2", "3"],
        "protocol": ["direct+both-orders", "vf-json", "direct"], "order": ["AB", "BA", "AB"],
        "temperature": [0.0, 0.7, 1.0], "rep": [0, 2, 1], "step": ["", "relevance", ""],
        "decoding": ["free", "constrained", "free"]})
    df["judge"] = df["judge"].astype("category")
    want = [trial_id(j, d, i, p, o, t, r, s, decoding=dec) for j, d, i, p, o, t, r, s, dec in
            zip(df["judge"], df["dataset"], df["item_id"], df["protocol"], df["order"], df["temperature"], df["rep"],
                df["step"], df["decoding"], strict=True)]
    assert derived_trial_ids(df).tolist() == want
    # the constrained row's id differs from the free id of the same key (decoding enters the hash)
    assert want[1] != trial_id("sim:b", "d", "2", "vf-json", "BA", 0.7, 2, "relevance")
