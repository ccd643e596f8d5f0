"""The command-line grammar of docs/cli.md, held for every command and sub-command by walking the click
parameters typer builds (``typer.main.get_command``): a new command or option that breaks it fails here."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from verdictlab.cli import options
from verdictlab.cli._errors import EXIT_SELFTEST_FAILED
from verdictlab.cli.main import app

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()

#: commands that read an existing run (the positional RUN) and those that create one (--run-dir)
READS_A_RUN = {"report", "export", "review", "compare", "validate", "plan-labels", "drift", "view", "batch import"}
CREATES_A_RUN = {"run", "demo", "import", "debate", "batch export", "perturb"}
SHARED = ("--unparsed", "--bootstrap", "--seed", "--confidence")
#: commands whose shared option has help of its own (what it seeds there), the rest of it shared
OWN_HELP = {"--seed": {"fake-server"}}
#: options whose values are a fixed set: each must be a choice (an enum), listed in help
CHOICES = {("import", "--order"), ("import", "--verdicts"), ("import", "--garbage"), ("import", "--id-from"),
           ("validate", "--id-from"), ("plan-labels", "--id-from"),
           ("debate", "--fallback"),
           ("debate", "--final-rule"), ("run", "--executor"), ("demo", "--decoding"), ("compare", "--by"),
           ("drift", "--chart"), ("fake-server", "--winner"), ("perturb", "--kind"), ("perturb", "--format")}


def _commands() -> dict[str, Any]:
    """Every leaf command by its path (``"batch export"``)."""
    root = typer.main.get_command(app)
    out: dict[str, Any] = {}

    def walk(group: Any, prefix: str) -> None:
        for name, cmd in group.commands.items():
            path = f"{prefix} {name}".strip()
            if hasattr(cmd, "commands"):
                walk(cmd, path)
            else:
                out[path] = cmd

    walk(root, "")
    return out


COMMANDS = _commands()


def _is_choice(p: Any) -> bool:
    return bool(p.type_descriptor.is_choice)


def _choices(p: Any) -> list[str]:
    return [str(c) for c in p.type_descriptor.choices or ()]


def _visible(cmd: Any) -> list[Any]:
    return [p for p in cmd.params if not getattr(p, "hidden", False)]


def _option(cmd: Any, name: str) -> Any | None:
    return next((p for p in _visible(cmd) if name in getattr(p, "opts", ())), None)


def _help(path: str) -> str:
    r = runner.invoke(app, [*path.split(), "--help"])
    assert r.exit_code == 0, r.output
    return r.stdout


def test_every_command_is_walked() -> None:
    assert set(COMMANDS) >= READS_A_RUN | CREATES_A_RUN
    assert {"datasets list", "datasets show", "datasets validate", "selftest", "fake-server"} <= set(COMMANDS)


@pytest.mark.parametrize("path", sorted(READS_A_RUN))
def test_an_existing_run_is_the_positional_RUN(path: str) -> None:
    cmd = COMMANDS[path]
    first = next(p for p in _visible(cmd) if p.param_type_name == "argument")
    assert first.metavar == "RUN", (path, first.metavar)
    assert _option(cmd, "--run-dir") is None, path


@pytest.mark.parametrize("path", sorted(CREATES_A_RUN))
def test_a_command_that_creates_a_run_takes_run_dir(path: str) -> None:
    cmd = COMMANDS[path]
    opt = _option(cmd, "--run-dir")
    assert opt is not None and opt.opts == ["--run-dir"], path          # never -o: -o is --out
    assert not any(p.metavar == "RUN" for p in _visible(cmd) if p.param_type_name == "argument"), path


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_output_files_are_o_out_with_a_format_of_listed_choices(path: str) -> None:
    cmd = COMMANDS[path]
    for p in _visible(cmd):
        opts = set(getattr(p, "opts", ()))
        if "-o" in opts or "--out" in opts:
            assert opts == {"-o", "--out"}, (path, opts)
            fmt = _option(cmd, "--format")
            assert fmt is not None and _is_choice(fmt), path
    fmt = _option(cmd, "--format")
    if fmt is not None:
        assert _is_choice(fmt), path
        shown = _help(path)
        assert all(c in shown for c in _choices(fmt)), (path, _choices(fmt))


@pytest.mark.parametrize("name", SHARED)
def test_shared_options_mean_the_same_everywhere(name: str) -> None:
    seen = {path: _option(cmd, name) for path, cmd in COMMANDS.items()}
    found = {path: p for path, p in seen.items() if p is not None}
    assert len(found) >= 2, (name, sorted(found))
    # one definition: the same type, default, spelling and metavar everywhere; the same help, but where a
    # command says which of its draws --seed seeds (the fake server's verdicts are no bootstrap)
    own_help = OWN_HELP.get(name, set())
    shapes = {(p.type_descriptor.annotation, tuple(_choices(p)), p.default, tuple(p.opts), p.metavar)
              for p in found.values()}
    assert len(shapes) == 1, (name, shapes)
    helps = {p.help for path, p in found.items() if path not in own_help}
    assert len(helps) == 1, (name, helps)
    assert own_help <= set(found), (name, own_help)
    for path in own_help:
        assert found[path].help.endswith("; >= 0.") and found[path].help not in helps, path
    # and the one definition is options.py's
    default = {"--unparsed": options.UNPARSED_DEFAULT, "--bootstrap": options.BOOTSTRAP_DEFAULT,
               "--seed": options.SEED_DEFAULT, "--confidence": options.CONFIDENCE_DEFAULT}[name]
    assert next(iter(shapes))[2] == default


def test_every_fixed_set_of_values_is_a_choice_shown_in_help() -> None:
    for path, name in sorted(CHOICES):
        opt = _option(COMMANDS[path], name)
        assert opt is not None and _is_choice(opt), (path, name)
        shown = _help(path)
        assert all(c in shown for c in _choices(opt)), (path, name)
    # no help text lists alternatives ("a | b", "one of") for a free-text option
    for path, cmd in COMMANDS.items():
        for p in _visible(cmd):
            if p.param_type_name == "option" and not _is_choice(p) and not p.is_flag:
                text = p.help or ""
                assert not re.search(r"\w \| \w|one of ", text), (path, p.opts, text)


def test_debate_choices_are_the_engines() -> None:
    from verdictlab.cli.debate_cmd import DebateFallback, FinalRule
    from verdictlab.cli.fake_server_cmd import WinnerPolicy
    from verdictlab.engine.debate import FALLBACKS, FINAL_RULES
    from verdictlab.testing.fake_openai import WINNER_POLICIES

    assert tuple(DebateFallback) == FALLBACKS and tuple(FinalRule) == FINAL_RULES
    assert tuple(WinnerPolicy) == WINNER_POLICIES


def test_perturb_kinds_are_the_datasets_kinds() -> None:
    from verdictlab.cli.perturb_cmd import PerturbationKind
    from verdictlab.datasets.perturb import KINDS

    assert [k.value for k in PerturbationKind] == list(KINDS)


def test_import_choices_are_the_importers() -> None:
    from verdictlab.core.vocab import ORDERS
    from verdictlab.importers import importer_options
    from verdictlab.importers.pandalm import GARBAGE_RULES
    from verdictlab.importers.tabular import ID_SOURCES, VERDICT_TERMS

    table = {o.name: o.choices for o in importer_options("csv")}
    garbage = {o.name: o.choices for o in importer_options("pandalm")}["garbage"]
    assert table["order"] == ORDERS and table["verdicts"] == VERDICT_TERMS and garbage == GARBAGE_RULES
    assert set(table["id_from"]) == set(ID_SOURCES) - {"column"}   # "column", the default, is not a choice to make


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_help_lists_exit_codes_and_keeps_its_text(path: str) -> None:
    shown = _help(path)
    assert "<bool>" not in shown, path                         # no placeholder after a flag
    m = re.search(r"Exit codes: (.*?) \(docs/errors\.md\)", " ".join(shown.split()))
    assert m, (path, shown[-300:])
    documented = _documented_codes()
    for code in re.findall(r"(\d+) [a-z]", m.group(1)):
        assert int(code) in documented, (path, code)


def _documented_codes() -> set[int]:
    text = (REPO / "docs" / "errors.md").read_text(encoding="utf-8")
    return {int(c) for c in re.findall(r"^\|\s*(\d+)\s*\|", text, flags=re.M)}


def test_bracketed_help_text_survives() -> None:
    assert "protocols [debate]" in " ".join(_help("debate").split())
    assert "[a, b]" in " ".join(_help("datasets show").split())


def test_version_and_root_help() -> None:
    from verdictlab import __version__

    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.stdout.strip() == f"verdictlab {__version__}"
    assert "Exit codes:" in runner.invoke(app, ["--help"]).stdout


def test_a_failed_selftest_has_its_own_documented_code() -> None:
    assert EXIT_SELFTEST_FAILED not in (0, 1, 2, 3, 4, 5, 130, 143)
    assert EXIT_SELFTEST_FAILED in _documented_codes()
    assert f"{EXIT_SELFTEST_FAILED} a planted property not recovered" in " ".join(_help("selftest").split())


def test_a_failing_selftest_row_exits_with_that_code(monkeypatch: pytest.MonkeyPatch) -> None:
    import verdictlab.workflows.selftest as st

    row = st.SelftestRow(property="noise", planted=0.2, recovered=0.0, lo=0.0, hi=0.01, passed=False, judge="sim:x", how="x")
    monkeypatch.setattr(st, "run_selftest", lambda **kw: [row])
    r = runner.invoke(app, ["selftest", "--format", "json"])
    assert r.exit_code == EXIT_SELFTEST_FAILED, r.output
    assert json.loads(r.stdout)["passed"] is False


# -- behaviour on a real (simulated) run --------------------------------------------------------------
@pytest.fixture(scope="module")
def sim_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("grammar")
    (tmp / "pairs.jsonl").write_text("".join(
        json.dumps({"item_id": f"i{i}", "question": f"q{i}", "response_a": "yes", "response_b": "no",
                    "label": "AB"[i % 2]}) + "\n" for i in range(6)), encoding="utf-8")
    (tmp / "audit.yaml").write_text(
        "name: g\ndatasets: [{name: jsonl, path: pairs.jsonl}]\n"
        "judges: ['sim:skill=0.8,position_lock=0.2,noise=0.1,seed=1', 'sim:skill=0.6,seed=2']\n"
        "protocols: [direct]\nrepetitions: 2\n", encoding="utf-8")
    r = runner.invoke(app, ["run", str(tmp / "audit.yaml"), "--run-dir", str(tmp / "run"), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert r.stdout == "" and "trials judged this run" in r.stderr      # a run's summary is a message
    return tmp / "run"


def test_data_on_stdout_messages_on_stderr(sim_run: Path, tmp_path: Path) -> None:
    json_commands = (["report", str(sim_run), "--format", "json", "--bootstrap", "0"],
                     ["compare", str(sim_run), "--format", "json"],
                     ["validate", str(sim_run), "--format", "json"],
                     ["plan-labels", str(sim_run), "--halfwidth", "0.2", "--format", "json"],
                     ["drift", str(sim_run), "--judge-a", "sim:skill=0.8,position_lock=0.2,noise=0.1,seed=1",
                      "--judge-b", "sim:skill=0.6,seed=2", "--format", "json", "--bootstrap", "20"])
    for argv in json_commands:
        r = runner.invoke(app, argv)
        assert r.exit_code == 0, (argv, r.output)
        json.loads(r.stdout)                     # stdout is the data alone
        assert r.stderr == "", (argv, r.stderr)
    for argv, written in ((["export", str(sim_run), "-o", str(tmp_path / "j.csv")], tmp_path / "j.csv"),
                          (["review", str(sim_run), "-o", str(tmp_path / "r.jsonl")], tmp_path / "r.jsonl"),
                          (["report", str(sim_run), "-o", str(tmp_path / "r.md"), "--bootstrap", "0"],
                           tmp_path / "r.md")):
        r = runner.invoke(app, argv)
        assert r.exit_code == 0, (argv, r.output)
        assert r.stdout == "" and "written to" in r.stderr and written.exists(), (argv, r.stdout, r.stderr)
    assert (tmp_path / "r.md").read_text().startswith("## verdictlab report")      # --format from .md
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"item_id": "x", "judge": "j", "protocol": "p", "dataset": "d", "order": "AB",
                                "verdict": "A"}) + "\n")
    imp = runner.invoke(app, ["import", "jsonl", str(rows), "--run-dir", str(tmp_path / "imported")])
    assert imp.exit_code == 0 and imp.stdout == "" and "imported 1 new judgment(s)" in imp.stderr, imp.output
    for argv in (["datasets", "validate", str(rows.parent / "nope.jsonl")], ["selftest", "--bootstrap", "1"]):
        r = runner.invoke(app, argv)
        assert r.exit_code in (2, 3) and r.stdout == "" and r.stderr.startswith("error: "), (argv, r.output)
    plan = runner.invoke(app, ["run", str(sim_run.parent / "audit.yaml"), "--run-dir", str(sim_run), "--plan"])
    assert plan.exit_code == 0 and "estimated duration" in plan.stdout and plan.stderr == ""


@pytest.mark.parametrize(("argv", "said"), [
    (["review", "{run}", "-o", "{tmp}/r.csv", "--format", "jsonl"], "named like a csv file but --format is jsonl"),
    (["export", "{run}", "-o", "{tmp}/j.jsonl", "--format", "parquet"], "named like a jsonl file"),
    (["report", "{run}", "-o", "{tmp}/r.html", "--format", "json"], "named like a html file"),
    (["review", "{run}", "-o", "{tmp}/r.parquet"], "named like a parquet file, which this command does not write"),
    (["drift", "{run}", "--format", "html"], "--format html writes a page"),
])
def test_an_extension_that_contradicts_format_is_refused(sim_run: Path, tmp_path: Path, argv: list[str],
                                                         said: str) -> None:
    argv = [a.format(run=sim_run, tmp=tmp_path) for a in argv]
    r = runner.invoke(app, argv)
    assert r.exit_code == 2 and said in r.stderr, (argv, r.stderr)
    assert not list(tmp_path.iterdir())                      # nothing written, not even a wrong file


def test_review_csv_is_csv(sim_run: Path, tmp_path: Path) -> None:
    """``review --out x.csv`` (no --format) writes CSV; before, --format jsonl wrote JSON Lines into it."""
    r = runner.invoke(app, ["review", str(sim_run), "-o", str(tmp_path / "x.csv")])
    assert r.exit_code == 0, r.output
    first = (tmp_path / "x.csv").read_text().splitlines()[0]
    assert not first.startswith("{") and "," in first


def test_debug_is_accepted_before_and_after_the_command(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "run.sqlite").write_bytes(b"not a database" * 50)
    for argv in (["--debug", "report", str(broken)], ["report", str(broken), "--debug"],
                 ["report", "--debug", str(broken)]):
        r = runner.invoke(app, argv)
        assert r.exit_code == 5 and "Traceback (most recent call last)" in r.stderr, (argv, r.stderr[-300:])
    r = runner.invoke(app, ["report", str(broken)])
    assert r.exit_code == 5 and "Traceback" not in r.stderr


def test_a_closed_pipe_ends_quietly(sim_run: Path) -> None:
    """`verdictlab validate RUN | head`: the reader goes away; the command ends with 0 and says nothing."""
    for argv in (["validate", str(sim_run)], ["report", str(sim_run), "--format", "json", "--bootstrap", "0"]):
        p = subprocess.Popen([sys.executable, "-m", "verdictlab.cli.main", *argv], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        assert p.stdout is not None and p.stderr is not None
        p.stdout.close()                         # like `| head` that already has its lines
        err = p.stderr.read()
        assert p.wait(timeout=120) == 0 and err == b"", (argv, err[-300:])
