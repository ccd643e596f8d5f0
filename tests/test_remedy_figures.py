"""The remedies' figures from the base rows' codes (stats/remedy_figures.py): the same numbers as
``reliability(derive(base, remedy))``, worked by hand on a small frame and checked against the frame
path on every kind of row the verdict rules and the pairing treat differently."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from verdictlab.analyses.remedies import derive
from verdictlab.core.policy import FigurePolicy
from verdictlab.stats import (
    both_orders_codes,
    both_orders_verdicts,
    both_orders_vote_codes,
    both_orders_vote_verdicts,
    coded_reliability,
    coded_rows,
    order_average_codes,
    order_average_verdicts,
    reliability,
    remedy_reliability,
)

VERDICTS = ["A", "B", "tie", None]          # codes 0, 1, 2, 3
FIGURES = ["n_pairs", "n_labelled_pairs", "n_order_pairs", "n_units", "n_units_dropped", "n_labelled_units",
           "n_judgments", "n_unparsed", "repetitions", "C", "self_consistency", "phi", "A", "A_dec", "q", "A_max",
           "T", "T_joint", "tie_rate", "n_split_modes", "C_lo", "C_hi", "phi_lo", "phi_hi", "A_lo", "A_hi"]


def _code(v: object) -> int:
    return 3 if v is None else VERDICTS.index(v)


@pytest.mark.parametrize(("coded", "rule"), [(both_orders_codes, lambda a, b: both_orders_verdicts(a, b)[0]),
                                             (both_orders_vote_codes, lambda a, b: both_orders_vote_verdicts(a, b)[0])])
def test_coded_rules_equal_the_verdict_rules_on_every_pair_of_verdicts(coded, rule) -> None:
    pairs = list(itertools.product(VERDICTS, VERDICTS))        # all 16 (AB, BA) combinations
    va = np.array([a for a, _ in pairs], dtype=object)
    vb = np.array([b for _, b in pairs], dtype=object)
    want = [_code(v) for v in rule(va, vb)]
    assert coded(np.array([_code(a) for a in va]), np.array([_code(b) for b in vb])).tolist() == want


def test_coded_order_average_equals_the_verdict_rule() -> None:
    pa, pb = np.array([0.9, 0.2, 0.5, 0.6, 0.4]), np.array([0.3, 0.1, 0.5, 0.4, 0.5])
    p, codes = order_average_codes(pa, pb)
    p_obj, verdicts = order_average_verdicts(pa, pb)
    assert p.tolist() == p_obj.tolist()
    # means 0.6, 0.15, 0.5, 0.5, 0.45 -> A, B, tie, tie, B
    assert codes.tolist() == [0, 1, 2, 2, 1] == [_code(v) for v in verdicts]


def _rows(rows: list[tuple]) -> pd.DataFrame:
    """rows: (item_id, label, order, rep, verdict[, p_a[, temperature]])"""
    return pd.DataFrame([{"judge": "sim:x", "dataset": "d", "item_id": r[0], "protocol": "vf", "order": r[2],
                          "temperature": r[6] if len(r) > 6 else 0.0, "rep": r[3], "step": "", "label": r[1],
                          "verdict": r[4], "parse_status": "failed" if r[4] is None else "ok",
                          "p_a": r[5] if len(r) > 5 else np.nan, "decoding": "free"} for r in rows])


# two repetitions per order; worked by hand below
SMALL = _rows([
    ("i1", "A", "AB", 0, "A"), ("i1", "A", "BA", 0, "A"), ("i1", "A", "AB", 1, "A"), ("i1", "A", "BA", 1, "B"),
    ("i2", "B", "AB", 0, "B"), ("i2", "B", "BA", 0, None), ("i2", "B", "AB", 1, "tie"), ("i2", "B", "BA", 1, "B"),
])


def test_both_orders_figures_worked_by_hand() -> None:
    # both-orders, per (item, rep): i1 r0 A+A -> A, i1 r1 A+B -> tie, i2 r0 B+unparsed -> unparsed,
    # i2 r1 tie+B -> tie.  Each verdict is carried by an AB and a BA row: 8 rows, 2 unparsed.
    # exclude: units i1AB {A, tie}, i1BA {A, tie} -> split modes (N 0, never correct); i2AB {tie},
    # i2BA {tie} -> N 1, mode tie (wrong).  C = 2/4, A = 0/4, phi = 1 - 1/2 = 1/2 (i2 agrees on tie,
    # i1's split modes never do), tie_rate = 4 ties / 6 parsed.  q measured (ties exist), no
    # undecisive unit is correct -> q = 0, T = C (A - phi q) = 0.
    (_, none), (_, both) = remedy_reliability(SMALL, ["both-orders"])
    row = both.iloc[0]
    assert (row["n_judgments"], row["n_unparsed"], row["n_units"], row["n_split_modes"]) == (8, 2, 4, 2)
    assert (row["C"], row["A"], row["phi"], row["q"], row["T"]) == (0.5, 0.0, 0.5, 0.0, 0.0)
    assert row["tie_rate"] == pytest.approx(4 / 6)
    assert row["protocol"] == "vf"                            # keyed by the base cell
    # the none row is the cell's own figures
    assert none.iloc[0]["A"] == reliability(SMALL, policy=FigurePolicy(n_bootstrap=0)).iloc[0]["A"]


# every kind of row: one order only, unparsed, judge ties, tie and missing labels, incomplete majority
# blocks, labels that differ within a block, P(A) in one order only, item ids and temperatures that sort differently as text ("10" < "9",
# 10.0 > 2.0), a key judged twice in one order (the first row counts), rows out of order
MIXED = _rows([
    ("10", "A", "AB", 0, "A", 0.7), ("10", "A", "BA", 0, "B", 0.6), ("10", "A", "AB", 1, "A", 0.8),
    ("10", "A", "BA", 1, "A", 0.2), ("10", "A", "AB", 2, None), ("10", "A", "BA", 2, "A", 0.4),
    ("9", "B", "BA", 0, "B"), ("9", "B", "AB", 0, "tie"), ("9", "B", "AB", 1, "B"), ("9", "B", "BA", 1, "B"),
    ("9", "B", "AB", 2, "B"), ("9", "B", "BA", 2, None), ("9", "B", "AB", 3, "A"),
    ("u", "tie", "AB", 0, "A"), ("u", "tie", "BA", 0, "A"), ("v", None, "AB", 0, "B"), ("v", None, "BA", 0, "B"),
    ("w", "A", "AB", 0, "A"),
    ("m", None, "AB", 0, "B"), ("m", "B", "AB", 1, "B"), ("m", "A", "AB", 2, "B"),      # a block's first known
    ("m", "B", "BA", 0, "B"), ("m", "B", "BA", 1, "A"), ("m", "B", "BA", 2, "B"),       # label: B
    ("10", "A", "AB", 0, "B", 0.1, 10.0), ("10", "A", "AB", 0, "A", 0.9, 10.0), ("10", "A", "BA", 0, "B", 0.5, 10.0),
    ("2", "B", "AB", 1, "B", 0.3, 2.0), ("2", "B", "BA", 1, "tie", 0.5, 2.0), ("2", "B", "AB", 0, "A", 0.6, 2.0),
    ("2", "B", "BA", 0, "A", 0.5, 2.0), ("2", "B", "AB", 2, "B", 0.2, 2.0), ("2", "B", "BA", 2, "B", 0.4, 2.0),
])

REMEDIES = ["both-orders", "both-orders-vote", "order-average", "majority@3", "majority@2", "majority@3+both-orders"]


@pytest.mark.parametrize("unparsed", ["exclude", "wrong"])
@pytest.mark.parametrize("frame", [SMALL, MIXED, MIXED.iloc[::-1]], ids=["small", "mixed", "reversed"])
def test_remedy_figures_equal_the_figures_of_the_derived_frames(frame: pd.DataFrame, unparsed: str) -> None:
    got = dict(remedy_reliability(frame, REMEDIES, policy=FigurePolicy(unparsed=unparsed)))
    want = reliability(frame, policy=FigurePolicy(unparsed=unparsed, n_bootstrap=0))
    pd.testing.assert_frame_equal(got["none"][FIGURES], want[FIGURES], check_exact=True)
    for remedy in REMEDIES:
        d = derive(frame, remedy)
        want = reliability(d, policy=FigurePolicy(unparsed=unparsed, n_bootstrap=0)) if len(d) else want.iloc[:0]
        mine = got[remedy]
        assert len(mine) == len(want), remedy
        # the same cells (derived protocol = base + remedy), figure for figure
        keys = mine[["judge", "protocol", "dataset", "temperature"]].assign(protocol=mine["protocol"] + f"+{remedy}")
        order = keys.sort_values(list(keys.columns)).index
        theirs = want.sort_values(["judge", "protocol", "dataset", "temperature"]).reset_index(drop=True)
        assert keys.loc[order].reset_index(drop=True).equals(theirs[keys.columns].astype(object)
                                                              .reset_index(drop=True).astype(keys.dtypes.to_dict()))
        pd.testing.assert_frame_equal(mine.loc[order, FIGURES].reset_index(drop=True), theirs[FIGURES],
                                      check_exact=True, obj=remedy)


def test_a_cell_without_rows_gets_no_figure_row() -> None:
    cells, rows = coded_rows(MIXED)
    at = rows.cell != 0
    out = coded_reliability(cells, rows.cell[at], rows.item[at], rows.order[at], rows.vcode[at],
                            np.where(rows.label[at] < 0, -1, rows.label[at]), rows.rep[at], policy=FigurePolicy(n_bootstrap=0))
    assert len(cells) == 3 and list(out["temperature"]) == [2.0, 10.0]


def test_order_average_without_p_a_has_no_rows_and_an_unknown_remedy_is_named() -> None:
    assert dict(remedy_reliability(SMALL, ["order-average"]))["order-average"].empty
    with pytest.raises(ValueError, match="unknown remedy 'best-of-both'"):
        remedy_reliability(SMALL, ["best-of-both"])
