"""The ``verdictlab`` program around a command: Ctrl-C and SIGTERM end it within a second with exit
130 / 143 (:mod:`verdictlab.core.stopping`), and the interpreter's exit skips a needless last collection."""

from __future__ import annotations

import gc
import sys
import warnings
from collections.abc import Callable
from typing import Any


def _plain_plugin_warnings() -> None:
    """A plugin that fails to load is one plain ``warning: ...`` line on stderr (the message names the
    plugin and its error), not Python's two-line warning pointing into verdictlab's source."""
    shown = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None,
             line: str | None = None) -> None:
        from ..core.registry import PluginWarning  # here: the program's start imports nothing it need not

        if issubclass(category, PluginWarning):
            sys.stderr.write(f"warning: {message}\n")
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def run_program(load_app: Callable[[], Any]) -> None:
    """Install the stop handler, then load the app (``load_app``: importing the command modules takes
    seconds on a loaded machine, and a signal meanwhile must not end in a traceback) and run it."""
    from ..core.stopping import StopOnSignals, Stopped, allow_forced_exit
    from ._stdout import guard_stdout

    allow_forced_exit()
    guard_stdout()       # a closed pipe on stdout keeps the command's exit code (docs/cli.md)
    _plain_plugin_warnings()
    try:
        with StopOnSignals():
            load_app()()
    except Stopped as exc:           # while the command modules loaded, or after a command returned
        sys.stderr.write(f"error: {exc.reason}\n")
        sys.exit(exc.exit_code)
    finally:
        # the interpreter's last garbage collections walk every numpy / pandas / scipy object once more
        # (about 1 s on a loaded machine); nothing in them needs finalising: stores are closed, files written
        gc.freeze()
