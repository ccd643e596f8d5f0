"""The rooms of docs/architecture.md and what each may import, read from the doc's rooms table.

The graph: every module of src/verdictlab is a node; an edge is (a) an ``import`` anywhere in a module
(tests/test_import_cycles.py), (b) a ``"verdictlab.x.y"`` or ``"verdictlab.x.y:attr"`` string -- a
registry's lazy entry, the package's lazily imported public names -- (c) a package that imports its own
modules by discovery (``pkgutil.iter_modules(__path__)``) importing each of them, and (d) a Jinja template
that includes, imports or extends a template of another room.  For every module the rooms reached by the
**transitive** closure of its edges must be in its room's list.  The table itself must be closed (a room
that may import another may import what that one may).  Every ``"verdictlab...."`` string must name a
module and an attribute that exist.  Each checker is fed a violation.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import jinja2
import jinja2.meta

from test_import_cycles import SRC, import_graph

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PKG = SRC / "verdictlab"
EVERY = "every room"
_STRING_REF = re.compile(r"verdictlab(?:\.\w+)+(?::[\w.]+)?")
_TEMPLATE_SUFFIXES = (".j2", ".html", ".jinja", ".jinja2")


# -- the table ---------------------------------------------------------------------------------------------
def read_rooms(text: str) -> dict[str, set[str] | None]:
    """``{room: allowed rooms}`` from the table between ``<!-- rooms`` and ``<!-- /rooms -->`` (None:
    every room)."""
    block = re.search(r"<!-- rooms[^>]*-->\n(.*?)<!-- /rooms -->", text, re.DOTALL)
    assert block is not None, "docs/architecture.md has no rooms table"
    rooms: dict[str, set[str] | None] = {}
    for line in block.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        room = cells[0].strip("`")
        allowed = cells[-1]
        rooms[room] = None if allowed == EVERY else set(re.findall(r"`([^`]+)`", allowed))
    return rooms


def room_of(module: str, rooms: Iterable[str]) -> str:
    """The most specific room holding ``module`` (``verdictlab.core.vocab`` -> ``core/vocab.py``)."""
    parts = module.split(".")[1:]
    candidates = []
    if not parts:
        candidates.append("__init__.py")
    else:
        candidates += ["/".join(parts) + ".py", "/".join(parts) + "/"]
        candidates += ["/".join(parts[:k]) + "/" for k in range(len(parts) - 1, 0, -1)]
    for c in candidates:
        if c in rooms:
            return c
    raise AssertionError(f"{module} is in no room of docs/architecture.md")


def covers(allowed: set[str] | None, room: str) -> bool:
    """An allowed room covers itself and, for a package (``core/``), every room inside it."""
    return allowed is None or any(room == a or (a.endswith("/") and room.startswith(a)) for a in allowed)


def unclosed(rooms: Mapping[str, set[str] | None]) -> list[str]:
    """Rooms whose list names a room without naming everything that room may import."""
    found = []
    for room, allowed in rooms.items():
        for other in sorted(allowed or ()):
            for need in sorted(rooms.get(other) or ()):
                if allowed is not None and not covers(allowed, need):
                    found.append(f"{room} may import {other}, which may import {need}: list {need} for {room}")
    return found


# -- the graph ---------------------------------------------------------------------------------------------
def _module_paths() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _docstring_ids(tree: ast.AST) -> set[int]:
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def string_refs(tree: ast.AST) -> list[str]:
    """Every ``"verdictlab.x"`` / ``"verdictlab.x:attr"`` string literal outside docstrings."""
    docs = _docstring_ids(tree)
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docs and _STRING_REF.fullmatch(n.value)]


def discovers_submodules(tree: ast.AST) -> bool:
    """The module imports its own package's modules by discovery (``pkgutil.iter_modules(__path__)``)."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "iter_modules"
               for n in ast.walk(tree))


def _top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def resolve_ref(ref: str, modules: Mapping[str, Path]) -> tuple[str | None, str]:
    """``(module, problem)`` of a string reference: the module it names, or None and why not."""
    name, _, attr = ref.partition(":")
    if name not in modules:
        return None, f"{ref!r} names no module of verdictlab"
    if attr and attr.split(".")[0] not in _top_level_names(modules[name]):
        return None, f"{ref!r}: {name} has no {attr.split('.')[0]!r}"
    return name, ""


def template_edges(pkg: Path = PKG) -> dict[str, set[str]]:
    """``{template node: modules}``: a template that includes, imports or extends a template found only in
    another room's template folder reaches that folder's package (a node per template, named like a module:
    ``verdictlab.report.templates/report.html.j2`` belongs to ``report/``)."""
    folders = {p.parent for suffix in _TEMPLATE_SUFFIXES for p in pkg.rglob(f"*{suffix}")}
    env = jinja2.Environment()
    edges: dict[str, set[str]] = {}
    for folder in folders:
        owner = ".".join(folder.parent.relative_to(pkg.parent).parts)
        for path in sorted(p for p in folder.iterdir() if p.suffix in _TEMPLATE_SUFFIXES):
            node = f"{owner}.{folder.name}/{path.name}"
            refs = jinja2.meta.find_referenced_templates(env.parse(path.read_text(encoding="utf-8")))
            reached = set()
            for ref in refs:
                if ref is None or (folder / ref).is_file():
                    continue
                others = [f for f in folders if (f / ref).is_file()]
                reached |= {".".join(f.parent.relative_to(pkg.parent).parts) for f in others} or {f"<missing {ref}>"}
            edges[node] = reached
    return edges


def full_graph() -> tuple[dict[str, set[str]], list[str]]:
    """The graph of the module docstring and the problems of the string references found."""
    modules = _module_paths()
    graph = {m: set(t) for m, t in import_graph().items()}
    problems = []
    for mod, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for ref in string_refs(tree):
            target, problem = resolve_ref(ref, modules)
            if target is None:
                problems.append(f"{mod}: {problem}")
            elif target != mod:
                graph[mod].add(target)
        if path.name == "__init__.py" and discovers_submodules(tree):
            graph[mod] |= {m for m in modules if m.startswith(f"{mod}.") and not m.split(".")[-1].startswith("_")}
    graph.update(template_edges())
    return graph, problems


def closure(graph: Mapping[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        for nxt in graph.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def room_violations(graph: Mapping[str, set[str]], rooms: Mapping[str, set[str] | None]) -> list[str]:
    """Modules that reach, through any chain of edges, a room outside their room's list."""
    found = []
    for mod in sorted(graph):
        own = room_of(mod, rooms)
        allowed = rooms[own]
        for target in sorted(closure(graph, mod)):
            if target.startswith("<missing"):
                found.append(f"{mod} includes a template that no template folder holds: {target}")
                continue
            there = room_of(target, rooms)
            inside = own.endswith("/") and there.startswith(own)          # core/ may use core/vocab.py
            if there != own and not inside and not covers(allowed, there):
                found.append(f"{mod} reaches {target} ({own} may not import {there})")
    return found


# -- the checks ------------------------------------------------------------------------------------------
def test_the_rooms_table_covers_the_tree_and_is_closed() -> None:
    rooms = read_rooms(DOC.read_text(encoding="utf-8"))
    assert {"errors.py", "core/vocab.py", "core/", "stats/", "analyses/", "workflows/", "report/", "cli/"} <= set(rooms)
    named = {r for allowed in rooms.values() for r in (allowed or ())}
    assert named <= set(rooms), named - set(rooms)
    for mod in _module_paths():
        room_of(mod, rooms)                       # every module is in a room
    assert unclosed(rooms) == []


def test_every_module_reaches_only_what_its_room_may_import() -> None:
    rooms = read_rooms(DOC.read_text(encoding="utf-8"))
    graph, _ = full_graph()
    assert room_violations(graph, rooms) == []


def test_every_verdictlab_string_names_a_module_and_attribute_that_exist() -> None:
    _, problems = full_graph()
    assert problems == []


def test_the_public_names_of_the_package_load() -> None:
    """The package's lazily imported names (strings the layout move once left pointing at removed modules)."""
    import verdictlab

    for name in verdictlab.__all__:
        assert getattr(verdictlab, name) is not None


# -- each checker sees a violation -----------------------------------------------------------------------
ROOMS = {"errors.py": set(), "core/vocab.py": set(), "core/": {"errors.py"}, "stats/": {"core/vocab.py"},
         "judges/": {"core/", "errors.py"}, "engine/": {"judges/", "core/", "errors.py"}, "cli/": None}


def test_the_transitive_check_sees_a_room_reached_through_another() -> None:
    # stats may import core/vocab.py; vocab importing the core's items (which imports errors) is seen from
    # stats twice: stats reaches core/ and errors.py through vocab
    graph = {"verdictlab.stats.x": {"verdictlab.core.vocab"}, "verdictlab.core.vocab": {"verdictlab.core.items"},
             "verdictlab.core.items": {"verdictlab.errors"}, "verdictlab.errors": set()}
    found = room_violations(graph, ROOMS)
    assert "verdictlab.stats.x reaches verdictlab.core.items (stats/ may not import core/)" in found
    assert "verdictlab.stats.x reaches verdictlab.errors (stats/ may not import errors.py)" in found
    assert "verdictlab.core.vocab reaches verdictlab.core.items (core/vocab.py may not import core/)" in found


def test_the_string_check_sees_a_lazy_entry_as_an_import_and_a_dangling_one() -> None:
    tree = ast.parse('"""Docstrings may say verdictlab.engine.run."""\n'
                     'register_judge("x", "verdictlab.engine.run:run_config")\n'
                     'OLD = {"RunConfig": "verdictlab.config"}\n')
    refs = string_refs(tree)
    assert refs == ["verdictlab.engine.run:run_config", "verdictlab.config"]
    modules = _module_paths()
    assert resolve_ref(refs[0], modules) == ("verdictlab.engine.run", "")
    assert resolve_ref(refs[1], modules)[0] is None                       # moved away: a dangling string
    assert resolve_ref("verdictlab.engine.run:no_such_name", modules)[0] is None
    # a judge registering an engine function by string reaches the engine: judges/ may not
    graph = {"verdictlab.judges.x": {"verdictlab.engine.run"}, "verdictlab.engine.run": set()}
    assert room_violations(graph, ROOMS) == [
        "verdictlab.judges.x reaches verdictlab.engine.run (judges/ may not import engine/)"]


def test_the_discovery_and_template_checks_see_their_edges(tmp_path: Path) -> None:
    assert discovers_submodules(ast.parse("for m in pkgutil.iter_modules(__path__):\n    import_module(m.name)\n"))
    assert not discovers_submodules(ast.parse("import pkgutil\n"))
    pkg = tmp_path / "verdictlab"
    for room in ("report", "view"):
        (pkg / room / "templates").mkdir(parents=True)
    (pkg / "view" / "templates" / "base.html").write_text("<html>{% block b %}{% endblock %}</html>")
    (pkg / "report" / "templates" / "page.j2").write_text('{% extends "base.html" %}{% include "gone.j2" %}')
    edges = template_edges(pkg)
    assert edges["verdictlab.report.templates/page.j2"] == {"verdictlab.view", "<missing gone.j2>"}
    assert edges["verdictlab.view.templates/base.html"] == set()


def test_the_closure_check_sees_an_unclosed_table() -> None:
    rooms = {**ROOMS, "engine/": {"judges/", "errors.py"}}        # judges may import core/; engine does not list it
    assert unclosed(rooms) == ["engine/ may import judges/, which may import core/: list core/ for engine/"]
    assert unclosed(ROOMS) == []
