"""The HTML report read in a real browser at 1,280 and 1,920 px: no header or name broken inside a word, no
table wider than its container unless its wrapper scrolls it (and the wrapper and the page never wider
than the page), and no row made tall by a column squeezed one word wide.

The run is the kind that made the tables unreadable: long judge ids without spaces, both decoding modes
(the free-vs-constrained table of 36 snake_case columns), every published definition and every registered
analysis' table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from _browser import BROWSER_TEST
from verdictlab.core.policy import FigurePolicy
from verdictlab.report import build_report, render_html
from verdictlab.testing.synthetic_run import write_synthetic_run

pytestmark = BROWSER_TEST

#: a cell of more lines than this must be at least :data:`MIN_WRAPPED_EM` wide: a column squeezed to a word or
#: two makes its rows hundreds of pixels tall (the free-vs-constrained table once had 400 px rows of one
#: word a line) where the same text at a sentence's width needs two or three lines
MAX_NARROW_LINES, MIN_WRAPPED_EM = 4, 9

_MEASURE = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const lines = (rects) => new Set(rects.filter(x => x.width > 0).map(x => Math.round(x.top))).size;
  // a word: a run of characters a line may not break inside (spaces, hyphens, dashes, and the
  // , : / = _ after which a name offers a break are where lines may end)
  const broken = (el) => {
    const bad = [];
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const re = /[^\\s,:\\/=_\\-–]+/g; let m;
      while ((m = re.exec(n.data)) !== null) {
        const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        if (lines(Array.from(r.getClientRects())) > 1) bad.push(m[0]);
      }
    }
    return bad;
  };
  const main = document.querySelector('main').clientWidth;
  const out = {tables: 0, overflow: [], heads: [], names: [], narrow: [], maxRow: 0,
               page: document.documentElement.scrollWidth - window.innerWidth};
  document.querySelectorAll('table').forEach((t, i) => {
    out.tables += 1;
    const id = t.id || t.className || ('table ' + i);
    const box = t.parentElement;
    const scrolls = getComputedStyle(box).overflowX === 'auto' || getComputedStyle(box).overflowX === 'scroll';
    if (t.scrollWidth > box.clientWidth + 1 && !scrolls) out.overflow.push([id, t.scrollWidth, box.clientWidth]);
    if (box.getBoundingClientRect().width > main + 1) out.overflow.push([id + ' wrapper', box.getBoundingClientRect().width, main]);
    t.querySelectorAll('th').forEach(th => broken(th).forEach(w => out.heads.push([id, w])));
    t.querySelectorAll('td').forEach(td => broken(td).forEach(w => out.names.push([id, w])));
    t.querySelectorAll('tbody tr').forEach(tr => {
      out.maxRow = Math.max(out.maxRow, tr.getBoundingClientRect().height);
      Array.from(tr.cells).forEach(td => {
        const r = document.createRange(); r.selectNodeContents(td);
        const n = lines(Array.from(r.getClientRects()));
        const em = parseFloat(getComputedStyle(td).fontSize);
        if (n > MAX_LINES && td.getBoundingClientRect().width < MIN_EM * em)
          out.narrow.push([id, td.textContent.trim().slice(0, 40), n, Math.round(td.getBoundingClientRect().width)]);
      });
    });
  });
  return out;
}""".replace("MAX_LINES", str(MAX_NARROW_LINES)).replace("MIN_EM", str(MIN_WRAPPED_EM))


@pytest.fixture(scope="module")
def unreadable_run_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("readable")
    st = write_synthetic_run(tmp / "run", datasets=("llmbar-natural",),
                             judges=("llamacpp:smollm2-135m-instruct", "sim:skill=0.8,position_lock=0.3,noise=0.05,seed=2"),
                             protocols=("direct", "vf-json", "cot-json"), temperatures=(0.0, 0.7), n_items=12,
                             repetitions=3, decodings=("free", "constrained"))
    rep = build_report(st, policy=FigurePolicy(n_bootstrap=30), definitions="all")
    st.close()
    out = tmp / "report.html"
    render_html(rep, out)
    return out


@pytest.mark.parametrize("width", [1280, 1920])
def test_every_table_reads_at_common_widths(unreadable_run_report: Path, browser: Any, width: int) -> None:
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(unreadable_run_report.as_uri(), wait_until="load")
    try:
        m = page.evaluate(_MEASURE)
        assert page.eval_on_selector("#further-decoding", "t => t.rows.length") > 1   # the table that broke
    finally:
        page.close()
    assert m["tables"] >= 20
    assert m["page"] <= 0, "the page scrolls sideways"
    assert m["overflow"] == []
    assert m["heads"] == [], "headers broken inside a word"
    assert m["names"] == [], "names or values broken inside a word"
    assert m["narrow"] == [], "rows made tall by a column squeezed narrow"
    assert m["maxRow"] < 300, m["maxRow"]


def test_analysis_headers_are_words_with_the_json_name_as_tooltip(unreadable_run_report: Path) -> None:
    html = unreadable_run_report.read_text(encoding="utf-8")
    assert 'title="n_judgments_constrained">N judgments constrained</th>' in html
    assert 'title="dphi_lo">Δφ low</th>' in html
