"""The HTML report in a real headless browser: hostile dataset text and judge outputs must render as
text, never run, and never break the page structure.

The hostile run puts ``<script>``, ``<img onerror=...>`` and ``</table>`` payloads into questions,
responses, categories, raw outputs, the meta and even a dataset name and a judge id.  Each script payload would set
``document.title`` to ``PWNED`` and mark ``<body data-pwned=...>``; the ``</table>`` payload would
add ``<h1 id="injected">``.  Chromium, driven by Playwright (tests/_browser.py), loads the file (our own
inline JS runs, so injected JS would too) and the DOM is read after scripts ran.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from _browser import BROWSER_TEST, EVIL_DATASET, EVIL_JUDGE
from verdictlab.core.policy import FigurePolicy
from verdictlab.report import build_report, render_html
from verdictlab.testing.synthetic_run import write_synthetic_run

pytestmark = BROWSER_TEST


class _Dom(HTMLParser):
    """Collects what the assertions need from the dumped DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.title = ""
        self.html_attrs: dict[str, str | None] = {}
        self._in_title = False
        self.body_attrs: dict[str, str | None] = {}
        self.ids: list[str] = []
        self.headline_rows = 0
        self._in_headline = False
        self.items = 0
        self.script_count = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "title":
            self._in_title = True
        if tag == "body":
            self.body_attrs = a
        if tag == "html":
            self.html_attrs = a
        if a.get("id"):
            self.ids.append(str(a["id"]))
        if tag == "table" and a.get("id") == "headline-table":
            self._in_headline = True
        if tag == "tr" and self._in_headline:
            self.headline_rows += 1
        if tag == "details" and "item" in (a.get("class") or "").split():
            self.items += 1
        if tag == "script":
            self.script_count += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag == "table":
            self._in_headline = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    tmp = tmp_path_factory.mktemp("hostile")
    st = write_synthetic_run(tmp / "run", datasets=("safe", EVIL_DATASET), protocols=("direct", "cot-json"),
                             judges=("sim:steady", EVIL_JUDGE), temperatures=(0.0,), n_items=6,
                             repetitions=3, hostile=True)
    rep = build_report(st, policy=FigurePolicy(n_bootstrap=50))
    st.close()
    out = tmp / "report.html"
    render_html(rep, out)
    return out, rep


def test_nothing_injected_executes_and_every_row_renders(hostile_report: tuple[Path, Any], browser: Any) -> None:
    html_path, rep = hostile_report
    page = browser.new_page()
    page.goto(html_path.as_uri(), wait_until="load")
    dom_text = page.content()
    page.close()
    assert "</html>" in dom_text, "chromium produced no DOM"
    dom = _Dom()
    dom.feed(dom_text)
    assert "PWNED" not in dom.title and dom.title.startswith("verdictlab report")
    assert "data-pwned" not in dom.body_attrs
    assert "injected" not in dom.ids
    assert dom.script_count == 1  # only our own sorting/filtering script
    # ... and that script did run (the CSP hash lets exactly it through)
    assert dom.html_attrs.get("data-report-js") == "ready"
    # every cell has its headline row (+1 header row): nothing was cut off by a stray </table>
    n_cells = len(rep.cells)
    assert n_cells == 8  # 2 judges x 2 protocols x 2 datasets x 1 temperature
    assert dom.headline_rows == n_cells + 1
    assert dom.items == rep.broken_items["n_shown"] > 0
    # the payloads are there, as text
    assert "&lt;script&gt;document.title='PWNED'" in dom_text
    assert "&lt;img src=x onerror=" in dom_text
    assert "&lt;/table&gt;&lt;/div&gt;&lt;h1 id='injected'&gt;" in dom_text
    assert "sk-test-THIS-MUST-NOT-APPEAR" not in dom_text


def test_hostile_names_stay_text_in_the_decision_panel_and_the_legend(hostile_report: tuple[Path, Any],
                                                                        browser: Any) -> None:
    html_path, rep = hostile_report
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(html_path.as_uri(), wait_until="load")
    try:
        panel = page.inner_text("#decision")
        # the short names of the hostile dataset and judge show as text in the panel, the full ids in the
        # legend and in the tooltips, and none of them became markup
        assert rep.display_names["dataset"][EVIL_DATASET] in panel
        legend = page.inner_text("details.legend")
        assert EVIL_DATASET in legend and EVIL_JUDGE in legend
        titles = page.eval_on_selector_all("td.nm[title]", "els => els.map(e => e.getAttribute('title'))")
        assert EVIL_DATASET in titles and EVIL_JUDGE in titles
        assert page.eval_on_selector_all("#decision script, #decision img[onerror], #decision h1", "els => els.length") == 0
        assert page.title().startswith("verdictlab report") and page.get_attribute("body", "data-pwned") is None
    finally:
        page.close()


LONG_JUDGES = ("sim:skill=0.85,position_lock=0.05,noise=0.03,seed=1", "sim:skill=0.8,position_lock=0.3,noise=0.05,seed=2",
               "sim:skill=0.6,position_lock=0.1,noise=0.3,seed=3")


@pytest.fixture(scope="module")
def sim_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run like the README's: three simulated judges with long ids, two datasets, three protocols, with
    every published definition's table (their tables must fit the page too)."""
    tmp = tmp_path_factory.mktemp("sim")
    st = write_synthetic_run(tmp / "run", datasets=("llmbar-natural", "pandalm"), judges=LONG_JUDGES,
                             protocols=("direct", "vf-json", "cot-json"), temperatures=(0.0,), n_items=30,
                             repetitions=3)
    rep = build_report(st, policy=FigurePolicy(n_bootstrap=50), definitions="all")
    st.close()
    out = tmp / "report.html"
    render_html(rep, out)
    return out


_OVERFLOWS = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const out = [];
  document.querySelectorAll('table').forEach(t => {
    // a table wider than its wrapper is read by scrolling the wrapper (never by breaking its words); the
    // wrapper itself never is wider than the page's column
    const wrap = t.parentElement, box = wrap.clientWidth;
    const scrolls = ['auto', 'scroll'].includes(getComputedStyle(wrap).overflowX);
    if (t.scrollWidth > box + 1 && !scrolls) out.push([t.id || t.className, t.scrollWidth, box]);
    if (wrap.getBoundingClientRect().width > document.querySelector('main').clientWidth + 1) out.push([t.id || t.className, 'wrapper']);
  });
  if (document.documentElement.scrollWidth > window.innerWidth) out.push(['page', document.documentElement.scrollWidth]);
  return out;
}"""


@pytest.mark.parametrize("which", ["sim", "hostile"])
def test_no_table_overflows_at_1280(which: str, sim_report: Path, hostile_report: tuple[Path, Any],
                                    browser: Any) -> None:
    path = sim_report if which == "sim" else hostile_report[0]
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(path.as_uri(), wait_until="load")
    try:
        assert page.eval_on_selector_all("table", "els => els.length") >= 8
        assert page.evaluate(_OVERFLOWS) == []
    finally:
        page.close()


def test_the_decision_is_the_first_section_and_above_the_fold(sim_report: Path, browser: Any) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(sim_report.as_uri(), wait_until="load")
    try:
        # above every table
        first = page.evaluate("() => document.querySelector('main section, main table').id")
        assert first == "decision"
        # every dataset's answer, its configurations to use and its picture fit the first screen
        boxes = page.evaluate("""() => Array.from(document.querySelectorAll('#decision article.ds')).map(a => [
            a.querySelector('p.answer').getBoundingClientRect().bottom,
            a.querySelector('dd ul.use').getBoundingClientRect().bottom,
            a.querySelector('figure img').getBoundingClientRect().bottom])""")
        assert len(boxes) == 2
        assert all(0 < b <= 800 for row in boxes for b in row), boxes
        assert "Use " in page.inner_text("#decision article.ds p.answer")
    finally:
        page.close()


def test_page_renders_a_non_empty_screenshot(hostile_report: tuple[Path, Any], browser: Any) -> None:
    html_path, _ = hostile_report
    shot = html_path.parent / "shot.png"
    page = browser.new_page(viewport={"width": 1280, "height": 1600})
    page.goto(html_path.as_uri(), wait_until="load")
    page.screenshot(path=str(shot))
    page.close()
    assert shot.exists() and shot.stat().st_size > 20_000
    import matplotlib.image as mpimg

    img = mpimg.imread(shot)
    assert img.shape[0] == 1600 and img.shape[1] == 1280
    assert float(img[..., :3].std()) > 0.05  # not a blank page


def test_raw_html_has_no_live_payload(hostile_report: tuple[Path, Any]) -> None:
    html_path, _ = hostile_report
    text = html_path.read_text(encoding="utf-8")
    assert len(re.findall(r"<script\b", text)) == 1
    assert not re.search(r"<img[^>]*\bonerror", text)
    assert all(src.startswith("data:image/") for src in re.findall(r'<img src="([^"]*)"', text))
    assert "<h1 id='injected'>" not in text
