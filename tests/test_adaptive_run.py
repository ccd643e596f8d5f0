"""An adaptive run (issue 13): precision instead of a full grid, through the real engine."""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest

from verdictlab.core.policy import FigurePolicy
from verdictlab.engine import run_config
from verdictlab.engine.adaptive import META_KEY, c_pairs_of
from verdictlab.engine.config import config_from_dict
from verdictlab.stats import reliability
from verdictlab.stats.adaptive import adaptive_reliability
from verdictlab.store import RunStore


def _pairs(path, n=300, seed=0):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"item_id": f"i{i}", "question": f"question {i}", "response_a": "a",
                                "response_b": "b", "label": rng.choice("AB")}) + "\n")


def _config(path, **over):
    data = {"name": "adaptive", "datasets": [{"name": "jsonl", "path": str(path)}],
            "judges": ["sim:skill=0.8,position_lock=0.1,noise=0.1,seed=1"], "protocols": ["direct"],
            "temperatures": [0.7], "repetitions": {"max": 10}, "precision": {"T": 0.06, "pilot_pairs": 60}}
    data.update(over)
    return config_from_dict(data)


def test_adaptive_run_spends_fewer_calls_resumes_identically_and_estimates(tmp_path):
    _pairs(tmp_path / "pairs.jsonl")
    cfg = _config(tmp_path / "pairs.jsonl")
    s = run_config(cfg, tmp_path / "run", progress=False)
    assert s.complete and s.stopped is None
    assert s.n_trials == 300 * 2 * 10
    assert s.n_written + s.n_not_needed == s.n_trials
    assert s.n_written < 0.5 * s.n_trials                 # far fewer calls than the full grid
    with RunStore(tmp_path / "run") as st:
        meta = st.get_meta(META_KEY)
        frame = st.judgments()
        c_pairs = c_pairs_of(st)
    (label, plan), = meta["cells"].items()
    assert plan["pilot_pairs"] == 60 and plan["reachable"] and "pilot of 60 pairs" in plan["why"]
    assert frame["item_id"].nunique() == plan["n_pairs"]
    # a resume reproduces every decision: nothing new is judged
    again = run_config(cfg, tmp_path / "run", progress=False)
    assert again.n_written == 0 and again.complete and again.n_not_needed == s.n_not_needed
    # the figures: phi and A from decided modes, C on the C pairs; T inside its interval
    fig = adaptive_reliability(frame, c_pairs=c_pairs[label], policy=FigurePolicy(n_bootstrap=300)).iloc[0]
    assert fig["T_lo"] <= fig["T"] <= fig["T_hi"]
    assert fig["T_hi"] - fig["T_lo"] < 2 * 0.06 * 1.5
    # the naive fixed-design C of truncated units would be biased upwards (mode-only units look
    # consistent); the adaptive C is not
    naive = reliability(frame, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert naive["C"] >= fig["C"]


def test_precision_config_errors():
    with pytest.raises(Exception, match="precision needs at least one target"):
        config_from_dict({"name": "x", "datasets": [{"name": "demo"}], "judges": ["sim:skill=0.8"],
                          "protocols": ["direct"], "precision": {"confidence": 0.9}})
    with pytest.raises(Exception, match="repetitions must be a number or"):
        config_from_dict({"name": "x", "datasets": [{"name": "demo"}], "judges": ["sim:skill=0.8"],
                          "protocols": ["direct"], "repetitions": {"min": 3}})


def test_report_cells_take_the_adaptive_figures(tmp_path):
    from verdictlab.stats.adaptive import with_adaptive_figures

    _pairs(tmp_path / "pairs.jsonl", n=150)
    cfg = _config(tmp_path / "pairs.jsonl", precision={"T": 0.08, "pilot_pairs": 40})
    run_config(cfg, tmp_path / "run", progress=False)
    with RunStore(tmp_path / "run") as st:
        meta, frame = st.get_meta(META_KEY), st.judgments()
    fixed = reliability(frame, policy=FigurePolicy(n_bootstrap=0))
    out = with_adaptive_figures(fixed, meta, frame, policy=FigurePolicy(n_bootstrap=200)).iloc[0]
    label = next(iter(meta["cells"]))
    own = adaptive_reliability(frame, c_pairs=c_pairs_of_frame(meta, frame)[label], policy=FigurePolicy(n_bootstrap=200)).iloc[0]
    assert out["design"] == "adaptive"
    assert out["C"] == pytest.approx(own["C"]) and out["T"] == pytest.approx(own["T"])
    assert out["phi"] == pytest.approx(fixed.iloc[0]["phi"])   # modes are decided: phi as stored
    assert pd.isna(out["T_joint"]) and pd.isna(out["self_consistency"])
    plain = with_adaptive_figures(fixed, None, frame)
    assert (plain["design"] == "fixed").all() and plain.iloc[0]["C"] == fixed.iloc[0]["C"]


def c_pairs_of_frame(meta, frame):
    from verdictlab.stats.adaptive import c_pairs_from

    return c_pairs_from(meta, frame)


def test_report_json_of_an_adaptive_run(tmp_path):
    from verdictlab.report import build_report

    _pairs(tmp_path / "pairs.jsonl", n=150)
    cfg = _config(tmp_path / "pairs.jsonl", precision={"T": 0.08, "pilot_pairs": 40})
    run_config(cfg, tmp_path / "run", progress=False)
    rep = build_report(tmp_path / "run", policy=FigurePolicy(n_bootstrap=200))
    (cell,) = rep.cells
    with RunStore(tmp_path / "run") as st:
        meta, frame = st.get_meta(META_KEY), st.judgments()
    label = next(iter(meta["cells"]))
    own = adaptive_reliability(frame, c_pairs=c_pairs_of_frame(meta, frame)[label], policy=FigurePolicy(n_bootstrap=200)).iloc[0]
    assert cell.value("design") == "adaptive"
    assert cell.value("C") == pytest.approx(own["C"]) and cell.value("T") == pytest.approx(own["T"])
    assert cell.value("T_joint") is None or pd.isna(cell.value("T_joint"))


def test_the_store_records_what_the_design_chose(tmp_path):
    _pairs(tmp_path / "pairs.jsonl", n=150)
    cfg = _config(tmp_path / "pairs.jsonl", precision={"T": 0.08, "pilot_pairs": 40})
    run_config(cfg, tmp_path / "run", progress=False)
    with RunStore(tmp_path / "run") as st:
        meta, frame = st.get_meta(META_KEY), st.judgments()
    (label, plan), = meta["cells"].items()
    assert len(plan["pilot"]) == 40
    assert len(plan["c_pairs"]) + len(plan["mode_only_pairs"]) + 40 == plan["n_pairs"]
    assert plan["n_not_needed_pairs"] == 150 - plan["n_pairs"]
    # the stored C pairs are exactly those the report re-derives
    derived = c_pairs_of_frame(meta, frame)[label]
    assert derived == {("pairs", i) for i in plan["pilot"] + plan["c_pairs"]}
    # every pilot unit ran all R repetitions
    pilot_rows = frame[frame["item_id"].isin(plan["pilot"])]
    assert (pilot_rows.groupby(["item_id", "order"]).size() == 10).all()
