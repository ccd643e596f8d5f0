"""`verdictlab view RUN [--port P] [--host H]` -- browse every judgment of a run in a local web viewer."""

from __future__ import annotations

from typing import Annotated

import typer

from ._errors import EXIT_INPUT, EXIT_INTERRUPTED, EXIT_STORE
from .options import UNPARSED_DEFAULT, RunArg, Unparsed, exit_codes, figure_policy


def view(
    run_dir: RunArg,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on (0: any free port).")] = 8765,
    host: Annotated[str, typer.Option(
        help="Address to listen on; the default serves this machine only. Another address shows the run "
             "to every machine that can reach it.")] = "127.0.0.1",
    unparsed: Unparsed = UNPARSED_DEFAULT,
    curator: Annotated[str | None, typer.Option(
        metavar="NAME", help="Name the curation page records decisions under by default (default: your user "
                             "name); each form can say another.")] = None,
    no_cache: Annotated[bool, typer.Option(
        "--no-cache", help="Build the index from the store, without reading or writing the index cache "
                           "(VERDICTLAB_CACHE_DIR, default ~/.cache/verdictlab).")] = False,
) -> None:
    """Serve pages over every judgment of RUN (opened read-only): pairs filtered by cell, outcome and text; one
    page per pair; the curation page (/curation), where a person accepts, rejects or edits the model-written
    test cases -- its one write, recorded with who and when in RUN's audit trail.  Prints what it serves and
    its address on stdout; stop it with Ctrl-C."""
    from ..view import AddressError, Viewer, serve
    from ..view.index_cache import cache_root
    from ._errors import say

    def ready(url: str, viewer: Viewer) -> None:
        ix = viewer.index
        how = "read from the cache" if ix.from_cache else "built"
        say(f"verdictlab view: {ix.n_judgments:,} judgments, {len(ix.pair_keys):,} pairs in {run_dir} "
            f"(index {how} in {ix.build_seconds:.1f} s)", err=False)
        say(f"serving {url} -- press Ctrl-C to stop", err=False)

    try:
        serve(run_dir, host=host, port=port, policy=figure_policy(unparsed=unparsed), cache=None if no_cache else cache_root(),
              on_ready=ready, curator=curator)
    except AddressError as exc:
        raise typer.BadParameter(str(exc)) from None
    except KeyboardInterrupt as exc:      # Ctrl-C 130; SIGTERM (verdictlab.core.stopping.Stopped) 143
        say("viewer stopped")
        raise typer.Exit(getattr(exc, "exit_code", EXIT_INTERRUPTED)) from None


def register(app: typer.Typer) -> None:
    app.command("view", epilog=exit_codes(EXIT_INPUT, EXIT_STORE, EXIT_INTERRUPTED))(view)
