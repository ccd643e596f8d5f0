"""`report --definitions`: the figures as the papers define them, per cell, in JSON, HTML, Markdown and
the terminal, equal to the catalogue's table; an unknown name is a usage error."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from verdictlab.analyses import AnalysisInput
from verdictlab.analyses.definitions import definitions_table
from verdictlab.cli.main import app
from verdictlab.core.policy import FigurePolicy
from verdictlab.importers import import_into
from verdictlab.report import build_report, render_html, render_markdown, render_terminal, report_json
from verdictlab.store import open_store


@pytest.fixture(scope="module")
def llmbar_run(shared_data: Path, tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("llmbar")
    import_into("llmbar", shared_data / "samples" / "llmbar_results", run_dir=run)
    return run


def test_json_cells_carry_the_figures_of_the_catalogue_table(llmbar_run: Path) -> None:
    rep = build_report(llmbar_run, definitions="all", policy=FigurePolicy(n_bootstrap=100, seed=3))
    doc = json.loads(json.dumps(report_json(rep), allow_nan=False))
    names = [d["name"] for d in doc["run"]["definitions"]]
    assert names[0] == "agreement-both-orders" and "score-ratio" in names     # asked, even where N = 0
    with open_store(llmbar_run) as st:
        table = definitions_table(AnalysisInput(st.judgments(), policy=FigurePolicy(n_bootstrap=100, seed=3)))
    for cell in doc["cells"]:
        rows = cell["definitions"]
        want = table[table["judge"] == cell["judge"]]
        assert [r["definition"] for r in rows] == list(want["definition"])
        for r, (_, w) in zip(rows, want.iterrows(), strict=True):
            # a figure the table has as NaN (not measured, e.g. C at one repetition) is null, with its reason
            same = (r["value"] is None and r["missing"] and math.isnan(w["value"])) or r["value"] == pytest.approx(w["value"])
            assert same and r["n"] == w["n"] and r["variant"] == w["variant"]
            assert r["note"] and r["unparsed_rule"]
    gpt4 = next(c for c in doc["cells"] if c["judge"] == "GPT-4")
    figure = {r["definition"]: r["value"] for r in gpt4["definitions"]}
    assert (figure["accuracy-mean-of-orders"], figure["positional-agreement"]) == (0.955, 0.95)
    assert figure["C"] is None      # a published log has one repetition: C was 1.00, as if measured


def test_a_store_without_decoding_gives_free_cells(llmbar_run: Path) -> None:
    """Runs stored before decoding was a factor have no ``decoding`` column (or NULL): the definitions
    table still carries the full cell key, with free decoding, and the same figures."""
    with open_store(llmbar_run) as st:
        judgments = st.judgments()
    whole = definitions_table(AnalysisInput(judgments, policy=FigurePolicy(n_bootstrap=0)), "A,positional-agreement")
    for old in (judgments.drop(columns=["decoding"]), judgments.assign(decoding=None)):
        got = definitions_table(AnalysisInput(old, policy=FigurePolicy(n_bootstrap=0)), "A,positional-agreement")
        assert set(got["decoding"]) == {"free"}
        assert got["value"].tolist() == whole["value"].tolist() and got["judge"].tolist() == whole["judge"].tolist()


def test_without_definitions_the_report_is_unchanged(llmbar_run: Path) -> None:
    doc = report_json(build_report(llmbar_run, policy=FigurePolicy(n_bootstrap=0)))
    assert "definitions" not in doc["run"] and all("definitions" not in c for c in doc["cells"])


def test_renderers_show_a_table_per_cell_and_the_notes(llmbar_run: Path, tmp_path: Path) -> None:
    rep = build_report(llmbar_run, definitions="agreement-both-orders,positional-agreement,A", policy=FigurePolicy(n_bootstrap=0))
    console = Console(record=True, width=200)
    render_terminal(rep, console)
    text = console.export_text()
    assert text.count("Figures as the papers define them") == 2        # one table per cell
    assert "what it counts differently from A" in text and "null = null agrees" in text
    assert "win-rate" not in text          # not asked
    md = render_markdown(rep)
    assert "### Figures as the papers define them" in md and "| positional-agreement |  | 64.00 |" in md
    html = render_html(rep, tmp_path / "r.html")
    assert 'id="definitions"' in html and "<td data-v=\"0.640000\">64.00</td>" in html
    assert "LLMBar (Zeng et al. 2024" in html


def test_cli_definitions_option(llmbar_run: Path) -> None:
    r = CliRunner().invoke(app, ["report", str(llmbar_run), "--format", "json", "--bootstrap", "0",
                                 "--definitions", "both-orders-vote"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [d["name"] for d in doc["run"]["definitions"]] == ["both-orders-vote"]
    bad = CliRunner().invoke(app, ["report", str(llmbar_run), "--definitions", "agreement"])
    assert bad.exit_code == 2
    assert "unknown definition 'agreement'; known: " in bad.output
