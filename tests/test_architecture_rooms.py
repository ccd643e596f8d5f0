"""The rooms of docs/architecture.md: what each may import, and the one sentence per room held for
stats, analyses and report.

Imports: every import of a verdictlab module anywhere in a module (module level or inside a function;
not under ``if TYPE_CHECKING:``) is an edge, as in tests/test_import_cycles.py.  The rules are the
"must not" side of the architecture's table: data flows one way, statistics stay pure, judges know
nothing of datasets or statistics, analyses and the report never call a judge, protocols only build
messages and parse.

The room sentences, checked on the source (``ast``) of each module:

* **stats** = pure numbers from frames: imports only ``vocab`` (above); no I/O (no file, network,
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

The cli and engine sentences are checked in their own test file; :func:`module_trees` and the
checkers below take any room.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from test_import_cycles import SRC, import_graph

# room -> the only rooms it may import (the bottom of the stack)
ONLY: dict[str, set[str]] = {
    "vocab": set(),
    "_registry": set(),
    "_redact": set(),
    "items": {"vocab"},
    "design": {"vocab"},
    "judgment": {"vocab", "design"},
    "stats": {"vocab"},
}

# room -> rooms it must not import (a room is a top-level module or subpackage of verdictlab)
FORBIDDEN: dict[str, set[str]] = {
    "store": {"engine", "cli", "judges", "protocols", "stats", "analyses", "report", "importers", "datasets"},
    "judges": {"engine", "cli", "datasets", "stats", "store", "analyses", "report", "importers"},
    "protocols": {"engine", "cli", "judges", "datasets", "stats", "store", "analyses", "report", "importers"},
    "datasets": {"engine", "cli", "judges", "stats", "store", "analyses", "report", "importers"},
    "importers": {"engine", "cli", "judges", "analyses", "report"},
    "analyses": {"engine", "cli", "judges", "report", "importers"},
    "report": {"engine", "cli", "judges", "protocols", "datasets", "importers"},
    "engine": {"cli", "analyses", "report", "importers"},
    # the viewer reads the store and takes outcomes from stats; it never runs, imports or reports
    "view": {"engine", "cli", "judges", "protocols", "datasets", "importers", "analyses", "report"},
}


# Old names kept importable from their previous home through a lazy module __getattr__ (the tables
# moved out of protocols into analyses).  Not a dependency of the protocol code; drop an entry when
# the old name goes.
COMPAT_REEXPORTS: set[tuple[str, str]] = set()   # protocols' table shims are gone (they closed a cycle)


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _violations(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for mod, targets in sorted(graph.items()):
        src = _room(mod)
        for t in sorted(targets):
            dst = _room(t)
            if not dst or dst == src or (mod, t) in COMPAT_REEXPORTS:
                continue
            if (src in ONLY and dst not in ONLY[src]) or dst in FORBIDDEN.get(src, ()):
                found.append(f"{mod} imports {t} ({src} must not import {dst})")
    return found


def test_rooms_import_only_what_the_architecture_allows() -> None:
    assert _violations(import_graph()) == []


def test_the_checker_sees_forbidden_imports() -> None:
    graph = {"verdictlab.stats.x": {"verdictlab.engine.caller", "verdictlab.vocab"},
             "verdictlab.report.build": {"verdictlab.judges.sim", "verdictlab.stats.x"},
             "verdictlab.engine.caller": {"verdictlab.judges.base"}}
    assert _violations(graph) == [
        "verdictlab.report.build imports verdictlab.judges.sim (report must not import judges)",
        "verdictlab.stats.x imports verdictlab.engine.caller (stats must not import engine)",
    ]


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


def computed_figures(tree: ast.Module) -> list[tuple[int, str]]:
    """Means, variances, correlations, statistics libraries and divisions (rates) outside a figure."""
    parents = _parents(tree)
    found = []
    for node in ast.walk(tree):
        if _in_figure(node, parents):
            continue
        if isinstance(node, ast.Call) and _call_name(node) in _STATISTICS:
            found.append((node.lineno, f"{_call_name(node)}()"))
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


def test_report_renders_and_computes_nothing_outside_readings() -> None:
    found = [f"{p}:{line}: {what}" for p, tree in module_trees("report") if p != READINGS
             for line, what in report_computation(tree)]
    assert found == []


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
                             "    return t['a'] / 2\n")
    assert sorted(computed_figures(analyses_bad)) == [(1, "import scipy.stats"), (3, "division"), (3, "mean()")]
    assert not _imports_stats(analyses_bad) and _imports_stats(ast.parse("from ..stats import reliability"))
    report_bad = ast.parse("from ..stats.regions import DEFAULT_C_HIGH, failure_region\n"
                           "def render(f, c):\n"
                           "    t = f.groupby('judge').agg(n=('x', 'size'))\n"
                           "    return 'ok' if c['C'] >= 0.9 else sum(c.values())\n")
    assert sorted(report_computation(report_bad)) == [(1, "threshold DEFAULT_C_HIGH from stats"), (3, "agg()"),
                                                      (3, "groupby()"), (4, "sum()"), (4, "threshold 0.9")]
