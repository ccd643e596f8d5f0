"""Where a command's result goes: stdout, or the file given with ``-o/--out`` (then one "written to" line
on stderr).  Data never shares stdout with messages: every message goes through
:func:`verdictlab.cli._errors.say` to stderr."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from ._errors import say

WIDE = 180      # piped or written tables get this width instead of rich's 80-column default


def emit(text: str, out: Path | None, *, what: str = "output") -> None:
    """``text`` on stdout, or into ``out`` (UTF-8, a final newline added) with a line on stderr."""
    if out is None:
        typer.echo(text)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    say(f"{what} written to {out}")


@contextlib.contextmanager
def console(out: Path | None, *, what: str = "output", **options: Any) -> Iterator[Any]:
    """A rich console printing plain data to stdout (terminal width on a terminal, :data:`WIDE` when
    piped) or into ``out``."""
    from rich.console import Console

    if out is None:
        yield Console(**options) if sys.stdout.isatty() else Console(width=WIDE, **options)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        yield Console(file=fh, width=WIDE, **options)
    say(f"{what} written to {out}")
