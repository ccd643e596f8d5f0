"""The CLI's one error path: every user-facing failure is one plain line on stderr and a documented
exit code (``docs/errors.md``).  Text is printed literally -- never as terminal markup -- and with
control characters shown as escapes, so a hostile label or path cannot restyle or clear the
terminal.  A traceback is printed only with ``--debug`` (or ``VERDICTLAB_DEBUG=1``).

The exit code of an error is its ``exit_code`` (:mod:`verdictlab.errors`, the one error tree): no command
chooses a code for an error it catches.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Mapping
from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from typing import Any, NoReturn

import typer

from ..errors import (
    EXIT_INCOMPLETE,
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SELFTEST_FAILED,
    EXIT_STORE,
    EXIT_TERMINATED,
    EXIT_USAGE,
    InputError,
    VerdictlabError,
    wrap,
)

__all__ = [
    "EXIT_INCOMPLETE", "EXIT_INPUT", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_SELFTEST_FAILED",
    "EXIT_STORE", "EXIT_TERMINATED", "EXIT_USAGE", "check_writable", "classify", "debug_enabled", "fail",
    "handle", "printable", "printable_line", "printable_view", "problem_lines", "say", "say_error",
]

_BIDI = {0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def printable_line(text: object) -> str:
    """``text`` as one printable line: newlines and other control characters (ANSI escapes, bidi
    overrides, line separators) become visible escapes such as ``\\x1b``."""
    out = []
    for ch in str(text):
        code = ord(ch)
        if code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0 or code in _BIDI:
            out.append("; " if ch == "\n" else f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def printable(text: object) -> str:
    """Like :func:`printable_line`, but newlines are kept (multi-line table cells, reports)."""
    return "\n".join(printable_line(line) for line in str(text).split("\n"))


def printable_view(value: Any) -> Any:
    """A copy of a report (its dataclasses, dicts, lists, tuples of plain values) with every string made
    :func:`printable`, for terminal and Markdown output; JSON and HTML escape on their own."""
    if isinstance(value, str):
        return printable(value) if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or ord(c) in _BIDI
                                       for c in value if c != "\n") else value
    if isinstance(value, Mapping):       # dicts and the report's read-only mapping
        return {k: printable_view(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable_view(v) for v in value]
    if isinstance(value, tuple):
        return tuple(printable_view(v) for v in value)
    if is_dataclass(value) and not isinstance(value, type):     # the typed report and its parts
        return replace(value, **{f.name: printable_view(getattr(value, f.name)) for f in fields(value) if f.init})
    return value


def say(message: object, *, err: bool = True) -> None:
    """Print one plain line (see :func:`printable_line`), to stderr by default."""
    typer.echo(printable_line(message), err=err)


def problem_lines(exc: BaseException) -> list[str]:
    """The problems of a source listed at once (:class:`verdictlab.core.items.ItemProblems`), one per
    line; empty for any other error."""
    return list(getattr(exc, "lines", None) or [])


def problem_list(exc: BaseException) -> list[str]:
    """Every problem ``exc`` reports, one line each, for a JSON result's ``problems``: the lines of a list
    of problems, or the one problem of a single source error worded the same way (``row 2: invalid
    JSON ...``; its file is in the result's ``error``), or the message of any other error.  Never empty."""
    lines = problem_lines(exc)
    if lines:
        return lines
    from ..core.items import ItemError, ItemProblems

    if isinstance(exc, ItemError):
        return ItemProblems([exc], path=exc.path).lines
    return [str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)]


def say_error(message: object) -> None:
    """``error: MESSAGE`` as one plain line -- or, for every problem of a source found at once
    (:class:`verdictlab.core.items.ItemProblems`), a first line naming the file and how many, then one
    plain line per problem."""
    lines = problem_lines(message) if isinstance(message, BaseException) else []
    if not lines:
        say(f"error: {message}")
        return
    say(f"error: {str(message).split(chr(10), 1)[0]}")
    shown = str(message).split("\n")[1:]
    for line in shown:
        say(line)


def fail(message: object, code: int = EXIT_INPUT) -> NoReturn:
    """Print ``error: MESSAGE`` as one plain line on stderr (several lines for a list of problems,
    :func:`say_error`) and exit with ``code``.  Called while handling an exception and with
    ``--debug``, the traceback of that exception comes first."""
    current = sys.exc_info()[1]
    if current is not None and debug_enabled(_root_debug_flag()):
        traceback.print_exception(current, file=sys.stderr)
    say_error(message)
    raise typer.Exit(code)


def _root_debug_flag() -> bool:
    """``--debug`` as given to the root command (``verdictlab --debug ...``), if a command is running."""
    from typer._click.globals import get_current_context

    ctx = get_current_context(silent=True)
    return bool(ctx is not None and ctx.find_root().params.get("debug"))


def check_writable(path: Path, *, option: str = "--out") -> None:
    """Fail early (exit 3, before any work) when ``path`` cannot be written: a directory, or a
    folder that is read-only (an archived run on a read-only mount).  ``-`` is stdout: always writable."""
    if str(path) == "-":
        return
    if path.is_dir():
        raise InputError(f"{path}: is a directory; give a file name with {option}")
    parent = next((p for p in (path.parent, *path.parent.parents) if p.exists()), None)
    if parent is not None and parent.is_dir() and not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{path}: cannot write in {parent} (read-only); choose another place with {option} PATH")


def debug_enabled(flag: bool = False) -> bool:
    """``--debug`` given, or ``VERDICTLAB_DEBUG`` set to something other than 0/false/no."""
    return flag or os.environ.get("VERDICTLAB_DEBUG", "").strip().lower() not in ("", "0", "false", "no")


def classify(exc: BaseException) -> tuple[int, str]:
    """The exit code and the one-line message for an exception that reached the CLI: an error of the
    tree (:mod:`verdictlab.errors`, a third-party error wrapped by :func:`verdictlab.errors.wrap`) by its
    ``exit_code``; a stop by signal by its own; anything else is a bug (exit 1)."""
    exc = wrap(exc)
    if isinstance(exc, VerdictlabError) and exc.exit_code != EXIT_INTERNAL:
        return exc.exit_code, str(exc)
    if isinstance(exc, KeyboardInterrupt):     # Ctrl-C, or SIGTERM as verdictlab.core.stopping.Stopped
        return getattr(exc, "exit_code", EXIT_INTERRUPTED), getattr(exc, "reason", "interrupted")
    return EXIT_INTERNAL, (f"internal error: {type(exc).__name__}: {exc} (a bug in verdictlab; rerun with "
                           "--debug for the traceback and please report it)")


def handle(exc: BaseException, *, debug: bool = False) -> NoReturn:
    """Turn an exception that escaped a command into one line and an exit code; with --debug
    the traceback is printed first."""
    code, message = classify(exc)
    if debug_enabled(debug):
        traceback.print_exception(exc, file=sys.stderr)
    say_error(exc if problem_lines(exc) else message)
    raise typer.Exit(code)
