"""The engine room's rule: every judge call goes through the caller's *public* API.

No module outside ``engine/caller.py`` touches a private method or attribute of the judge caller: an
executor that needs something from the caller gets a public method for it (``reserve`` / ``record`` for
calls made elsewhere), never ``caller._reserve()``.  Checked on every module of ``src/verdictlab`` and
``bench/``, two ways:

* any ``X._name`` (or ``getattr(X, "_name")``) whose receiver ``X`` names a caller (``caller``,
  ``lane.caller``, ``self.caller``, ``callers[j]``...);
* any use, whatever the receiver, of a private name that only the caller defines (so an alias such as
  ``c = lane.caller; c._reserve()`` is caught too).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "verdictlab"
BENCH = Path(__file__).resolve().parents[1] / "bench"
CALLER = SRC / "engine" / "caller.py"
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
    return sorted(p for root in (SRC, BENCH) for p in root.rglob("*.py") if p != CALLER)


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
    offenders = {str(p.relative_to(SRC.parent.parent)): hits for p in modules
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
