"""The cell fields the renderers show beside C, phi, A and T, with their table labels: the agreement and
bias columns, and the columns of registered cell-column analyses.  A leaf of the report room (the
renderers and the builder import it; it imports none of them), so the report type can render itself in a
notebook without an import cycle."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Agreement/bias columns of :func:`verdictlab.stats.agreement_by_cell` shown beside C, phi, A, T,
#: with the label used in tables.
AGREEMENT_FIELDS: tuple[tuple[str, str], ...] = (
    ("exact_match", "exact match"),
    ("kappa", "Cohen κ"),
    ("alpha", "Krippendorff α"),
    ("kappa_deflation", "κ deflation"),
    ("position_bias", "position bias"),
    ("test_retest", "test–retest"),
    ("consistency_bias_paradox", "paradox"),
    ("verbosity_bias", "verbosity r"),
)


#: Cell columns from registered cell-column analyses (and the decoding mode) that the renderers show
#: when a cell has them, with their table labels.
EXTRA_CELL_FIELDS: tuple[tuple[str, str], ...] = (
    ("decoding", "decoding"),
    ("design", "design"),
    ("A_3class", "A 3-class"),
    ("macro_f1", "macro F1"),
    ("C_expected", "C expected"),
    ("phi_expected", "φ expected"),
    ("A_expected", "A expected"),
    ("T_expected", "T expected"),
    ("unreadable_expected", "unreadable (expected model)"),
)


def extra_cell_fields(cells: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The :data:`EXTRA_CELL_FIELDS` some cell has a value for (``decoding`` only when a cell is not
    ``free``)."""
    out = []
    for k, lab in EXTRA_CELL_FIELDS:
        vals = [c.get(k) for c in cells if c.get(k) is not None]
        if vals and (k not in ("decoding", "design") or any(v not in ("free", "fixed") for v in vals)):
            out.append((k, lab))
    return out


__all__ = ["AGREEMENT_FIELDS", "EXTRA_CELL_FIELDS", "extra_cell_fields"]
