"""Where a command's output goes.  Data -- tables, JSON, Markdown, figures -- goes to stdout or to the
file given with ``-o/--out`` (then one "written to" line on stderr); messages -- progress, summaries,
"written to", warnings -- go to stderr (:func:`message_console`, :func:`verdictlab.cli._errors.say`).
A closed pipe (``verdictlab validate RUN | head``, ``... | true``) changes nothing but where the data goes:
:func:`verdictlab.cli._stdout.guard_stdout` (installed by the program before a command runs) sends whatever is written after the
reader has gone to ``/dev/null``, so the command goes on quietly and ends with the exit code it has
without the pipe -- 0 when it worked, 3 for a missing file -- and a script's ``set -o pipefail`` sees it."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from ._errors import say
from ._stdout import to_devnull

WIDE = 180      # piped or written tables get this width instead of rich's 80-column default


class _DataConsole(Console):
    """A console for data on stdout: when the reader of the pipe has gone, the rest goes nowhere and the
    command goes on (rich's own handling exits 1, whatever the command would have ended with)."""

    def on_broken_pipe(self) -> None:
        stdout_to_devnull()


def stdout_to_devnull() -> None:
    """The reader of stdout went away (``| head``): what it asked for was written; point the file
    descriptor at ``/dev/null`` so the rest of the output (and the flush at exit) goes nowhere, quietly."""
    with contextlib.suppress(OSError, ValueError):   # a stdout without a file descriptor (captured in tests)
        to_devnull(sys.stdout.fileno())


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
    """``text`` on stdout (``out`` None or ``-``), or into ``out`` (UTF-8, a final newline added) with a
    line on stderr."""
    if out is None or str(out) == "-":
        typer.echo(text)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    say(f"{what} written to {out}")


@contextlib.contextmanager
def console(out: Path | None, *, what: str = "output", **options: Any) -> Iterator[Console]:
    """A console printing data to stdout (:func:`data_console`; ``out`` None or ``-``) or into ``out``."""
    if out is None or str(out) == "-":
        yield data_console(**options)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        yield Console(file=fh, width=WIDE, **options)
    say(f"{what} written to {out}")
