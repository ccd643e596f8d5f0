"""HaluEval's general set: a binary grader's public test set with human hallucination labels, pinned in
``verdictlab.datasets.pins`` (RUCAIBox/HaluEval at ``b7253db``, ``data/general_data.json``) and read by the
``halueval`` loader.

The project does not ship the release, and the tests' shared data folder has no copy of it, so a sample is
written here in the release's own format (JSON Lines in a ``.json`` file, ``\\r\\n`` line ends, IDs that are
the line numbers except an empty one and a repeated ``"ID"``) and, for the end-to-end test, registered
under the loader's name with its own hashes and served by a mirror on 127.0.0.1 -- the way
tests/test_grader_audit_fetched.py does for RAGTruth: the fetch, its verification, the name standing for the
fetched file and the audit run as they would on the real file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _mirror import BenchmarkMirror, MirrorServer
from verdictlab.cli.main import app
from verdictlab.core.items import ItemError
from verdictlab.datasets import dataset_names, load_dataset
from verdictlab.datasets.fetched import cache_dir, is_fetched
from verdictlab.datasets.pins import PINNED, PinnedDataset, PinnedFile, register_pinned

runner = CliRunner()

HALUEVAL_REPO, HALUEVAL_COMMIT = "RUCAIBox/HaluEval", "b7253db3cdaa0ab2c382f92b26b390109174f77e"

#: a no-hallucination criterion: the queries of HaluEval's general set come without material
CRITERIA = """use_reference: false
criteria:
  - name: no_hallucination
    pass_if: every factual claim of the response is true and nothing in it is made up
    fail_if: the response states something false, unverifiable or fabricated as if it were fact
"""


def write_halueval(path: Path, n: int) -> Path:
    """``n`` records in the upstream format; every third says "yes" (a made-up year, its span kept)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(1, n + 1):
        wrong = i % 3 == 0
        year = 1950 + i if wrong else 1900 + i
        rid = "" if i == 4 else "ID" if i in (5, 7) else str(i)     # the real file's three odd IDs
        lines.append(json.dumps({"ID": rid, "user_query": f"When did event {i} happen?",
                                 "chatgpt_response": f"Event {i} happened in {year}.",
                                 "hallucination": "yes" if wrong else "no",
                                 "hallucination_spans": [f"in {year}"] if wrong else []}))
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode("utf-8"))
    return path


# -- the loader ------------------------------------------------------------------------------------------

def test_the_loader_reads_the_upstream_format(tmp_path: Path) -> None:
    f = write_halueval(tmp_path / "data" / "general_data.json", 9)
    load = load_dataset("halueval", path=str(f))
    assert load.name == "halueval" and len(load.items) == 9
    assert [(i.item_id, i.label) for i in load.items] == [
        ("1", "PASS"), ("2", "PASS"), ("3", "FAIL"), ("row4", "PASS"), ("row5", "PASS"), ("6", "FAIL"),
        ("row7", "PASS"), ("8", "PASS"), ("9", "FAIL")]
    third = load.items[2]
    assert third.question == "When did event 3 happen?" and third.response == "Event 3 happened in 1953."
    assert third.meta == {"source": "halueval", "row": 3, "id": "3", "hallucination_spans": ["in 1953"]}
    assert any("3 records have an empty or shared ID" in n for n in load.notes)
    # the folder of the file, or the folder above data/, reads the same
    for folder in (tmp_path / "data", tmp_path):
        assert [i.item_id for i in load_dataset("halueval", path=str(folder)).items] == [i.item_id for i in load.items]
    assert len(load_dataset("halueval", path=str(f), limit=2).items) == 2
    assert "halueval" in dataset_names()


def test_the_loader_names_row_and_field_of_a_bad_record(tmp_path: Path) -> None:
    f = tmp_path / "general_data.json"
    good = {"ID": "1", "user_query": "q", "chatgpt_response": "r", "hallucination": "no", "hallucination_spans": []}
    f.write_text(json.dumps(good) + "\n" + json.dumps({**good, "ID": "2", "hallucination": "maybe"}) + "\n",
                 encoding="utf-8")
    with pytest.raises(ItemError, match=r"general_data.json, row 2, field 'hallucination'"):
        load_dataset("halueval", path=str(f))
    f.write_text(json.dumps({**good, "chatgpt_response": None}) + "\n", encoding="utf-8")
    with pytest.raises(ItemError, match=r"row 1, field 'chatgpt_response'"):
        load_dataset("halueval", path=str(f))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ItemError, match="general_data.json"):
        load_dataset("halueval", path=str(tmp_path / "empty"))
    with pytest.raises(ItemError, match="unknown option"):
        load_dataset("halueval", path=str(f), split="test")


# -- the real pin ----------------------------------------------------------------------------------------

def test_the_real_pin_is_well_formed() -> None:
    ds = PINNED["halueval"]
    assert ds.pin == HALUEVAL_COMMIT and ds.licence == "MIT" and ds.reads == "loader halueval"
    assert ds.upstream == f"https://github.com/{HALUEVAL_REPO}" and ds.source == "data/general_data.json"
    assert {f.path for f in ds.files} == {"data/general_data.json", "LICENSE"}
    for f in ds.files:
        assert len(f.sha256) == 64 and all(c in "0123456789abcdef" for c in f.sha256) and f.size > 0, f
    data = next(f for f in ds.files if f.path == "data/general_data.json")
    assert (data.sha256, data.size) == ("73302cd97666b808fb94b5d8a4a2c924049c9484e609017a2f808c4a6d539219", 3307122)
    assert ds.url(data) == f"https://raw.githubusercontent.com/{HALUEVAL_REPO}/{HALUEVAL_COMMIT}/data/general_data.json"


def test_the_real_file_when_the_shared_data_has_it(benchmark_mirror: BenchmarkMirror, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Fetched from a mirror of the shared data (skipped while it holds no copy of the pinned file): the
    pinned SHA-256 is the upstream one, and the loader reads all 4,507 records, 815 of them FAIL."""
    reason = benchmark_mirror.unfetchable(["halueval"])
    if reason is not None:
        pytest.skip(reason)
    monkeypatch.setenv("VERDICTLAB_CACHE_DIR", str(tmp_path / "cache"))
    r = runner.invoke(app, ["datasets", "fetch", "halueval", "--mirror", str(benchmark_mirror.url)])
    assert r.exit_code == 0, r.output
    load = load_dataset("halueval")
    assert len(load.items) == 4507 and sum(i.label == "FAIL" for i in load.items) == 815
    assert [i.item_id for i in load.items if i.item_id.startswith("row")] == ["row1975", "row2059", "row2159"]


# -- fetched by name and audited -------------------------------------------------------------------------

@pytest.fixture
def mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A mirror folder ``halueval/data/general_data.json`` (a 30-record sample) and ``halueval/LICENSE``,
    registered under the loader's name with their own hashes; an empty cache of this test."""
    monkeypatch.setenv("VERDICTLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("VERDICTLAB_DATASETS_MIRROR", raising=False)
    root = tmp_path / "mirror"
    write_halueval(root / "halueval" / "data" / "general_data.json", 30)
    (root / "halueval" / "LICENSE").write_text("MIT License\n", encoding="utf-8")
    files = tuple(PinnedFile(path=p.relative_to(root / "halueval").as_posix(),
                             sha256=hashlib.sha256(p.read_bytes()).hexdigest(), size=p.stat().st_size)
                  for p in sorted((root / "halueval").rglob("*")) if p.is_file())
    saved = PINNED["halueval"]
    register_pinned(PinnedDataset(name="halueval", what="a halueval-shaped sample written by the test",
                                  reads="loader halueval", upstream=f"https://github.com/{HALUEVAL_REPO}",
                                  base_url="http://127.0.0.1:9/nowhere/", pin=HALUEVAL_COMMIT, licence="MIT",
                                  files=files, source="data/general_data.json"))
    try:
        yield root
    finally:
        register_pinned(saved)


def _table(doc: dict, name: str) -> list[dict]:
    table = doc["run"]["analyses"][name]
    return [dict(zip(table["columns"], row, strict=True)) for row in table["rows"]]


def test_fetched_by_name_and_audited_with_the_simulated_grader(mirror: Path, tmp_path: Path) -> None:
    r = runner.invoke(app, ["datasets", "show", "halueval", "--n", "1"])     # not fetched yet: says how
    assert r.exit_code == 3 and "datasets fetch halueval" in r.stderr, r.output
    with MirrorServer(mirror) as srv:
        r = runner.invoke(app, ["datasets", "fetch", "halueval", "--mirror", srv.url, "--format", "json"])
        asked = {path for path, _ in srv.requests}
    assert r.exit_code == 0, r.output
    assert asked == {"halueval/data/general_data.json", "halueval/LICENSE"}
    assert [d["downloaded"] for d in json.loads(r.stdout)["datasets"]] == [2]
    assert is_fetched(PINNED["halueval"])
    assert (cache_dir(PINNED["halueval"]) / "data" / "general_data.json").is_file()

    cfg_dir = tmp_path / "cfg"
    cfg_dir.mkdir()
    (cfg_dir / "no_hallucination.yaml").write_text(CRITERIA, encoding="utf-8")
    judge = "sim:skill=0.8,noise=0.1,seed=5"
    cfg = cfg_dir / "halueval.yaml"
    cfg.write_text(f"name: halueval\ndatasets: [{{name: halueval}}]\njudges: [{json.dumps(judge)}]\n"
                   f"protocols: [{json.dumps('rubric@' + str(cfg_dir / 'no_hallucination.yaml'))}]\n"
                   f"repetitions: 3\ntemperatures: [0.7]\ncache: \"off\"\n", encoding="utf-8")
    run_dir = tmp_path / "runs" / "halueval"
    r = runner.invoke(app, ["run", str(cfg), "--run-dir", str(run_dir)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["report", str(run_dir), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)

    (cell,) = _table(doc, "grader_cells")
    assert (cell["dataset"], cell["step"], cell["kind"], cell["n_items"]) == ("halueval", "no_hallucination", "binary", 30)
    assert cell["judge"] == judge and cell["accuracy_lo"] <= cell["accuracy"] <= cell["accuracy_hi"]
    (decision,) = _table(doc, "grader_decision")
    assert decision["dataset"] == "halueval" and decision["rank"] == 1
    (block,) = doc["run"]["graders"]
    assert block["dataset"] == "halueval" and block["headline"].startswith("Use ")
