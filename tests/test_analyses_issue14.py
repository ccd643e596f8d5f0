"""Transitivity and self-preference analyses over stored-judgment-shaped frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from verdictlab.analyses import AnalysisInput
from verdictlab.analyses.self_preference import judge_family, self_preference_analysis, self_preference_table
from verdictlab.analyses.transitivity import multi_rows, ranking_analysis, transitivity_analysis
from verdictlab.core.items import PairItem
from verdictlab.core.policy import FigurePolicy
from verdictlab.datasets.multi import MultiItem, expand_pairs


def _judge(items: list[PairItem], prefer: dict[str, float], judge: str = "j") -> pd.DataFrame:
    """A judge that prefers the system with the higher ``prefer`` score in both orders."""
    rows = []
    for it in items:
        a, b = it.meta["system_a"], it.meta["system_b"]
        v = "A" if prefer[a] > prefer[b] else "B"
        for o in ("AB", "BA"):
            rows.append({"judge": judge, "protocol": "direct", "dataset": it.dataset, "temperature": 0.0,
                         "item_id": it.item_id, "order": o, "rep": 0, "step": "", "verdict": v,
                         "label": it.label})
    return pd.DataFrame(rows)


def test_transitive_judge_ranks_like_gold_and_has_no_cycles():
    # gold ranking x > y > z > w via scores; a judge with the same preference is fully transitive and
    # its Bradley-Terry order equals the gold order -> Kendall tau = 1 against the gold reference.
    multis = [MultiItem(item_id=f"q{i}", dataset="d", question="?", responses={s: s for s in "xyzw"},
                        scores={"x": 4, "y": 3, "z": 2, "w": 1}) for i in range(6)]
    items = expand_pairs(multis)
    j = _judge(items, {"x": 4, "y": 3, "z": 2, "w": 1})
    inp = AnalysisInput(j, items=items, policy=FigurePolicy(n_bootstrap=50))
    t = transitivity_analysis(inp)
    r = t.iloc[0]
    assert (r.n_items, r.n_systems, r.n_triples, r.n_nontransitive) == (6, 4, 24, 0)
    assert r.ranking == "x > y > z > w" and r.kendall_tau == pytest.approx(1.0) and r.reference == "gold labels"
    bt = ranking_analysis(inp)
    assert list(bt["system"]) == ["x", "y", "z", "w"]


def test_cyclic_judge_is_caught_and_reference_can_be_given():
    multis = [MultiItem(item_id=f"q{i}", dataset="d", question="?", responses={s: s for s in "xyz"})
              for i in range(3)]
    items = expand_pairs(multis)
    rows = []
    beats = {("x", "y"), ("y", "z"), ("z", "x")}
    for it in items:
        a, b = it.meta["system_a"], it.meta["system_b"]
        v = "A" if (a, b) in beats else "B"
        rows += [{"judge": "j", "protocol": "direct", "dataset": "d", "temperature": 0.0, "item_id": it.item_id,
                  "order": o, "rep": 0, "step": "", "verdict": v, "label": None} for o in ("AB", "BA")]
    inp = AnalysisInput(pd.DataFrame(rows), items=items, policy=FigurePolicy(n_bootstrap=20), extra={"reference_ranking": ["x", "y", "z"]})
    r = transitivity_analysis(inp).iloc[0]
    assert (r.n_triples, r.n_nontransitive, r.n_items_cycle, r.n_items_strict_cycle) == (3, 3, 3, 3)
    assert r.share_nontransitive == 1.0 and r.reference == "given"


def test_runs_without_multi_items_have_no_transitivity_table():
    it = PairItem(item_id="1", dataset="d", question="?", response_a="a", response_b="b", label="A")
    j = pd.DataFrame([{"judge": "j", "protocol": "direct", "dataset": "d", "temperature": 0.0, "item_id": "1",
                       "order": "AB", "rep": 0, "step": "", "verdict": "A", "label": "A"}])
    assert transitivity_analysis(AnalysisInput(j, items=[it])) is None
    assert multi_rows(j, [it]).empty


def test_judge_family_from_ids():
    assert judge_family("sim:skill=0.8,family=llama") == "llama"
    assert judge_family("openai:gpt-4o-mini") == "gpt"
    assert judge_family("anthropic:claude-3-5-haiku") == "claude"
    assert judge_family("openai-compatible:meta-llama/Llama-3-8B") == "llama"
    assert judge_family("sim:skill=0.8,seed=1") is None


def test_self_preference_table_from_item_systems():
    # judge family "llama"; every pair is llama-x vs gpt-y.  The judge always picks llama.
    # gold: llama better on 4 pairs, gpt better on 6 -> P(own | own wrong) = 1, P(other | other wrong) = 0.
    items = [PairItem(item_id=str(i), dataset="d", question="?", response_a="a", response_b="b",
                      label="A" if i < 4 else "B", system_a="llama-3", system_b="gpt-4")
             for i in range(10)]
    rows = [{"judge": "sim:family=llama", "protocol": "direct", "dataset": "d", "temperature": 0.0,
             "item_id": it.item_id, "order": o, "rep": 0, "step": "", "verdict": "A", "label": it.label}
            for it in items for o in ("AB", "BA")]
    j = pd.DataFrame(rows)
    t = self_preference_table(j, items)
    r = t.iloc[0]
    assert r.family == "llama" and r.n_units == 20 and r.own_rate == 1.0
    assert r.gold_own_rate == pytest.approx(0.4) and r.excess == pytest.approx(0.6)
    assert r.p_own_when_own_wrong == 1.0 and r.p_other_when_other_wrong == 0.0 and r.harm == 1.0
    # x1 = 12 of 12 (own wrong, picked own), x2 = 0 of 8: pooled .6, se = sqrt(.24 (1/12 + 1/8)) = .22361
    assert r.harm_z == pytest.approx(4.472136, abs=1e-5) and r.harm_p < 1e-5
    assert self_preference_analysis(AnalysisInput(j, items=items)) is not None
    # a judge of another family has no own-vs-other pair here
    assert self_preference_table(j.assign(judge="openai:claude-x"), items).empty
    assert np.isfinite(r.harm_lo)


def test_ranking_figure_renders_from_the_report_shape():
    multis = [MultiItem(item_id=f"q{i}", dataset="d", question="?", responses={s: s for s in "xyz"},
                        scores={"x": 3, "y": 2, "z": 1}) for i in range(4)]
    items = expand_pairs(multis)
    bt = ranking_analysis(AnalysisInput(_judge(items, {"x": 3, "y": 2, "z": 1}), items=items, policy=FigurePolicy(n_bootstrap=20)))
    from verdictlab.analyses.transitivity import ranking_figure

    fig = ranking_figure({"columns": list(bt.columns), "rows": bt.to_numpy().tolist()})
    assert len(fig.axes) == 1 and [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["z", "y", "x"]


def test_report_figures_draw_the_ranking_when_the_run_has_one():
    from verdictlab.report import plots as P

    multis = [MultiItem(item_id=f"q{i}", dataset="d", question="?", responses={s: s for s in "xyz"},
                        scores={"x": 3, "y": 2, "z": 1}) for i in range(4)]
    items = expand_pairs(multis)
    bt = ranking_analysis(AnalysisInput(_judge(items, {"x": 3, "y": 2, "z": 1}), items=items, policy=FigurePolicy(n_bootstrap=20)))
    from verdictlab.report.model import AnalysisTable, Report, RunInfo

    table = AnalysisTable(columns=list(bt.columns), rows=bt.to_numpy().tolist())
    run = RunInfo(run_dir="r", meta={}, n_judgments=0, judges=[], datasets=[], protocols=[], temperatures=[],
                  report_versions={})
    with_table = Report(run=run, policy=FigurePolicy(), extra_tables={"bt_ranking": table})
    names = [n for n, _, _ in P.figures(with_table)]
    assert names.count("bt_ranking") == 1      # drawn once, through the analysis' figure hook
    assert "bt_ranking" not in [n for n, _, _ in P.figures(Report(run=run, policy=FigurePolicy()))]


def test_generic_probe_table_does_not_call_anchoring_ignored():
    from verdictlab.analyses.probes import probe_table
    from verdictlab.datasets.probes import anchoring_probe
    from verdictlab.datasets.registry import DatasetLoad

    base = [PairItem(item_id=str(i), dataset="b", question="?", response_a="x", response_b="y", label="A")
            for i in range(2)]
    probe = anchoring_probe(DatasetLoad(name="b", items=list(base), seed=1)).items
    rows = [{"judge": "j", "protocol": "direct", "temperature": 0.0, "dataset": it.dataset, "item_id": it.item_id,
             "order": "AB", "rep": 0, "step": "", "verdict": "A", "label": "A"} for it in [*base, *probe]]
    t = probe_table(pd.DataFrame(rows), [*base, *probe])
    assert list(t["probe"]) == ["anchoring"] and t["note"].iloc[0] == ""
