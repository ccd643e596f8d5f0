"""`verdictlab` entry point.  Each command group lives in its own module with a
``register(app)`` function; they are listed in ``COMMAND_MODULES``."""

from __future__ import annotations

import importlib
import importlib.util

import typer

app = typer.Typer(
    name="verdictlab",
    help="Audit LLM judges: are their verdicts reproducible, order-invariant and correct?",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

COMMAND_MODULES = (
    "run_cmd",       # run, (plan)
    "report_cmd",    # report
    "demo_cmd",      # demo
    "datasets_cmd",  # datasets list|show|validate
    "import_cmd",    # import
    "export_cmd",    # export
    "compare_cmd",   # compare
    "review_cmd",    # review
    "validate_cmd",  # validate (issue 12)
    "plan_labels_cmd",  # plan-labels (issue 12)
)

for _name in COMMAND_MODULES:
    _mod = f"{__package__}.{_name}"
    if importlib.util.find_spec(_mod) is not None:
        importlib.import_module(_mod).register(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
