"""The PRD study's published figures, reproduced by `verdictlab import prd` + `verdictlab report` with no
glue, from the release's Vicuna-80 folder (the shared test data; skipped when absent).

Expected values: the saved outputs of the authors' notebook ``peer_rank/peer_ranking.ipynb`` (cell numbers
as docs/reproduce.md lists them).  The notebook's reviewer and system names map to the release's:
gpt-4 -> gpt4, gpt-3.5 -> gpt35, claude, bard, vicuna -> vicuna-13b.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.core.vocab import gold_label
from verdictlab.stats import weighted_win_rates
from verdictlab.store import open_store

# notebook cells 70-72 (run_one_reviewer): accuracy against the human label and Fleiss' kappa
REVIEWER_FIGURES = {"gpt4": (0.6425, 0.4062941127626006), "claude": (0.606875, 0.31943600558165275),
                    "gpt35": (0.620625, 0.3873768855885963)}
# notebook cells 18-21 (compute_winrates): per-system win rates from one reviewer, the humans, all reviewers
WIN_RATES = {
    "gpt4": {"gpt4": 0.85625, "claude": 0.70859375, "vicuna-13b": 0.3484375, "gpt35": 0.3421875, "bard": 0.24453125},
    "gpt35": {"gpt4": 0.821875, "claude": 0.70390625, "vicuna-13b": 0.36875, "gpt35": 0.35, "bard": 0.25546875},
    "human": {"gpt4": 0.821875, "claude": 0.6890625, "vicuna-13b": 0.3890625, "gpt35": 0.3140625, "bard": 0.2859375},
    "all": {"gpt4": 0.74984375, "claude": 0.66171875, "vicuna-13b": 0.3934375, "gpt35": 0.37546875, "bard": 0.31953125},
}
# notebook cell 37 (normal_winrate over all reviewers, 5 rounds) and cell 65 (its weighted vote vs the humans)
PEER_WIN_RATES = {"gpt4": 0.8020248859751706, "claude": 0.6849775818976092, "vicuna-13b": 0.3762490667521628,
                  "gpt35": 0.3461644881503264, "bard": 0.2905839772247015}
PEER_WEIGHTS = {"bard": 0.0, "gpt4": 0.488444868709263, "vicuna-13b": 0.08181330959511306,
                "claude": 0.37666039059112444, "gpt35": 0.05308143110449947}
PEER_VOTE = (0.673125, 0.40995961100205325)


@pytest.fixture(scope="module")
def prd_run(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    release = shared_data / "prd"
    if not (release / "vicuna80").is_dir():
        pytest.skip(f"the PRD release is not in the shared data ({release})")
    run = tmp_path_factory.mktemp("prd") / "run"
    runner = CliRunner()
    done = runner.invoke(app, ["import", "prd", str(release), "--run-dir", str(run)])
    assert done.exit_code == 0, done.output
    rep = runner.invoke(app, ["report", str(run), "--format", "json", "--bootstrap", "200"])
    assert rep.exit_code == 0, rep.output
    return run, json.loads(rep.output)


def _table(report: dict[str, Any], name: str) -> pd.DataFrame:
    t = report["run"]["analyses"][name]
    assert "error" not in t, t
    return pd.DataFrame(t["rows"], columns=t["columns"])


def test_the_import_reads_the_release_as_the_notebook(prd_run: tuple[Path, dict[str, Any]]) -> None:
    run, _ = prd_run
    with open_store(run) as st:
        df = st.judgments(["judge", "order", "label", "system_a", "system_b"])
        items = st.items()
    # notebook cell 10: 8000 reviews, 800 human-labelled items (1600 doubled), 1600 GPT-4 reviews
    assert len(df) == 8000 and len(items) == 800 and (df["judge"] == "gpt4").sum() == 1600
    assert df["label"].notna().all() and set(df["order"]) == {"AB", "BA"}
    # the gold label is the sign of the mean of the votes; a strict majority differs on 19 of 800 items
    assert all(it.label == gold_label([v.vote for v in it.votes], "mean-sign") for it in items)
    differ = sum(gold_label([v.vote for v in it.votes], "majority") != it.label for it in items)
    assert differ == 19


def test_each_reviewer_against_the_human_label(prd_run: tuple[Path, dict[str, Any]]) -> None:
    _, report = prd_run
    t = _table(report, "judge_human_agreement").set_index("judge")
    for judge, (accuracy, kappa) in REVIEWER_FIGURES.items():
        assert t.loc[judge, "gold_accuracy"] == pytest.approx(accuracy, abs=1e-12), judge
        assert t.loc[judge, "gold_fleiss_kappa"] == pytest.approx(kappa, abs=1e-12), judge
        assert t.loc[judge, "gold_accuracy_lo"] <= accuracy <= t.loc[judge, "gold_accuracy_hi"]
    assert set(t["gold_rule"]) == {"mean-sign"} and (t["gold_n"] == 1600).all()


def test_the_weighted_peer_vote(prd_run: tuple[Path, dict[str, Any]]) -> None:
    _, report = prd_run
    rank = _table(report, "peer_rank").set_index("system")
    for system, rate in PEER_WIN_RATES.items():
        assert rank.loc[system, "weighted_win_rate"] == pytest.approx(rate, rel=1e-12), system
        assert rank.loc[system, "reviewer_weight"] == pytest.approx(PEER_WEIGHTS[system], abs=1e-12), system
    vote = _table(report, "peer_vote").set_index("weighting").loc["peer-rank weights"]
    assert (vote["accuracy"], vote["fleiss_kappa"]) == (pytest.approx(PEER_VOTE[0], abs=1e-12),
                                                        pytest.approx(PEER_VOTE[1], abs=1e-12))


def test_win_rates_from_each_reviewer_and_the_humans(prd_run: tuple[Path, dict[str, Any]]) -> None:
    """The notebook's compute_winrates (a tie half a win, every judgment one battle).  Computed here with
    the minimal stats function (weighted_win_rates without weights) on the stored frame."""
    run, _ = prd_run
    with open_store(run) as st:
        df = st.judgments(["judge", "item_id", "verdict", "system_a", "system_b", "label"])
    for who in ("gpt4", "gpt35"):
        got = weighted_win_rates(df[df["judge"] == who])
        assert got == pytest.approx(WIN_RATES[who], abs=1e-12) and list(got) == list(WIN_RATES[who])
    assert weighted_win_rates(df) == pytest.approx(WIN_RATES["all"], abs=1e-12)
    # the humans: one battle per item, its gold label
    human = df.drop_duplicates("item_id").assign(verdict=lambda f: f["label"], judge="human")
    assert weighted_win_rates(human) == pytest.approx(WIN_RATES["human"], abs=1e-12)


def test_the_reports_leaderboard_gives_each_reviewers_win_rates(prd_run: tuple[Path, dict[str, Any]]) -> None:
    """The same figures as the report's own leaderboard table prints them (tie rule "half", each reviewer's
    judgments one configuration): no glue between `import prd` and the published win rates."""
    _, report = prd_run
    t = _table(report, "leaderboard")
    assert set(t["tie_rule"]) == {"half"}
    for who in ("gpt4", "gpt35"):
        got = t[t["judge"] == who].set_index("system")["win_rate"]
        assert got.to_dict() == pytest.approx(WIN_RATES[who], abs=1e-12), who
