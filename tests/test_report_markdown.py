"""Markdown rendering: every cell, the policy line, the checklist, and run text escaped."""

from __future__ import annotations

from typing import Any

from _cells import report_of
from verdictlab.core.policy import FigurePolicy
from verdictlab.report.markdown import md_escape, render_markdown


def _report() -> Any:
    cell = {"judge": "j|<b>x</b>", "judge_label": "j|<b>x</b>", "protocol": "direct", "dataset": "d_1",
            "temperature": 0.0, "n_pairs": 10, "n_labelled_pairs": 8, "n_judgments": 60, "n_unparsed": 3,
            "parse_failure_rate": 0.05, "repetitions": 3, "C": 0.9, "C_lo": 0.8, "C_hi": 0.95, "phi": 0.2,
            "A": 0.75, "A_max": 0.9, "T": 0.585, "T_lo": 0.4, "T_hi": 0.7, "T_joint": 0.6,
            "best_T_in_dataset": True,
            "agreement": {"exact_match": 0.75, "kappa": 0.5, "alpha": 0.49, "kappa_deflation": 0.25,
                          "position_bias": 0.12, "test_retest": 0.97, "consistency_bias_paradox": True,
                          "n_agreement_units": 16}}
    return report_of([cell], run={"run_dir": "runs/x", "n_judgments": 60}, policy=FigurePolicy(n_bootstrap=100),
                     checklist=[{"check": "At least 2 contrasting benchmarks", "passed": False, "detail": "1 dataset"}])


def test_markdown_tables_and_escaping() -> None:
    md = render_markdown(_report())
    lines = md.splitlines()
    row = next(line for line in lines if line.startswith("| d\\_1 |"))
    # 13 columns (the last: the region) -> 14 unescaped pipes; the judge's own "|" is escaped and its tags
    # are inert; C 0.90 >= 0.90 and phi 0.20 <= 0.20 without intervals: trustworthy
    assert row.replace("\\|", "").count("|") == 14 and row.endswith("| trustworthy |")
    assert "j\\|&lt;b&gt;x&lt;/b&gt;" in row and "<b>" not in md
    # C 0.9 [0.8, 0.95] -> "90.0 [80, 95]"; T 0.585 -> "58.5 [40, 70] ★"; unparsed 3/60 = 5.0 %
    assert "90.0 [80, 95]" in row and "58.5 [40, 70] ★" in row and "5.0% (3/60)" in row
    assert "excluded from every figure" in md and "SC = self-consistency" not in md
    # paradox: test-retest 0.97 > 0.95 with position bias 0.12 > 0.10
    assert "**yes**" in md
    assert "- ❌ FAIL — At least 2 contrasting benchmarks: 1 dataset" in md


def test_md_escape() -> None:
    assert md_escape("a|b<c>&_*`[x]\n") == "a\\|b&lt;c&gt;&amp;\\_\\*\\`\\[x\\] "
