"""The leaderboard analyses on a small simulated tournament run through the report path, and the
example dataset the docs use."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from verdictlab.analyses import AnalysisInput, run_analyses
from verdictlab.analyses.leaderboard import leaderboard_audits
from verdictlab.core.items import PairItem
from verdictlab.core.policy import FigurePolicy
from verdictlab.core.vocab import CELL_KEY
from verdictlab.testing.synthetic_tournament import JudgeProfile, tournament_frame, tournament_records

NAMES = ["leaderboard", "leaderboard_stability", "leaderboard_agreement", "leaderboard_separable",
         "score_ratio_by_system", "alpaca_eval_by_system"]


def _run(baseline: bool) -> AnalysisInput:
    df = tournament_frame(n_systems=5, n_prompts=30, baseline=baseline, repetitions=2, seed=3, scores=True,
                          judges=[JudgeProfile("sim:a", "direct", skill=1.5),
                                  JudgeProfile("sim:b", "direct", skill=0.3, position_bias=2.0)])
    df["item_id"] = df["item_id"].astype(str)
    ab = (df["order"] == "AB").to_numpy()
    first, second = np.where(ab, df["score_a"], df["score_b"]), np.where(ab, df["score_b"], df["score_a"])
    df["scores"] = [f'{{"score_shown_first": {f}, "score_shown_second": {s}}}' for f, s in zip(first, second,
                                                                                              strict=True)]
    first = df.drop_duplicates("item_id")
    items = [PairItem(item_id=i, dataset="tournament", question=f"question {p}", response_a="a" * 10,
                      response_b="b" * 12, label=lab, system_a=a, system_b=b)
             for i, p, a, b, lab in first[["item_id", "prompt", "system_a", "system_b", "label"]].itertuples(index=False)]
    judgments = df.drop(columns=["system_a", "system_b", "label", "prompt", "score_a", "score_b"])
    return AnalysisInput(judgments, items=items, policy=FigurePolicy(n_bootstrap=100))


def test_round_robin_leaderboard_and_its_audit() -> None:
    inp = _run(baseline=False)
    out = run_analyses(inp, names=NAMES)
    assert {"leaderboard", "leaderboard_stability", "leaderboard_agreement", "leaderboard_separable"} <= set(out)
    assert not any(isinstance(v, str) for v in out.values()), out
    board = out["leaderboard"]
    assert set(CELL_KEY) <= set(board.columns) and len(board) == 10
    a = board[board["judge"] == "sim:a"].sort_values("rank")
    assert a["system"].iloc[0] == "sys00" and (a["elo_lo"] <= a["elo"]).all() and (a["elo"] <= a["elo_hi"]).all()
    stab = out["leaderboard_stability"].set_index(["judge", "comparison"])
    assert set(stab.index.get_level_values("comparison")) == {"order", "repetition", "humans"}
    # the order-locked judge's ranking moves with the order more than the skilled one's
    assert stab.loc[("sim:b", "order"), "tau"] < stab.loc[("sim:a", "order"), "tau"]
    audits = leaderboard_audits(inp)
    assert len(audits) == 2
    audit = next(v for k, v in audits.items() if k.judge == "sim:a")
    assert audit.ranking[0].system == "sys00" and audit.ranking[0].rank_ub == 1
    assert sum(len(t) for t in audit.tiers) == 5 and len(audit.stability) == 3
    assert "score_ratio_by_system" not in out            # no system is in every pair: no baseline


def test_baseline_design_gives_score_ratio_and_alpaca_figures() -> None:
    inp = _run(baseline=True)
    out = run_analyses(inp, names=NAMES)
    ratio = out["score_ratio_by_system"]
    assert set(ratio["baseline"]) == {"sys00"} and len(ratio) == 8
    alpaca = out["alpaca_eval_by_system"]
    assert set(alpaca["system"]) == {"sys01", "sys02", "sys03", "sys04"}
    assert alpaca["win_rate"].between(0, 100).all()
    # without AlpacaEval's published difficulties the LC figure is missing with its reason
    assert alpaca["lc_win_rate"].isna().all() and alpaca["lc_missing"].str.contains("instruction difficulties").all()


def test_a_run_without_systems_has_no_leaderboard() -> None:
    inp = _run(baseline=False)
    bare = AnalysisInput(inp.judgments, items=[it.model_copy(update={"system_a": None, "system_b": None})
                                               for it in inp.items or []])
    assert not set(run_analyses(bare, names=NAMES))


def test_the_example_dataset_is_the_generators() -> None:
    path = Path(__file__).resolve().parents[1] / "examples" / "leaderboard.jsonl"
    import json

    assert [json.loads(line) for line in path.read_text().splitlines()] == json.loads(json.dumps(
        tournament_records(n_systems=5, n_prompts=12, seed=0)))


@pytest.mark.parametrize("n", [3])
def test_tournament_frame_is_seeded(n: int) -> None:
    a = tournament_frame(n_systems=n, n_prompts=4, seed=9)
    b = tournament_frame(n_systems=n, n_prompts=4, seed=9)
    pd.testing.assert_frame_equal(a, b)
    assert np.isin(a["verdict"].astype(str), ["A", "B"]).all()
