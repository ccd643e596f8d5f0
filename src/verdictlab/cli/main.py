"""`verdictlab` entry point.  Each command group lives in its own module with a
``register(app)`` function; they are listed in ``COMMAND_MODULES``.  The grammar every command follows:
``docs/cli.md`` and :mod:`verdictlab.cli.options`."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Annotated, Any

import typer
from typer._click.exceptions import ClickException
from typer.core import TyperGroup

from ._errors import EXIT_INTERRUPTED, EXIT_OK, handle, say
from .argv import rewrite
from .options import exit_codes


class _OneErrorPath(TyperGroup):
    """Every exception a command lets escape becomes one plain line and a documented exit code
    (:mod:`verdictlab.cli._errors`); a usage error is one plain line too (exit 2)."""

    def main(self, args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        args = rewrite(sys.argv[1:] if args is None else args)
        if not kwargs.get("standalone_mode", True):
            return super().main(args, *rest, **kwargs)
        try:
            code = super().main(args, *rest, **{**kwargs, "standalone_mode": False})
        except ClickException as exc:
            if type(exc).__name__ != "NoArgsIsHelpError":       # bare `verdictlab`: help was printed
                ctx = getattr(exc, "ctx", None)
                hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
                say(f"error: {exc.format_message()}{hint}")
            sys.exit(exc.exit_code)
        except typer.Abort as exc:          # click's word for a KeyboardInterrupt (SIGTERM: Stopped)
            stop = exc.__context__
            if isinstance(stop, KeyboardInterrupt) and hasattr(stop, "exit_code"):
                say(f"error: {getattr(stop, 'reason', 'interrupted')}")
                sys.exit(stop.exit_code)
            sys.exit(EXIT_INTERRUPTED)
        sys.exit(code if isinstance(code, int) else 0)

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        # typer turns a KeyboardInterrupt outside a command's body into a silent exit 130 (a SIGTERM too);
        # parsing the arguments imports pydantic (0.3 s), so a signal there is one line and its own code
        try:
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt as exc:
            handle(exc)

    def invoke(self, ctx: Any) -> Any:    # a click Context (typer vendors click)
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, SystemExit, GeneratorExit):
            raise
        except Exception as exc:
            if type(exc).__module__.startswith(("typer", "click")):    # usage errors: typer prints them
                raise
            handle(exc, debug=bool(ctx.params.get("debug")))
        except KeyboardInterrupt as exc:
            handle(exc, debug=bool(ctx.params.get("debug")))


app = typer.Typer(
    cls=_OneErrorPath,
    name="verdictlab",
    help="Audit LLM judges: are their verdicts reproducible, order-invariant and correct?",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,     # help is plain text: "[a, b]" stays, no "<bool>" after a flag
)

COMMAND_MODULES = (
    "run_cmd",       # run, (plan)
    "report_cmd",    # report
    "demo_cmd",      # demo
    "datasets_cmd",  # datasets list|show|validate
    "import_cmd",    # import
    "perturb_cmd",   # perturb
    "export_cmd",    # export
    "compare_cmd",   # compare
    "review_cmd",    # review
    "debate_cmd",    # debate
    "validate_cmd",  # validate
    "plan_labels_cmd",  # plan-labels
    "drift_cmd",     # drift
    "selftest_cmd",  # selftest
    "batch_cmd",     # batch export|import
    "view_cmd",      # view
    "fake_server_cmd",  # fake-server
)


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"verdictlab {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback(epilog=exit_codes(3, 4, 5, 6, 130, 143) + " Grammar: docs/cli.md.")
def _root(
    debug: Annotated[bool, typer.Option(
        "--debug", help="Show the full traceback of an error (also VERDICTLAB_DEBUG=1); accepted anywhere "
                        "on the command line.")] = False,
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version, help="Print the version and exit.")] = False,
) -> None:
    """Audit LLM judges: are their verdicts reproducible, order-invariant and correct?"""


for _name in COMMAND_MODULES:
    _mod = f"{__package__}.{_name}"
    if importlib.util.find_spec(_mod) is not None:
        importlib.import_module(_mod).register(app)


def main() -> None:
    """The entry point of older installs (``verdictlab.cli.main:main``; new ones use
    :func:`verdictlab.cli.entry_point`, which holds the stop handler before this module loads)."""
    from ._program import run_program

    run_program(lambda: app)


if __name__ == "__main__":
    main()
