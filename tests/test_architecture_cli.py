"""The CLI holds no library: a command parses its arguments, calls the library and prints.

Checked on the source of every module of ``verdictlab.cli`` (imports anywhere in the module, module level
or inside a function):

1. no computation library (pandas, numpy, scipy) and no ``verdictlab.stats``: figures come from the
   library functions a notebook can call too;
2. no run store opened by the CLI (``open_store`` / ``RunStore``): reading a run is the library's job;
3. no DataFrame computation on what the library returned (``groupby``, ``merge``, ``value_counts``,
   ``to_csv``...): a command prints what it is given;
4. every command (a function registered with ``.command(...)``) calls the library -- a name imported from
   ``verdictlab`` outside ``verdictlab.cli`` -- itself or through a helper of its module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import verdictlab.cli

CLI_DIR = Path(verdictlab.cli.__file__).parent
FORBIDDEN_MODULES = ("pandas", "numpy", "scipy", "verdictlab.stats")
FORBIDDEN_NAMES = {("verdictlab.store", "open_store"), ("verdictlab.store", "RunStore")}
FRAME_METHODS = frozenset({"groupby", "merge", "pivot", "pivot_table", "concat", "value_counts", "agg", "aggregate",
                           "apply", "drop_duplicates", "to_csv", "to_parquet", "query", "sort_values", "crosstab",
                           "rolling", "resample", "melt"})


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The absolute module of a ``from X import`` inside package ``verdictlab.cli`` (``module``)."""
    if not node.level:
        return node.module or ""
    base = module.split(".")[: -node.level]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, tree: ast.AST) -> dict[str, str]:
    """Every name bound by an import anywhere in the module -> the absolute module it comes from (for
    ``from M import n``: ``M.n``)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                names[(a.asname or a.name).split(".")[0]] = a.name
        elif isinstance(node, ast.ImportFrom):
            src = _absolute(module, node)
            for a in node.names:
                names[a.asname or a.name] = f"{src}.{a.name}"
    return names


def _commands(tree: ast.AST) -> set[str]:
    """Functions registered as commands: ``app.command("x")(fn)`` or ``@app.command("x")``."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Call)
                and isinstance(node.func.func, ast.Attribute) and node.func.func.attr == "command"):
            out |= {a.id for a in node.args if isinstance(a, ast.Name)}
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                if isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "command":
                    out.add(node.name)
    return out


def _called_names(fn: ast.FunctionDef) -> set[str]:
    """Names a function calls (``f(...)``) or calls an attribute of (``m.f(...)``)."""
    out = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            f = node.func
            while isinstance(f, ast.Attribute):
                f = f.value
            if isinstance(f, ast.Name):
                out.add(f.id)
    return out


def _library(origin: str) -> bool:
    return origin.startswith("verdictlab.") and not origin.startswith("verdictlab.cli")


def cli_violations(sources: dict[str, str]) -> list[str]:
    """The rule breaks in ``{module name: source}`` of CLI modules (module docstring)."""
    found = []
    for module, source in sorted(sources.items()):
        tree = ast.parse(source)
        imports = _imports(module, tree)
        for _name, origin in sorted(imports.items()):
            if origin.startswith(FORBIDDEN_MODULES) or origin.split(".")[0] in FORBIDDEN_MODULES:
                found.append(f"{module} imports {origin} (computation belongs in the library)")
            elif tuple(origin.rsplit(".", 1)) in FORBIDDEN_NAMES:
                found.append(f"{module} imports {origin} (reading a run belongs in the library)")
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in FRAME_METHODS):
                found.append(f"{module} line {node.lineno} calls .{node.func.attr}() (a table computed in the CLI)")
        functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        reaches = {name for name, fn in functions.items()
                   if any(_library(imports.get(c, "")) for c in _called_names(fn))}
        changed = True
        while changed:     # a command may reach the library through a helper of its module
            more = {name for name, fn in functions.items() if name not in reaches and _called_names(fn) & reaches}
            changed = bool(more)
            reaches |= more
        for cmd in sorted(_commands(tree)):
            if cmd in functions and cmd not in reaches:
                found.append(f"{module}.{cmd} is a command that calls no library function")
    return found


def _cli_sources() -> dict[str, str]:
    return {f"verdictlab.cli.{p.stem}": p.read_text(encoding="utf-8") for p in sorted(CLI_DIR.glob("*.py"))}


def test_every_command_module_parses_calls_the_library_and_prints() -> None:
    sources = _cli_sources()
    assert len(sources) >= 15           # the checker reads the real package (main, _errors, 14 commands)
    assert cli_violations(sources) == []


def test_the_checker_sees_a_command_that_holds_the_library() -> None:
    bad = '''
import typer
import pandas as pd
from ..store import open_store
from ._errors import say

def _table(df):
    return df.groupby("judge").agg(n=("verdict", "size"))

def drift(run: str) -> None:
    say(str(_table(pd.read_csv(run))))

def register(app: typer.Typer) -> None:
    app.command("drift")(drift)
'''
    good = '''
from ._errors import say

def _line(rep):
    return str(rep)

def report(run: str) -> None:
    from ..report import build_report
    say(_line(build_report(run)))

def register(app):
    app.command("report")(report)
'''
    assert cli_violations({"verdictlab.cli.bad_cmd": bad, "verdictlab.cli.good_cmd": good}) == [
        "verdictlab.cli.bad_cmd imports verdictlab.store.open_store (reading a run belongs in the library)",
        "verdictlab.cli.bad_cmd imports pandas (computation belongs in the library)",
        "verdictlab.cli.bad_cmd line 8 calls .agg() (a table computed in the CLI)",
        "verdictlab.cli.bad_cmd line 8 calls .groupby() (a table computed in the CLI)",
        "verdictlab.cli.bad_cmd.drift is a command that calls no library function",
    ]
