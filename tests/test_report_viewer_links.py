"""The HTML report links to the viewer: every link opens the right page of ``verdictlab view`` (the
cell's pairs, the pairs behind C, phi and A, a broken pair's page at its cell's section), escaped,
at the address given -- checked against the viewer itself (Starlette's test client, no server)."""

from __future__ import annotations

import dataclasses
import html as htmllib
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from _view_runs import write_known_run  # noqa: E402
from verdictlab.cli.main import app as cli_app  # noqa: E402
from verdictlab.core.policy import FigurePolicy
from verdictlab.core.viewer_links import cell_anchor, cell_list_url, pair_url  # noqa: E402
from verdictlab.report import build_report, render_html  # noqa: E402
from verdictlab.view import Filters, Viewer, create_app  # noqa: E402

ODD = "odd/id?x#y"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, str, Viewer]:
    d = write_known_run(tmp_path_factory.mktemp("links") / "run")
    rep = build_report(d, policy=FigurePolicy(n_bootstrap=0))
    bi = rep.broken_items
    # one more "broken" row: the pair whose id holds /, ? and # (ids must be quoted whole)
    odd = {**bi["rows"][0], "item_id": ODD, "dataset": "ds2"}
    page = render_html(dataclasses.replace(rep, broken_items={**bi, "rows": [*bi["rows"], odd]}), embed_plots=False)
    return d, rep, page, Viewer(d)


def _links(page: str, base: str = "http://127.0.0.1:8765") -> list[str]:
    return [htmllib.unescape(h)[len(base):] for h in re.findall(r'href="(' + re.escape(base) + r'[^"]*)"', page)]


def test_every_cell_links_to_its_pairs_and_the_pairs_behind_its_figures(run: tuple[Path, Any, str, Viewer]) -> None:
    _, rep, page, viewer = run
    links = set(_links(page))
    client = TestClient(create_app(viewer), base_url="http://127.0.0.1")
    for cell in rep.cells:
        key = {**cell.key.as_dict(), "step": cell.step}
        url = cell_list_url(key)
        assert url in links and client.get(url).status_code == 200
        listing = viewer.index.page(Filters.from_query(dict(parse_qsl(urlsplit(url).query))))
        assert listing.n_matching == cell.value("n_pairs"), url
        flipped = cell_list_url(key, outcome="flipped")
        assert flipped in links
        # the phi link lists exactly the pairs phi counts: phi x pairs judged in both orders
        got = viewer.index.page(Filters.from_query(dict(parse_qsl(urlsplit(flipped).query)))).n_matching
        assert got == round(cell.figure("phi").point * cell.value("n_order_pairs")), (flipped, got)
        for outcome in ("unstable", "wrong"):
            assert cell_list_url(key, outcome=outcome) in links


def test_every_broken_item_links_to_its_pair_page_at_its_cell(run: tuple[Path, Any, str, Viewer]) -> None:
    _, rep, page, viewer = run
    links = _links(page)
    client = TestClient(create_app(viewer), base_url="http://127.0.0.1")
    pair_links = [u for u in links if u.startswith("/pairs/")]
    rows = rep.broken_items["rows"]
    assert len(pair_links) == len(rows) + 1
    for r in [*rows, {**rows[0], "item_id": ODD, "dataset": "ds2"}]:
        anchor = cell_anchor(r["judge"], r["protocol"], r["temperature"], r["decoding"], r["step"])
        url = pair_url(r["dataset"], r["item_id"], anchor)
        assert url in pair_links
        path_query, _, fragment = url.partition("#")
        resp = client.get(path_query)
        assert resp.status_code == 200, url
        body = resp.text
        assert f'id="{fragment}"' in body and htmllib.escape(r["item_id"]) in body
    # the odd id is quoted whole: its / ? # never split the address
    assert "/pairs/odd%2Fid%3Fx%23y?dataset=ds2#cell-" in " ".join(pair_links)


def test_links_follow_the_viewer_url_or_are_left_out(run: tuple[Path, Any, str, Viewer]) -> None:
    _, rep, _, _ = run
    other = render_html(rep, embed_plots=False, viewer_url="http://localhost:9000/")
    assert _links(other, "http://localhost:9000") and not _links(other)
    assert "http://localhost:9000" in other and "verdictlab view" in other
    none = render_html(rep, embed_plots=False, viewer_url=None)
    assert not re.search(r'href="https?://', none)
    for bad in ("javascript:alert(1)", "/pairs", "http://x/?a=1", "ftp://host"):
        with pytest.raises(ValueError, match="viewer URL"):
            render_html(rep, embed_plots=False, viewer_url=bad)


def test_cli_viewer_url(run: tuple[Path, Any, str, Viewer], tmp_path: Path) -> None:
    d, _, _, _ = run
    out = tmp_path / "r.html"
    res = CliRunner().invoke(cli_app, ["report", str(d), str(out), "--bootstrap", "0",
                                       "--viewer-url", "http://127.0.0.1:9999"])
    assert res.exit_code == 0, res.output
    assert 'href="http://127.0.0.1:9999/pairs' in out.read_text(encoding="utf-8")
    res = CliRunner().invoke(cli_app, ["report", str(d), str(out), "--viewer-url", "javascript:alert(1)"])
    assert res.exit_code != 0 and "--viewer-url" in res.output
