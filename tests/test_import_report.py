"""Issue 11 end to end: imported runs through `verdictlab report --json` -- the figures the sources
report land in the report (A_3class / macro_f1 cells, JudgeBench's score in the remedies table), and a
single-order cell says "needs both orders" instead of a position bias, in the cells and the checklist."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from test_import_sources import _judgebench_file, _panda_file, _testset
from verdictlab.cli.main import app
from verdictlab.importers import import_into


def _report(run) -> dict:
    r = CliRunner().invoke(app, ["report", str(run), "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_single_order_pandalm_run_needs_both_orders(tmp_path):
    import_into("pandalm", _panda_file(tmp_path), run_dir=tmp_path / "run", items_path=str(_testset(tmp_path)))
    rep = _report(tmp_path / "run")
    (cell,) = rep["cells"]
    # 5 pairs, labels A B tie A B; verdicts A B tie tie tie(garbage): right 0, 1, 2 -> 3/5
    assert cell["A_3class"] == pytest.approx(3 / 5) and cell["n_units_3class"] == 5
    assert cell["macro_f1"] is not None
    assert cell["agreement"]["position_bias"] is None
    assert cell["agreement"]["position_bias_note"] == "needs both orders"
    checks = {c["check"]: c for c in rep["run"]["checklist"]}
    both = checks["Both presentation orders run (position swap)"]
    pos = next(c for k, c in checks.items() if k.startswith("Position bias checked"))
    assert not both["passed"] and not pos["passed"]          # never PASS while both-orders FAILs
    assert pos["detail"].startswith("needs both orders")
    # the verdict rule is in the audit trail
    assert rep["run"]["fallback_rules"] == {"pandalm: garbage counted as tie (PandaLM's evaluation rule)": 1}


def test_judgebench_score_in_the_remedies_table(tmp_path):
    import_into("judgebench", _judgebench_file(tmp_path), run_dir=tmp_path / "run")
    table = _report(tmp_path / "run")["run"]["analyses"]["remedies"]
    rows = [dict(zip(table["columns"], r, strict=True)) for r in table["rows"]]
    vote = next(r for r in rows if r["remedy"] == "both-orders-vote")
    assert vote["derived_protocol"] == "arena_hard+both-orders-vote"
    assert vote["A"] == pytest.approx(3 / 5) and vote["calls_per_verdict"] == 2
    assert any(r["remedy"] == "both-orders" for r in rows)
