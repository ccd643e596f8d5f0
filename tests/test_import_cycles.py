"""No import cycles between the modules of src/verdictlab (issue 10, item 6).

Static: every ``import`` / ``from ... import`` of a verdictlab module anywhere in a module -- at module
level or inside a function (a lazy import hides a cycle, it does not remove it) -- is an edge, except
imports under ``if TYPE_CHECKING:``.  ``from pkg import name`` is an edge to ``pkg.name`` when that is
a module, else to ``pkg``.  Importing a submodule is not counted as importing its package's
``__init__`` (that is Python's loading order, not a dependency of the code).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = "verdictlab"


def _modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / PKG).rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.append(child)
            visit(child)

    visit(tree)
    return found


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        is_package = path.name == "__init__.py"
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = _resolve(mod, is_package, node)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                while t and t not in mods:       # "verdictlab.x.y" where y is a name in module x
                    t = t.rpartition(".")[0]
                if t.startswith(PKG) and t != mod and t in mods:
                    graph[mod].add(t)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    sccs: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    import sys

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return sccs


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = {start}, [start]
    while todo:
        v = todo.pop()
        if v == goal:
            return True
        for w in graph.get(v, ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return False


def test_the_checker_finds_a_cycle() -> None:
    g = {"verdictlab.a": {"verdictlab.b"}, "verdictlab.b": {"verdictlab.c"}, "verdictlab.c": {"verdictlab.a"},
         "verdictlab.d": {"verdictlab.a"}}
    assert find_cycles(g) == [["verdictlab.a", "verdictlab.b", "verdictlab.c"]]
    assert find_cycles({"verdictlab.a": {"verdictlab.b"}, "verdictlab.b": set()}) == []


def test_lazy_and_relative_imports_are_edges(tmp_path: Path) -> None:
    tree = ast.parse("from __future__ import annotations\nfrom typing import TYPE_CHECKING\n"
                     "if TYPE_CHECKING:\n    from .x import Y\n"
                     "def f():\n    from ..probes import apply_probe\n")
    nodes = _imports(tree)
    froms = [n for n in nodes if isinstance(n, ast.ImportFrom) and n.level]
    assert [(_resolve("verdictlab.datasets.registry", False, n)) for n in froms] == ["verdictlab.probes"]


# Imports that close a cycle and are being removed by their owners (issue 10 items 4-5 are R2's; the Ray
# executor is issue 15's).  Each entry is one edge (importer, imported); the graph without these edges must be
# acyclic, and an entry whose edge no longer exists fails the test too, so the list only shrinks.
KNOWN_EDGES: dict[tuple[str, str], str] = {}


def test_no_import_cycles_in_verdictlab() -> None:
    graph = import_graph()
    present = [e for e in KNOWN_EDGES if e[1] in graph.get(e[0], set())]
    for a, b in KNOWN_EDGES:
        graph.get(a, set()).discard(b)
    # a listed edge is stale when it is gone or no longer closes a cycle (its target cannot reach its source)
    stale = [e for e in KNOWN_EDGES if e not in present or not _reaches(graph, e[1], e[0])]
    cycles = find_cycles(graph)
    assert cycles == [], "import cycles (each line one strongly connected set of modules):\n" + "\n".join(
        " <-> ".join(c) for c in cycles)
    assert not stale, f"these known cycle edges are gone or close no cycle any more: delete them from KNOWN_EDGES: {stale}"


def test_no_import_cycles_between_rooms() -> None:
    """The one-way flow of docs/architecture.md at the level of rooms (``verdictlab.X`` packages and top modules):
    collapsing modules into their room must leave the graph acyclic, lazy imports included."""
    def room(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else parts[0]

    graph = import_graph()
    rooms: dict[str, set[str]] = {room(m): set() for m in graph}
    for a, targets in graph.items():
        for b in targets:
            if room(a) != room(b):
                rooms.setdefault(room(a), set()).add(room(b))
                rooms.setdefault(room(b), set())
    assert find_cycles(rooms) == []
