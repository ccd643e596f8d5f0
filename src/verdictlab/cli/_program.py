"""The ``verdictlab`` program around a command: Ctrl-C and SIGTERM end it within a second with exit
130 / 143 (:mod:`verdictlab.core.stopping`), and the interpreter's exit skips a needless last collection."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from typing import Any


def run_program(load_app: Callable[[], Any]) -> None:
    """Install the stop handler, then load the app (``load_app``: importing the command modules takes
    seconds on a loaded machine, and a signal meanwhile must not end in a traceback) and run it."""
    from ..core.stopping import StopOnSignals, Stopped, allow_forced_exit
    from ._stdout import guard_stdout

    allow_forced_exit()
    guard_stdout()       # a closed pipe on stdout keeps the command's exit code (docs/cli.md)
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
