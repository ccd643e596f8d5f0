"""Expected figures honest about unreadable replies: the report's expected cell columns model the
cell's observed parse-failure rate under the report's unparsed policy, per decoding mode."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from verdictlab.analyses import AnalysisInput
from verdictlab.analyses.expected import FROM_CELL, FROM_UNIT, NOT_MODELLED, expected
from verdictlab.core.policy import FigurePolicy
from verdictlab.engine import run_config
from verdictlab.engine.config import config_from_dict
from verdictlab.stats.expected import expected_reliability
from verdictlab.store import RunStore

SPEC = "skill=0.7,position_lock=0.2,noise=0.3,malformed=0.3,seed=5,probs=1"


@pytest.fixture(scope="module")
def both_modes(tmp_path_factory) -> pd.DataFrame:
    tmp = tmp_path_factory.mktemp("unreadable")
    rng = np.random.default_rng(2)
    rows = [{"item_id": f"i{i}", "question": f"q{i}", "response_a": "x", "response_b": "y",
             "label": str(rng.choice(["A", "B"]))} for i in range(40)]
    (tmp / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = config_from_dict({"name": "u", "datasets": [{"name": "jsonl", "path": str(tmp / "p.jsonl")}],
                            "judges": [f"sim:{SPEC}"], "protocols": ["direct"], "temperatures": [1.0],
                            "repetitions": 4, "decoding": ["free", "constrained"]})
    run_config(cfg, tmp / "run", progress=False)
    with RunStore(tmp / "run") as st:
        return st.judgments()


def test_free_and_constrained_cells_are_modelled_apart(both_modes: pd.DataFrame) -> None:
    """Regression: the expected figures grouped a cell's free and constrained judgments together
    (their cells had no decoding column), mixing two judges' distributions into one row."""
    out = expected(AnalysisInput(both_modes, policy=FigurePolicy(n_bootstrap=50))).set_index("decoding")
    assert sorted(out.index) == ["constrained", "free"]
    free = both_modes[both_modes["decoding"] == "free"]
    # the free cell's unreadable share is its observed parse-failure rate; constrained replies always parse
    assert out.loc["free", "unreadable_expected"] == pytest.approx(free["verdict"].isna().mean())
    assert out.loc["free", "unreadable_expected"] > 0.1
    assert out.loc["constrained", "unreadable_expected"] == 0.0
    assert set(out["expected_unreadable_from"]) == {FROM_CELL}
    # each row is the library's figure on that mode's judgments alone
    cons = both_modes[both_modes["decoding"] == "constrained"]
    lib = expected_reliability(cons, repetitions=4, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert out.loc["constrained", "C_expected"] == pytest.approx(lib["C_expected"])


@pytest.mark.parametrize("unparsed", ["exclude", "wrong"])
def test_free_cell_follows_the_unparsed_policy(both_modes: pd.DataFrame, unparsed: str) -> None:
    free = both_modes[both_modes["decoding"] == "free"]
    u = free["verdict"].isna().mean()
    out = expected(AnalysisInput(free, policy=FigurePolicy(unparsed=unparsed, n_bootstrap=0))).iloc[0]
    lib = expected_reliability(free.assign(u=u), repetitions=4, policy=FigurePolicy(n_bootstrap=0, unparsed=unparsed),
                               unreadable="u").iloc[0]
    assert out["C_expected"] == pytest.approx(lib["C_expected"])
    # leaving unreadable draws out makes agreement among the rest likelier; counting them as a value
    # of their own makes it rarer
    plain = expected_reliability(free, repetitions=4, policy=FigurePolicy(n_bootstrap=0)).iloc[0]["C_expected"]
    assert (out["C_expected"] > plain) if unparsed == "exclude" else (out["C_expected"] < plain)


def test_greedy_cell_uses_each_units_share_and_no_readable_reply_is_not_modelled(both_modes: pd.DataFrame) -> None:
    free = both_modes[both_modes["decoding"] == "free"].assign(temperature=0.0)
    out = expected(AnalysisInput(free, policy=FigurePolicy(n_bootstrap=0))).iloc[0]
    assert out["expected_unreadable_from"] == FROM_UNIT
    share = free["verdict"].isna().groupby([free["item_id"], free["order"]]).mean()
    assert out["unreadable_expected"] == pytest.approx(share.mean())
    dead = free.assign(verdict=None, temperature=1.0)
    gone = expected(AnalysisInput(dead, policy=FigurePolicy(n_bootstrap=0))).iloc[0]
    assert gone["expected_unreadable_from"] == NOT_MODELLED
    assert np.isnan(gone["C_expected"]) and np.isnan(gone["phi_expected_run_hi"])
