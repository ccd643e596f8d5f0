"""One error tree: every error verdictlab raises for a reason a user can act on is a
:class:`VerdictlabError`, and its ``exit_code`` is the one the command line exits with
(``docs/errors.md``; ``tests/test_errors_tree.py`` checks that page against this module).

    VerdictlabError            1  (the base; raise one of its kinds)
    ├── UsageError             2  a wrong option or argument
    ├── InputError             3  a config, data, template or label file, or an output path, that cannot be used
    ├── IncompleteRunError     4  trials left undone, or calls failed for good (rerun to resume)
    ├── StoreError             5  the run store cannot be opened, read or written
    ├── SelftestFailedError    6  a planted property was not recovered
    ├── DownloadError          7  a public benchmark's file could not be downloaded (rerun to resume)
    └── ChecksumError          8  a downloaded file is not the pinned one (its SHA-256 differs)

Each room's own errors are kinds of these (``ItemError`` and ``ConfigError`` are input errors,
``DriftError`` a usage error, ``verdictlab.store.StoreError`` is :class:`StoreError` itself), so a caller
catches one name -- ``except VerdictlabError`` -- or a kind.  A stop by Ctrl-C or SIGTERM is not an
``Exception`` (``except Exception`` must never swallow it): it stays a ``KeyboardInterrupt``
(:class:`verdictlab.core.stopping.Stopped`) that carries the same ``exit_code`` attribute (130 / 143).

An error of a third-party library (SQLite, the file system, pydantic, a decoder) is turned into one of
these where it reaches the library's edge: :func:`wrap`.  An ``Exception`` that is none of them is a
bug (exit 1).  A function handed an argument its caller should never pass (a programming error, not a
user's) may still raise ``ValueError`` / ``TypeError``.  This module imports nothing of verdictlab:
every room may import it.
"""

from __future__ import annotations

import errno
import sqlite3
import sys
from typing import ClassVar

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_INCOMPLETE = 4
EXIT_STORE = 5
EXIT_SELFTEST_FAILED = 6
EXIT_DOWNLOAD = 7
EXIT_CORRUPT = 8
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143

_SQLITE_FULL = 13     # sqlite3.SQLITE_FULL (Python >= 3.11 exposes the code on the exception)


class VerdictlabError(Exception):
    """The base of every verdictlab error.  ``exit_code`` is the command line's exit code for it and
    ``meaning`` the few words ``--help`` shows beside the code."""

    exit_code: ClassVar[int] = EXIT_INTERNAL
    meaning: ClassVar[str] = "internal error"


class UsageError(VerdictlabError, ValueError):
    """A wrong option or argument: an unknown name, a value out of range, options that do not go
    together."""

    exit_code = EXIT_USAGE
    meaning = "usage"


class InputError(VerdictlabError, ValueError):
    """A config, data, template or label file that cannot be used (missing, not UTF-8, malformed, a
    bad field, over a limit), or an output path that cannot be written; the message names the file,
    row and field."""

    exit_code = EXIT_INPUT
    meaning = "bad input"


class IncompleteRunError(VerdictlabError):
    """A run ended with trials left undone (budget reached, a judge halted) or calls failed for good;
    rerunning resumes it."""

    exit_code = EXIT_INCOMPLETE
    meaning = "incomplete run"


class StoreError(VerdictlabError, RuntimeError):
    """The run store cannot be opened, read or written: missing, corrupt, locked, newer than this
    verdictlab, or the disk is full."""

    exit_code = EXIT_STORE
    meaning = "run store problem"


class SelftestFailedError(VerdictlabError):
    """``selftest``: a property planted in a simulated run was not recovered."""

    exit_code = EXIT_SELFTEST_FAILED
    meaning = "a planted property not recovered"


class DownloadError(VerdictlabError):
    """``datasets fetch``: a file could not be downloaded -- not found, an HTTP error, a body cut short, a
    server silent too long, no network.  What arrived is kept, and the next fetch resumes from it."""

    exit_code = EXIT_DOWNLOAD
    meaning = "download failed"


class ChecksumError(VerdictlabError):
    """``datasets fetch``: a downloaded file is not the pinned one (its SHA-256 or size differs); it was
    deleted."""

    exit_code = EXIT_CORRUPT
    meaning = "downloaded file corrupted"


#: the kinds of error, one per exit code (the base is the internal error), in exit-code order
KINDS: tuple[type[VerdictlabError], ...] = (VerdictlabError, UsageError, InputError, IncompleteRunError,
                                            StoreError, SelftestFailedError, DownloadError, ChecksumError)

#: exit codes that are not errors of the tree: done, and a stop by signal (a KeyboardInterrupt)
OTHER_EXITS: dict[int, str] = {EXIT_OK: "ok", EXIT_INTERRUPTED: "interrupted", EXIT_TERMINATED: "terminated"}


def exit_meanings() -> dict[int, str]:
    """Every exit code of the command line and its few words, in code order."""
    return dict(sorted({**OTHER_EXITS, **{k.exit_code: k.meaning for k in KINDS}}.items()))


def _os_error(exc: OSError) -> VerdictlabError:
    if exc.strerror is None:            # raised with a message of its own: it says what and where
        return InputError(str(exc))
    what = exc.strerror.lower()
    where = f"{exc.filename}: " if exc.filename is not None else ""
    if exc.errno == errno.ENOSPC:
        return StoreError(f"{where}no space left on the device; free some space, then rerun (a run resumes)")
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return InputError(f"{where}{what}; choose a place you can write (e.g. --out PATH)")
    return InputError(f"{where}{what}")


def _sqlite_error(exc: sqlite3.DatabaseError) -> StoreError:
    text = f"run store: {exc}"
    if getattr(exc, "sqlite_errorcode", None) == _SQLITE_FULL:
        text += "; free some space, then rerun (a run resumes)"
    return StoreError(text)


def _is_validation_error(exc: BaseException) -> bool:
    pydantic = sys.modules.get("pydantic")          # never imported here: only an error it raised is seen
    return pydantic is not None and isinstance(exc, pydantic.ValidationError)


def wrap(exc: BaseException) -> BaseException:
    """``exc`` as an error of the tree when it is a third-party error with a known meaning -- a SQLite
    error is a store problem; a file that cannot be read or written, text that is not UTF-8, input
    nested too deeply or a pydantic validation error is bad input; a full disk is a store problem --
    with the cause kept as ``__cause__``.  Anything else (an error of the tree, a stop, a bug) is
    returned as it is."""
    wrapped: VerdictlabError | None = None
    if isinstance(exc, VerdictlabError):
        return exc
    if isinstance(exc, sqlite3.DatabaseError):
        wrapped = _sqlite_error(exc)
    elif isinstance(exc, OSError):
        wrapped = _os_error(exc)
    elif isinstance(exc, UnicodeDecodeError):
        wrapped = InputError(f"not UTF-8 text ({exc.reason})")
    elif isinstance(exc, RecursionError):
        wrapped = InputError("the input is nested too deeply to process")
    elif _is_validation_error(exc):
        wrapped = InputError(str(exc))
    if wrapped is None:
        return exc
    wrapped.__cause__ = exc
    return wrapped


__all__ = [
    "EXIT_CORRUPT",
    "EXIT_DOWNLOAD",
    "EXIT_INCOMPLETE",
    "EXIT_INPUT",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_SELFTEST_FAILED",
    "EXIT_STORE",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "KINDS",
    "OTHER_EXITS",
    "ChecksumError",
    "DownloadError",
    "IncompleteRunError",
    "InputError",
    "SelftestFailedError",
    "StoreError",
    "UsageError",
    "VerdictlabError",
    "exit_meanings",
    "wrap",
]
