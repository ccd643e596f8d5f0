"""`verdictlab selftest` recovers every planted property (part of the test suite; ~10-40 s)."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from verdictlab.cli import selftest_cmd
from verdictlab.judges.sim import item_view
from verdictlab.workflows.selftest import judges

KEYS = {"property", "planted", "recovered", "lo", "hi", "passed"}


@pytest.mark.slow
def test_selftest_json_recovers_every_planted_property():
    app = typer.Typer()
    selftest_cmd.register(app)
    app.command("noop")(lambda: None)
    res = CliRunner().invoke(app, ["selftest", "--format", "json", "--seed", "7"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    props = [r["property"] for r in out["rows"]]
    assert props == ["accuracy", "position bias", "noise", "verbosity bias", "anchoring", "self-preference",
                     "non-transitive share", "grader accuracy", "grader noise (consistency)", "grader invariance",
                     "grader sensitivity"]
    for r in out["rows"]:
        assert set(r) >= KEYS and r["passed"], r
        assert r["lo"] <= r["recovered"] <= r["hi"]
    assert out["passed"] and out["elapsed_s"] < 120


def test_item_view_follows_the_shown_order():
    from verdictlab.core.items import PairItem

    it = PairItem(item_id="1", dataset="d", question="?", response_a="long answer", response_b="short",
                  system_a="alpha-7b", system_b="bravo-7b", meta={"anchor_side": "B"})
    assert item_view(it, "AB") == {"shown_chars": [11, 5], "shown_models": ["alpha-7b", "bravo-7b"],
                                   "item_meta": it.meta}
    assert item_view(it, "BA")["shown_models"] == ["bravo-7b", "alpha-7b"]
    assert item_view(it, "BA")["shown_chars"] == [5, 11]


def test_a_judge_without_the_planted_bias_fails_its_row():
    # negative control: every judge answers the gold label in both orders, so phi = 0 and C = 1:
    # the position-bias row (planted 0.3) and the noise row (planted 0.2) must fail.
    import pandas as pd

    from verdictlab.core.policy import FigurePolicy
    from verdictlab.workflows.selftest import _reliability_rows

    ids = judges(7)
    rows = [{"judge": jid, "protocol": "direct", "dataset": "pairs", "temperature": 0.0, "item_id": f"p{i}",
             "order": o, "rep": rep, "step": "", "verdict": "AB"[i % 2], "label": "AB"[i % 2]}
            for jid in ids.values() for i in range(80) for o in ("AB", "BA") for rep in (0, 1)]
    out = {r.property: r for r in _reliability_rows(pd.DataFrame(rows), ids, FigurePolicy(confidence=0.99, n_bootstrap=200, seed=0))}
    assert not out["position bias"].passed and out["position bias"].recovered == 0
    assert not out["noise"].passed and out["noise"].recovered == 0
    assert not out["accuracy"].passed and out["accuracy"].recovered == 1


def test_a_grader_without_the_planted_properties_fails_its_rows():
    # negative control: a grader that is always right, gives every whitespace case its source's grade and
    # every label flip its source's grade too (never follows the edit): invariance 1 and sensitivity 0,
    # so the invariance row (planted 0.7) and the sensitivity row (planted 0.6) must fail.
    import pandas as pd

    from verdictlab.core.items import PointItem
    from verdictlab.workflows.selftest import _grader_rows, grader_judges

    items, rows = [], []
    for i in range(60):
        lab = i % 2
        items.append(PointItem(item_id=f"g{i}", dataset="points", question="?", response="r", label=lab, scale=(0, 1)))
        for kind, klass, case_label in (("format.whitespace", "preserving", lab), ("label_flip", "changing", 1 - lab)):
            items.append(PointItem(item_id=f"g{i}~{kind}", dataset="points", question="?", response="r",
                                   label=case_label, scale=(0, 1),
                                   meta={"perturbation": {"source_id": f"g{i}", "kind": kind, "class": klass,
                                                          "origin": "deterministic"}}))
    for jid in grader_judges(7).values():
        for it in items:
            for rep in (0, 1):
                rows.append({"judge": jid, "protocol": "pointwise@0-1", "dataset": "points", "temperature": 0.0,
                             "item_id": it.item_id, "order": "AB", "rep": rep, "step": "",
                             "verdict": str(lab := int(it.item_id[1:].split("~")[0]) % 2), "label": str(lab)})
    out = {r.property: r for r in _grader_rows(pd.DataFrame(rows), items, 7, 0.99, 200)}
    assert out["grader invariance"].recovered == 1 and not out["grader invariance"].passed
    assert out["grader sensitivity"].recovered == 0 and not out["grader sensitivity"].passed
    assert out["grader accuracy"].recovered == 1 and not out["grader accuracy"].passed
