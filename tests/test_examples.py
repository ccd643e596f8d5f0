"""Every example config lives in examples/, is shown faithfully where a doc shows it, and loads and plans
(`verdictlab run X --plan`: offline, no key) -- or, for a debate, runs (`verdictlab debate`).  An example
that reads a public benchmark by name (fetched with `verdictlab datasets fetch NAME`) plans against the
benchmark fetched from the local mirror of the shared data, and is skipped with the reason (it needs the
network) where that data is absent."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _mirror import BenchmarkMirror
from verdictlab.cli.main import app
from verdictlab.engine.config import RunConfig, load_config

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_YAML = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)
_MARKER = re.compile(r"<!--\s*example:\s*(\S+)\s*-->")
runner = CliRunner()


def _shown_configs() -> list[tuple[str, int, str, str | None]]:
    """(doc, line, text, example named by the marker) of every whole run config a doc shows: a YAML block
    with a top-level ``name:``."""
    out = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in _YAML.finditer(text):
            if not re.search(r"^name:", m.group(1), re.M):
                continue                              # a fragment (one setting), not a config
            line = text[: m.start()].count("\n") + 1
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = _MARKER.search(before)
            out.append((str(doc.relative_to(REPO)), line, m.group(1), marker.group(1) if marker else None))
    return out


def test_there_are_examples_and_docs_show_them() -> None:
    names = {p.name for p in EXAMPLES}
    assert {"quick.yaml", "api-judge.yaml", "debate.yaml", "probes.yaml", "scale-batch.yaml", "scale-ray.yaml",
            "scale-vllm.yaml", "running.yaml"} <= names, names
    shown = {Path(ex).name for _, _, _, ex in _shown_configs() if ex}
    assert shown == names, (sorted(names - shown), sorted(shown - names))


@pytest.mark.parametrize(("doc", "line", "text", "example"), _shown_configs(), ids=lambda v: str(v)[:40])
def test_a_config_a_doc_shows_is_an_example_word_for_word(doc: str, line: int, text: str, example: str | None) -> None:
    assert example is not None, f"{doc}:{line}: mark the block with <!-- example: examples/NAME.yaml -->"
    assert (REPO / example).read_text(encoding="utf-8") == text, f"{doc}:{line} differs from {example}"


def fetched_by_name(cfg: RunConfig) -> list[str]:
    """The public benchmarks a config reads by name: a dataset entry with no path and no hub source whose
    loader has a pinned dataset of that name (read from the fetched files)."""
    from verdictlab.datasets.pins import PINNED

    return list(dict.fromkeys(spec.name for spec in cfg.datasets
                              if spec.path is None and "hub" not in spec.options and spec.name in PINNED))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_loads_and_plans(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       benchmark_mirror: BenchmarkMirror) -> None:
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "VERDICTLAB_API_KEY"):
        monkeypatch.delenv(key, raising=False)              # a plan needs no key
    monkeypatch.syspath_prepend(str(REPO / "examples"))     # python:my_judges:... as PYTHONPATH=examples does
    cfg = load_config(path)
    names = fetched_by_name(cfg)
    reason = benchmark_mirror.unfetchable(names)
    if reason is not None:
        pytest.skip(reason)
    if names:
        r = runner.invoke(app, ["datasets", "fetch", *names, "--mirror", str(benchmark_mirror.url)])
        assert r.exit_code == 0, r.output
    if "debate" in cfg.protocols:
        r = runner.invoke(app, ["debate", str(path), "--run-dir", str(tmp_path / "run")])
        assert r.exit_code == 0 and "round-1 accuracy" in r.stdout, r.output
        return
    r = runner.invoke(app, ["run", str(path), "--run-dir", str(tmp_path / "run"), "--plan"])
    assert r.exit_code == 0, r.output
    assert "remaining" in r.stdout and "estimated cost" in r.stdout and "estimated duration" in r.stdout
    assert not (tmp_path / "run").exists()                  # a plan writes nothing


def test_two_paraphrase_probes_each_named_each_in_the_tables(tmp_path: Path) -> None:
    """examples/probes.yaml as written, its paraphraser judge answered by the fake server: the second
    paraphrase probe is named with ``dataset:`` (its generated name would collide) and still finds its base,
    so it appears in the ``stability`` and ``probes`` tables (before, renaming the entry renamed the base
    and the probe's rows vanished from both)."""
    pytest.importorskip("openai")
    from verdictlab.testing import FakeConfig, FakeOpenAIServer

    text = (REPO / "examples" / "probes.yaml").read_text(encoding="utf-8")
    for name in ("pairs.jsonl", "reworded.jsonl"):
        (tmp_path / name).write_bytes((REPO / "examples" / name).read_bytes())
    with FakeOpenAIServer(FakeConfig(api_key="sk-fake-local")) as srv:
        judge = f"openai-compatible:fake-judge@{srv.base_url}"
        cfg = tmp_path / "probes.yaml"
        cfg.write_text(text.replace('"openai:gpt-4o-mini"', f'"{judge}"'), encoding="utf-8")
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("VERDICTLAB_API_KEY", "sk-fake-local")
            r = runner.invoke(app, ["run", str(cfg), "--run-dir", str(tmp_path / "run"), "--no-progress"])
    assert r.exit_code == 0, r.output
    rep = runner.invoke(app, ["report", str(tmp_path / "run"), "--format", "json", "--bootstrap", "20"])
    analyses = json.loads(rep.stdout)["run"]["analyses"]
    for table in ("stability", "probes"):
        cols = analyses[table]["columns"]
        rows = [dict(zip(cols, r, strict=True)) for r in analyses[table]["rows"]]
        ds = {(r["dataset"], r["base_dataset"]) for r in rows}
        assert {("pairs+paraphrase", "pairs"), ("pairs+judge-paraphrase", "pairs")} <= ds, (table, ds)
