"""stats.broken_pairs: flags from unit_table's codes, and the pairs sorted by their key's text through
integer codes (text_order) in the order the joined texts gave."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pandas as pd
import pytest

from verdictlab.core.policy import FigurePolicy
from verdictlab.stats import broken_pairs, text_order


def _joined_ranks(frame: pd.DataFrame) -> np.ndarray:
    """The reference: dense ranks of the rows' texts joined by \\x1f (the sort key the codes replace;
    a missing value, which stays missing as text, makes the key missing: last)."""
    texts = frame.astype(str)
    joined = texts.iloc[:, 0].astype(object)
    for c in texts.columns[1:]:
        joined = joined + "\x1f" + texts[c].astype(object)
    codes = pd.factorize(joined, sort=True)[0]
    return np.where(codes < 0, codes.max() + 1, codes)


def test_text_order_sorts_numbers_and_ids_as_text() -> None:
    # joined texts: "2.0\x1f9", "10.0\x1f10", "2.0\x1f10", "10.0\x1f9"; as text "1" < "2", so
    # 10.0 comes before 2.0 and item "10" before "9":
    #   "10.0\x1f10" (0) < "10.0\x1f9" (1) < "2.0\x1f10" (2) < "2.0\x1f9" (3)
    # (as numbers the order would be 2.0/9, 2.0/10, 10.0/9, 10.0/10)
    frame = pd.DataFrame({"temperature": [2.0, 10.0, 2.0, 10.0], "item_id": ["9", "10", "10", "9"]})
    assert text_order(frame).tolist() == [3, 0, 2, 1]


def test_text_order_ranks_a_prefix_as_the_joined_text_does() -> None:
    # judge "j" vs "j\t" vs "j2", then item "x": the joined texts compare the separator \x1f (31) with
    # the longer name's next character: "\t" (9) < \x1f < "2" (50), so "j\tx..." < "j\x1fx" < "j2\x1fx";
    # comparing the names alone would put "j" (a prefix) first
    frame = pd.DataFrame({"judge": ["j", "j\t", "j2"], "item_id": ["x", "x", "x"]})
    assert text_order(frame).tolist() == [1, 0, 2]


def test_text_order_equals_the_joined_text_order_on_a_mixed_grid() -> None:
    """Every row of a shuffled grid of awkward keys: floats that sort differently as text (2, 2.5, 10,
    0.7, NaN), integer and text item ids ("9", "10", "1", prefixes, a tab), equal rows."""
    rng = random.Random(7)
    grid = list(itertools.product(["j", "j2", "j\tb", "j b", "J"], [0.7, 2.0, 2.5, 10.0, float("nan")],
                                  ["9", "10", "1", "a", "a\tb", "ab", ""]))
    rows = grid + rng.sample(grid, 40)          # repeated keys get equal codes
    rng.shuffle(rows)
    frame = pd.DataFrame(rows, columns=["judge", "temperature", "item_id"])
    assert text_order(frame).tolist() == _joined_ranks(frame).tolist()
    ints = frame.assign(item_id=[hash(i) % 23 for i in frame["item_id"]])  # 9 vs 10 as integers
    assert text_order(ints).tolist() == _joined_ranks(ints).tolist()


def test_text_order_puts_a_key_with_a_missing_value_last() -> None:
    # a missing temperature makes the joined key missing, sorted last whatever the item: rows 1 and 2
    # share the last code; "2.0\x1fb" (0) < "2.0\x1fc" (1)
    frame = pd.DataFrame({"temperature": [2.0, float("nan"), float("nan"), 2.0], "item_id": ["c", "a", "z", "b"]})
    assert text_order(frame).tolist() == [1, 2, 2, 0]


def test_text_order_with_the_separator_in_a_value_ranks_the_joined_texts() -> None:
    # "a\x1fb" + \x1f + "c" = "a\x1fb\x1fc" and "a" + \x1f + "b\x1fc" are the same joined text
    frame = pd.DataFrame({"judge": ["a\x1fb", "a", "a"], "item_id": ["c", "b\x1fc", "a"]})
    assert text_order(frame).tolist() == _joined_ranks(frame).tolist() == [1, 1, 0]


def _rows(temperature: float, item: object, ab: list[str | None], ba: list[str | None]) -> list[dict[str, object]]:
    return [{"judge": "j", "protocol": "direct", "dataset": "d", "temperature": temperature, "step": "",
             "item_id": item, "order": order, "rep": rep, "verdict": v, "label": "A"}
            for order, vs in (("AB", ab), ("BA", ba)) for rep, v in enumerate(vs)]


def test_broken_pairs_come_flipped_then_unstable_then_by_key_text() -> None:
    """Temperatures 2 and 10, items 9 and 10 (integers): every pair broken.
    flipped (AB A,A vs BA B,B): (2.0, 9) and (10.0, 10); unstable only (AB A,B... modes A/A):
    (2.0, 10) and (10.0, 9).  By text "10.0" < "2.0" and "10" < "9", so
    flipped: (10.0, 10), (2.0, 9); then unstable: (10.0, 9), (2.0, 10)."""
    flip = (["A", "A"], ["B", "B"])
    unstable = (["A", "A", "B"], ["A", "A"])
    rows = [*_rows(2.0, 9, *flip), *_rows(10.0, 10, *flip), *_rows(2.0, 10, *unstable), *_rows(10.0, 9, *unstable)]
    bp = broken_pairs(pd.DataFrame(rows[::-1]))       # the row order does not matter
    assert (bp.n_total, bp.n_flipped, bp.n_unstable) == (4, 2, 2)
    assert [(p["temperature"], p["item_id"], p["flipped"], p["unstable"]) for p in bp.pairs] == [
        (10.0, 10, True, False), (2.0, 9, True, False), (10.0, 9, False, True), (2.0, 10, False, True)]
    first = bp.pairs[0]
    assert (first["modal_AB"], first["modal_BA"]) == ("A", "B")
    # the rows of a pair by order, then repetition, whatever order they came in
    assert [(r["order"], r["rep"]) for r in bp.pairs[2]["rows"]] == [("AB", 0), ("AB", 1), ("AB", 2), ("BA", 0),
                                                                     ("BA", 1)]
    assert [p["item_id"] for p in broken_pairs(pd.DataFrame(rows), limit=3).pairs] == [10, 9, 9]


@pytest.mark.parametrize("unparsed", ["exclude", "wrong"])
def test_a_pair_judged_in_one_order_has_no_modal_verdict_in_the_other(unparsed: str) -> None:
    # AB only: A, B -> split mode, unstable; no BA unit, so not flipped and modal_BA None
    bp = broken_pairs(pd.DataFrame(_rows(0.0, "p", ["A", "B"], [])), policy=FigurePolicy(unparsed=unparsed))
    (pair,) = bp.pairs
    assert (pair["flipped"], pair["unstable"], pair["modal_AB"], pair["modal_BA"]) == (False, True, "split", None)


def test_a_pair_whose_verdicts_are_all_unparsed_breaks_only_under_wrong() -> None:
    # AB: unparsed, unparsed; BA: A, A.  exclude: AB has no unit -> BA alone is stable, nothing broken.
    # wrong: AB's mode is "unparsed" (stable) and differs from BA's A -> flipped, not unstable
    j = pd.DataFrame(_rows(0.0, "p", [None, None], ["A", "A"]))
    assert broken_pairs(j, policy=FigurePolicy(unparsed="exclude")).n_total == 0
    (pair,) = broken_pairs(j, policy=FigurePolicy(unparsed="wrong")).pairs
    assert (pair["flipped"], pair["unstable"], pair["modal_AB"], pair["modal_BA"]) == (True, False, "unparsed", "A")


def test_broken_pairs_order_is_the_joined_key_order_on_a_random_grid() -> None:
    """Random verdicts over cells whose keys sort differently as text (judges with a prefix and a tab,
    temperatures 2 / 10 / missing, steps) and items "9" / "10" / ...: the pairs come flipped first, then
    unstable, then by their key joined as text, pairs with a missing key value last."""
    rng = np.random.default_rng(11)
    rows = []
    for judge, temp, step, item in itertools.product(["j", "j2", "j\tb"], [2.0, 10.0, float("nan")],
                                                     ["", "acc"], ["9", "10", "1", "100", "a"]):
        for order in ("AB", "BA"):
            for rep in range(int(rng.integers(1, 4))):
                rows.append({"judge": judge, "protocol": "direct", "dataset": "d", "temperature": temp,
                             "step": step, "item_id": item, "order": order, "rep": rep,
                             "verdict": rng.choice(["A", "B", "tie", None]), "label": "A"})
    j = pd.DataFrame(rows).sample(frac=1.0, random_state=3)
    for unparsed in ("exclude", "wrong"):
        bp = broken_pairs(j, policy=FigurePolicy(unparsed=unparsed), limit=10_000)
        assert len(bp.pairs) == bp.n_total > 20
        keys = pd.DataFrame([{c: p[c] for c in ("judge", "protocol", "dataset", "temperature", "decoding",
                                                "step", "item_id")} for p in bp.pairs])
        text = _joined_ranks(keys)
        got = [(not p["flipped"], not p["unstable"], int(t)) for p, t in zip(bp.pairs, text, strict=True)]
        assert got == sorted(got)
