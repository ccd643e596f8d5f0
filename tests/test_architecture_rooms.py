"""The one sentence per room of docs/architecture.md, held on the source of the rooms whose sentence
says more than what they import (what each room may import, transitively: tests/test_architecture.py,
which reads the doc's rooms table).

The room sentences, checked on the source (``ast``) of each module:

* **stats** = pure numbers from frames: imports only ``vocab`` and ``policy`` (above); no I/O (no file, network,
  process or logging module, no ``open`` / ``print``, no frame read or written to a file); no English
  sentences -- a string literal of four or more words is allowed only as a docstring, in an exception
  or a warning, or as a *reason* (why a figure is undefined: a name, keyword or function that says
  ``reason``), which is what an exception message would say; what a figure *means* is the report's.
  Every public module has ``__all__`` and is exported from ``stats/__init__.py``.
* **analyses** = registered tables built only from stats: no mean, median, variance, quantile or
  correlation, no statistics library, no division (a rate is a statistic) outside a function that draws
  a registered figure (``*_figure``); every module that registers a table imports ``stats``.
* **report** = renders a typed Report and computes nothing: outside ``report/readings.py`` (the one
  module of sentences and reading rules) no grouping, pivoting, aggregating, merging or summing, no
  comparison with a number literal that is a fraction (a threshold) and no threshold constant taken
  from ``stats``.

* **engine** = runs judgments, every judge call through the caller's *public* API (no module outside
  ``engine/caller.py`` touches a private member of the judge caller).
* **cli** = parses arguments and calls one library function per command: no computation library, no run
  store opened, no table computed on what the library returned.

:func:`module_trees` and the checkers below take any room.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from test_import_cycles import SRC

# -- source helpers (usable for any room) ---------------------------------------------------------------

def module_trees(room: str) -> Iterator[tuple[str, ast.Module]]:
    """``(path relative to src/verdictlab, parsed module)`` of every module of a room (a subpackage)."""
    base = SRC / "verdictlab" / room
    for path in sorted(base.rglob("*.py")):
        yield str(path.relative_to(SRC / "verdictlab")), ast.parse(path.read_text(), str(path))


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _enclosing(node: ast.AST, parents: dict[int, ast.AST]) -> Iterator[ast.AST]:
    while id(node) in parents:
        node = parents[id(node)]
        yield node


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | \
        {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of docstring constants: the first statement of a module, class or function, and a string
    statement after an assignment (an attribute docstring)."""
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for stmt in body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                        and isinstance(stmt.value.value, str):
                    out.add(id(stmt.value))
    return out


# -- stats: no English, no I/O ------------------------------------------------------------------------

#: four or more words: a sentence, not a column name, a key, a format or a short label ("bootstrap over pairs")
_SENTENCE = re.compile(r"[A-Za-z]{2,}[,;:]?(?:\s+[A-Za-z(]+[,;:)]?){2}\s+[A-Za-z(]+")
_REASON = re.compile(r"reason", re.IGNORECASE)


def _is_reason(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Inside a raise, a warning, or something that says ``reason``: an assignment to, a keyword of, a
    call of or a method on a name with "reason" in it, or a function so named."""
    for up in _enclosing(node, parents):
        if isinstance(up, ast.Raise):
            return True
        if isinstance(up, ast.Call) and (_call_name(up) in ("warn", "warning") or _REASON.search(_call_name(up))):
            return True
        if isinstance(up, ast.Call) and isinstance(up.func, ast.Attribute) and _REASON.search(
                ast.unparse(up.func.value)):
            return True
        if isinstance(up, ast.keyword) and up.arg and _REASON.search(up.arg):
            return True
        if isinstance(up, ast.Assign | ast.AnnAssign):
            targets = up.targets if isinstance(up, ast.Assign) else [up.target]
            if any(_REASON.search(ast.unparse(t)) for t in targets):
                return True
        if isinstance(up, ast.FunctionDef) and _REASON.search(up.name):
            return True
    return False


def english_literals(tree: ast.Module) -> list[tuple[int, str]]:
    """String literals (f-string parts included) that read as sentences and are not a docstring, an
    exception or warning message, or a reason why a figure is undefined."""
    parents, docs = _parents(tree), _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in docs:
            continue
        if _SENTENCE.search(node.value) and not _is_reason(node, parents):
            found.append((node.lineno, node.value.strip()[:50]))
    return found


_IO_MODULES = {"io", "os", "sys", "pathlib", "sqlite3", "shutil", "subprocess", "socket", "urllib", "http",
               "logging", "tempfile", "glob", "requests", "httpx", "aiohttp", "pickle"}
_IO_CALLS = {"open", "print", "input", "read_csv", "read_json", "read_parquet", "read_sql", "to_csv", "to_json",
             "to_parquet", "to_sql", "to_pickle", "read_text", "write_text", "read_bytes", "write_bytes", "savefig"}


def io_uses(tree: ast.Module) -> list[tuple[int, str]]:
    """Imports of file / network / process / logging modules and calls that read or write outside."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if a.name.split(".")[0] in _IO_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in _IO_MODULES:
            found.append((node.lineno, f"from {node.module} import"))
        elif isinstance(node, ast.Call) and _call_name(node) in _IO_CALLS:
            found.append((node.lineno, f"{_call_name(node)}()"))
    return found


def test_stats_builds_no_english_and_does_no_io() -> None:
    found = [f"{p}:{line}: {what!r}" for p, tree in module_trees("stats")
             for line, what in english_literals(tree) + io_uses(tree)]
    assert found == []


def test_every_public_stats_module_is_exported() -> None:
    import importlib

    import verdictlab.stats as stats

    missing = []
    for path in sorted((SRC / "verdictlab" / "stats").glob("*.py")):
        if path.name.startswith("_"):
            continue
        mod = importlib.import_module(f"verdictlab.stats.{path.stem}")
        names = getattr(mod, "__all__", None)
        if names is None:
            missing.append(f"{path.stem}: no __all__")
            continue
        missing += [f"{path.stem}.{n}" for n in names if n not in stats.__all__ or getattr(stats, n) is not
                    getattr(mod, n)]
    assert missing == []


# -- analyses: tables from stats --------------------------------------------------------------------------

_STATISTICS = {"mean", "median", "std", "var", "quantile", "percentile", "corr", "cov", "sem", "average",
               "corrcoef", "nanmean", "nanmedian", "sqrt"}
_STAT_LIBRARIES = {"scipy", "sklearn", "statsmodels", "statistics"}


def _is_path_join(node: ast.BinOp) -> bool:
    """``a / "name"`` or ``Path(...) / x``: joining a path, not dividing numbers."""
    def text_or_path(x: ast.AST) -> bool:
        return (isinstance(x, ast.Constant) and isinstance(x.value, str)) or isinstance(x, ast.JoinedStr) or (
            isinstance(x, ast.Call) and _call_name(x) in ("Path", "PurePath"))
    return text_or_path(node.left) or text_or_path(node.right)


def _in_figure(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    return any(isinstance(up, ast.FunctionDef) and up.name.endswith("_figure") for up in _enclosing(node, parents))


#: reductions of rows or groups to numbers -- sums, counts, distinct counts, aggregations, votes tallied by
#: hand -- that a statistic (and its test) owns, not a table
_AGGREGATIONS = {"sum", "nansum", "count", "count_nonzero", "nunique", "value_counts", "size", "agg", "aggregate",
                 "bincount", "cumsum", "cumprod", "prod", "reduceat", "crosstab", "pivot_table",
                 "mode", "describe", "rank", "ngroup_sizes"}


def _in_predicate(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Inside the test of an ``if`` / ``while`` / conditional expression or an ``assert``: deciding whether
    a table applies (choosing rows), not a figure."""
    child = node
    for up in _enclosing(node, parents):
        if isinstance(up, ast.If | ast.While | ast.IfExp) and up.test is child:
            return True
        if isinstance(up, ast.Assert):
            return True
        if isinstance(up, ast.stmt):
            return False
        child = up
    return False


def computed_figures(tree: ast.Module) -> list[tuple[int, str]]:
    """Means, variances, correlations, statistics libraries, divisions (rates) and reductions of rows or
    groups (sums, counts, aggregations: what a vote tallies) outside a figure's drawing function; a
    reduction in the test of an ``if`` (does the table apply?) is choosing rows, not computing."""
    parents = _parents(tree)
    found = []
    for node in ast.walk(tree):
        if _in_figure(node, parents):
            continue
        name = _call_name(node) if isinstance(node, ast.Call) else ""
        if name in _STATISTICS or (name in _AGGREGATIONS and not _in_predicate(node, parents)):
            found.append((node.lineno, f"{name}()"))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and not _is_path_join(node):
            found.append((node.lineno, "division"))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [(node.lineno, f"import {m}") for m in mods if m.split(".")[0] in _STAT_LIBRARIES]
    return found


def _registers(tree: ast.Module) -> bool:
    """The module registers a table (a function decorated with ``register`` / ``register_cell_columns``)."""
    return any(isinstance(n, ast.FunctionDef) and any(isinstance(d, ast.Call) and _call_name(d) in (
        "register", "register_cell_columns") for d in n.decorator_list) for n in ast.walk(tree))


def _imports_stats(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "stats" and n.level == 2
               or isinstance(n, ast.ImportFrom) and (n.module or "").startswith("verdictlab.stats")
               for n in ast.walk(tree))


def test_analyses_take_their_figures_from_stats() -> None:
    found = [f"{p}:{line}: {what}" for p, tree in module_trees("analyses")
             for line, what in computed_figures(tree)]
    found += [f"{p}: registers a table but imports nothing from stats"
              for p, tree in module_trees("analyses") if _registers(tree) and not _imports_stats(tree)]
    assert found == []


# -- report: renders, computes nothing -------------------------------------------------------------------

READINGS = "report/readings.py"
_COMPUTING = {"groupby", "pivot", "pivot_table", "agg", "aggregate", "apply", "transform", "mean", "median",
              "std", "var", "quantile", "value_counts", "corr", "cumsum", "nunique", "crosstab", "merge", "rank",
              "describe", "sum"}


def report_computation(tree: ast.Module) -> list[tuple[int, str]]:
    """Grouping, aggregating, merging and summing; comparisons with a fractional number literal (a
    threshold); threshold constants (UPPER_CASE names) imported from stats."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node) in _COMPUTING:
            found.append((node.lineno, f"{_call_name(node)}()"))
        elif isinstance(node, ast.Compare):
            lits = [c for c in (node.left, *node.comparators) if isinstance(c, ast.Constant)
                    and isinstance(c.value, float) and 0.0 < c.value < 1.0]
            found += [(node.lineno, f"threshold {c.value}") for c in lits]
        elif isinstance(node, ast.ImportFrom) and "stats" in (node.module or "").split("."):
            found += [(node.lineno, f"threshold {a.name} from stats") for a in node.names
                      if a.name.isupper() and a.name not in ("CELL_TOTALS",)]
        elif isinstance(node, ast.Import | ast.ImportFrom):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [(node.lineno, f"import {m}") for m in mods if m.split(".")[0] in _STAT_LIBRARIES]
    return found


#: functions of the report that add up character widths to lay a table out on a terminal (what fits in
#: 80 or 120 columns), never a figure: their sums are layout, not computation
LAYOUT_FUNCTIONS = {"report/terminal.py": {"fit_columns", "_print_whole"}}


def _layout_lines(path: str, tree: ast.Module) -> set[int]:
    names = LAYOUT_FUNCTIONS.get(path, set())
    return {n for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name in names
            for n in range(f.lineno, (f.end_lineno or f.lineno) + 1)}


def test_report_renders_and_computes_nothing_outside_readings() -> None:
    found = [f"{p}:{line}: {what}" for p, tree in module_trees("report") if p != READINGS
             for line, what in report_computation(tree) if line not in _layout_lines(p, tree)]
    assert found == []


def test_the_layout_exemption_names_functions_that_exist_and_only_them() -> None:
    tree = ast.parse((SRC / "verdictlab" / "report" / "terminal.py").read_text())
    assert _layout_lines("report/terminal.py", tree)              # the exempt functions exist
    assert not _layout_lines("report/html.py", tree)              # and no other module is exempt


def test_readings_is_the_only_report_module_with_sentences_about_figures() -> None:
    """The reading rules (the thresholds a figure is compared with) live in readings.py: it holds them
    and the report builds every cell sentence through it."""
    tree = ast.parse((SRC / "verdictlab" / READINGS).read_text())
    constants = {t.id for n in tree.body if isinstance(n, ast.Assign | ast.AnnAssign)
                 for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                 if isinstance(t, ast.Name) and t.id.isupper()}
    assert {"ORDER_DRIVEN_PHI", "NOISY_C", "TRUSTWORTHY_T", "T_BANDS", "MIN_REPETITIONS"} <= constants
    build = ast.parse((SRC / "verdictlab" / "report" / "build.py").read_text())
    assert "readings.cell_sentence" in ast.unparse(build)


# -- each checker sees a violation ------------------------------------------------------------------------

def test_each_room_checker_sees_a_violation() -> None:
    stats_bad = ast.parse(
        '"""A docstring with many words is fine."""\n'
        "import pathlib\n"
        "def f(x):\n"
        '    """So is this one here."""\n'
        '    reason = f"too few items: {x} of them"\n'           # a reason: allowed
        '    if x < 0:\n'
        '        raise ValueError("x must not be negative here")\n'
        '    print(x)\n'
        '    label = "bootstrap over pairs"\n'
        '    return "the judge is order driven" if x else reason\n')
    assert english_literals(stats_bad) == [(10, "the judge is order driven")]
    assert sorted(io_uses(stats_bad)) == [(2, "import pathlib"), (8, "print()")]
    analyses_bad = ast.parse("import scipy.stats\n"
                             "def table(g, run_dir):\n"
                             "    return g['x'].mean(), g['n'] / g['m'], Path(run_dir) / f'{g.name}.csv'\n"
                             "def ranking_figure(t):\n"
                             "    return t['a'] / 2\n"
                             "def votes(df, v):\n"
                             "    if df['decoding'].nunique() < 2:\n"      # does the table apply: allowed
                             "        return None\n"
                             "    g = df.groupby('item').agg(n_A=('is_a', 'sum'))\n"
                             "    return g, (v == 'A').sum(), np.bincount(v), df['step'].nunique()\n")
    assert sorted(computed_figures(analyses_bad)) == [(1, "import scipy.stats"), (3, "division"), (3, "mean()"),
                                                      (9, "agg()"), (10, "bincount()"), (10, "nunique()"),
                                                      (10, "sum()")]
    assert not _imports_stats(analyses_bad) and _imports_stats(ast.parse("from ..stats import reliability"))
    report_bad = ast.parse("from ..stats.regions import DEFAULT_C_HIGH, failure_region\n"
                           "def render(f, c):\n"
                           "    t = f.groupby('judge').agg(n=('x', 'size'))\n"
                           "    return 'ok' if c['C'] >= 0.9 else sum(c.values())\n")
    assert sorted(report_computation(report_bad)) == [(1, "threshold DEFAULT_C_HIGH from stats"), (3, "agg()"),
                                                      (3, "groupby()"), (4, "sum()"), (4, "threshold 0.9")]


# -- engine: every judge call through the caller's public API ---------------------------------------------
# The engine room's rule: every judge call goes through the caller's *public* API.
#
# No module outside ``engine/caller.py`` touches a private method or attribute of the judge caller: an
# executor that needs something from the caller gets a public method for it (``reserve`` / ``record`` for
# calls made elsewhere), never ``caller._reserve()``.  Checked on every module of ``src/verdictlab`` and
# ``bench/``, two ways:
#
# * any ``X._name`` (or ``getattr(X, "_name")``) whose receiver ``X`` names a caller (``caller``,
#   ``lane.caller``, ``self.caller``, ``callers[j]``...);
# * any use, whatever the receiver, of a private name that only the caller defines (so an alias such as
#   ``c = lane.caller; c._reserve()`` is caught too).

PKG = SRC / "verdictlab"
BENCH = Path(__file__).resolve().parents[1] / "bench"
CALLER = PKG / "engine" / "caller.py"
CALLER_CLASS = "JudgeCaller"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _members(cls: ast.ClassDef) -> set[str]:
    """Names a class defines: its methods and class attributes, and the ``self.X`` it assigns."""
    out: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node in cls.body:
            out.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and \
                isinstance(node.value, ast.Name) and node.value.id == "self":
            out.add(node.attr)
        elif isinstance(node, ast.AnnAssign | ast.Assign) and node in cls.body:
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            out.update(t.id for t in targets if isinstance(t, ast.Name))
    return out


def caller_private_names() -> set[str]:
    tree = ast.parse(CALLER.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == CALLER_CLASS)
    return {n for n in _members(cls) if _private(n)}


def _modules() -> list[Path]:
    return sorted(p for root in (PKG, BENCH) for p in root.rglob("*.py") if p != CALLER)


def names_defined_elsewhere(modules: list[Path]) -> set[str]:
    """Private names some other class of the tree defines too (their uses are ambiguous by name alone)."""
    out: set[str] = set()
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                out |= {n for n in _members(node) if _private(n)}
    return out


def _names_a_caller(node: ast.expr) -> bool:
    return "caller" in ast.unparse(node).lower()


def private_caller_uses(source: str, unique: set[str]) -> list[str]:
    """The uses in ``source`` (as ``line: code``) of a private member on a receiver that names a caller,
    or of a private name only the caller defines."""
    found = []
    for node in ast.walk(ast.parse(source)):
        attr, receiver = None, None
        if isinstance(node, ast.Attribute) and _private(node.attr):
            attr, receiver = node.attr, node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2 and \
                isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str) and \
                _private(node.args[1].value):
            attr, receiver = node.args[1].value, node.args[0]
        if attr is None or receiver is None:
            continue
        if _names_a_caller(receiver) or attr in unique:
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_outside_the_caller_touches_its_private_members() -> None:
    private = caller_private_names()
    assert {"_areserve", "_granted", "_pending", "_slots"} <= private       # the check sees the caller's own
    modules = _modules()
    unique = private - names_defined_elsewhere(modules)
    assert "_areserve" in unique and "_pending" in unique
    offenders = {str(p.relative_to(PKG.parent.parent)): hits for p in modules
                 if (hits := private_caller_uses(p.read_text(), unique))}
    assert offenders == {}, f"use the caller's public API instead: {offenders}"


def test_the_check_catches_each_way_of_reaching_in() -> None:
    private = caller_private_names()
    unique = private - names_defined_elsewhere(_modules())
    bad = {
        "if not caller._reserve(): pass": "caller._reserve",         # a private method gone since
        "lane.caller._pending.clear()": "lane.caller._pending",
        "n = self.caller._slots._value": "self.caller._slots",
        "ok = getattr(callers[j], '_granted')(True)": "getattr(callers[j], '_granted')",
        "c = lane.caller\nawait c._areserve()": "c._areserve",       # an alias: caught by the name
    }
    for code, shown in bad.items():
        hits = private_caller_uses(code, unique)
        assert hits and shown in hits[0], code
    fine = "caller.reserve(t)\ncaller.record(t, response=r)\nself._slots(llm)\njudge._client"
    assert private_caller_uses(fine, unique) == []


# -- cli: parses arguments, calls the library, prints ------------------------------------------------------
# The CLI holds no library: a command parses its arguments, calls the library and prints.
#
# Checked on the source of every module of ``verdictlab.cli`` (imports anywhere in the module, module level
# or inside a function):
#
# 1. no computation library (pandas, numpy, scipy) and no ``verdictlab.stats``: figures come from the
#    library functions a notebook can call too;
# 2. no run store opened by the CLI (``open_store`` / ``RunStore``): reading a run is the library's job;
# 3. no DataFrame computation on what the library returned (``groupby``, ``merge``, ``value_counts``,
#    ``to_csv``...): a command prints what it is given;
# 4. every command (a function registered with ``.command(...)``) calls the library -- a name imported from
#    ``verdictlab`` outside ``verdictlab.cli`` -- itself or through a helper of its module.

CLI_DIR = SRC / "verdictlab" / "cli"
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


# -- the engine asks a backend, never switches on its provider's name ------------------------------------
def _docstring_nodes(tree: ast.AST) -> set[int]:
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def provider_names_in(tree: ast.AST, providers: set[str]) -> list[tuple[int, str]]:
    """String literals naming a judge provider (``"openai"``, ``"vllm:"``) outside docstrings: a comparison
    with one, a table keyed by them or a tuple of them is the engine switching on a provider's name --
    what it needs to know it asks the backend (``JudgeAPI.batch_adapter``, ``assumed_latency_s``,
    ``cost``, ``sdk``, ``ray_data_stage``)."""
    docs = _docstring_nodes(tree)
    return sorted((n.lineno, n.value) for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
                  and n.value.removesuffix(":") in providers)


def test_the_engine_names_no_provider() -> None:
    from verdictlab.judges import judge_prefixes

    providers = set(judge_prefixes())
    found = {path: hits for path, tree in module_trees("engine") if (hits := provider_names_in(tree, providers))}
    # a run's recorded library versions name the interpreter "python" (a stored key older than the
    # python: judge prefix), not the provider: that one literal, in that one module, is allowed
    if found.get("engine/run.py") and {name for _, name in found["engine/run.py"]} == {"python"}:
        del found["engine/run.py"]
    assert found == {}


def test_the_provider_checker_sees_a_switch_on_a_name() -> None:
    source = ('"""Docstrings may say openai."""\nif judge.provider == "anthropic":\n    pass\n'
              'MAX = {"openai": 50_000}\nBATCH = ("openai-compatible", "x")\nok = "openai-ish"\n'
              'if judge_id.startswith("vllm:"):\n    pass\n')
    hits = provider_names_in(ast.parse(source), {"openai", "openai-compatible", "anthropic", "vllm"})
    assert hits == [(2, "anthropic"), (4, "openai"), (5, "openai-compatible"), (7, "vllm:")]
