"""Where a command's output goes.  Data -- tables, JSON, Markdown, figures -- goes to stdout or to the
file given with ``-o/--out`` (then one "written to" line on stderr); messages -- progress, summaries,
"written to", warnings -- go to stderr (:func:`message_console`, :func:`verdictlab.cli._errors.say`).
Every rich console of the CLI comes from here, so a closed pipe (``verdictlab validate RUN | head``)
ends every command the same way: quietly, with exit 0."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from ._errors import EXIT_OK, say

WIDE = 180      # piped or written tables get this width instead of rich's 80-column default


class _DataConsole(Console):
    """A console for data on stdout: when the reader of the pipe has gone, stop quietly (exit 0) instead
    of rich's exit 1."""

    def on_broken_pipe(self) -> None:
        quiet_broken_pipe()


def quiet_broken_pipe() -> None:
    """The reader of stdout went away (``| head``): what it asked for was written, so end quietly with 0
    -- no message, and no error at exit from flushing into the closed pipe."""
    with contextlib.suppress(OSError, ValueError):   # a stdout without a file descriptor (captured in tests)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    raise typer.Exit(EXIT_OK)


def data_console(*, wide: bool = True, **options: Any) -> Console:
    """A console printing data to stdout: the terminal's width on a terminal; :data:`WIDE` when piped
    or captured (``wide=False``: rich's default)."""
    if wide and not sys.stdout.isatty() and "width" not in options:
        options["width"] = WIDE
    return _DataConsole(**options)


def message_console(**options: Any) -> Console:
    """A console printing messages (progress, summaries, warnings) to stderr."""
    return Console(file=sys.stderr, **options)


def emit(text: str, out: Path | None, *, what: str = "output") -> None:
    """``text`` on stdout, or into ``out`` (UTF-8, a final newline added) with a line on stderr."""
    if out is None:
        typer.echo(text)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    say(f"{what} written to {out}")


@contextlib.contextmanager
def console(out: Path | None, *, what: str = "output", **options: Any) -> Iterator[Console]:
    """A console printing data to stdout (:func:`data_console`) or into ``out``."""
    if out is None:
        yield data_console(**options)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        yield Console(file=fh, width=WIDE, **options)
    say(f"{what} written to {out}")
