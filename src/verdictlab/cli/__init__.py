"""Command-line interface (`verdictlab ...`).

:func:`entry_point` is the program's entry point.  It lives here, not in :mod:`.main`, because importing the
command modules takes seconds on a loaded machine: the stop handler is in place before they load, so
a Ctrl-C or SIGTERM at any moment ends with one line and exit 130 / 143 (:mod:`verdictlab.stopping`),
never a traceback.
"""

from __future__ import annotations


def entry_point() -> None:
    import gc
    import sys

    from ..stopping import StopOnSignals, Stopped, allow_forced_exit

    allow_forced_exit()
    try:
        with StopOnSignals():
            from .main import app

            app()
    except Stopped as exc:           # while the command modules loaded, or after a command returned
        sys.stderr.write(f"error: {exc.reason}\n")
        sys.exit(exc.exit_code)
    finally:
        # the interpreter's last garbage collections walk every numpy / pandas / scipy object once more
        # (about 1 s on a loaded machine); nothing in them needs finalising: stores are closed, files written
        gc.freeze()
