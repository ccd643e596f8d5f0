"""Issue 16: the CLI's one error path.  Every command is run with a set of bad inputs; each must end
with one plain line, a documented exit code (docs/errors.md) and no traceback (except with --debug)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from verdictlab.cli._errors import (
    EXIT_INCOMPLETE,
    EXIT_INPUT,
    EXIT_STORE,
    EXIT_USAGE,
    classify,
    printable_line,
)
from verdictlab.cli.main import app

runner = CliRunner()
DOCUMENTED = {EXIT_USAGE, EXIT_INPUT, EXIT_INCOMPLETE, EXIT_STORE}


def _pairs(path: Path, label: str = "A", n: int = 3, **extra: str) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"item_id": f"i{i}", "question": f"q{i}", "response_a": "yes",
                                 "response_b": "no", "label": label, **extra}, ensure_ascii=False) + "\n")
    return path


def _config(tmp: Path, *, data: str = "pairs.jsonl", extra: str = "", name: str = "audit.yaml",
            judge: str = "sim:skill=0.9,seed=1", protocols: str = "[direct]") -> Path:
    p = tmp / name
    p.write_text(f"name: t\ndatasets: [{{name: jsonl, path: '{data}'}}]\njudges: ['{judge}']\n"
                 f"protocols: {protocols}\nrepetitions: 1\n{extra}", encoding="utf-8")
    return p


@pytest.fixture(scope="module")
def good_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("good")
    _pairs(tmp / "pairs.jsonl")
    cfg = _config(tmp)
    r = runner.invoke(app, ["run", str(cfg), "--run-dir", str(tmp / "run"), "--no-progress"])
    assert r.exit_code == 0, r.output
    return tmp / "run"


def _bad_inputs(tmp: Path, good_run: Path) -> list[tuple[str, list[str], int | None]]:
    """(what, argv, expected exit code) for every command."""
    _pairs(tmp / "pairs.jsonl")
    (tmp / "notutf8.yaml").write_bytes(b"name: t\n# \xff\xfe\n")
    (tmp / "broken.yaml").write_text("name: t\ndatasets: [\n  judges: : :\n")
    (tmp / "adir.yaml").mkdir()
    nan_cfg = _config(tmp, extra="temperatures: [.nan]\n", name="nan.yaml")
    missing_bracket = _config(tmp, data="data[v2].jsonl", name="bracket.yaml")
    _pairs(tmp / "slash_b.jsonl", label="[/b]")
    slash_b = _config(tmp, data="slash_b.jsonl", name="slash_b.yaml")
    (tmp / "extra.csv").write_text("item_id,question,response_a,response_b,label\ni0,What is 2+2?,4,5,A,oops,B\n")
    (tmp / "deep.jsonl").write_text('{"item_id": "a", "x": ' + "[" * 5000 + "]" * 5000 + "}\n")
    (tmp / "afile").write_text("not a directory")
    garbage = tmp / "garbage"
    garbage.mkdir()
    (garbage / "run.sqlite").write_bytes(b"this is not a database" * 100)
    truncated = tmp / "truncated"
    truncated.mkdir()
    (truncated / "run.sqlite").write_bytes((good_run / "run.sqlite").read_bytes()[:1000])
    tpl_missing = _config(tmp, protocols="['direct@no-such-template.yaml']", name="tpl.yaml")
    cases: list[tuple[str, list[str], int | None]] = [
        ("config missing", ["run", str(tmp / "nope.yaml")], EXIT_INPUT),
        ("config is a directory", ["run", str(tmp / "adir.yaml")], EXIT_INPUT),
        ("config not UTF-8", ["run", str(tmp / "notutf8.yaml")], EXIT_INPUT),
        ("config invalid YAML", ["run", str(tmp / "broken.yaml")], EXIT_INPUT),
        ("temperature NaN", ["run", str(nan_cfg), "--run-dir", str(tmp / "r1")], EXIT_INPUT),
        ("path with brackets", ["run", str(missing_bracket), "--run-dir", str(tmp / "r2")], EXIT_INPUT),
        ("label [/b]", ["run", str(slash_b), "--run-dir", str(tmp / "r3")], EXIT_INPUT),
        ("--run-dir is a file", ["run", str(_config(tmp)), "--run-dir", str(tmp / "afile")], EXIT_USAGE),
        ("template missing", ["run", str(tpl_missing), "--run-dir", str(tmp / "r4")], EXIT_INPUT),
        ("validate extra fields", ["datasets", "validate", "csv", "--path", str(tmp / "extra.csv")], EXIT_INPUT),
        ("show deep json", ["datasets", "show", "jsonl", "--path", str(tmp / "deep.jsonl")], EXIT_INPUT),
        ("validate missing", ["datasets", "validate", "jsonl", "--path", str(tmp / "nope.jsonl")], EXIT_INPUT),
        ("import garbage", ["import", "jsonl", str(tmp / "deep.jsonl"), "--run-dir", str(tmp / "r5")], None),
        ("debate bad config", ["debate", str(tmp / "broken.yaml")], EXIT_INPUT),
    ]
    (tmp / "human.csv").write_bytes(b"item_id,label\ni0,A,B,extra\n\xff\n")
    cases += [       # the other helpers' commands go through the same error path
        ("drift garbage stores", ["drift", str(garbage), str(truncated)], None),
        ("validate garbage labels", ["validate", str(good_run), "--human", str(tmp / "human.csv")], None),
        ("plan-labels no store", ["plan-labels", str(tmp / "nowhere"), "--halfwidth", "0.05"], None),
        ("demo --run-dir is a file", ["demo", "--run-dir", str(tmp / "afile"), "--pairs", "1"], None),
        ("datasets show unknown loader", ["datasets", "show", "nosuch"], EXIT_INPUT),
        ("selftest bad option", ["selftest", "--pairs", "1"], EXIT_USAGE),
        ("import unknown format", ["import", "nosuch", str(tmp / "deep.jsonl"), "--run-dir", str(tmp / "r6")], None),
        ("datasets list bad option", ["datasets", "list", "--bogus"], EXIT_USAGE),
    ]
    for cmd in (["report"], ["export"], ["review"], ["compare"], ["report", "--format", "json"], ["validate"],
                ["plan-labels", "--halfwidth", "0.05"]):
        cases += [
            (f"{cmd[0]} no store", [cmd[0], str(tmp / "nowhere"), *cmd[1:]], EXIT_STORE),
            (f"{cmd[0]} garbage store", [cmd[0], str(garbage), *cmd[1:]], EXIT_STORE),
            (f"{cmd[0]} truncated store", [cmd[0], str(truncated), *cmd[1:]], EXIT_STORE),
            (f"{cmd[0]} file as run dir", [cmd[0], str(tmp / "afile"), *cmd[1:]], EXIT_STORE),
        ]
    cases += [
        ("report --format html into a missing folder", ["report", str(good_run), "--format", "html", "-o", str(tmp / "no" / "r.html")],
         None),
        ("report -o onto a directory", ["report", str(good_run), "--format", "html", "-o", str(tmp / "adir.yaml")], EXIT_INPUT),
        ("export --out onto a directory", ["export", str(good_run), "--out", str(tmp / "adir.yaml")], EXIT_INPUT),
        ("review --out onto a directory", ["review", str(good_run), "--out", str(tmp / "adir.yaml")], EXIT_INPUT),
        ("report bad option", ["report", str(good_run), "--confidence", "2"], EXIT_USAGE),
    ]
    return cases


def test_every_command_with_bad_inputs_gives_one_line_and_no_traceback(tmp_path: Path, good_run: Path) -> None:
    failures = []
    for what, argv, expected in _bad_inputs(tmp_path, good_run):
        r = runner.invoke(app, argv)
        text = r.output + (r.stderr if r.stderr_bytes is not None else "")
        problems = []
        if "Traceback" in text:
            problems.append("traceback")
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            problems.append(f"escaped {type(r.exception).__name__}: {r.exception}")
        if expected is None:
            if r.exit_code not in (0, *DOCUMENTED):
                problems.append(f"exit {r.exit_code}")
        elif r.exit_code != expected:
            problems.append(f"exit {r.exit_code} != {expected}")
        if expected in (EXIT_INPUT, EXIT_STORE):
            errs = [ln for ln in r.stderr.splitlines() if ln.startswith("error: ")]
            if len(errs) != 1:
                problems.append(f"{len(errs)} error lines")
        if problems:
            failures.append(f"{what}: {problems}\n{text[-400:]}")
    assert not failures, "\n\n".join(failures)


def test_item6_markup_in_data_is_printed_literally(tmp_path: Path) -> None:
    for label in ("[/b]", "[bold]B"):
        _pairs(tmp_path / "pairs.jsonl", label=label)
        r = runner.invoke(app, ["run", str(_config(tmp_path)), "--run-dir", str(tmp_path / "r")])
        assert r.exit_code == EXIT_INPUT and r.exception is None or isinstance(r.exception, SystemExit)
        assert f"got '{label}'" in r.stderr, r.stderr
    cfg = _config(tmp_path, data="data[v2].jsonl")
    r = runner.invoke(app, ["run", str(cfg), "--run-dir", str(tmp_path / "r")])
    assert r.exit_code == EXIT_INPUT and "data[v2].jsonl" in r.stderr and "not found" in r.stderr


def test_item6_control_characters_are_shown_as_escapes() -> None:
    assert printable_line("a\x1b[2Jb\nc\u202ed") == "a\\x1b[2Jb; c\\u202ed"


def test_item7_run_dir_naming_a_file(tmp_path: Path) -> None:
    _pairs(tmp_path / "pairs.jsonl")
    (tmp_path / "afile").write_text("x")
    r = runner.invoke(app, ["run", str(_config(tmp_path)), "--run-dir", str(tmp_path / "afile")])
    assert r.exit_code == EXIT_USAGE
    assert r.stderr.strip() == f"error: --run-dir {tmp_path / 'afile'} is a file, not a directory; choose another --run-dir"


def test_item7_full_disk_and_corrupt_store_are_store_errors() -> None:
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = 13
    code, msg = classify(full)
    assert code == EXIT_STORE and msg.startswith("run store: database or disk is full; free some space")
    assert classify(sqlite3.DatabaseError("file is not a database"))[0] == EXIT_STORE
    assert classify(OSError(28, "No space left on device", "/x/run.sqlite"))[0] == EXIT_STORE
    code, msg = classify(PermissionError(13, "Permission denied", "/ro/report.html"))
    assert code == EXIT_INPUT and msg == "/ro/report.html: permission denied; choose a place you can write (e.g. --out PATH)"
    code, msg = classify(ZeroDivisionError("x"))
    assert code == 1 and "internal error: ZeroDivisionError" in msg and "--debug" in msg


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    (tmp_path / "deep.jsonl").write_text('{"a": ' + "[" * 5000 + "]" * 5000 + "}\n")
    argv = ["datasets", "validate", "jsonl", "--path", str(tmp_path / "deep.jsonl")]
    r = runner.invoke(app, argv)
    assert r.exit_code == EXIT_INPUT and "Traceback" not in r.output + r.stderr
    os.environ["VERDICTLAB_DEBUG"] = "1"
    try:
        r = runner.invoke(app, ["--debug", "report", str(tmp_path / "garbage")])
    finally:
        del os.environ["VERDICTLAB_DEBUG"]
    assert r.exit_code == EXIT_STORE


# -- item 8: an incomplete run exits 4 -------------------------------------------------------------
def test_item8_budget_stop_exits_4(tmp_path: Path) -> None:
    _pairs(tmp_path / "pairs.jsonl", n=5)
    cfg = _config(tmp_path, extra="budget: {max_calls: 4}\n")
    r = runner.invoke(app, ["run", str(cfg), "--run-dir", str(tmp_path / "o"), "--no-progress"])
    assert r.exit_code == EXIT_INCOMPLETE
    assert "incomplete run: 6 of 10 trials not judged (rerun to resume)" in r.stderr


# -- item 11: spreadsheet formula injection ----------------------------------------------------------
def test_item11_review_and_csv_export_escape_formulas(tmp_path: Path) -> None:
    from verdictlab.store.export import read_export

    with (tmp_path / "pairs.jsonl").open("w") as fh:
        for i, text in enumerate(["=HYPERLINK(\"http://x\")", "+1+1", "-2+3", "@SUM(A1)", "'quoted"]):
            fh.write(json.dumps({"item_id": f"=i{i}", "question": text, "response_a": text, "response_b": "b",
                                 "label": "B"}) + "\n")
    cfg = _config(tmp_path, judge="sim:skill=0.0,seed=1")       # always wrong: every row is a disagreement
    rd = tmp_path / "run"
    assert runner.invoke(app, ["run", str(cfg), "--run-dir", str(rd), "--no-progress"]).exit_code == 0
    r = runner.invoke(app, ["review", str(rd)])
    assert r.exit_code == 0, r.output
    import csv

    with (rd / "review.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "-", "@")), value
    assert {row["question"] for row in rows} <= {"'=HYPERLINK(\"http://x\")", "'+1+1", "'-2+3", "'@SUM(A1)",
                                                 "''quoted"}
    out = tmp_path / "j.csv"
    assert runner.invoke(app, ["export", str(rd), "--format", "csv", "--out", str(out)]).exit_code == 0
    assert "\n=" not in out.read_text() and ",=" not in out.read_text()
    back = read_export(out)
    assert set(back["item_id"]) == {f"=i{i}" for i in range(5)}       # exact round trip


# -- item 5 / must-be-true 4: a read-only run directory ----------------------------------------------
def _archive(src: Path, parent: Path) -> Path:
    ro = parent / "archived"
    ro.mkdir()
    (ro / "run.sqlite").write_bytes((src / "run.sqlite").read_bytes())
    (ro / "run.sqlite").chmod(0o444)
    ro.chmod(0o555)
    return ro


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions; see the setpriv variant")
def test_item5_read_only_run_dir(tmp_path: Path, good_run: Path) -> None:
    ro = _archive(good_run, tmp_path)
    try:
        before = sorted(p.name for p in ro.iterdir())
        for argv in (["report", str(ro)], ["report", str(ro), "--format", "json"], ["compare", str(ro)],
                     ["export", str(ro), "--out", str(tmp_path / "j.parquet")],
                     ["review", str(ro), "--out", str(tmp_path / "r.csv")]):
            r = runner.invoke(app, argv)
            assert r.exit_code == 0, (argv, r.output, r.stderr)
        r = runner.invoke(app, ["export", str(ro)])            # default target inside the read-only dir
        assert r.exit_code == EXIT_INPUT and "--out" in r.stderr
        assert sorted(p.name for p in ro.iterdir()) == before  # nothing written beside the store
    finally:
        ro.chmod(stat.S_IRWXU)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root + setpriv")
def test_item5_read_only_run_dir_as_an_unprivileged_user(good_run: Path) -> None:
    """The issue's case, for real: an archived run that the user cannot write ('unable to open database
    file' before).  The CLI runs as uid 65534 (nobody) against a root-owned 0555 directory."""
    import subprocess
    import sys
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="vl-ro-"))
    try:
        base.chmod(0o755)
        ro = _archive(good_run, base)
        out = base / "out"
        out.mkdir()
        out.chmod(0o777)
        before = sorted(p.name for p in ro.iterdir())
        exe = [sys.executable, "-m", "verdictlab.cli.main"]
        asuser = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        for argv, code in ((["report", str(ro), "--format", "json"], 0), (["compare", str(ro)], 0),
                           (["export", str(ro), "--out", str(out / "j.parquet")], 0),
                           (["review", str(ro), "--out", str(out / "r.csv")], 0),
                           (["export", str(ro)], EXIT_INPUT)):
            p = subprocess.run([*asuser, *exe, *argv], capture_output=True, text=True, cwd=base, timeout=120,
                               env={**os.environ, "HOME": str(out), "MPLCONFIGDIR": str(out / "mpl")})
            assert p.returncode == code, (argv, p.stdout[-500:], p.stderr[-500:])
            assert "Traceback" not in p.stderr
            if code:
                assert p.stderr.startswith("error: ") and "(read-only); choose another place with --out" in p.stderr
        assert sorted(p.name for p in ro.iterdir()) == before     # nothing written beside the store
        assert (out / "j.parquet").stat().st_size > 0
    finally:
        if (base / "archived").exists():
            (base / "archived").chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)


def test_garbage_store_error_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "run.sqlite").write_bytes(b"not sqlite at all" * 64)
    r = runner.invoke(app, ["report", str(tmp_path)])
    assert r.exit_code == EXIT_STORE
    assert r.stderr.strip() == f"error: {tmp_path / 'run.sqlite'}: not a readable run store (file is not a database)"


def test_item6_dataset_named_like_markup_reaches_the_terminal_report(tmp_path: Path) -> None:
    _pairs(tmp_path / "pairs.jsonl")
    cfg = tmp_path / "audit.yaml"
    cfg.write_text("name: t\ndatasets: [{name: jsonl, path: pairs.jsonl, dataset: '[/bold]x'}]\n"
                   "judges: ['sim:skill=0.9,seed=1', 'sim:skill=0.6,seed=2']\nprotocols: [direct]\nrepetitions: 1\n")
    rd = tmp_path / "run"
    r = runner.invoke(app, ["run", str(cfg), "--run-dir", str(rd), "--no-progress"])
    assert r.exit_code == 0, r.output + r.stderr
    for argv in (["report", str(rd), "--bootstrap", "0"], ["compare", str(rd)], ["report", str(rd), "--format", "markdown"]):
        r = runner.invoke(app, argv)
        assert r.exit_code == 0 and "Traceback" not in r.output + r.stderr, (argv, r.output, r.stderr)
        shown = "\\[/bold\\]x" if "markdown" in argv else "[/bold]x"   # Markdown escapes the brackets
        assert shown in r.output, (argv, r.output)


@pytest.mark.parametrize("headroom_pages", [3, 60])     # full while writing the items / while judging
def test_item7_full_disk_is_one_line_exit_5_and_the_run_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                headroom_pages: int) -> None:
    """SQLite's max_page_count makes the store "full" (SQLITE_FULL, the error a full disk gives)."""
    import verdictlab.store as store_mod

    with (tmp_path / "pairs.jsonl").open("w") as fh:
        for i in range(150):
            fh.write(json.dumps({"item_id": f"i{i}", "question": "q" * 500, "response_a": "a" * 500,
                                 "response_b": "b", "label": "A"}) + "\n")
    cfg = _config(tmp_path, extra="repetitions: 2\n").read_text().replace("repetitions: 1\n", "")
    (tmp_path / "audit.yaml").write_text(cfg)
    original = store_mod.RunStore.__init__

    def small_disk(self: store_mod.RunStore, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        if not self.read_only:
            pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
            self.conn.execute(f"PRAGMA max_page_count={pages + headroom_pages}")

    monkeypatch.setattr(store_mod.RunStore, "__init__", small_disk)
    argv = ["run", str(tmp_path / "audit.yaml"), "--run-dir", str(tmp_path / "run"), "--no-progress"]
    r = runner.invoke(app, argv)
    assert r.exit_code == EXIT_STORE and "Traceback" not in r.output + r.stderr
    assert r.stderr.strip() == "error: run store: database or disk is full; free some space, then rerun (a run resumes)"
    monkeypatch.setattr(store_mod.RunStore, "__init__", original)        # space freed
    r = runner.invoke(app, argv)
    assert r.exit_code == 0, r.output + r.stderr
    con = sqlite3.connect(tmp_path / "run" / "run.sqlite")
    n, distinct = con.execute("SELECT COUNT(*), COUNT(DISTINCT trial_id) FROM judgments").fetchone()
    con.close()
    assert n == distinct == 150 * 2 * 2


# -- item 2: a NaN temperature from an import is refused (the report could not be built afterwards) -----
def test_item2_nan_temperature_in_imports_is_refused(tmp_path: Path) -> None:
    rec = {"judge": "j:x", "item_id": "i1", "protocol": "direct", "order": "AB", "verdict": "A", "rep": 0,
           "dataset": "d"}
    (tmp_path / "nan.jsonl").write_text(json.dumps(rec)[:-1] + ', "temperature": NaN}\n')
    r = runner.invoke(app, ["import", "jsonl", str(tmp_path / "nan.jsonl"), "--run-dir", str(tmp_path / "r1")])
    assert r.exit_code == EXIT_INPUT and "row 1, field 'temperature'" in r.stderr
    (tmp_path / "ok.jsonl").write_text(json.dumps(rec) + "\n")
    r = runner.invoke(app, ["import", "jsonl", str(tmp_path / "ok.jsonl"), "--run-dir", str(tmp_path / "r2"),
                            "--temperature", "nan"])
    assert r.exit_code == EXIT_INPUT and "temperature" in r.stderr and "finite" in r.stderr
    (tmp_path / "t.csv").write_text("judge,item_id,protocol,order,verdict,temperature,rep,dataset\n"
                                    "j:x,i1,direct,AB,A,nan,0,d\n")
    r = runner.invoke(app, ["import", "csv", str(tmp_path / "t.csv"), "--run-dir", str(tmp_path / "r3")])
    assert r.exit_code == EXIT_INPUT and "row 2, field 'temperature': must be a finite number" in r.stderr
    assert not (tmp_path / "r3" / "run.sqlite").exists()          # nothing half-written


def test_usage_errors_are_one_plain_line(tmp_path: Path) -> None:
    for argv, text in ((["report", str(tmp_path), "--bogus"], "error: No such option: --bogus (Possible options: --columns, --out) (see 'verdictlab report --help')"),
                       (["report"], "error: Missing argument 'RUN'. (see 'verdictlab report --help')"),
                       (["nosuch"], "error: No such command 'nosuch'. (see 'verdictlab --help')"),
                       (["report", "data[v2]", "--confidence", "2"],
                        "error: Invalid value for '--confidence': must be in (0, 1), got 2.0 (see 'verdictlab report --help')")):
        r = runner.invoke(app, argv)
        assert r.exit_code == EXIT_USAGE and r.stderr.strip() == text, (argv, r.stderr)


def test_the_installed_entry_point_prints_one_line_and_only_debug_shows_a_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "deep.jsonl").write_text('{"a": ' + "[" * 5000 + "]" * 5000 + "}\n")
    argv = [sys.executable, "-m", "verdictlab.cli.main", "datasets", "validate", "jsonl", "--path",
            str(tmp_path / "deep.jsonl")]
    env = {k: v for k, v in os.environ.items() if k != "VERDICTLAB_DEBUG"}
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == EXIT_INPUT and p.stdout == ""
    assert p.stderr == f"error: {tmp_path / 'deep.jsonl'}, row 1: nested more than 64 levels deep " \
                       "(raise the limit with VERDICTLAB_MAX_DEPTH)\n"
    p = subprocess.run([*argv[:3], "--debug", *argv[3:]], capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == EXIT_INPUT and "Traceback (most recent call last)" in p.stderr
    assert p.stderr.rstrip().splitlines()[-1].startswith("error: ")


def test_item6_escape_sequences_in_run_text_are_shown_not_obeyed(tmp_path: Path) -> None:
    """A dataset named with ANSI/OSC escapes (clear screen, set the terminal title) must not reach the
    terminal raw from `report`, `report --markdown` or `datasets show`."""
    hostile = "\x1b[2J\x1b]0;pwned\x07"
    _pairs(tmp_path / "pairs.jsonl", label="A")
    cfg = tmp_path / "audit.yaml"
    cfg.write_text('name: t\ndatasets: [{name: jsonl, path: pairs.jsonl, dataset: "\\e[2J\\e]0;pwned\\a"}]\n'
                   "judges: ['sim:skill=0.9,seed=1']\nprotocols: [direct]\nrepetitions: 1\n")
    rd = tmp_path / "run"
    assert runner.invoke(app, ["run", str(cfg), "--run-dir", str(rd), "--no-progress"]).exit_code == 0
    for argv in (["report", str(rd), "--bootstrap", "0"], ["report", str(rd), "--format", "markdown"],
                 ["datasets", "show", "jsonl", "--path", str(tmp_path / "pairs.jsonl"), "-O", f"dataset={hostile}"]):
        r = runner.invoke(app, argv)
        assert r.exit_code == 0, (argv, r.output, r.stderr)
        assert "\x1b" not in r.output and "\x07" not in r.output, argv
        assert "x1b" in r.output, (argv, r.output)          # shown as an escape (Markdown escapes it further)


def test_item2_a_store_with_null_temperatures_can_be_reported(tmp_path: Path, good_run: Path) -> None:
    """An older verdictlab stored `temperatures: [.nan]` as NULL; every report form then crashed."""
    rd = tmp_path / "old"
    rd.mkdir()
    (rd / "run.sqlite").write_bytes((good_run / "run.sqlite").read_bytes())
    con = sqlite3.connect(rd / "run.sqlite")
    con.execute("UPDATE judgments SET temperature = NULL")
    con.commit()
    con.close()
    for argv in (["report", str(rd), "--bootstrap", "0"], ["report", str(rd), "--format", "json", "--bootstrap", "0"],
                 ["report", str(rd), "--format", "markdown", "--bootstrap", "0"],
                 ["report", str(rd), "--format", "html", "-o", str(tmp_path / "r.html"), "--bootstrap", "0"]):
        r = runner.invoke(app, argv)
        assert r.exit_code == 0 and "Traceback" not in r.output + r.stderr, (argv, r.output, r.stderr)


@pytest.mark.parametrize(("signum", "code", "line"), [(2, 130, "error: interrupted\n"),
                                                      (15, 143, "error: terminated\n")])
def test_a_stop_signal_while_the_arguments_are_parsed_is_one_line_and_its_own_code(monkeypatch, capsys,
                                                                                  signum, code, line):
    """Regression (CI, stop 27): typer 0.29 imports pydantic while it parses the arguments (0.3 s) and
    turns a KeyboardInterrupt there into a silent exit 130 -- a Ctrl-C 0.5 s after start printed nothing,
    and a SIGTERM there exited 130.  The signal is raised exactly where the parsing happens."""
    import typer.main
    from typer.core import TyperGroup

    from verdictlab.core.stopping import Stopped

    def stopped(*args, **kwargs):
        raise Stopped(signum)

    monkeypatch.setattr(TyperGroup, "make_context", stopped)
    with pytest.raises(SystemExit) as exc:
        typer.main.get_command(app).main(["report", "nowhere"])
    assert exc.value.code == code
    assert capsys.readouterr().err == line
