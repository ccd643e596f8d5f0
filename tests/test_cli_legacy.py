"""The old spellings of the command line keep working for one release, each with exactly one deprecation
line on stderr that names the new spelling (docs/cli.md, "Old spellings").  One test per spelling: the
old form does what it did, and says how to write it now."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app

runner = CliRunner()
J1, J2 = "sim:skill=0.8,position_lock=0.2,noise=0.1,seed=1", "sim:skill=0.6,seed=2"


def _notice(stderr: str, new: str) -> None:
    lines = [ln for ln in stderr.splitlines() if ln.startswith("deprecated: ")]
    assert len(lines) == 1 and new in lines[0] and "next release" in lines[0], stderr


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("legacy")
    (tmp / "pairs.jsonl").write_text("".join(
        json.dumps({"item_id": f"i{i}", "question": f"q{i}", "response_a": "yes", "response_b": "no",
                    "label": "AB"[i % 2]}) + "\n" for i in range(6)), encoding="utf-8")
    (tmp / "audit.yaml").write_text(f"name: legacy\ndatasets: [{{name: jsonl, path: pairs.jsonl}}]\n"
                                    f"judges: ['{J1}', '{J2}']\nprotocols: [direct]\nrepetitions: 2\n",
                                    encoding="utf-8")
    r = runner.invoke(app, ["run", str(tmp / "audit.yaml"), "-o", str(tmp / "run"), "--no-progress"])
    assert r.exit_code == 0, r.output
    _notice(r.stderr, f"run --run-dir {tmp / 'run'}")          # run -o DIR
    assert (tmp / "run" / "run.sqlite").exists()
    return tmp


def test_report_json_and_markdown(work: Path) -> None:
    r = runner.invoke(app, ["report", str(work / "run"), "--json", "--bootstrap", "0"])
    assert r.exit_code == 0 and json.loads(r.stdout)["schema_version"]
    _notice(r.stderr, "--format json")
    r = runner.invoke(app, ["report", str(work / "run"), "--markdown", "--bootstrap", "0"])
    assert r.exit_code == 0 and r.stdout.startswith("## verdictlab report")
    _notice(r.stderr, "--format markdown")
    r = runner.invoke(app, ["report", str(work / "run"), "--json", "--markdown"])
    assert r.exit_code == 2 and "choose one of --json and --markdown" in r.stderr


def test_report_html_flag_and_path_and_positional(work: Path, tmp_path: Path) -> None:
    rd = work / "run"
    r = runner.invoke(app, ["report", str(rd), "--html", "--bootstrap", "0"])     # the table and RUN/report.html
    assert r.exit_code == 0 and "verdictlab report" in r.stdout and (rd / "report.html").exists()
    _notice(r.stderr, "--format html [-o PATH]")
    r = runner.invoke(app, ["report", str(rd), "--html", str(tmp_path / "a.html"), "--bootstrap", "0"])
    assert r.exit_code == 0 and (tmp_path / "a.html").read_text().lower().startswith("<!doctype html")
    _notice(r.stderr, f"--format html -o {tmp_path / 'a.html'}")
    r = runner.invoke(app, ["report", str(rd), str(tmp_path / "b.html"), "--json", "--bootstrap", "0"])
    assert r.exit_code == 0 and (tmp_path / "b.html").exists() and json.loads(r.stdout)
    assert sum(ln.startswith("deprecated: ") for ln in r.stderr.splitlines()) == 2     # OUT.html and --json
    assert f"report RUN --format html -o {tmp_path / 'b.html'}" in r.stderr
    r = runner.invoke(app, ["report", str(rd), str(tmp_path / "x.txt")])
    assert r.exit_code == 2 and "did you mean -o" in r.stderr


def test_export_f(work: Path, tmp_path: Path) -> None:
    r = runner.invoke(app, ["export", str(work / "run"), "-f", "csv", "-o", str(tmp_path / "j.csv")])
    assert r.exit_code == 0 and (tmp_path / "j.csv").read_text().startswith("trial_id,") is not None
    _notice(r.stderr, "--format csv")


def test_review_out_json_and_bare_unparsed(work: Path, tmp_path: Path) -> None:
    r = runner.invoke(app, ["review", str(work / "run"), "-o", str(tmp_path / "r.json")])
    assert r.exit_code == 0 and (tmp_path / "r.json").exists(), r.output
    _notice(r.stderr, "a .jsonl name or --format jsonl")
    r = runner.invoke(app, ["review", str(work / "run"), "--unparsed", "-o", str(tmp_path / "u.csv")])
    assert r.exit_code == 0, r.output
    _notice(r.stderr, "review --unparsed wrong")
    r = runner.invoke(app, ["review", str(work / "run"), "-o", str(tmp_path / "v.csv"), "--unparsed"])
    assert r.exit_code == 0, r.output                    # the bare flag at the end too
    _notice(r.stderr, "review --unparsed wrong")


def test_compare_validate_plan_labels_json(work: Path) -> None:
    for argv in (["compare", str(work / "run"), "--json"], ["validate", str(work / "run"), "--json"],
                 ["plan-labels", str(work / "run"), "--halfwidth", "0.2", "--json"]):
        r = runner.invoke(app, argv)
        assert r.exit_code == 0, (argv, r.output)
        json.loads(r.stdout)
        _notice(r.stderr, "--format json")


def test_drift_json_html_and_n_boot(work: Path, tmp_path: Path) -> None:
    base = ["drift", str(work / "run"), "--judge-a", J1, "--judge-b", J2]
    r = runner.invoke(app, [*base, "--json", "--bootstrap", "20"])
    assert r.exit_code == 0 and json.loads(r.stdout)["mode"] == "pair"
    _notice(r.stderr, "--format json")
    r = runner.invoke(app, [*base, "--n-boot", "20", "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["mode"] == "pair"
    _notice(r.stderr, "--bootstrap 20")
    r = runner.invoke(app, [*base, "--html", str(tmp_path / "d.html"), "--bootstrap", "20"])
    assert r.exit_code == 0 and "Drift:" in r.stdout and "<svg" in (tmp_path / "d.html").read_text()
    _notice(r.stderr, f"--format html -o {tmp_path / 'd.html'}")


def test_debate_positional_run_dir(work: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "debate.yaml"
    cfg.write_text(f"name: deb\ndatasets: [{{name: jsonl, path: {work / 'pairs.jsonl'}}}]\n"
                   f"judges: ['{J1}', '{J2}']\nprotocols: [debate]\nrepetitions: 1\n")
    r = runner.invoke(app, ["debate", str(cfg), str(tmp_path / "run")])
    assert r.exit_code == 0 and (tmp_path / "run" / "run.sqlite").exists(), r.output
    assert "round-1 accuracy" in r.stdout
    _notice(r.stderr, f"debate CONFIG --run-dir {tmp_path / 'run'}")


def test_demo_o_and_comma_decodings(tmp_path: Path) -> None:
    r = runner.invoke(app, ["demo", "-o", str(tmp_path / "d"), "--judge", J1, "--pairs", "2", "--repetitions", "1",
                            "--protocols", "direct", "--decoding", "free,constrained", "--no-progress",
                            "--bootstrap", "0"])
    assert r.exit_code == 0 and (tmp_path / "d" / "run.sqlite").exists(), r.output
    notices = [ln for ln in r.stderr.splitlines() if ln.startswith("deprecated: ")]
    assert len(notices) == 2, r.stderr
    assert any("--decoding free --decoding constrained" in n for n in notices)
    assert any(f"demo --run-dir {tmp_path / 'd'}" in n for n in notices)
    assert "2 decoding modes" in r.stderr                       # both modes ran


def test_batch_import_run_dir_option(work: Path, tmp_path: Path) -> None:
    r = runner.invoke(app, ["batch", "import", str(tmp_path / "results.jsonl"), "--run-dir", str(work / "run")])
    _notice(r.stderr, f"batch import {work / 'run'} {tmp_path / 'results.jsonl'}")
    assert r.exit_code == 5 and "nothing was exported from this run dir" in r.stderr   # read as before


def test_import_o_and_json(work: Path, tmp_path: Path) -> None:
    rows = tmp_path / "j.jsonl"
    rows.write_text("".join(json.dumps({"item_id": f"i{i}", "judge": "j", "protocol": "p", "dataset": "d",
                                        "order": "AB", "verdict": "A"}) + "\n" for i in range(3)))
    r = runner.invoke(app, ["import", "jsonl", str(rows), "-o", str(tmp_path / "run"), "--json"])
    assert r.exit_code == 0 and (tmp_path / "run" / "run.sqlite").exists(), r.output
    assert json.loads(r.stdout)["n_inserted"] == 3
    notices = [ln for ln in r.stderr.splitlines() if ln.startswith("deprecated: ")]
    assert len(notices) == 2 and all("next release" in n for n in notices), r.stderr
    assert any(f"import --run-dir {tmp_path / 'run'}" in n for n in notices)
    assert any("--format json" in n for n in notices)


def test_datasets_json(tmp_path: Path, work: Path) -> None:
    for argv in (["datasets", "list", "--json"],
                 ["datasets", "show", "jsonl", "--path", str(work / "pairs.jsonl"), "--json"],
                 ["datasets", "validate", str(work / "pairs.jsonl"), "--json"]):
        r = runner.invoke(app, argv)
        assert r.exit_code == 0, (argv, r.output)
        json.loads(r.stdout)
        _notice(r.stderr, "--format json")


def test_selftest_json_n_boot_and_old_default_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    import verdictlab.workflows.selftest as st

    asked: list[dict[str, object]] = []

    def fake(**kw: object) -> list[st.SelftestRow]:
        asked.append(kw)
        return [st.SelftestRow(property="noise", planted=0.2, recovered=0.2, lo=0.1, hi=0.3, passed=True,
                               judge="sim:x", how="x")]

    monkeypatch.setattr(st, "run_selftest", fake)
    r = runner.invoke(app, ["selftest", "--json", "--seed", "3"])
    assert r.exit_code == 0 and json.loads(r.stdout)["seed"] == 3
    _notice(r.stderr, "--format json")
    r = runner.invoke(app, ["selftest", "--n-boot", "300", "--seed", "3", "--format", "json"])
    assert r.exit_code == 0 and asked[-1]["n_boot"] == 300
    _notice(r.stderr, "--bootstrap 300")
    r = runner.invoke(app, ["selftest", "--format", "json"])           # no --seed: the old default, said
    assert r.exit_code == 0 and asked[-1]["seed"] == 7 and json.loads(r.stdout)["seed"] == 7
    _notice(r.stderr, "--seed 7")
    r = runner.invoke(app, ["selftest", "--format", "json", "--seed", "0"])     # the new default, given
    assert r.exit_code == 0 and asked[-1]["seed"] == 0 and "deprecated" not in r.stderr
    r = runner.invoke(app, ["selftest", "--bootstrap", "100", "--seed", "0"])
    assert r.exit_code == 2 and "must be >= 200" in r.stderr
