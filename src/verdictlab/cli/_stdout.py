"""stdout that survives its reader going away (standard library only: installed before the command
modules load).  ``verdictlab validate RUN | head`` and ``... | true`` close the pipe early; a write into it
would raise :class:`BrokenPipeError` wherever the command happened to print and end it with a code of its
own.  With :func:`guard_stdout` the rest of the output goes to ``/dev/null`` and the command ends as it
would have without the pipe (docs/cli.md)."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from typing import Any

__all__ = ["guard_stdout", "to_devnull"]


def to_devnull(fd: int) -> None:
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


class _ReaderGoneIsQuiet(io.FileIO):
    """stdout's file descriptor, written through: once its reader has gone (EPIPE), every write -- this
    one and the later ones, the flush at exit included -- goes to ``/dev/null`` instead of raising
    :class:`BrokenPipeError` wherever the command happened to print, which would end it early with a
    code of its own instead of the one it was heading for."""

    def write(self, data: Any) -> int:
        try:
            return super().write(data) or 0
        except BrokenPipeError:
            to_devnull(self.fileno())
            return len(memoryview(data))
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
            to_devnull(self.fileno())
            return len(memoryview(data))


def guard_stdout() -> None:
    """Make ``sys.stdout`` survive its reader going away (:class:`_ReaderGoneIsQuiet`), keeping its
    encoding, error handler and line buffering.  A stdout without a file descriptor (a test runner's
    capture) is left as it is."""
    out = sys.stdout
    if getattr(out, "closed", True):
        return
    try:
        fd = out.fileno()
        encoding, errors, line_buffering = out.encoding, out.errors, out.line_buffering
    except (AttributeError, OSError):      # io.UnsupportedOperation is an OSError
        return
    if isinstance(getattr(getattr(out, "buffer", None), "raw", None), _ReaderGoneIsQuiet):
        return
    with contextlib.suppress(OSError, ValueError):
        out.flush()
    raw = _ReaderGoneIsQuiet(fd, "wb", closefd=False)
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(raw), encoding=encoding, errors=errors,
                                  line_buffering=bool(line_buffering))
