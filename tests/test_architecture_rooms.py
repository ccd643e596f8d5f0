"""The rooms of docs/architecture.md and what each must not import (issue 10, item 7).

Every import of a verdictlab module anywhere in a module (module level or inside a function; not
under ``if TYPE_CHECKING:``) is an edge, as in tests/test_import_cycles.py.  The rules are the
"must not" side of the architecture's table: data flows one way, statistics stay pure, judges know
nothing of datasets or statistics, analyses and the report never call a judge, protocols only build
messages and parse.
"""

from __future__ import annotations

from test_import_cycles import import_graph

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
