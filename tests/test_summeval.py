"""SummEval as an ordinal grader's test set: the loader's known values on a sample written here in the
upstream format, the whole audit through ``verdictlab datasets fetch`` from a local mirror on 127.0.0.1
(the sample registered under the loader's name with its own hashes, the way
tests/test_grader_audit_fetched.py does it), and the real pin's entry.

The project ships none of SummEval: the sample below is made up, in the layout of the pinned upstream
(``model_output_annotations/M<k>_outputs_annotations.jsonl``, one record a line).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _mirror import MirrorServer
from test_grader_audit_fetched import _audit, _pinned, _table
from verdictlab.cli.main import app
from verdictlab.core.items import ItemError
from verdictlab.datasets import load_dataset
from verdictlab.datasets.fetched import is_fetched
from verdictlab.datasets.pins import PINNED, register_pinned

runner = CliRunner()

SUMMEVAL_REPO, SUMMEVAL_COMMIT = "DAMO-NLP-SG/LLM_summeval", "bd7dde15817a88940c17574973ff03e750356daa"
ATTRS = ("coherence", "consistency", "fluency", "relevance")


def _record(doc: int, system: str, experts: list[tuple[int, int, int, int]]) -> dict:
    return {"id": f"cnn-test-{doc:04d}", "model_id": system, "decoded": f"summary {doc} by {system} .",
            "text": f"Article {doc}. Something happened; people said things about it.",
            "filepath": f"cnndm/cnn/stories/{doc:04d}.story", "references": [f"Reference {doc}."],
            "turker_annotations": [dict(zip(ATTRS, (5, 5, 5, 5), strict=True))],
            "expert_annotations": [dict(zip(ATTRS, e, strict=True)) for e in experts]}


def write_summeval(folder: Path, n_docs: int, systems: tuple[str, ...] = ("M8", "M9")) -> Path:
    """One file per system of ``n_docs`` records; the experts' ratings vary with doc and system."""
    folder.mkdir(parents=True, exist_ok=True)
    for k, system in enumerate(systems):
        lines = []
        for d in range(n_docs):
            base = 1 + (d + k) % 5
            experts = [(base, 5, 5, max(1, base - 1)), (base, 4, 5, base), (min(5, base + 1), 5, 4, base)]
            lines.append(json.dumps(_record(d, system, experts)))
        (folder / f"{system}_outputs_annotations.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


# -- (a) the loader -------------------------------------------------------------------------------------------

def test_known_values_of_the_loader(tmp_path: Path) -> None:
    f = tmp_path / "M8_outputs_annotations.jsonl"
    f.write_text(json.dumps(_record(7, "M8", [(2, 5, 4, 3), (4, 5, 5, 3), (3, 1, 5, 2)])) + "\n"
                 + json.dumps(_record(8, "M8", [(1, 5, 5, 5), (1, 4, 5, 5), (5, 4, 5, 4)])) + "\n", encoding="utf-8")
    load = load_dataset("summeval", path=str(f))
    a, b = load.items
    assert (a.item_id, a.dataset, a.label, a.scale) == ("cnn-test-0007:M8", "summeval", 3, (1, 2, 3, 4, 5))
    assert a.question.startswith("Summarize the following news article.\n\nArticle 7.")
    assert a.response == "summary 7 by M8 ."
    # the label is the median of the experts' integer ratings, never their mean (3 here, 2.33 for the mean)
    assert a.meta["ratings"] == {"coherence": 3, "consistency": 5, "fluency": 5, "relevance": 3}
    assert (b.label, b.meta["ratings"]["consistency"], b.meta["system"], b.meta["doc_id"]) == (1, 4, "M8", "cnn-test-0008")
    assert len(a.meta["experts"]) == 3 and a.meta["experts"][2]["consistency"] == 1
    assert [i.label for i in load_dataset("summeval", path=str(f), attribute="consistency").items] == [5, 4]
    assert "median of the experts' coherence ratings" in load.notes[0]


def test_a_folder_reads_every_system_and_bad_ratings_are_named(tmp_path: Path) -> None:
    folder = write_summeval(tmp_path / "model_output_annotations", 5, ("M8", "M10", "M9"))
    load = load_dataset("summeval", path=str(folder))
    assert len(load.items) == 15 and {i.meta["system"] for i in load.items} == {"M8", "M9", "M10"}
    assert {i.label for i in load.items} == {1, 2, 3, 4, 5}
    with pytest.raises(ItemError, match="attribute must be one of"):
        load_dataset("summeval", path=str(folder), attribute="helpfulness")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_record(1, "M8", [(2, 5, 4, 3), (4, 5, 6, 3), (3, 1, 5, 2)])) + "\n", encoding="utf-8")
    with pytest.raises(ItemError, match="integer rating 1-5") as e:
        load_dataset("summeval", path=str(bad))
    assert "expert_annotations.fluency" in str(e.value)


# -- (b) fetched by name from a local mirror, then audited -------------------------------------------------------

@pytest.fixture
def mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A mirror folder ``summeval/model_output_annotations/`` holding a 2 x 20 sample, registered as
    ``summeval``; an empty cache of this test."""
    monkeypatch.setenv("VERDICTLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("VERDICTLAB_DATASETS_MIRROR", raising=False)
    root = tmp_path / "mirror"
    write_summeval(root / "summeval" / "model_output_annotations", 20)
    saved = PINNED.get("summeval")
    register_pinned(_pinned("summeval", root / "summeval", upstream=f"https://github.com/{SUMMEVAL_REPO}",
                            pin=SUMMEVAL_COMMIT, licence="MIT", source="model_output_annotations"))
    try:
        yield root
    finally:
        if saved is None:
            PINNED.pop("summeval", None)
        else:
            register_pinned(saved)


def test_fetched_summeval_is_audited_as_an_ordinal_grader(mirror: Path, tmp_path: Path) -> None:
    with MirrorServer(mirror) as srv:
        r = runner.invoke(app, ["datasets", "fetch", "summeval", "--mirror", srv.url, "--format", "json"])
        asked = {path for path, _ in srv.requests}
    assert r.exit_code == 0, r.output
    assert asked == {f"summeval/model_output_annotations/{s}_outputs_annotations.jsonl" for s in ("M8", "M9")}
    assert is_fetched(PINNED["summeval"])

    judge = "sim:skill=0.8,noise=0.1,seed=5"
    cfg = tmp_path / "ordinal.yaml"      # the dataset named without a path: read from the fetch
    cfg.write_text(f"name: ordinal\ndatasets: [{{name: summeval}}]\njudges: [{json.dumps(judge)}]\n"
                   f"protocols: [\"pointwise@1-5\"]\nrepetitions: 3\ntemperatures: [0.7]\ncache: \"off\"\n",
                   encoding="utf-8")
    doc = _audit(cfg, tmp_path / "run")
    (cell,) = _table(doc, "grader_cells")
    assert (cell["dataset"], cell["kind"], cell["n_items"], cell["judge"]) == ("summeval", "ordinal", 40, judge)
    assert cell["scale"] == "1, 2, 3, 4, 5"
    for name in ("kappa_quadratic", "spearman", "mae"):
        assert cell[f"{name}_lo"] <= cell[name] <= cell[f"{name}_hi"], name
    (decision,) = _table(doc, "grader_decision")
    assert decision["dataset"] == "summeval" and decision["rank"] == 1
    (block,) = doc["run"]["graders"]
    assert block["dataset"] == "summeval" and block["headline"].startswith("Use ")


# -- (c) the real pin ------------------------------------------------------------------------------------------

def test_the_real_pin_is_well_formed() -> None:
    ds = PINNED["summeval"]
    assert ds.pin == SUMMEVAL_COMMIT and ds.upstream == f"https://github.com/{SUMMEVAL_REPO}"
    assert len(ds.pin) == 40 and all(c in "0123456789abcdef" for c in ds.pin)
    assert ds.base_url == f"https://raw.githubusercontent.com/{SUMMEVAL_REPO}/{SUMMEVAL_COMMIT}/"
    assert ds.reads == "loader summeval" and ds.source == "model_output_annotations" and "MIT" in ds.licence
    assert len(ds.files) == 12 and ds.size > 6_000_000
    for f in ds.files:
        assert len(f.sha256) == 64 and all(c in "0123456789abcdef" for c in f.sha256), f.path
        assert f.size > 0 and f.path.startswith("model_output_annotations/M") and f.path.endswith(".jsonl"), f.path
