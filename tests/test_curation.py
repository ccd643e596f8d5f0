"""Curation of generated cases: the decisions kept in the case and in the run's audit trail, kept when the
run resumes from the generator's file, counted in the report; and the viewer's one write -- its token,
origin and form checks, 405 everywhere else, hostile text inert -- through Starlette's test client."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from verdictlab.core.curation import (
    CurationError,
    as_generated,
    curate,
    curation_events,
    keep_curated,
    was_edited,
)
from verdictlab.core.items import ItemError, PointItem, perturbation_of

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from verdictlab.analyses import AnalysisInput, get  # noqa: E402
from verdictlab.core.policy import FigurePolicy  # noqa: E402
from verdictlab.engine import run_config  # noqa: E402
from verdictlab.engine.config import RunConfig  # noqa: E402
from verdictlab.store import open_store  # noqa: E402
from verdictlab.view import Viewer, create_app  # noqa: E402
from verdictlab.view.curation import CurationRefused, record_decision  # noqa: E402
from verdictlab.workflows.perturb import perturb_dataset  # noqa: E402

HOSTILE = "<script>document.title='PWNED'</script><img src=x onerror=alert(1)>"
WRITER = "sim:skill=1,seed=4"


def _case(status: str = "generated", origin: str = "model") -> PointItem:
    return PointItem(item_id="s1~paraphrase", dataset="d", question="Q?", response="Reworded.", label="PASS",
                     meta={"perturbation": {"source_id": "s1", "kind": "paraphrase", "class": "preserving",
                                            "origin": origin, "status": status, "template": "t#x@1"}})


def test_decisions_and_their_history():
    case = _case()
    edited = curate(case, "edit", by="  ana   b ", at=100.0, response="Edited text.")
    p = perturbation_of(edited)
    assert p is not None and p.status == "edited" and not p.counts()          # an edit needs an acceptance
    assert edited.response == "Edited text." and edited.meta["perturbation"]["generated_response"] == "Reworded."
    accepted = curate(edited, "accept", by="bo", at=200.0)
    assert perturbation_of(accepted).counts() and was_edited(accepted)  # type: ignore[union-attr]
    assert [(e.action, e.by, e.at, e.status) for e in curation_events(accepted)] == [
        ("edit", "ana b", 100.0, "edited"), ("accept", "bo", 200.0, "accepted")]
    rejected = curate(accepted, "reject", by="cy", at=300.0)                 # a decision can be revised
    assert perturbation_of(rejected).status == "rejected" and len(curation_events(rejected)) == 3  # type: ignore[union-attr]
    assert as_generated(rejected) == case and keep_curated(case, rejected) is rejected
    assert keep_curated(case.model_copy(update={"response": "Other."}), rejected) is None
    assert keep_curated(case, case) is case and the_template_is_kept(accepted)


def the_template_is_kept(item: PointItem) -> bool:
    return item.meta["perturbation"]["template"] == "t#x@1"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"action": "keep", "by": "a"}, "action must be one of accept, reject, edit"),
    ({"action": "accept", "by": "  "}, "say who decided"),
    ({"action": "accept", "by": "x" * 101}, "longer than 100"),
    ({"action": "edit", "by": "a"}, "needs the new text"),
    ({"action": "edit", "by": "a", "response": "Reworded."}, "same as the current one"),
    ({"action": "accept", "by": "a", "response": "x"}, "only an edit carries"),
])
def test_bad_decisions_are_refused(kwargs, message):
    with pytest.raises(CurationError, match=message):
        curate(_case(), at=1.0, **kwargs)


def test_rule_written_and_unperturbed_items_are_not_curated():
    with pytest.raises(CurationError, match="a deterministic case counts as written"):
        curate(_case(origin="deterministic"), "accept", by="a", at=1.0)
    with pytest.raises(CurationError, match="not a perturbed case"):
        curate(PointItem(item_id="s", dataset="d", question="q", response="r"), "accept", by="a", at=1.0)


# -- a run: a suite, curated, graded, resumed ---------------------------------------------------------------

@pytest.fixture(scope="module")
def suite_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("curation")
    src = root / "points.jsonl"
    with src.open("w", encoding="utf-8") as fh:
        for i in range(6):
            response = f"Step {i} comes first. Then the check of {i}." + (f" {HOSTILE}" if i == 0 else "")
            fh.write(json.dumps({"item_id": f"s{i}", "question": f"How is {i} done? {HOSTILE}", "response": response,
                                 "label": "PASS" if i % 2 else "FAIL"}) + "\n")
    perturb_dataset("judges-verdict", path=str(src), options={"dataset": "d"}, kinds=["format.casing", "label_flip"],
                    run_dir=root / "run", writer=WRITER, seed=2)
    return root


def _copy(suite_run: Path, tmp_path: Path) -> Path:
    shutil.copytree(suite_run / "run", tmp_path / "run")
    return tmp_path / "run"


def _grade(run: Path) -> None:
    cfg = RunConfig.model_validate({"name": "g", "datasets": [{"name": "perturbations", "path": str(run / "suite-d.jsonl")}],
                                    "judges": ["sim:skill=0.9,seed=1"], "protocols": ["rubric"], "repetitions": 2,
                                    "temperatures": [0.7], "cache": "off"})
    run_config(cfg, run, progress=False)


def test_decisions_survive_a_resumed_run_and_are_counted(suite_run: Path, tmp_path: Path):
    run = _copy(suite_run, tmp_path)
    record_decision(run, "d", "s1~label_flip", "accept", by="ana", at=10.0)
    record_decision(run, "d", "s3~label_flip", "reject", by="ana", at=11.0)
    record_decision(run, "d", "s5~label_flip", "edit", by="bo", at=12.0, response="Step 5 is skipped entirely.")
    _grade(run)            # the file gives the cases as written; the run keeps the person's decisions
    with open_store(run) as st:
        items = {it.item_id: it for it in st.items()}
        trail = st.get_meta("curation")
        judged = set(st.judgments()["item_id"])
        inp = AnalysisInput(st.judgments(), items=st.items(), policy=FigurePolicy(n_bootstrap=20))
    assert perturbation_of(items["s1~label_flip"]).status == "accepted"  # type: ignore[union-attr]
    assert items["s5~label_flip"].response == "Step 5 is skipped entirely." and "s5~label_flip" in judged
    assert [(e["item_id"], e["action"], e["by"], e["at"], e["status_before"]) for e in trail] == [
        ("s1~label_flip", "accept", "ana", 10.0, "generated"), ("s3~label_flip", "reject", "ana", 11.0, "generated"),
        ("s5~label_flip", "edit", "bo", 12.0, "generated")]
    table = get("perturbation_curation")(inp).set_index("kind")
    assert table.loc["label_flip", ["n_cases", "n_accepted", "n_rejected", "n_edited", "n_pending", "n_counted"]].tolist() \
        == [6, 1, 1, 1, 4, 1]
    assert table.loc["format.casing", ["n_cases", "n_counted", "n_pending"]].tolist() == [6, 6, 0]
    cells = get("grader_cells")(inp)
    assert cells.iloc[0]["n_cases_uncounted"] == 5                   # 5 model-written cases not accepted
    # an edit of a judged case is refused; writing the suite again keeps every decision
    with pytest.raises(CurationRefused, match="already judged") as err:
        record_decision(run, "d", "s1~label_flip", "edit", by="ana", response="New.")
    assert err.value.status == 409


def test_writing_the_suite_again_keeps_decisions_and_refuses_new_text(suite_run: Path, tmp_path: Path):
    run = _copy(suite_run, tmp_path)
    src = suite_run / "points.jsonl"
    record_decision(run, "d", "s1~label_flip", "accept", by="ana", at=10.0)
    again = perturb_dataset("judges-verdict", path=str(src), options={"dataset": "d"},
                            kinds=["format.casing", "label_flip"], run_dir=run, writer=WRITER, seed=2)
    assert again.n_kept_curated == 1 and again.spend["calls"] == 0        # the stored replies answered
    lines = [json.loads(x) for x in (run / "suite-d.jsonl").read_text(encoding="utf-8").splitlines()]
    assert next(x for x in lines if x["item_id"] == "s1~label_flip")["meta"]["perturbation"]["status"] == "accepted"
    # the source changed since: the curated case would get another text -- refused, nothing written
    changed = tmp_path / "changed.jsonl"
    changed.write_text(src.read_text(encoding="utf-8").replace("Step 1 comes first", "Step 1 comes last"),
                       encoding="utf-8")
    before = (run / "suite-d.jsonl").read_bytes()
    with pytest.raises(ItemError, match=r"1 item\(s\) of .* were judged or curated and would now get another text "
                                        r"\(first: d/s1~label_flip\)"):
        perturb_dataset("judges-verdict", path=str(changed), options={"dataset": "d"}, kinds=["label_flip"],
                        run_dir=run, writer=WRITER, seed=2)
    assert (run / "suite-d.jsonl").read_bytes() == before


# -- the viewer's curation page and its one write -------------------------------------------------------------

def _client(run: Path) -> tuple[TestClient, Viewer]:
    viewer = Viewer(run, curator="ana")
    return TestClient(create_app(viewer), base_url="http://127.0.0.1"), viewer


def _form(viewer: Viewer, **fields: str) -> dict[str, str]:
    return {"token": viewer.token, "dataset": "d", "item_id": "s1~label_flip", "action": "accept",
            "curator": "ana", **fields}


ORIGIN = {"origin": "http://127.0.0.1"}


def test_the_page_lists_cases_and_hostile_text_stays_text(suite_run: Path, tmp_path: Path):
    import hashlib

    run = _copy(suite_run, tmp_path)
    before = hashlib.sha256((run / "run.sqlite").read_bytes()).hexdigest()
    client, viewer = _client(run)
    page = client.get("/curation")
    assert page.status_code == 200 and page.headers["content-security-policy"].startswith("default-src 'none'")
    # the page's address goes to the viewer only; a browser then sends the form's Origin (never "null")
    assert page.headers["referrer-policy"] == "same-origin"
    ids = re.findall(r'<section class="case" id="case-[0-9a-f]{16}" data-item="([^"]*)"', page.text)
    assert sorted(ids) == [f"s{i}~label_flip" for i in range(6)]             # model-written cases only
    assert "<script" not in page.text and not re.search(r"<img\b", page.text)
    assert "&lt;script&gt;document.title=&#39;PWNED&#39;&lt;/script&gt;" in page.text
    assert page.text.count(f'name="token" value="{viewer.token}"') == 12     # two forms per case
    pending = client.get("/curation", params={"status": "accepted"})
    assert 'id="no-cases"' in pending.text
    assert client.get("/curation", params={"status": "nope"}).status_code == 400
    assert client.get("/curation", params={"page": "0"}).status_code == 400
    viewer.close()
    assert hashlib.sha256((run / "run.sqlite").read_bytes()).hexdigest() == before     # reading writes nothing


def test_a_decision_is_recorded_and_the_page_shows_it(suite_run: Path, tmp_path: Path):
    run = _copy(suite_run, tmp_path)
    client, viewer = _client(run)
    r = client.post("/curation", data=_form(viewer, f_status="pending", f_page="1"), headers=ORIGIN,
                    follow_redirects=False)
    assert r.status_code == 303 and re.fullmatch(r"/curation\?status=pending#case-[0-9a-f]{16}", r.headers["location"])
    r = client.post("/curation", data=_form(viewer, item_id="s3~label_flip", action="edit", response=HOSTILE),
                    headers={**ORIGIN, "sec-fetch-site": "same-origin"}, follow_redirects=False)
    assert r.status_code == 303
    with open_store(run) as st:
        trail = st.get_meta("curation")
        edited = st.item_record("d", "s3~label_flip")
    assert [(e["item_id"], e["action"], e["by"]) for e in trail] == [("s1~label_flip", "accept", "ana"),
                                                                     ("s3~label_flip", "edit", "ana")]
    assert edited is not None and edited.response == HOSTILE
    page = client.get("/curation", params={"status": "edited"}).text
    assert "<script>" not in page and "&lt;script&gt;" in page and 'data-status="edited"' in page
    accepted = client.get("/curation", params={"status": "accepted"}).text
    assert '<tr class="decision"><td>accept</td><td>ana</td>' in accepted


@pytest.mark.parametrize(("change", "status", "message"), [
    ({"token": None}, 403, "token is not this viewer"),
    ({"token": "guessed"}, 403, "token is not this viewer"),
    ({"headers": {"origin": "http://evil.example"}}, 403, "from another site"),
    ({"headers": {"origin": None, "referer": "http://evil.example/page"}}, 403, "from another site"),
    ({"headers": {"origin": "null"}}, 403, "from another site"),       # a sandboxed frame's form
    ({"headers": {"origin": "http://127.0.0.1", "sec-fetch-site": "cross-site"}}, 403, "from another site"),
    ({"json": True}, 415, "url-encoded form"),
    ({"extra": "x"}, 400, "unknown form field"),
    ({"action": "delete"}, 400, "action must be one of"),
    ({"item_id": "nope"}, 404, "no case &#39;nope&#39;"),
    ({"item_id": "s1~format.casing"}, 400, "deterministic case counts as written"),
])
def test_a_refused_write_changes_nothing(suite_run: Path, tmp_path: Path, change, status, message):
    run = _copy(suite_run, tmp_path)
    client, viewer = _client(run)
    form = _form(viewer)
    headers = {k: v for k, v in {**ORIGIN, **change.pop("headers", {})}.items() if v is not None}
    for k, v in change.items():
        if k == "json":
            continue
        if v is None:
            form.pop(k)
        else:
            form[k] = v
    if "json" in change:
        r = client.post("/curation", json=form, headers=headers)
    else:
        r = client.post("/curation", data=form, headers=headers, follow_redirects=False)
    assert r.status_code == status and message in r.text
    with open_store(run) as st:
        assert st.get_meta("curation") is None


def test_form_size_length_and_repeats_are_checked(suite_run: Path, tmp_path: Path):
    from verdictlab.view.curation import MAX_FORM_BYTES

    run = _copy(suite_run, tmp_path)
    client, viewer = _client(run)
    form = "&".join(f"{k}={v}" for k, v in _form(viewer).items())
    ctype = {"content-type": "application/x-www-form-urlencoded", **ORIGIN}
    assert client.post("/curation", content=form + "&action=reject", headers=ctype).status_code == 400
    big = form + "&response=" + "x" * MAX_FORM_BYTES
    assert client.post("/curation", content=big, headers=ctype).status_code == 413

    def chunks():
        yield form.encode()

    assert client.post("/curation", content=chunks(), headers=ctype).status_code == 411   # no Content-Length
    assert client.post("/curation", data=_form(viewer), headers={"host": "rebound.example.com"}).status_code == 400


def test_every_other_write_is_405(suite_run: Path, tmp_path: Path):
    client, _ = _client(_copy(suite_run, tmp_path))
    for path in ("/", "/pairs", "/pairs/s1", "/view.css", "/curation"):
        for method in ("put", "delete", "patch"):
            assert getattr(client, method)(path).status_code == 405, (method, path)
    for path in ("/", "/pairs", "/pairs/s1", "/view.css"):
        assert client.post(path).status_code == 405, path


def test_an_edit_waits_for_a_run_writing_the_directory(suite_run: Path, tmp_path: Path):
    from verdictlab.engine import RunLock

    run = _copy(suite_run, tmp_path)
    with RunLock(run), pytest.raises(CurationRefused, match="a verdictlab run is writing") as err:
        record_decision(run, "d", "s1~label_flip", "edit", by="ana", response="Other text.")
    assert err.value.status == 409
    with RunLock(run):      # accepting needs no text to stay put
        assert perturbation_of(record_decision(run, "d", "s1~label_flip", "accept", by="ana")).status == "accepted"  # type: ignore[union-attr]
    assert record_decision(run, "d", "s1~label_flip", "edit", by="ana", response="Other text.").response == "Other text."


def test_the_report_carries_the_counts_the_decision_and_the_front(suite_run: Path, tmp_path: Path):
    """What a decision panel's grader block and a Pareto plot will draw reaches the report through the
    registered analyses: the curation counts, the grader decision and the cost curves' front flags."""
    from verdictlab.report.build import build_report, report_json

    run = _copy(suite_run, tmp_path)
    record_decision(run, "d", "s1~label_flip", "accept", by="ana", at=10.0)
    record_decision(run, "d", "s3~label_flip", "reject", by="ana", at=11.0)
    record_decision(run, "d", "s5~label_flip", "edit", by="bo", at=12.0, response="Step 5 is skipped entirely.")
    _grade(run)
    tables = report_json(build_report(run, policy=FigurePolicy(n_bootstrap=20)))["run"]["analyses"]

    def rows(name: str) -> list[dict[str, object]]:
        return [dict(zip(tables[name]["columns"], r, strict=True)) for r in tables[name]["rows"]]

    flips = next(r for r in rows("perturbation_curation") if r["kind"] == "label_flip")
    assert (flips["n_cases"], flips["n_rejected"], flips["n_edited"], flips["n_counted"]) == (6, 1, 1, 1)
    # one group per rubric criterion (correct, on_task), each with its one grader ranked first
    decision = rows("grader_decision")
    assert sorted(r["step"] for r in decision) == ["correct", "on_task"]
    assert all(r["rank"] == 1 and r["best"] is True and r["ranked_by"] == "T_g" for r in decision)
    curves = rows("cost_curves")
    # a criterion is a question of its own: each is alone on its front (the weaker 'correct' is not beaten
    # by 'on_task'); the figure is T_g (the suite has casing cases); 2 repetitions = 2 calls per item
    assert sorted(r["step"] for r in curves) == ["correct", "on_task"]
    for r in curves:
        assert (r["kind"], r["figure"], r["calls_per_item"], r["usd_per_item"]) == ("grader", "T_g", 2, 0)
        assert r["on_front_calls"] is True and r["on_front_usd"] is True
