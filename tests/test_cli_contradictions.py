"""Spellings that contradict each other are refused (exit 2), never one of them silently: an old spelling
with its new one that says something else (``report R --json --format markdown`` printed Markdown;
``export R -f csv --format jsonl -o e.jsonl`` wrote JSON Lines under a line saying "use --format csv").
The same thing said twice is accepted, with the deprecation line.  And ``-o -`` is stdout (``export ... -o -``
wrote a file named ``-``), or refused where the output must be a file or a directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.store.export import read_export

runner = CliRunner()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from verdictlab.testing.synthetic_run import write_synthetic_run

    tmp = tmp_path_factory.mktemp("contra")
    write_synthetic_run(tmp / "run", n_items=4, judges=("sim:steady",), protocols=("direct",),
                        datasets=("d",)).close()
    (tmp / "audit.yaml").write_text("name: contra\ndatasets: [{name: demo}]\njudges: ['sim:steady']\n"
                                    "protocols: [direct]\n", encoding="utf-8")
    return tmp


def _refused(argv: list[str], *words: str) -> None:
    r = runner.invoke(app, argv)
    assert r.exit_code == 2, (argv, r.exit_code, r.output)
    assert all(w in r.stderr for w in words), (argv, r.stderr)
    assert "deprecated" not in r.stderr, r.stderr           # refused before anything is done


@pytest.mark.parametrize("argv,words", [
    (["report", "{run}", "--json", "--format", "markdown"], ("--json says json", "--format says markdown")),
    (["report", "{run}", "--markdown", "--format", "json"], ("--markdown says markdown", "--format says json")),
    (["report", "{run}", "--html", "--format", "json"], ("--html", "--format json")),
    (["report", "{run}", "--html", "{tmp}/a.html", "-o", "{tmp}/b.html"], ("--html", "-o")),
    (["report", "{run}", "{tmp}/a.html", "--format", "markdown"], ("report RUN", "--format markdown")),
    (["export", "{run}", "-f", "csv", "--format", "jsonl", "-o", "{tmp}/e.jsonl"], ("-f csv says csv",)),
    (["compare", "{run}", "{run}", "--json", "--format", "table"], ("--json says json", "--format says table")),
    (["validate", "{run}", "--json", "--format", "table"], ("--json",)),
    (["plan-labels", "{run}", "--halfwidth", "0.1", "--json", "--format", "table"], ("--json",)),
    (["datasets", "list", "--json", "--format", "table"], ("--json",)),
    (["import", "jsonl", "{tmp}/x.jsonl", "--run-dir", "{tmp}/a", "-o", "{tmp}/b"], ("import -o", "--run-dir")),
    (["run", "{tmp}/audit.yaml", "-o", "{tmp}/a", "--run-dir", "{tmp}/b", "--plan"], ("run -o", "--run-dir")),
    (["demo", "-o", "{tmp}/a", "--run-dir", "{tmp}/b"], ("demo -o", "--run-dir")),
    (["debate", "{tmp}/audit.yaml", "{tmp}/a", "--run-dir", "{tmp}/b"], ("debate CONFIG", "--run-dir")),
    (["drift", "{run}", "{run}", "--json", "--format", "html", "-o", "{tmp}/d.html"], ("--json",)),
    (["drift", "{run}", "{run}", "--html", "{tmp}/d.html", "--format", "html"], ("--html",)),
    (["drift", "{run}", "{run}", "--n-boot", "50", "--bootstrap", "200"], ("--n-boot 50 says 50",
                                                                           "--bootstrap says 200")),
    (["selftest", "--n-boot", "300", "--bootstrap", "400"], ("--n-boot 300",)),
])
def test_an_old_spelling_that_contradicts_its_new_one_is_refused(run: Path, argv: list[str],
                                                                 words: tuple[str, ...]) -> None:
    _refused([a.format(run=run / "run", tmp=run) for a in argv], *words)


def test_the_same_thing_said_twice_is_accepted(run: Path, tmp_path: Path) -> None:
    r = runner.invoke(app, ["report", str(run / "run"), "--json", "--format", "json", "--bootstrap", "0"])
    assert r.exit_code == 0 and json.loads(r.stdout)["schema_version"] and "deprecated: --json" in r.stderr
    r = runner.invoke(app, ["export", str(run / "run"), "-f", "csv", "--format", "csv", "-o", str(tmp_path / "e.csv")])
    assert r.exit_code == 0 and len(read_export(tmp_path / "e.csv")) == 48 and "deprecated: -f csv" in r.stderr


def test_export_to_stdout(run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``export R -o -`` wrote a file named ``-``; it is stdout now, in every format."""
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["export", str(run / "run"), "--format", "jsonl", "-o", "-"])
    assert r.exit_code == 0, r.output
    assert not (tmp_path / "-").exists()
    lines = r.stdout.splitlines()
    assert len(lines) == 48 and json.loads(lines[0])["judge"] == "sim:steady"
    assert "48 judgments written to stdout" in r.stderr
    r = runner.invoke(app, ["export", str(run / "run"), "--format", "parquet", "-o", "-"])
    assert r.exit_code == 0 and r.stdout_bytes[:4] == b"PAR1"
    r = runner.invoke(app, ["export", str(run / "run"), "-o", "-", "--partition-by", "judge"])
    assert r.exit_code == 2 and "--partition-by writes a directory" in r.stderr
    assert not (tmp_path / "-").exists()


def test_other_commands_take_o_dash_as_stdout(run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["review", str(run / "run"), "-o", "-", "--format", "jsonl"])
    assert r.exit_code == 0 and "written to stdout" in r.stderr
    assert all(json.loads(line)["kind"] for line in r.stdout.splitlines())
    r = runner.invoke(app, ["report", str(run / "run"), "--format", "html", "-o", "-", "--bootstrap", "0"])
    assert r.exit_code == 0 and r.stdout.lower().startswith("<!doctype html")
    r = runner.invoke(app, ["drift", str(run / "run"), str(run / "run"), "--format", "json", "-o", "-",
                            "--bootstrap", "20"])
    assert r.exit_code == 0 and json.loads(r.stdout)["mode"] == "pair"
    r = runner.invoke(app, ["batch", "export", str(run / "audit.yaml"), "-o", "-"])
    assert r.exit_code == 2 and "a file" in r.stderr
    assert not (tmp_path / "-").exists()
