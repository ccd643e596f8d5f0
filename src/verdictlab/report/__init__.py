"""Reports of a run: terminal tables, JSON, Markdown, one self-contained HTML file and plots.

The report room gathers a typed :class:`Report` (:func:`build_report`: figures from
:mod:`verdictlab.stats` and :mod:`verdictlab.analyses`, sentences from :mod:`.readings`, each missing
figure with its reason) and renders it through one column specification (:mod:`.columns`); it computes
nothing.

>>> rep = build_report("runs/demo")            # doctest: +SKIP
>>> render_terminal(rep)                       # doctest: +SKIP
>>> render_html(rep, "runs/demo/report.html")  # doctest: +SKIP

The plotting functions (``plot_ceiling``, ``plot_factors``, ``plot_regions``,
``plot_format_dispersion``, ``plot_temperature``, ``plot_judge_spread``) take the report's ``cells``
(:class:`Cell`) and an optional matplotlib ``ax``; matplotlib is imported only inside them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .build import build_report, cells_from_frame
from .columns import Column, Format, Shown, cell_tables, show
from .json_doc import report_json
from .markdown import render_markdown
from .model import REPORT_SCHEMA_VERSION, Cell, Interval, Report
from .readings import validation_checklist
from .terminal import render_terminal


def render_html(report: Report, out: str | Path | None = None, **kwargs: Any) -> str:
    """Render one self-contained HTML file (see :func:`verdictlab.report.html.render_html`)."""
    from .html import render_html as _render

    return _render(report, out, **kwargs)


def write_plots(report: Report, out_dir: str | Path, **kwargs: Any) -> list[Path]:
    """Write every figure as PNG and SVG (see :func:`verdictlab.report.plots.write_plots`)."""
    from .plots import write_plots as _write

    return _write(report, out_dir, **kwargs)


def __getattr__(name: str) -> Any:
    if name.startswith("plot_") or name in ("PLOTS", "OKABE_ITO"):
        from . import plots

        return getattr(plots, name)
    raise AttributeError(name)


__all__ = [
    "REPORT_SCHEMA_VERSION",
    "Cell",
    "Column",
    "Format",
    "Interval",
    "Report",
    "Shown",
    "build_report",
    "cell_tables",
    "cells_from_frame",
    "render_html",
    "render_markdown",
    "render_terminal",
    "report_json",
    "show",
    "validation_checklist",
    "write_plots",
]
