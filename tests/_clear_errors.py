"""The shape of a clear input error, shared by the fuzz tests: one line naming the file -- or, when a
data file has several problems (all listed at once, verdictlab.core.items.ItemProblems), a first line naming
the file and how many, then one line per kind of problem."""

from __future__ import annotations

from pathlib import Path

from verdictlab.core.items import MAX_PROBLEMS, ItemProblems


def one_clear_line(exc: Exception, path: Path) -> None:
    msg = str(exc)
    head, *rest = msg.split("\n")
    assert head.strip(), msg
    assert str(path) in head or path.name in head, msg
    if rest:
        assert isinstance(exc, ItemProblems) and len(exc.problems) >= 2, msg
        listed = [f"  {line}" for line in exc.lines[:MAX_PROBLEMS]]
        assert rest[:len(listed)] == listed, msg
        assert all(line.startswith("  ... and ") for line in rest[len(listed):]), msg
