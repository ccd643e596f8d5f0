"""repeat_consistency: C and self-consistency over repetitions for any verdict vocabulary."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from verdictlab.core.policy import FigurePolicy
from verdictlab.core.vocab import CELL_KEY
from verdictlab.stats.repeats import REPEAT_COLUMNS, repeat_consistency


def frame(grades: dict[str, list[str | None]], judge: str = "g") -> pd.DataFrame:
    return pd.DataFrame([{"judge": judge, "protocol": "model_graded_qa", "dataset": "t", "temperature": 1.0,
                          "item_id": item, "order": "AB", "rep": r, "verdict": v, "step": ""}
                         for item, vs in grades.items() for r, v in enumerate(vs)])


GRADES = {"s0": ["C", "C", "C"], "s1": ["C", "I", "C"], "s2": ["I", None, "I"], "s3": ["C"]}


def test_hand_worked():
    out = repeat_consistency(frame(GRADES)).iloc[0]
    assert list(out.index[len(CELL_KEY):]) == list(REPEAT_COLUMNS)  # after the five cell-key columns
    # exclude: s0 agrees (1), s1 no (2/3 modal), s2 -> [I, I] agrees (1); s3 graded once: not a unit
    # C = 2/3; self-consistency = (1 + 2/3 + 1) / 3 = 8/9
    assert (out["n_units"], out["n_single"], out["n_unparsed"], out["n_judgments"]) == (3, 1, 1, 10)
    assert out["C"] == pytest.approx(2 / 3) and out["self_consistency"] == pytest.approx(8 / 9)
    assert out["repetitions"] == 3
    assert out["C_lo"] < 2 / 3 < out["C_hi"]
    wrong = repeat_consistency(frame(GRADES), policy=FigurePolicy(unparsed="wrong")).iloc[0]
    # wrong: s2 = [I, unparsed, I] disagrees (modal 2/3): C = 1/3, self = (1 + 2/3 + 2/3) / 3 = 7/9
    assert wrong["C"] == pytest.approx(1 / 3) and wrong["self_consistency"] == pytest.approx(7 / 9)


def test_cells_and_empty():
    both = pd.concat([frame(GRADES), frame({"x": ["P", "P"]}, judge="h")])
    out = repeat_consistency(both).set_index("judge")
    assert out.loc["h", "C"] == 1.0 and out.loc["h", "n_units"] == 1
    once = repeat_consistency(frame({"a": ["C"], "b": [None]})).iloc[0]
    assert once["n_units"] == 0 and math.isnan(once["C"]) and once["n_single"] == 1
