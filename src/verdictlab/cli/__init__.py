"""Command-line interface (`verdictlab ...`).

:func:`entry_point` is the program's entry point.  It lives here, not in :mod:`.main`, because importing
the command modules takes seconds on a loaded machine: the stop handler is in place before they load,
so a Ctrl-C or SIGTERM at any moment ends with one line and exit 130 / 143 (:mod:`verdictlab.core.stopping`),
never a traceback.
"""

from __future__ import annotations

from typing import Any


def entry_point() -> None:
    from ._program import run_program

    def load_app() -> Any:
        from .main import app

        return app

    run_program(load_app)
