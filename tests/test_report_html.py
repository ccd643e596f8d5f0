"""HTML report content (without a browser) and `verdictlab report --html / --plots`."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.core.policy import FigurePolicy
from verdictlab.report import build_report, render_html
from verdictlab.testing.synthetic_run import write_synthetic_run

TEMPLATES = Path(__file__).resolve().parents[1] / "src" / "verdictlab" / "report" / "templates"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("html") / "run"
    write_synthetic_run(d, protocols=("direct", "vf-json", "cot-json"), temperatures=(0.0, 0.7), n_items=8).close()
    return d


@pytest.fixture(scope="module")
def report(run_dir: Path) -> dict:
    return build_report(run_dir, policy=FigurePolicy(n_bootstrap=50))


class _Rows(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.in_headline = False
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self.row_classes: list[str] = []
        self.imgs: list[str] = []
        self.h2: list[str] = []
        self._h2 = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table" and a.get("id") == "headline-table":
            self.in_headline = True
        if self.in_headline and tag == "tr":
            self.rows.append([])
            self.row_classes.append(a.get("class") or "")
        if self.in_headline and tag in ("td", "th"):
            self._cell = []
        if tag == "img":
            self.imgs.append(a.get("src") or "")
        if tag == "h2":
            self._h2 = True
            self.h2.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.in_headline = False
        if tag in ("td", "th") and self._cell is not None and self.rows:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        if tag == "h2":
            self._h2 = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._h2:
            self.h2[-1] += data


def test_template_never_marks_data_safe() -> None:
    for f in TEMPLATES.iterdir():
        text = f.read_text(encoding="utf-8")
        assert "|safe" not in text.replace(" ", "") and "Markup(" not in text, f


def test_html_has_every_section_and_cell(report: Any) -> None:
    html = render_html(report)
    p = _Rows()
    p.feed(html)
    # 2 judges x 3 protocols x 2 datasets x 2 temperatures = 24 cells, + header row
    assert len(report.cells) == 24 and len(p.rows) == 25
    # one best-T row per dataset (2 datasets)
    assert sum("best" in c for c in p.row_classes) == 2
    assert html.count('class="star"') == 2
    for section in ("Headline: reliability per cell", "Accuracy ceiling", "Consistency × corrected accuracy",
                    "Failure regions", "Format dispersion", "Temperature sweep", "Per-judge spread of T",
                    "Validation-protocol checklist (this run)", "Audit trail", "Items that break the judge"):
        assert any(section in h for h in p.h2), section
    # the plots are inline images: no network, no side files
    # (six plots, the cost curves' Pareto front, and the decision's trust-region picture of each of the
    # two datasets)
    assert any("Cost curves: the Pareto front" in h for h in p.h2)
    assert len(p.imgs) == 6 + 1 + 2 and all(s.startswith("data:image/png;base64,") for s in p.imgs)
    assert not re.search(r"""src=["']https?://""", html)
    # the only http links are to the local viewer (verdictlab view), and they load nothing by themselves
    links = re.findall(r"""href=["'](https?://[^"']*)""", html)
    assert links and all(u.startswith("http://127.0.0.1:8765/pairs") for u in links)
    # cell figures as %: the first row's C cell shows C with its interval
    c0 = report.cells[0]
    header = p.rows[0]
    row = p.rows[1]
    c_text = row[header.index("C")]
    assert c_text.startswith(f"{100 * c0.figure('C').point:.1f}")
    # checklist pass/fail per line and the unparsed policy line
    assert html.count('class="pass"') + html.count('class="fail"') >= len(report.checklist)
    assert "excluded (and counted)" in html
    # audit trail: generation parameters from the store meta, no secret
    assert "max_tokens" in html and "sk-test" not in html and "api_key" not in html
    # one plain sentence per cell (verdicts_text), ending with the N it stands on
    assert "In plain words" in html and html.count("judgments, ") >= len(report.cells)
    # further analyses from remedies.extra_tables (remedies, juries), escaped tables
    assert "Further analyses" in html and "Remedies" in html and "Juries" in html
    # agreement columns beside the figures
    assert "Cohen κ" in html and "position bias" in html


@pytest.mark.slow
def test_cli_html_default_path_and_plots(run_dir: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["report", str(run_dir), "--format", "html", "--plots", str(tmp_path / "figs"),
                                   "--bootstrap", "20"])
    assert res.exit_code == 0, res.output
    out = run_dir / "report.html"
    assert out.exists() and out.stat().st_size > 50_000
    assert (tmp_path / "figs" / "ceiling.svg").exists() and (tmp_path / "figs" / "temperature.png").exists()
    res = CliRunner().invoke(app, ["report", str(run_dir), "-o", str(tmp_path / "x.html"), "--bootstrap", "0"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "x.html").exists()
    res = CliRunner().invoke(app, ["report", str(run_dir), str(tmp_path / "x.txt")])
    assert res.exit_code != 0
