"""The CLI's one error path: every user-facing failure is one plain line on stderr and a documented
exit code (``docs/errors.md``).  Text is printed literally -- never as terminal markup -- and with
control characters shown as escapes, so a hostile label or path cannot restyle or clear the
terminal.  A traceback is printed only with ``--debug`` (or ``VERDICTLAB_DEBUG=1``).

Exit codes
----------
0 ok · 1 internal error (a bug: please report it with ``--debug`` output) · 2 usage (a wrong option
or argument) · 3 input (a config, data or template file, or an output path, that cannot be used)
· 4 incomplete run (trials left undone or failed calls; rerun to resume) · 5 store problem (the run
store cannot be opened, read or written: corrupt, locked, disk full) · 6 selftest: a planted property
was not recovered · 7 download failed (``datasets fetch``: not found, truncated, timed out, no network;
rerun to resume) · 8 downloaded file corrupted (its SHA-256 is not the pinned one) · 130 interrupted
(Ctrl-C) · 143 terminated (SIGTERM).
"""

from __future__ import annotations

import errno
import os
import sqlite3
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import typer

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_INCOMPLETE = 4
EXIT_STORE = 5
EXIT_SELFTEST_FAILED = 6
EXIT_DOWNLOAD = 7           # datasets fetch: a file could not be downloaded (verdictlab.datasets.fetch)
EXIT_CORRUPT = 8            # datasets fetch: a downloaded file is not the pinned one (SHA-256)
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143

_SQLITE_FULL = 13     # sqlite3.SQLITE_FULL (Python >= 3.11 exposes the code on the exception)
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
    """A copy of a report (dicts, lists, tuples of plain values) with every string made
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
    return value


def say(message: object, *, err: bool = True) -> None:
    """Print one plain line (see :func:`printable_line`), to stderr by default."""
    typer.echo(printable_line(message), err=err)


def problem_lines(exc: BaseException) -> list[str]:
    """The problems of a source listed at once (:class:`verdictlab.core.items.ItemProblems`), one per
    line; empty for any other error."""
    return list(getattr(exc, "lines", None) or [])


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
    folder that is read-only (an archived run on a read-only mount)."""
    if path.is_dir():
        fail(f"{path}: is a directory; give a file name with {option}", EXIT_INPUT)
    parent = next((p for p in (path.parent, *path.parent.parents) if p.exists()), None)
    if parent is not None and parent.is_dir() and not os.access(parent, os.W_OK | os.X_OK):
        fail(f"{path}: cannot write in {parent} (read-only); choose another place with {option} PATH", EXIT_INPUT)


def debug_enabled(flag: bool = False) -> bool:
    """``--debug`` given, or ``VERDICTLAB_DEBUG`` set to something other than 0/false/no."""
    return flag or os.environ.get("VERDICTLAB_DEBUG", "").strip().lower() not in ("", "0", "false", "no")


def _known(module: str, name: str) -> type[BaseException] | None:
    mod = sys.modules.get(module)
    cls = getattr(mod, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, BaseException) else None


def _input_types() -> tuple[type[BaseException], ...]:
    names = (("verdictlab.engine.config", "ConfigError"), ("verdictlab.core.items", "ItemError"),
             ("verdictlab.core.guards", "GuardError"), ("verdictlab.core.guards", "YamlFileError"),
             ("verdictlab.judges.base", "JudgeConfigError"), ("verdictlab.engine", "EngineError"),
             ("pydantic", "ValidationError"))
    return tuple(c for c in (_known(m, n) for m, n in names) if c is not None)


def _store_types() -> tuple[type[BaseException], ...]:
    names = (("verdictlab.store", "StoreError"),)
    return (sqlite3.DatabaseError, *(c for c in (_known(m, n) for m, n in names) if c is not None))


def _os_error(exc: OSError) -> tuple[int, str]:
    if exc.strerror is None:            # raised with a message of its own: it says what and where
        return EXIT_INPUT, str(exc)
    what = exc.strerror.lower()
    where = f"{exc.filename}: " if exc.filename is not None else ""
    if exc.errno == errno.ENOSPC:
        return EXIT_STORE, f"{where}no space left on the device; free some space, then rerun (a run resumes)"
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return EXIT_INPUT, f"{where}{what}; choose a place you can write (e.g. --out PATH)"
    return EXIT_INPUT, f"{where}{what}"


def classify(exc: BaseException) -> tuple[int, str]:
    """The exit code and the one-line message for an exception that reached the CLI."""
    if isinstance(exc, _store_types()):
        text = str(exc)
        if isinstance(exc, sqlite3.DatabaseError):
            text = f"run store: {text}"
            if getattr(exc, "sqlite_errorcode", None) == _SQLITE_FULL:
                text += "; free some space, then rerun (a run resumes)"
        return EXIT_STORE, text
    if isinstance(exc, _input_types()):
        return EXIT_INPUT, str(exc)
    if isinstance(exc, OSError):
        return _os_error(exc)
    if isinstance(exc, UnicodeDecodeError):
        return EXIT_INPUT, f"not UTF-8 text ({exc.reason})"
    if isinstance(exc, RecursionError):
        return EXIT_INPUT, "the input is nested too deeply to process"
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
