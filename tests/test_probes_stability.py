"""Anchoring and paraphrase probes: transforms, figures and the sim judge's planted biases."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from verdictlab.analyses.stability import stability_table
from verdictlab.core.items import PairItem
from verdictlab.core.policy import FigurePolicy
from verdictlab.datasets.probes import anchoring_probe, apply_probe, paraphrase_probe
from verdictlab.datasets.registry import DatasetLoad
from verdictlab.stats.stability import anchoring_shift, change_vs_noise, repetition_disagreement


def _load(n: int = 6) -> DatasetLoad:
    items = [PairItem(item_id=str(i), dataset="base", question=f"Q{i}?", response_a=f"alpha answer {i}",
                      response_b=f"beta answer {i}", label="AB"[i % 2]) for i in range(n)]
    return DatasetLoad(name="base", items=list(items), seed=42)


def test_anchoring_shift_hand_worked():
    # side A A B B; base A B B A -> on side 1 0 1 0 (s_base .5); probe A A B A -> 1 1 1 0 (s_probe .75)
    # shift = .25; susceptibility = .25 / (1 - .5) = .5
    r = anchoring_shift(["A", "B", "B", "A"], ["A", "A", "B", "A"], ["A", "A", "B", "B"], ["1", "2", "3", "4"],
                        n_boot=200)
    assert (r.n, r.n_items) == (4, 4)
    assert r.s_base == 0.5 and r.s_probe == 0.75 and r.shift == 0.25 and r.susceptibility == 0.5
    assert r.shift_lo <= 0.25 <= r.shift_hi


def test_repetition_disagreement_and_change_vs_noise_hand_worked():
    # item 1 (AB): reps A, A, B -> 3 pairs, 1 alike -> 2 differ; item 2 (AB): A, A -> 1 pair alike.
    df = pd.DataFrame({"item_id": ["1", "1", "1", "2", "2"], "order": "AB", "step": "",
                       "verdict": ["A", "A", "B", "A", "A"]})
    assert repetition_disagreement(df) == (2, 4)
    # change 3/10 vs noise 3/10: excess 0, p = 1 (z = 0)
    r = change_vs_noise(3, 10, 3, 10)
    assert r.change == r.noise == 0.3 and r.excess == 0 and r.excess_p == pytest.approx(1.0)


def test_anchoring_probe_quotes_the_anchored_response_in_both_directions():
    out = anchoring_probe(_load(20), side="random", seed=3)
    assert out.name == "base+anchoring"
    sides = {it.meta["anchor_side"] for it in out.items}
    assert sides == {"A", "B"}
    for it in out.items:
        anchored = it.response_a if it.meta["anchor_side"] == "A" else it.response_b
        assert it.question.startswith(f"Q{it.item_id}?") and f"\u201c{anchored}\u201d" in it.question
        assert it.meta["probe"] == "anchoring" and it.meta["base_dataset"] == "base"
    assert apply_probe(_load(4), {"name": "anchoring", "side": "loser"}).items[0].meta["anchor_side"] == "B"


def test_paraphrase_from_file_keeps_the_original_in_meta(tmp_path: Path):
    f = tmp_path / "para.jsonl"
    f.write_text("".join(json.dumps({"item_id": str(i), "question": f"Reworded {i}?"}) + "\n" for i in range(4)))
    out = apply_probe(_load(6), "paraphrase", file=str(f))
    assert out.name == "base+paraphrase" and len(out.items) == 4 and len(out.dropped) == 2
    it = out.items[0]
    assert it.question == "Reworded 0?" and it.meta["original_question"] == "Q0?"
    assert it.meta["paraphrase_source"] == f"file:{f}"
    with pytest.raises(ValueError, match="exactly one"):
        paraphrase_probe(_load(2))


def test_paraphrase_with_a_named_judge(monkeypatch: pytest.MonkeyPatch):
    from verdictlab.judges.base import JudgeAPI, JudgeResponse

    class Rewriter(JudgeAPI):
        provider = "fake"

        async def generate(self, request):   # type: ignore[no-untyped-def]
            q = request.messages[0]["content"].rsplit("Question:\n", 1)[1]
            return JudgeResponse(text=f"In other words: {q}", tokens_in=1, tokens_out=1, cost_usd=0.0)

    monkeypatch.setattr("verdictlab.judges.make_judge", lambda jid: Rewriter(jid, model="fake"))
    from verdictlab.engine.paraphrase import paraphrase_with_judge

    out = paraphrase_probe(_load(3), paraphraser="fake:rewriter", paraphrase_fn=paraphrase_with_judge)
    assert [it.question for it in out.items] == ["In other words: Q0?", "In other words: Q1?", "In other words: Q2?"]
    assert out.items[0].meta["paraphrase_source"] == "judge:fake:rewriter"


def test_stability_table_from_matched_verdicts():
    load = _load(4)
    probe = anchoring_probe(load, side="a")
    rows = []
    for ds, follow in (("base", False), ("base+anchoring", True)):
        for it in load.items:
            for o in ("AB", "BA"):
                for rep in (0, 1):
                    v = "A" if follow else it.label
                    rows.append({"judge": "j", "protocol": "direct", "temperature": 0.0, "dataset": ds,
                                 "item_id": it.item_id, "order": o, "rep": rep, "step": "", "verdict": v,
                                 "label": it.label})
    t = stability_table(pd.DataFrame(rows), [*load.items, *probe.items], policy=FigurePolicy(n_bootstrap=100))
    r = t.iloc[0]
    # base: label A on items 0, 2 -> s_base = .5; probe: always A (the anchor) -> s_probe = 1, shift .5, susc 1
    assert r.probe == "anchoring" and r.n_matched == 16
    assert r.anchor_share_base == 0.5 and r["shift"] == 0.5 and r.susceptibility == 1.0


def test_paraphrased_item_shows_its_original_question_in_the_audit_trail(tmp_path: Path):
    # a judge that flips under the reworded question: the flipped probe item is in the broken-items list,
    # and the HTML shows the original wording under the question (issue 14 item 3)
    from verdictlab.core.design import trial_id
    from verdictlab.report import build_report, render_html
    from verdictlab.store import RunStore

    f = tmp_path / "para.jsonl"
    f.write_text(json.dumps({"item_id": "0", "question": "Reworded <zero>?"}) + "\n")
    base = _load(1)
    probe = paraphrase_probe(base, file=str(f))
    rows = []
    for it, verdicts in ((base.items[0], ("A", "A")), (probe.items[0], ("A", "B"))):   # probe: position-following
        for order, v in zip(("AB", "BA"), verdicts, strict=True):
            rows.append({"trial_id": trial_id("sim:x", it.dataset, it.item_id, "direct", order, 0.0, 0),
                         "judge": "sim:x", "dataset": it.dataset, "item_id": it.item_id, "protocol": "direct",
                         "order": order, "temperature": 0.0, "rep": 0, "step": "", "label": it.label,
                         "verdict": v, "parse_status": "ok", "raw_output": v})
    with RunStore(tmp_path / "run") as s:
        s.write_items([*base.items, *probe.items])
        s.add_judgments(rows)
    report = build_report(tmp_path / "run", policy=FigurePolicy(n_bootstrap=20))
    html = render_html(report)
    assert "Original question (before paraphrase: file:" in html and "Q0?" in html
    assert "Reworded &lt;zero&gt;?" in html
