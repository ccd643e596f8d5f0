"""The viewer (``verdictlab view``): outcomes by the report's rules, filters, paging, pair pages, escaping,
read-only access -- through Starlette's test client, no browser (tests/test_view_browser.py has those)."""

from __future__ import annotations

import hashlib
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from _view_runs import (  # noqa: E402
    EXPECTED_EXCLUDE,
    EXPECTED_WRONG,
    JUDGE,
    JUDGMENTS_PER_PAIR,
    KNOWN,
    OTHER_JUDGE,
    SECRET,
    write_known_run,
)
from verdictlab.core.policy import FigurePolicy
from verdictlab.report.build import broken_items  # noqa: E402
from verdictlab.stats import reliability  # noqa: E402
from verdictlab.store import open_store  # noqa: E402
from verdictlab.testing.synthetic_run import write_synthetic_run  # noqa: E402
from verdictlab.view import OUTCOMES, Filters, PairIndex, Viewer, ViewError, create_app, pair_outcomes  # noqa: E402
from verdictlab.view.pages import pair_url  # noqa: E402


@pytest.fixture(scope="module")
def known_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_known_run(tmp_path_factory.mktemp("known") / "run")


@pytest.fixture(scope="module")
def client(known_run: Path) -> TestClient:
    return TestClient(create_app(known_run), base_url="http://127.0.0.1")


def _ids(html: str) -> list[str]:
    return re.findall(r'<tr class="pair-row" data-item="([^"]*)"', html)


# -- outcomes: the report's rules, worked out by hand ---------------------------------------------------

@pytest.mark.parametrize(("policy", "expected"), [("exclude", EXPECTED_EXCLUDE), ("wrong", EXPECTED_WRONG)])
def test_outcomes_of_the_known_pairs(known_run: Path, policy: str, expected: dict[str, set[str]]) -> None:
    with open_store(known_run) as st:
        out = pair_outcomes(st.judgment_keys(), policy=FigurePolicy(unparsed=policy))
    cell = out[(out["judge"] == JUDGE) & (out["dataset"] == "ds1")]
    assert sorted(cell["item_id"]) == sorted(KNOWN)
    for outcome in OUTCOMES:
        assert set(cell.loc[cell[outcome], "item_id"]) == expected[outcome], outcome
    # the modal verdicts behind them (p3: B,A,B -> B; p6 under exclude: A,B -> split; p5 AB: none)
    modal = cell.set_index("item_id")
    assert modal.loc["p3", "modal_AB"] == "B"
    assert modal.loc["p6", "modal_AB"] == "split"
    assert modal.loc["p5", "modal_AB"] == ("unparsed" if policy == "wrong" else None)
    assert modal.loc["p5", "n_unparsed"] == 3 and modal.loc["p6", "n_unparsed"] == 1
    # the other judge is right and steady everywhere; only p4 (label tie, judge says A) disagrees
    other = out[(out["judge"] == OTHER_JUDGE) & (out["dataset"] == "ds1")]
    assert set(other.loc[other[list(OUTCOMES)].any(axis=1), "item_id"]) == {"p4"}
    assert set(other.loc[other["disagree"], "item_id"]) == {"p4"}


@pytest.mark.parametrize("policy", ["exclude", "wrong"])
def test_flipped_and_unstable_are_the_reports_flags_and_phi(tmp_path: Path, policy: str) -> None:
    """The same pairs as the report's "items that break the judge", and per cell the flipped share of
    the pairs judged in both orders is the report's phi."""
    st = write_synthetic_run(tmp_path / "run", datasets=("d",), protocols=("direct", "vf-json"), n_items=30,
                             temperatures=(0.0, 0.7), repetitions=3, one_order_share=0.1)
    judgments = st.judgments()
    broken = broken_items(judgments, st.items_frame(), policy=FigurePolicy(unparsed=policy), limit=100_000)
    keys = st.judgment_keys()
    st.close()
    out = pair_outcomes(keys, policy=FigurePolicy(unparsed=policy))
    key = ["judge", "protocol", "temperature", "item_id"]

    def flagged(rows: list[dict], flag: str) -> set[tuple]:
        return {tuple(r[k] for k in key) for r in rows if r[flag]}

    ours = out.to_dict(orient="records")
    assert flagged(ours, "flipped") == flagged(broken["rows"], "flipped")
    assert flagged(ours, "unstable") == flagged(broken["rows"], "unstable")
    assert broken["n_flipped"] > 0 and broken["n_unstable"] > 0
    rel = reliability(judgments, policy=FigurePolicy(unparsed=policy, n_bootstrap=0))
    for rec in rel.to_dict(orient="records"):
        sel = out[(out["judge"] == rec["judge"]) & (out["protocol"] == rec["protocol"])
                  & (out["temperature"] == rec["temperature"])]
        assert sel["flipped"].sum() / rec["n_order_pairs"] == pytest.approx(rec["phi"])


def test_outcomes_of_an_empty_store(tmp_path: Path) -> None:
    from verdictlab.store import RunStore

    RunStore(tmp_path / "empty").close()
    with open_store(tmp_path / "empty") as st:
        out = pair_outcomes(st.judgment_keys())
    assert out.empty and list(OUTCOMES) == [c for c in out.columns if c in OUTCOMES]
    app = create_app(tmp_path / "empty")
    page = TestClient(app, base_url="http://127.0.0.1").get("/pairs")
    assert page.status_code == 200 and "No pair matches" in page.text


# -- the list: filters and paging ---------------------------------------------------------------------

def test_outcome_filter_narrows_to_the_expected_pairs(client: TestClient) -> None:
    for outcome, ids in EXPECTED_EXCLUDE.items():
        page = client.get("/pairs", params={"outcome": outcome, "judge": JUDGE, "dataset": "ds1"})
        assert page.status_code == 200
        assert sorted(_ids(page.text)) == sorted(ids), outcome


def test_cell_and_text_filters(client: TestClient) -> None:
    every = _ids(client.get("/pairs").text)
    assert len(every) == 2 * (len(KNOWN) + 2)               # two cells x (6 + 2 pairs)
    vf = client.get("/pairs", params={"protocol": "vf-json", "temperature": "0.7"}).text
    assert len(_ids(vf)) == len(KNOWN) + 2 and JUDGE not in vf.split('id="pairs"')[1]
    assert _ids(client.get("/pairs", params={"q": "SECOND ANSWER OF P3"}).text) == ["p3", "p3"]
    assert _ids(client.get("/pairs", params={"q": "another question", "judge": JUDGE}).text) == ["p1"]
    assert _ids(client.get("/pairs", params={"q": "no such text"}).text) == []
    # the outcome counts beside the filter are those of the cell and text filters
    ix_page = client.get("/pairs", params={"judge": JUDGE, "dataset": "ds1"}).text
    assert re.search(r'value="flipped"[^>]*>flipped \(2\)', ix_page)


def test_paging_is_stable_and_clamped(known_run: Path) -> None:
    with open_store(known_run) as st:
        ix = PairIndex.from_store(st)
    pages = [ix.page(Filters(page=n), per_page=3) for n in (1, 2, 3, 4, 5, 6)]
    assert pages[0].n_matching == 16 and pages[0].n_pages == 6
    seen = [(r.judge, r.dataset, r.item_id) for p in pages for r in p.rows]
    assert len(seen) == 16 == len(set(seen))
    past = ix.page(Filters(page=99), per_page=3)
    assert past.filters.page == 6 and [r.item_id for r in past.rows] == [r.item_id for r in pages[5].rows]


@pytest.mark.parametrize(("query", "message"), [
    ({"outcome": "bogus"}, "outcome: unknown value 'bogus'"),
    ({"temperature": "hot"}, "temperature: not a number"),
    ({"temperature": "nan"}, "temperature: not a finite number"),
    ({"page": "two"}, "page: not a whole number"),
    ({"page": "0"}, "page: must be 1 or more"),
])
def test_bad_filter_values_are_a_clear_400(client: TestClient, query: dict[str, str], message: str) -> None:
    page = client.get("/pairs", params=query)
    assert page.status_code == 400
    assert message in page.text.replace("&#39;", "'")
    with pytest.raises(ViewError, match=re.escape(message)):
        Filters.from_query(query)


# -- one pair -------------------------------------------------------------------------------------------

def test_pair_page_shows_every_judgment_with_its_audit_trail(client: TestClient) -> None:
    page = client.get("/pairs/p3", params={"dataset": "ds1"})
    assert page.status_code == 200
    html = page.text
    assert html.count('<tr class="judgment"') == JUDGMENTS_PER_PAIR
    for order in ("AB", "BA"):
        for rep in range(3):
            assert html.count(f'data-order="{order}" data-rep="{rep}"') == 2      # one per cell
    assert "Question p3: which is better?" in html and "First answer of p3" in html and "Second answer of p3" in html
    assert "Verdict: A (order AB, rep 1)" in html                              # raw output
    assert "0.25 s" in html and "100 in / 5 out" in html and "$0.000100" in html  # latency, tokens, cost
    assert html.count("<td>0.1</td>") == 6                                     # P(A) of the vf-json judge (label B)
    assert html.count('class="tag o-unstable"') >= 1


def test_pair_page_scrubs_secrets_from_errors(client: TestClient) -> None:
    html = client.get("/pairs/p5", params={"dataset": "ds1"}).text
    assert "401 invalid key [redacted]" in html
    assert SECRET not in html


def test_pair_ids_shared_by_datasets_and_odd_ids(client: TestClient) -> None:
    choose = client.get("/pairs/p1")
    assert choose.status_code == 300
    assert pair_url("ds1", "p1") in choose.text.replace("&amp;", "&") and pair_url("ds2", "p1") in choose.text.replace("&amp;", "&")
    ds2 = client.get("/pairs/p1", params={"dataset": "ds2"}).text
    assert "Another question with the id p1" in ds2
    odd = client.get(pair_url("ds2", "odd/id?x#y"))
    assert odd.status_code == 200 and "An id with a slash" in odd.text
    assert client.get("/pairs/p1", params={"dataset": "nope"}).status_code == 404
    assert client.get("/pairs/missing").status_code == 404
    assert client.get("/nowhere").status_code == 404


def test_list_links_open_the_pair_at_its_cell(client: TestClient) -> None:
    html = client.get("/pairs", params={"q": "odd"}).text
    links = re.findall(r'<td class="id"><a href="([^"]+)"', html)
    assert len(links) == 2
    target = links[0].replace("&amp;", "&")
    path, anchor = target.split("#")
    page = client.get(path)
    assert page.status_code == 200 and f'id="{anchor}"' in page.text


# -- safety ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("hostile") / "run"
    evil_judge = "<img src=x onerror=\"document.body.setAttribute('data-pwned','judge')\">"
    write_synthetic_run(run, datasets=("safe", "evil<script>document.title='PWNED'</script>"),
                        protocols=("direct",), judges=("sim:steady", evil_judge), temperatures=(0.0,),
                        n_items=6, repetitions=3, hostile=True).close()
    return run


def test_hostile_text_is_escaped_everywhere(hostile_run: Path) -> None:
    client = TestClient(create_app(hostile_run), base_url="http://127.0.0.1")
    with open_store(hostile_run) as st:
        keys = st.judgment_keys()
    evil_ds = next(d for d in keys["dataset"].unique() if d.startswith("evil"))
    pages = [client.get("/pairs"), client.get("/pairs", params={"dataset": evil_ds}),
             client.get(pair_url(evil_ds, f"{evil_ds}-0")), client.get(pair_url(evil_ds, f"{evil_ds}-1")),
             client.get("/pairs/<script>alert(1)</script>")]
    for page in pages:
        html = page.text
        assert page.headers["content-security-policy"].startswith("default-src 'none'")
        assert "<script" not in html and "onerror=" not in html.replace("onerror=&#34;", "").replace("onerror=&quot;", "")
        assert not re.search(r"<img\b", html) and "<h1 id='injected'>" not in html
    assert "&lt;script&gt;document.title=&#39;PWNED&#39;" in pages[2].text
    assert "&lt;/table&gt;&lt;/div&gt;&lt;h1 id=&#39;injected&#39;&gt;" in pages[2].text + pages[3].text


def test_the_store_is_opened_read_only_and_left_unchanged(known_run: Path) -> None:
    db = known_run / "run.sqlite"
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    viewer = Viewer(known_run)
    client = TestClient(create_app(viewer), base_url="http://127.0.0.1")
    for url in ("/pairs", "/pairs?outcome=flipped", "/pairs/p2?dataset=ds1"):
        assert client.get(url).status_code == 200
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        viewer.store.conn.execute("CREATE TABLE written_by_the_viewer (x)")
    viewer.close()
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_only_loopback_host_names_are_served(known_run: Path) -> None:
    client = TestClient(create_app(known_run), base_url="http://127.0.0.1")
    assert client.get("/pairs").status_code == 200
    assert client.get("/pairs", headers={"host": "localhost:8765"}).status_code == 200
    assert client.get("/pairs", headers={"host": "rebound.example.com"}).status_code == 400
    anywhere = TestClient(create_app(known_run, allowed_hosts=None), base_url="http://viewer.lan")
    assert anywhere.get("/pairs").status_code == 200


def test_rowids_index_every_judgment_once(known_run: Path) -> None:
    with open_store(known_run) as st:
        ix = PairIndex.from_store(st)
        total = st.count()
    every = np.concatenate([ix.rowids_of(d, i) for d, i in ix.pair_keys])
    assert len(every) == total == len(np.unique(every))
    assert ix.datasets_of("p1") == ["ds1", "ds2"] and ix.rowids_of("ds9", "p1") == []


def test_a_run_whose_every_verdict_is_unparsed_lists_its_pairs_as_unparsed() -> None:
    """Under ``exclude`` no unit has a modal verdict: the pairs are still listed, only as unparsed."""
    import pandas as pd

    rows = pd.DataFrame({"judge": "j", "protocol": "direct", "dataset": "d", "temperature": 0.0, "decoding": "free",
                         "step": "", "item_id": ["i", "i", "k"], "order": ["AB", "BA", "AB"], "rep": 0,
                         "verdict": [None, None, None], "label": ["A", "A", None]})
    for policy in ("exclude", "wrong"):
        out = pair_outcomes(rows, policy=FigurePolicy(unparsed=policy)).set_index("item_id")
        assert list(out.index) == ["i", "k"] and out["unparsed"].all() and list(out["n_unparsed"]) == [2, 1]
    out = pair_outcomes(rows, policy=FigurePolicy(unparsed="exclude")).set_index("item_id")
    assert not out[["flipped", "unstable", "wrong", "disagree"]].to_numpy().any()
    # under "wrong", unparsed is a value: i's two orders agree on it (not flipped) and it is not label A
    wrong = pair_outcomes(rows, policy=FigurePolicy(unparsed="wrong")).set_index("item_id")
    assert not wrong.loc["i", "flipped"] and wrong.loc["i", "wrong"] and wrong.loc["i", "modal_AB"] == "unparsed"


def test_pointwise_items_are_not_listed_but_have_their_page(tmp_path: Path) -> None:
    """Rubric and graded verdicts (PASS, FAIL, 4, ...) are not pair verdicts: the report's pairwise figures
    leave them out, so does the list (no crash on their verdicts); their pages show every judgment."""
    from verdictlab.core.items import PairItem, PointItem
    from verdictlab.core.judgment import make_judgment
    from verdictlab.store import RunStore

    st = RunStore(tmp_path / "run")
    st.write_items([PairItem(item_id="pair", dataset="d", question="q", response_a="a", response_b="b", label="A"),
                    PointItem(item_id="point", dataset="d", question="Is it right?", response="It is.", label="PASS")])
    rows = [make_judgment(judge="j", dataset="d", item_id="point", protocol="rubric", order="AB", temperature=0.0,
                          rep=r, verdict=v, pair=False, raw_output=f"RESULT: {v}") for r, v in enumerate(["PASS", "FAIL"])]
    rows += [make_judgment(judge="j", dataset="d", item_id="pair", protocol="direct", order=o, temperature=0.0,
                           rep=0, verdict="A") for o in ("AB", "BA")]
    # an imported graded verdict without its item
    rows += [make_judgment(judge="j", dataset="d", item_id="graded", protocol="pointwise@5", order="AB",
                           temperature=0.0, rep=0, verdict="4", pair=False)]
    st.add_judgments(rows)
    st.close()
    client = TestClient(create_app(tmp_path / "run"), base_url="http://127.0.0.1")
    assert _ids(client.get("/pairs").text) == ["pair"]
    point = client.get("/pairs/point").text
    assert point.count('<tr class="judgment"') == 2 and "RESULT: FAIL" in point and "It is." in point
    assert client.get("/pairs/graded").text.count('<tr class="judgment"') == 1


def test_steps_of_a_multi_call_protocol_are_rows_of_their_own() -> None:
    """A criterion (step) of a multi-call protocol is judged like a cell of its own, as modal_verdicts
    keys it: criterion "accuracy" flips (A | B), criterion "style" does not (A | A)."""
    import pandas as pd

    base = {"judge": "j", "protocol": "flask", "dataset": "d", "temperature": 0.0, "decoding": "free",
            "item_id": "i", "label": "A", "rep": 0}
    rows = pd.DataFrame([{**base, "step": s, "order": o, "verdict": v}
                         for s, o, v in [("accuracy", "AB", "A"), ("accuracy", "BA", "B"),
                                         ("style", "AB", "A"), ("style", "BA", "A")]])
    out = pair_outcomes(rows).set_index("step")
    assert list(out.index) == ["accuracy", "style"]
    assert out.loc["accuracy", "flipped"] and out.loc["accuracy", "wrong"] and not out.loc["style", "flipped"]


def test_the_temperature_column_is_temp_not_t(client: TestClient) -> None:
    """T is the trustworthy rate everywhere else in verdictlab; the viewer's tables call the temperature
    "temp" (it was headed "T")."""
    listing = client.get("/pairs").text
    assert "<th>temp</th>" in listing and "<th>T</th>" not in listing
    link = re.search(r'<td class="id"><a href="([^"]+)"', listing)
    assert link is not None
    page = client.get(link.group(1).replace("&amp;", "&")).text
    assert "<th>temp</th>" in page and "<th>T</th>" not in page
