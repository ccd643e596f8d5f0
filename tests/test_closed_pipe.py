"""Every command ends with the same exit code whether its reader reads stdout to the end or goes away at
once (``verdictlab ... | true``, ``| head``): a closed pipe used to turn a failing command into a success
(``import jsonl missing.jsonl ... --format json | true`` exited 0, 3 without the pipe) and ``--version |
true`` into a failure (1).

One child process imports the app once; each case is run twice in a fork of it, its stdout a file and
then a pipe whose reader is already closed, through the program's real entry (:func:`run_program`)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import typer

from verdictlab.cli.main import app

#: a failing input for every command (the walk below fails when a command is missing here)
FAILING: dict[str, list[str]] = {
    "run": ["run", "{missing}/audit.yaml", "--plan"],
    "report": ["report", "{missing}", "--format", "json"],
    "demo": ["demo", "--pairs", "-1"],
    "import": ["import", "jsonl", "{missing}/missing.jsonl", "--run-dir", "{tmp}/r", "--format", "json"],
    "export": ["export", "{missing}", "--format", "jsonl", "-o", "-"],
    "compare": ["compare", "{missing}", "{missing}2", "--format", "json"],
    "review": ["review", "{missing}"],
    "debate": ["debate", "{missing}/audit.yaml"],
    "validate": ["validate", "{missing}", "--format", "json"],
    "plan-labels": ["plan-labels", "{missing}", "--halfwidth", "0.05", "--format", "json"],
    "perturb": ["perturb", "no-such-loader", "--kind", "format.casing", "--run-dir", "{tmp}/p"],
    "drift": ["drift", "{missing}", "{missing}2", "--format", "json"],
    "selftest": ["selftest", "--bootstrap", "10", "--format", "json"],
    "view": ["view", "{missing}", "--port", "0"],
    "fake-server": ["fake-server", "--port", "99999"],
    "datasets fetch": ["datasets", "fetch", "no-such-dataset"],
    "datasets list": ["datasets", "list", "--format", "xml"],
    "datasets show": ["datasets", "show", "no-such-loader", "--format", "json"],
    "datasets validate": ["datasets", "validate", "{tmp}/bad.jsonl", "--format", "json"],
    "batch export": ["batch", "export", "{missing}/audit.yaml", "-o", "{tmp}/requests.jsonl"],
    "batch import": ["batch", "import", "{missing}", "{missing}/results.jsonl"],
}

_CHILD = textwrap.dedent("""
    import json, os, sys
    from verdictlab.cli.main import app
    from verdictlab.cli._program import run_program

    def run(argv, closed, err_path):
        pid = os.fork()
        if pid == 0:
            if closed:
                r, w = os.pipe()
                os.close(r)                 # the reader has gone before the first write
                os.dup2(w, 1)
            else:
                os.dup2(os.open(err_path + ".out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
            os.dup2(os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
            sys.argv = ["verdictlab", *argv]
            code = 0
            try:
                run_program(lambda: app)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:
                code = 99
            try:
                sys.stdout.flush()
            except BaseException:
                code = 98
            os._exit(code)
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    cases = json.loads(sys.argv[1])
    out = []
    for i, argv in enumerate(cases):
        err = os.path.join(sys.argv[2], f"case{i}")
        out.append([run(argv, False, err + "-file"), run(argv, True, err + "-closed"),
                    open(err + "-closed").read()[-400:]])
    print(json.dumps(out))
""")


def _commands() -> list[str]:
    root = typer.main.get_command(app)
    found: list[str] = []

    def walk(group: object, prefix: str) -> None:
        for name, cmd in group.commands.items():    # type: ignore[attr-defined]
            path = f"{prefix} {name}".strip()
            if hasattr(cmd, "commands"):
                walk(cmd, path)
            else:
                found.append(path)

    walk(root, "")
    return found


def test_every_command_keeps_its_exit_code_behind_a_closed_pipe(tmp_path: Path) -> None:
    commands = _commands()
    assert sorted(FAILING) == sorted(commands), "give every command a failing input here"
    (tmp_path / "bad.jsonl").write_text('{"item_id": "1"}\n{not json\n', encoding="utf-8")
    fill = {"missing": str(tmp_path / "missing"), "tmp": str(tmp_path)}
    cases: list[list[str]] = [[w.format(**fill) for w in FAILING[c]] for c in commands]
    cases += [[*c.split(), "--help"] for c in commands]           # every command's help: exit 0
    cases += [["--version"], ["--help"], ["datasets", "list", "--format", "json"]]
    logs = tmp_path / "logs"
    logs.mkdir()
    r = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(cases), str(logs)], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    results = json.loads(r.stdout.strip().splitlines()[-1])
    for argv, (with_file, with_closed_pipe, err) in zip(cases, results, strict=True):
        assert with_closed_pipe == with_file, (argv, with_file, with_closed_pipe, err)
        assert "Traceback" not in err, (argv, err)
        if argv in cases[:len(commands)]:
            assert with_file not in (0, 1), (argv, with_file, err)       # a real failure, not a crash
        else:
            assert with_file == 0, (argv, err)


def test_the_two_reported_commands_behind_true(tmp_path: Path) -> None:
    """The issue's exact commands, through a shell: ``... | true`` exits as without the pipe, and the error
    is on stderr."""
    (tmp_path / "bad.jsonl").write_text('{"item_id": "1"}\n{not json\n', encoding="utf-8")
    exe = f"{sys.executable} -m verdictlab.cli.main"
    for cmd, code in ((f"{exe} import jsonl missing.jsonl --run-dir r --format json | true", 3),
                      (f"{exe} datasets validate bad.jsonl --format json | true", 3),
                      (f"{exe} --version | true", 0)):
        r = subprocess.run(["bash", "-c", f"set -o pipefail; {cmd}"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == code, (cmd, r.returncode, r.stderr)
        assert (code == 0) == ("error:" not in r.stderr), (cmd, r.stderr)
