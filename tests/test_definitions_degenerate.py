"""``report --definitions`` on the runs people have: a run without gold labels (``--definitions all`` stopped
with "TypeError: Cannot setitem on a Categorical with a new category (-1)") and a score-pair log with an
unread review, FastChat's ``[-1, -1]`` (``--definitions score-ratio`` stopped with "boolean value of NA is
ambiguous").  A figure a cell cannot have is "—" with its reason, never a number and never a crash."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.core.policy import FigurePolicy
from verdictlab.stats.classes import class_figures
from verdictlab.stats.definitions import agreement_both_orders, order_pairs

runner = CliRunner()


def _report(run: Path, names: str) -> dict:
    r = runner.invoke(app, ["report", str(run), "--definitions", names, "--bootstrap", "0", "--format", "json"])
    assert r.exit_code == 0 and "internal error" not in r.stderr, r.stderr
    return json.loads(r.stdout)


def test_every_definition_on_a_run_without_labels(tmp_path: Path) -> None:
    from verdictlab.testing.synthetic_run import write_synthetic_run

    write_synthetic_run(tmp_path / "run", n_items=4, judges=("sim:steady",), protocols=("direct", "vf-json"),
                        datasets=("d",)).close()
    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as conn:      # a log without gold labels
        conn.execute("UPDATE judgments SET label = NULL")
    for _ in range(2):          # built from the store, then read through the column cache (categoricals)
        rep = _report(tmp_path / "run", "all")
        for cell in rep["cells"]:
            rows = {(r["definition"], r["variant"]): r for r in cell["definitions"]}
            for name in ("agreement-both-orders", "accuracy-3class", "macro-f1", "both-orders-vote", "A", "T"):
                assert rows[(name, "")]["value"] is None and rows[(name, "")]["missing"] == "no labels", name
            for name in ("consistency-both-orders", "positional-agreement", "C", "phi"):
                assert rows[(name, "")]["value"] is not None and rows[(name, "")]["missing"] is None, name
    md = runner.invoke(app, ["report", str(tmp_path / "run"), "--definitions", "all", "--bootstrap", "0",
                             "--format", "markdown"])
    assert md.exit_code == 0 and "— (no labels)" in md.stdout and "nan" not in md.stdout.lower()


def test_a_categorical_label_column_without_any_label() -> None:
    """The depth of the first crash: the label column as the column cache gives it, a categorical whose
    every value is missing."""
    rows = [{"judge": "j", "protocol": "p", "dataset": "d", "temperature": 0.0, "decoding": "free", "item_id": i,
             "order": o, "verdict": "A", "rep": 0, "step": ""} for i in ("x", "y") for o in ("AB", "BA")]
    df = pd.DataFrame(rows).assign(label=pd.Categorical([None] * 4, categories=["A", "B", "tie"]))
    assert order_pairs(df, policy=FigurePolicy()).label.tolist() == [-1, -1]
    t = agreement_both_orders(df)
    assert int(t["n"].iloc[0]) == 0 and int(t["n_left_out"].iloc[0]) == 2 and np.isnan(t["value"].iloc[0])
    assert int(class_figures(df, policy=FigurePolicy(n_bootstrap=0))["n_units_3class"].iloc[0]) == 0


def test_score_ratio_with_an_unread_review(tmp_path: Path) -> None:
    """Six questions, both orders, a score pair per review; the AB review of q2 is FastChat's unread
    ``[-1, -1]``.  Odd questions: a 7, b 9; even: a 8, b 6 (in canonical terms).
    Read: q1, q3, q5 twice (a 42, b 54), q0, q4 twice (a 32, b 24), q2's BA once (a 8, b 6):
    a 82, b 84 -> B / A = 84 / 82; N 11 scored judgments, 1 left out."""
    rows = []
    for i in range(6):
        a, b = (7, 9) if i % 2 else (8, 6)
        for order in ("AB", "BA"):
            first, second = (a, b) if order == "AB" else (b, a)
            if i == 2 and order == "AB":
                first = second = -1
            rows.append({"item_id": f"q{i}", "order": order, "score_first": first, "score_second": second})
    src = tmp_path / "reviews.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    r = runner.invoke(app, ["import", "jsonl", str(src), "--run-dir", str(tmp_path / "run"), "--judge", "gpt-4",
                            "--protocol", "review", "--dataset", "vicuna"])
    assert r.exit_code == 0, r.stderr
    for _ in range(2):          # from the store, then through the column cache
        (row,) = _report(tmp_path / "run", "score-ratio")["cells"][0]["definitions"]
        assert row["value"] == pytest.approx(84 / 82) and row["n"] == 11 and row["n_left_out"] == 1
