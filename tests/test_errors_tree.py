"""One error tree: every error class of the package is a kind of ``verdictlab.errors.VerdictlabError``, the
CLI exits with an error's ``exit_code`` (never a code chosen by the command that caught it, never a class
name looked up as a string), and ``docs/errors.md`` lists the tree as it is."""

from __future__ import annotations

import ast
import importlib
import re
import sqlite3
from pathlib import Path

import pytest

from verdictlab import errors
from verdictlab.cli._errors import classify
from verdictlab.errors import KINDS, VerdictlabError, exit_meanings

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "verdictlab"
DOC = ROOT / "docs" / "errors.md"

#: exception classes outside the tree, each with why
OUTSIDE = {
    ("verdictlab.core.stopping", "Stopped"): "a stop by signal is a KeyboardInterrupt (never caught by "
                                              "`except Exception`); it carries exit_code 130 / 143",
    ("verdictlab.importers._bulk", "_NotBulk"): "a private signal inside one module: the bulk import falls "
                                                "back to the per-row import; it never leaves the module",
    ("verdictlab.datasets.perturb_cases", "NotApplicable"): "a signal between the perturbation rules and the suite "
                                                            "builder: a rule that cannot perturb a source; the "
                                                            "case is counted, never raised out of the suite",
    ("verdictlab.testing.fake_openai", "_Framing"): "the test server's own signal: a request whose framing "
                                                    "cannot be read is answered 400 and the connection closed",
    ("verdictlab.testing.fake_request", "RequestProblem"): "the test server's own signal: a body the API refuses "
                                                           "becomes its 400 answer naming the parameter",
    ("verdictlab.core.registry", "PluginWarning"): "a warning, never raised: an installed plugin that cannot "
                                                   "load is skipped with it and the others load",
}


def _module(path: Path) -> str:
    return ".".join(path.relative_to(SRC.parent).with_suffix("").parts).removesuffix(".__init__")


def error_classes(src: Path = SRC) -> list[type[BaseException]]:
    """Every exception class defined at the top of a module of the package."""
    found = []
    for path in sorted(src.rglob("*.py")):
        names = [n.name for n in ast.parse(path.read_text(encoding="utf-8")).body
                 if isinstance(n, ast.ClassDef) and n.bases]
        if not names:
            continue
        module = importlib.import_module(_module(path))
        found += [c for c in (getattr(module, n) for n in names)
                  if isinstance(c, type) and issubclass(c, BaseException)]
    return found


def outside_the_tree(classes: list[type[BaseException]]) -> list[str]:
    return [f"{c.__module__}.{c.__qualname__}" for c in classes
            if not issubclass(c, VerdictlabError) and (c.__module__, c.__qualname__) not in OUTSIDE]


def test_every_error_class_of_the_package_is_in_the_tree() -> None:
    classes = error_classes()
    assert len(classes) > 25          # the scan found the package's classes
    assert outside_the_tree(classes) == []
    for c in classes:
        if issubclass(c, VerdictlabError) and c is not VerdictlabError:
            assert c.exit_code in exit_meanings(), c
            assert any(issubclass(c, k) for k in KINDS[1:]), f"{c} is not one of the kinds"


def test_the_tree_checker_sees_a_class_outside_it() -> None:
    class LooseError(ValueError):
        pass

    assert outside_the_tree([LooseError]) == [f"{__name__}.test_the_tree_checker_sees_a_class_outside_it.<locals>.LooseError"]


def _bare(cls: type[BaseException], message: str = "the message") -> BaseException:
    exc = cls.__new__(cls)            # every class, whatever its constructor takes
    exc.args = (message,)
    return exc


def test_the_cli_exits_with_the_exit_code_of_the_error() -> None:
    for c in error_classes():
        if issubclass(c, VerdictlabError) and c is not VerdictlabError:
            assert classify(_bare(c)) == (c.exit_code, "the message"), c
    for kind in KINDS[1:]:
        assert classify(kind("x")) == (kind.exit_code, "x")
    assert classify(VerdictlabError("x"))[0] == errors.EXIT_INTERNAL     # the base itself is a bug's code


def test_existing_names_are_kinds_of_the_tree() -> None:
    from verdictlab.core.items import ItemError, ItemProblems
    from verdictlab.engine import EngineError
    from verdictlab.engine.config import ConfigError
    from verdictlab.store import StoreError
    from verdictlab.workflows.drift import DriftError

    assert StoreError is errors.StoreError
    assert issubclass(ItemProblems, ItemError) and issubclass(ItemError, errors.InputError)
    assert issubclass(ConfigError, ValueError) and issubclass(EngineError, RuntimeError)    # old catches still hold
    assert issubclass(DriftError, errors.UsageError)


def test_third_party_errors_are_wrapped_into_the_tree() -> None:
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = 13
    wrapped = errors.wrap(full)
    assert isinstance(wrapped, errors.StoreError) and wrapped.__cause__ is full
    assert isinstance(errors.wrap(OSError(28, "No space left on device", "/x")), errors.StoreError)
    assert isinstance(errors.wrap(FileNotFoundError(2, "No such file or directory", "/x")), errors.InputError)
    assert isinstance(errors.wrap(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")),
                      errors.InputError)
    from pydantic import BaseModel, ValidationError

    class M(BaseModel):
        n: int

    with pytest.raises(ValidationError) as info:
        M.model_validate({"n": "x"})
    assert isinstance(errors.wrap(info.value), errors.InputError)
    bug = ZeroDivisionError("x")
    assert errors.wrap(bug) is bug


# -- the CLI: no command chooses a code for an error it caught, no class looked up by name ---------------
def _tree_names() -> set[str]:
    return {c.__name__ for c in error_classes() if issubclass(c, VerdictlabError)} | {
        "ValueError", "KeyError", "LookupError", "RuntimeError", "Exception"}


def _allowed_handler(handler: ast.ExceptHandler) -> bool:
    """A handler of a tree error in the CLI may re-raise it (after printing a JSON form of it) or turn an
    option's bad value into click's "Invalid value for '--x'" (a usage error, exit 2)."""
    for node in ast.walk(handler):
        if isinstance(node, ast.Raise):
            if node.exc is None:
                return True
            call = node.exc
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "BadParameter":
                return True
    return False


def code_choosing_handlers(source: str, names: set[str]) -> list[int]:
    """Lines of ``except`` clauses that catch an error of the tree (or a built-in it derives from) and do
    anything but re-raise it or make it a bad option value."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            caught = {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node.type)
                      if isinstance(n, ast.Name | ast.Attribute)}
            if caught & names and not _allowed_handler(node):
                bad.append(node.lineno)
    return bad


def test_no_command_chooses_an_exit_code_for_an_error_it_caught() -> None:
    names = _tree_names()
    found = {p.name: lines for p in sorted((SRC / "cli").glob("*.py"))
             if (lines := code_choosing_handlers(p.read_text(encoding="utf-8"), names))}
    assert found == {}


def test_the_handler_checker_sees_a_command_choosing_a_code() -> None:
    names = _tree_names()
    snippet = ("try:\n    cfg = load_config(path)\nexcept ConfigError as exc:\n    fail(exc, EXIT_INPUT)\n"
               "try:\n    x()\nexcept (ItemError, KeyError) as exc:\n    raise typer.Exit(3)\n")
    assert code_choosing_handlers(snippet, names) == [3, 7]
    ok = "try:\n    x()\nexcept ItemError as exc:\n    echo(exc)\n    raise\n"
    assert code_choosing_handlers(ok, names) == []


def test_the_cli_maps_no_error_by_its_name() -> None:
    text = (SRC / "cli" / "_errors.py").read_text(encoding="utf-8")
    strings = [n.value for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    assert not [s for s in strings if re.fullmatch(r"(verdictlab|pydantic)(\.\w+)*|\w+Error", s)]


# -- docs/errors.md ------------------------------------------------------------------------------------
def _kind(cls: type[VerdictlabError]) -> type[VerdictlabError]:
    return next(k for k in cls.__mro__ if k in KINDS[1:])


def tree_table() -> str:
    """The table of docs/errors.md's "one error tree" section, built from the classes."""
    rows = ["| code | class (`verdictlab.errors`) | its kinds |", "|-----:|---|---|"]
    classes = [c for c in error_classes() if issubclass(c, VerdictlabError) and c.__module__ != "verdictlab.errors"]
    for kind in KINDS[1:]:
        mine = sorted((c for c in classes if _kind(c) is kind), key=lambda c: c.__name__)
        listed = ", ".join(f"`{c.__name__}` ({c.__module__.removeprefix('verdictlab.')})" for c in mine)
        rows.append(f"| {kind.exit_code} | `{kind.__name__}` | {listed} |".replace("|  |", "| |"))
    return "\n".join(rows)


def test_docs_errors_lists_the_tree_as_it_is() -> None:
    text = DOC.read_text(encoding="utf-8")
    shown = re.search(r"<!-- error-tree:[^>]*-->\n(.*?)\n<!-- /error-tree -->", text, re.DOTALL)
    assert shown is not None
    assert shown.group(1) == tree_table(), "docs/errors.md: replace the error-tree table with\n" + tree_table()


def test_docs_errors_documents_every_exit_code_with_its_meaning() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    documented = {int(m.group(1)): m.group(2) for m in re.finditer(r"^\| (\d+) \| ([^|]*)\|", table, re.MULTILINE)}
    assert set(documented) == set(exit_meanings())
    for kind in KINDS[1:]:
        first_words = documented[kind.exit_code].split(":")[0].split("(")[0].strip().strip("`")
        assert first_words and (first_words in kind.meaning or kind.meaning.split()[-1] in documented[kind.exit_code]), \
            (kind, documented[kind.exit_code])


def test_a_bad_probe_in_a_config_is_bad_input_not_a_bug(tmp_path: Path) -> None:
    """A probe name no probe has was an internal error (exit 1, "a bug in verdictlab"): it is the config's."""
    from typer.testing import CliRunner

    from verdictlab.cli.main import app

    (tmp_path / "pairs.jsonl").write_text('{"item_id": "1", "question": "q", "response_a": "a", '
                                          '"response_b": "b", "label": "A"}\n', encoding="utf-8")
    (tmp_path / "audit.yaml").write_text("name: t\ndatasets: [{name: jsonl, path: pairs.jsonl, probe: bogus}]\n"
                                         "judges: ['sim:skill=0.9']\nprotocols: [direct]\nrepetitions: 1\n",
                                         encoding="utf-8")
    r = CliRunner().invoke(app, ["run", str(tmp_path / "audit.yaml"), "--plan"])
    assert r.exit_code == errors.EXIT_INPUT, r.output
    assert r.stderr.startswith("error: unknown probe 'bogus'; known: padding") and "a bug" not in r.stderr
