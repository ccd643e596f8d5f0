"""The viewer in a real browser (Debian chromium through Playwright): the filter form narrows the list to
the expected pairs, a pair page shows every judgment of the pair, and hostile text from the data stays inert."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _browser import BROWSER_TEST, EVIL_DATASET, EVIL_JUDGE, served
from _view_runs import EXPECTED_EXCLUDE, JUDGE, JUDGMENTS_PER_PAIR, write_known_run

pytestmark = BROWSER_TEST


def _items(page: Any) -> list[str]:
    return page.locator("tr.pair-row").evaluate_all("rows => rows.map(r => r.dataset.item)")


def test_filters_narrow_the_list_and_a_pair_page_shows_every_judgment(tmp_path: Path, browser: Any) -> None:
    from verdictlab.view import create_app

    app = create_app(write_known_run(tmp_path / "run"))
    with served(app) as base:
        page = browser.new_page()
        page.goto(f"{base}/pairs")
        assert len(_items(page)) == 16
        page.select_option("#f-judge", JUDGE)
        page.select_option("#f-dataset", "ds1")
        page.select_option("#f-outcome", "flipped")
        page.click("#apply")
        page.wait_for_url("**outcome=flipped**")
        assert sorted(_items(page)) == sorted(EXPECTED_EXCLUDE["flipped"])
        assert page.inner_text("#n-matching") == "2"
        # text narrows further, and the form keeps what was chosen
        page.fill("#f-q", "question p6")
        page.click("#apply")
        page.wait_for_url("**q=question+p6**")
        assert _items(page) == ["p6"]
        assert page.eval_on_selector("#f-outcome", "s => s.value") == "flipped"
        # the row's link opens the pair at its cell
        page.click("tr.pair-row td.id a")
        page.wait_for_url("**/pairs/p6?dataset=ds1#cell-*")
        assert page.inner_text("#item-id") == "p6"
        assert page.locator("tr.judgment").count() == JUDGMENTS_PER_PAIR
        anchor = page.url.split("#")[1]
        cell = page.locator(f"section#{anchor}")
        heading = cell.locator("h3").inner_text()
        assert cell.locator("tr.judgment").count() == 6 and JUDGE in heading
        assert "flipped" in heading and "unstable" in heading
        assert page.inner_text("#question") == "Question p6: which is better?"
        page.close()


def test_hostile_text_stays_inert(tmp_path: Path, browser: Any) -> None:
    from verdictlab.testing.synthetic_run import write_synthetic_run
    from verdictlab.view import create_app
    from verdictlab.view.pages import pair_url

    run = tmp_path / "hostile"
    write_synthetic_run(run, datasets=("safe", EVIL_DATASET), protocols=("direct",), judges=("sim:steady", EVIL_JUDGE),
                        temperatures=(0.0,), n_items=6, repetitions=3, hostile=True).close()
    with served(create_app(run)) as base:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        for path in ("/pairs", f"/pairs?dataset={EVIL_DATASET}", pair_url(EVIL_DATASET, f"{EVIL_DATASET}-0"),
                     pair_url(EVIL_DATASET, f"{EVIL_DATASET}-1"), pair_url(EVIL_DATASET, f"{EVIL_DATASET}-2")):
            page.goto(base + path)
            # the title holds the id's text (which names PWNED); a script that ran would have replaced it
            assert page.title() != "PWNED" and page.title().endswith("· verdictlab view")
            assert page.evaluate("document.body.getAttribute('data-pwned')") is None
            assert page.locator("#injected").count() == 0
            assert page.locator("script").count() == 0 and page.locator("main img").count() == 0
        # the payloads are on the page as text
        text = page.inner_text("body")
        assert "<script>document.title='PWNED'" in text
        assert "</table></div><h1 id='injected'>broken out</h1>" in text
        assert page.locator("tr.judgment").count() == 2 * 2 * 3      # 2 judges x 2 orders x 3 repetitions
        assert errors == []
        page.close()


def test_curation_accepts_rejects_and_edits_cases(tmp_path: Path, browser: Any) -> None:
    """A person curates model-written cases in the browser: one accepted, one rejected, one edited (and the
    edit then accepted); each decision is in the case and the run's audit trail, and the page shows it."""
    import json
    from concurrent.futures import ThreadPoolExecutor

    from verdictlab.store import open_store
    from verdictlab.view import Viewer, create_app
    from verdictlab.workflows.perturb import perturb_dataset

    src = tmp_path / "points.jsonl"
    src.write_text("".join(json.dumps({"item_id": f"s{i}", "question": f"What is {i} + {i}? <b>bold</b>",
                                       "response": f"It is {2 * i}. <script>document.title='PWNED'</script>",
                                       "label": "PASS"}) + "\n" for i in range(3)), encoding="utf-8")
    run = tmp_path / "run"
    # in a thread of its own: Playwright keeps an event loop running in this one
    with ThreadPoolExecutor(1) as pool:
        pool.submit(perturb_dataset, "judges-verdict", path=str(src), options={"dataset": "d"}, kinds=["label_flip"],
                    run_dir=run, writer="sim:skill=1,seed=1").result()
    with served(create_app(Viewer(run, curator="ana"))) as base:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{base}/curation")
        ids = page.locator("section.case").evaluate_all("rows => rows.map(r => r.dataset.item)")
        assert ids == ["s0~label_flip", "s1~label_flip", "s2~label_flip"]

        def case(item: str) -> Any:
            return page.locator(f"section.case[data-item='{item}']")

        with page.expect_navigation(url="**/curation#case-*"):
            case(ids[0]).locator("button.accept").click()
        assert case(ids[0]).locator(".status").inner_text() == "accepted"
        case(ids[1]).locator("input.curator").first.fill("bo")
        with page.expect_navigation(url="**/curation#case-*"):
            case(ids[1]).locator("button.reject").click()
        assert case(ids[1]).locator(".status").inner_text() == "rejected"
        case(ids[2]).locator("textarea.response-edit").fill("It is five.")
        with page.expect_navigation(url="**/curation#case-*"):
            case(ids[2]).locator("button.save-edit").click()
        assert case(ids[2]).locator(".status").inner_text() == "edited"
        assert case(ids[2]).locator("pre.case-response").inner_text() == "It is five."
        assert case(ids[2]).locator("pre.generated-response").inner_text().startswith("It is 5.")
        with page.expect_navigation(url="**/curation#case-*"):
            case(ids[2]).locator("button.accept").click()
        assert case(ids[2]).locator("tr.decision").count() == 2
        # the pending filter now shows none; the hostile text was text all along
        page.select_option("#f-status", "pending")
        with page.expect_navigation(url="**status=pending**"):
            page.click("#apply")
        assert page.locator("section.case").count() == 0 and page.locator("#no-cases").count() == 1
        assert page.title() != "PWNED" and page.locator("script").count() == 0 and errors == []
        page.close()
    with open_store(run) as st:
        trail = st.get_meta("curation")
        edited = st.item_record("d", ids[2])
    assert [(e["item_id"], e["action"], e["by"]) for e in trail] == [
        (ids[0], "accept", "ana"), (ids[1], "reject", "bo"), (ids[2], "edit", "ana"), (ids[2], "accept", "ana")]
    assert edited is not None and edited.response == "It is five." and edited.meta["perturbation"]["status"] == "accepted"
