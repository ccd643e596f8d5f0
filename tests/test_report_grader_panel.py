"""The decision panel's grader block (the ``grader_decision`` analysis in plain words, in every output)
and the cost curves' Pareto front drawn in the HTML report, on a simulated grader run (a consistent,
invariant grader and a shaky one, as tests/test_grader_analyses.py makes them)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from verdictlab.analyses.cost_curve_figure import cost_front_figure
from verdictlab.analyses.grader_decision import avoid_sentence
from verdictlab.core.policy import FigurePolicy
from verdictlab.engine import run_config
from verdictlab.engine.config import RunConfig
from verdictlab.report import build_report, render_html, render_markdown, render_terminal, report_json
from verdictlab.report.model import Report

GOOD = "sim:skill=0.95,invariance=1.0,sensitivity=1.0,noise=0.0,seed=1"
SHAKY = "sim:skill=0.6,invariance=0.3,sensitivity=0.2,noise=0.4,seed=2"


def _points(path: Path, n: int = 40) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            lab = 1 + i % 5
            fh.write(json.dumps({"item_id": f"s{i}", "question": "Q?", "response": "A.", "label": lab,
                                 "scale": [1, 2, 3, 4, 5]}) + "\n")
            fh.write(json.dumps({"item_id": f"s{i}~pad", "question": "Q?", "response": "A. " * 3, "label": lab,
                                 "meta": {"perturbation": {"source_id": f"s{i}", "kind": "verbosity.pad",
                                                           "class": "preserving", "origin": "deterministic"}}}) + "\n")
    return path


@pytest.fixture(scope="module")
def grader_report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    root = tmp_path_factory.mktemp("graders")
    cfg = RunConfig.model_validate({
        "name": "graders", "datasets": [{"name": "judges-verdict", "path": str(_points(root / "p.jsonl")),
                                         "dataset": "essays", "scale": [1, 2, 3, 4, 5]}],
        "judges": [GOOD, SHAKY], "protocols": ["pointwise@1-5"], "repetitions": 3, "temperatures": [0.7],
        "cache": "off"})
    run_config(cfg, root / "run", progress=False)
    return build_report(root / "run", policy=FigurePolicy(n_bootstrap=100))


def test_the_block_ranks_graders_and_says_why_to_avoid(grader_report: Report) -> None:
    (block,) = grader_report.graders
    assert block.dataset == "essays" and block.ranked_by == "T_g"
    names = grader_report.display_names.get("judge", {})
    assert block.headline.startswith(f"Use {names.get(GOOD, GOOD)} (2 graders, 1 to avoid; ranked by T_g")
    best, shaky = block.lines
    assert best.startswith(f"1. {names.get(GOOD, GOOD)} · ") and ", the best." in best and "Avoid" not in best
    assert shaky.startswith(f"2. {names.get(SHAKY, SHAKY)} · ") and "Avoid: " in shaky
    assert avoid_sentence("not_invariant:verbosity.pad") in shaky
    assert block.avoid == (False, True)


def test_every_output_shows_the_grader_block(grader_report: Report) -> None:
    (block,) = grader_report.graders
    md = render_markdown(grader_report)
    assert "### Graders — essays" in md and "not\\_invariant" not in md
    buf = io.StringIO()
    render_terminal(grader_report, Console(file=buf, width=400, color_system=None))
    assert "Graders — essays" in buf.getvalue() and block.headline in buf.getvalue()
    page = render_html(grader_report, embed_plots=False)
    assert '<article class="ds graders">' in page and '<li class="avoid">' in page
    doc = json.loads(json.dumps(report_json(grader_report)))
    assert doc["run"]["graders"][0]["lines"] == list(block.lines)


def test_the_pareto_front_is_drawn_in_the_html(grader_report: Report) -> None:
    table = grader_report.extra_tables["cost_curves"]
    rows = [dict(zip(table["columns"], r, strict=True)) for r in table["rows"]]
    assert any(r["on_front_calls"] for r in rows)
    fig = cost_front_figure(table)
    (ax,) = fig.axes
    assert ax.get_xlabel() == "calls per item"       # the simulated graders are free: calls, not dollars
    assert {t.get_text() for t in ax.get_legend().get_texts()} >= {"Pareto front"}
    page = render_html(grader_report)
    assert 'id="plot-cost_curves"' in page and "Cost curves: the Pareto front per dataset and criterion" in page
    assert 'id="plot-cost_curves"' not in render_html(grader_report, embed_plots=False)


def _unperturbed_run(tmp_path: Path, judge: str, *, n_items: int, n_bootstrap: int) -> Report:
    """One grader, two repetitions, 1-5 essays with no perturbed case, reported."""
    with (tmp_path / "p.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n_items):
            fh.write(json.dumps({"item_id": f"s{i}", "question": "Q?", "response": "A.", "label": 1 + i % 5,
                                 "scale": [1, 2, 3, 4, 5]}) + "\n")
    cfg = RunConfig.model_validate({
        "name": "essays", "datasets": [{"name": "judges-verdict", "path": str(tmp_path / "p.jsonl"),
                                        "dataset": "essays", "scale": [1, 2, 3, 4, 5]}],
        "judges": [judge], "protocols": ["pointwise@1-5"], "repetitions": 2, "cache": "off"})
    run_config(cfg, tmp_path / "run", progress=False)
    return build_report(tmp_path / "run", policy=FigurePolicy(n_bootstrap=n_bootstrap))


def test_graders_ranked_by_the_bound_show_no_interval(tmp_path: Path) -> None:
    """Without perturbed cases T_g is not defined and the graders are ranked by the bound C x A, which has no
    interval: its low and high were the point itself, printed "69% [69%, 69%]" and given as lo = hi in JSON."""
    rep = _unperturbed_run(tmp_path, GOOD, n_items=30, n_bootstrap=50)
    (block,) = rep.graders
    assert block.ranked_by == "T_bound"
    (line,) = block.lines
    assert "(the bound C × A, no interval)" in line and "[" not in line, line
    row = report_json(rep)["run"]["analyses"]["grader_decision"]
    got = dict(zip(row["columns"], row["rows"][0], strict=True))
    assert got["ranked_by"] == "T_bound" and got["lo"] is None and got["hi"] is None


def test_a_grader_with_no_readable_reply_says_so(tmp_path: Path) -> None:
    """A grader cell whose every reply was unreadable (the embedded model on a rubric: 48 of 48) was "not
    ranked (no repetitions)" although each item was graded twice: the real cause comes first."""
    rep = _unperturbed_run(tmp_path, "sim:skill=0.9,malformed=1.0,seed=3", n_items=12, n_bootstrap=20)
    (block,) = rep.graders
    (line,) = block.lines
    assert "not ranked (no readable replies)" in line and "repetitions" not in line, line
