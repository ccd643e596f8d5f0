"""The report in a notebook: :class:`NotebookReport` is the typed :class:`~verdictlab.report.model.Report`
with a one-line ``repr``, Jupyter's HTML view (the self-contained HTML report, decision panel first, in a
sandboxed frame) and pandas frames of its cells and of the stored judgments.

A subclass of its own, not methods of the report type: the HTML and JSON renderers read the report type,
so the type cannot import them (an import cycle); :func:`verdictlab.report.build_report` builds this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import escape

from .html import render_html
from .json_doc import cell_json
from .model import Report

__all__ = ["NOTEBOOK_FRAME_HEIGHT", "NotebookReport", "notebook_html"]

#: the height of the report's frame in a notebook cell (the frame scrolls; its corner resizes it)
NOTEBOOK_FRAME_HEIGHT = "720px"


def notebook_html(report: Report) -> str:
    """The report for a notebook cell: :func:`~verdictlab.report.html.render_html`'s self-contained page
    (no viewer links: no server runs beside a notebook) in a sandboxed ``iframe`` of its own, so its style
    and script stay out of the notebook's and the decision panel opens it."""
    page = render_html(report, viewer_url=None)
    return (f'<iframe srcdoc="{escape(page)}" sandbox="allow-scripts" title="verdictlab report" '
            f'style="width: 100%; height: {NOTEBOOK_FRAME_HEIGHT}; border: 1px solid #ccc; resize: vertical">'
            "</iframe>")


@dataclass(slots=True, repr=False)
class NotebookReport(Report):
    """A :class:`~verdictlab.report.model.Report` that shows itself in a notebook."""

    def __repr__(self) -> str:
        """One line (the dataclass' own repr would print every cell, into every notebook's text output)."""
        return f"Report(run_dir={self.run.run_dir!r}, {len(self.cells)} cells, {self.run.n_judgments:,} judgments)"

    def _repr_html_(self) -> str:
        """Jupyter's view: the HTML report, decision panel first, self-contained in a frame of the cell."""
        return notebook_html(self)

    def to_pandas(self, what: str = "cells") -> Any:
        """A pandas DataFrame: ``"cells"``, one row per cell as the JSON report writes it (the cell key,
        every figure and interval; nested parts flattened as ``agreement.kappa``, ``vs_best.p``...), or
        ``"judgments"``, every stored judgment of the run (:meth:`verdictlab.store.RunStore.judgments`)."""
        import pandas as pd

        if what == "cells":
            with_step = any(c.step for c in self.cells)
            rows = [cell_json(c, with_step=with_step) for c in self.cells]
            return pd.json_normalize(rows, max_level=1) if rows else pd.DataFrame()
        if what == "judgments":
            from ..store import open_store

            with open_store(self.run.run_dir) as store:
                return store.judgments()
        raise ValueError(f"to_pandas gives 'cells' or 'judgments', not {what!r}")
