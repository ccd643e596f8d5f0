"""The grader tables on a small simulated run: an ordinal grader (1-5) and a binary one, perturbed items,
the decision between graders and the cost curves beside a pairwise cell."""

from __future__ import annotations

import json

import pytest

from verdictlab.analyses import AnalysisInput, get
from verdictlab.analyses.grader_decision import avoid_sentence, grader_decision
from verdictlab.core.policy import FigurePolicy
from verdictlab.engine import run_config
from verdictlab.engine.config import RunConfig
from verdictlab.store import open_store

GOOD = "sim:skill=0.9,invariance=1,sensitivity=1,seed=1"
SHAKY = "sim:skill=0.6,invariance=0.3,sensitivity=0.2,noise=0.4,seed=2"


def _points(path, n=60):
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            lab = 1 + i % 5
            fh.write(json.dumps({"item_id": f"s{i}", "question": "Q?", "response": "A.", "label": lab,
                                 "scale": [1, 2, 3, 4, 5]}) + "\n")
            fh.write(json.dumps({"item_id": f"s{i}~pad", "question": "Q?", "response": "A. " * 3, "label": lab,
                                 "meta": {"perturbation": {"source_id": f"s{i}", "kind": "verbosity.pad",
                                                           "class": "preserving", "origin": "deterministic"}}}) + "\n")
            flip = 6 - lab if lab != 3 else 5
            fh.write(json.dumps({"item_id": f"s{i}~flip", "question": "Q?", "response": "B.", "label": flip,
                                 "meta": {"perturbation": {"source_id": f"s{i}", "kind": "label_flip",
                                                           "class": "changing", "origin": "model",
                                                           "status": "accepted" if i % 2 else "rejected",
                                                           "source_label": lab}}}) + "\n")
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("graders")
    cfg = RunConfig.model_validate({
        "name": "graders", "datasets": [{"name": "judges-verdict", "path": str(_points(root / "p.jsonl")),
                                         "dataset": "essays", "scale": [1, 2, 3, 4, 5]}],
        "judges": [GOOD, SHAKY], "protocols": ["pointwise@1-5"], "repetitions": 3, "temperatures": [0.7],
        "cache": "off"})
    run_config(cfg, root / "run")
    with open_store(root / "run") as st:
        return AnalysisInput(st.judgments(), items=st.items(), policy=FigurePolicy(n_bootstrap=200))


def test_grader_cells_ordinal_figures_and_counted_cases(run):
    t = get("grader_cells")(run).set_index("judge")
    good, shaky = t.loc[GOOD], t.loc[SHAKY]
    assert good["kind"] == "ordinal" and good["scale"] == "1, 2, 3, 4, 5"
    # 60 sources, 60 padded cases and 30 accepted flips count; the 30 rejected flips do not
    assert (good["n_items"], good["n_cases"], good["n_cases_uncounted"]) == (60, 90, 30)
    assert good["C"] == 1 and good["invariance"] == 1 and good["sensitivity"] == 1
    for name in ("accuracy", "kappa", "kappa_quadratic", "spearman", "mae", "T"):
        assert good[f"{name}_lo"] <= good[name] <= good[f"{name}_hi"], name
    assert good["T"] == pytest.approx(good["accuracy"])        # C = 1 and iota = 0: T_g = A
    assert shaky["C"] < 1 and shaky["invariance"] < 0.6 and shaky["T"] < good["T"]
    # every item the grader was asked about (60 sources, 120 cases) took 3 calls (repetitions); the sim is free
    assert good["calls_per_item"] == 3 and good["usd_per_item"] == 0


def test_perturbations_and_calibration_tables(run):
    p = get("grader_perturbations")(run)
    assert set(p["kind"]) == {"verbosity.pad", "label_flip"}
    assert set(p.loc[p["kind"] == "label_flip", "n_units"]) == {30}
    c = get("grader_calibration")(run)
    assert set(c["level"]) == {"1", "2", "3", "4", "5"} and (c.groupby("judge")["n"].sum() == 60).all()


def test_decision_ranks_and_says_why(run):
    (group,) = grader_decision(run)
    assert group.ranked_by == "T_g" and group.dataset == "essays"
    best, other = group.choices
    assert best.cell.judge == GOOD and best.rank == 1 and best.best and not best.avoid
    assert other.rank == 2 and other.distinguishable is True
    assert "worse_than_best" in other.avoid and "not_invariant:verbosity.pad" in other.avoid
    assert avoid_sentence("not_invariant:verbosity.pad") in other.why
    table = get("grader_decision")(run)
    assert list(table["rank"]) == [1, 2]


def test_cost_curves_pairwise_and_graders(run, tmp_path):
    from pathlib import Path

    pairs = Path(__file__).resolve().parents[1] / "examples" / "pairs.jsonl"
    cfg = RunConfig.model_validate({
        "name": "pairs", "datasets": [{"name": "jsonl", "path": str(pairs), "dataset": "essays"}],
        "judges": ["sim:skill=0.8,seed=3"], "protocols": ["direct"], "repetitions": 2, "temperatures": [0.7],
        "cache": "off"})
    run_config(cfg, tmp_path / "pairs")
    with open_store(tmp_path / "pairs") as st:
        pair_rows = st.judgments()
    import pandas as pd

    both = AnalysisInput(pd.concat([run.judgments, pair_rows], ignore_index=True), items=[*run.items],
                         policy=FigurePolicy(n_bootstrap=100))
    t = get("cost_curves")(both).set_index("judge")
    pw = t.loc["sim:skill=0.8,seed=3"]
    # a pair is judged in 2 orders x 2 repetitions: 4 calls per item; its figure is T
    assert (pw["kind"], pw["figure"], pw["calls_per_item"]) == ("pairwise", "T", 4)
    assert t.loc[GOOD, "figure"] == "T_g"
    # the good grader (3 calls, the best T) and the cheaper pairwise cell are on the calls front; the
    # shaky grader, dearer than the pairs and worse than the good grader, is not
    assert bool(t.loc[GOOD, "on_front_calls"]) and not bool(t.loc[SHAKY, "on_front_calls"])
