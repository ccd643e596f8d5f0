"""One column specification for every table of cells, and how a value is shown -- for every renderer.

A :class:`Column` names a value of a :class:`~verdictlab.report.model.Cell` (``key``, the field of the
JSON), its ``label`` (words, the header every table prints), its :class:`Format`, when a table shows it
(``when_defined``), its ``priority`` (1: always shown; a narrow renderer drops the higher numbers first)
and which table it belongs to.  The terminal, Markdown, HTML and JSON renderers all iterate the same
columns (:data:`KEY_COLUMNS`, :data:`FIGURE_COLUMNS`, :data:`AGREEMENT_COLUMNS`, the registered
analyses' columns: :func:`extra_columns`), and :func:`show` formats a value once -- a missing figure as
"—" with its reason, an upper bound as "≤ 72.3", an interval as "[60, 80]" -- so a new per-cell
statistic registered with its label reaches every output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from .model import Cell, Interval

__all__ = ["AGREEMENT_COLUMNS", "CELL_FIGURES", "FIGURE_COLUMNS", "Format", "KEY_COLUMNS", "Column", "Shown",
           "TableSpec", "UNDEFINED", "UPPER_BOUND_MARK", "all_columns", "cell_tables", "check_column_names", "chosen_columns", "column_label",
           "extra_columns", "show", "shown_columns"]

#: how an undefined value is printed in every table
UNDEFINED = "—"
#: how an upper bound is marked in every table ("≤ 72.3")
UPPER_BOUND_MARK = "≤"


class Format(StrEnum):
    """How a column's value is printed: a fraction as a percentage (with its interval when it has one), a
    number with three decimals, a count, a temperature, a word, or yes/no."""

    PERCENT = "percent"
    NUMBER = "number"
    COUNT = "count"
    TEMPERATURE = "temperature"
    TEXT = "text"
    YES_NO = "yes/no"


@dataclass(frozen=True)
class Shown:
    """A value as every renderer prints it: ``text`` (the main line), ``sub`` (the small print under it: an
    interval, an N, or the reason a figure is missing), ``sort`` (what a sortable table orders by: a
    number, or the text), ``note`` (the long reason, for a tooltip), ``mark`` (★ for the best T) and
    ``style`` (a name the renderer maps to a colour: a T band ``t0``..``t4``, ``missing``, ``bound``,
    ``yes``)."""

    text: str
    sub: str = ""
    sort: float | str | None = None
    note: str = ""
    mark: str = ""
    style: str = ""


def _defined_somewhere(key: str) -> Callable[[Sequence[Cell]], bool]:
    def when(cells: Sequence[Cell]) -> bool:
        return any(c.value(key) is not None for c in cells)
    return when


def _always(_cells: Sequence[Cell]) -> bool:
    return True


@dataclass(frozen=True)
class Column:
    """A value of a cell, as every table shows it (module docstring).  ``get`` reads it from a cell (default:
    :meth:`Cell.figure` for a percent with ``interval``, else :meth:`Cell.value`); ``sub`` adds small print;
    ``viewer_outcome`` is the outcome the HTML links the value to in the viewer (None: no link);
    ``title`` says what the column means (tooltips and legends)."""

    key: str
    label: str
    format: Format
    when_defined: Callable[[Sequence[Cell]], bool] | None = None
    priority: int = 2
    table: str = "figures"
    title: str = ""
    interval: bool = False
    align: str = "right"
    get: Callable[[Cell], Any] | None = None
    sub: Callable[[Cell], str] | None = None
    viewer_outcome: str | None = None
    #: the count a figure stands on (its Interval's ``n``), for a figure of :data:`CELL_FIGURES`
    n: str | None = None
    #: marks and styles a shown value by a reading rule (the T band, the best T's ★)
    decorate: Callable[[Cell, Shown], Shown] | None = None

    def shows(self, cells: Sequence[Cell]) -> bool:
        """Whether a table of these cells shows the column."""
        when = self.when_defined or _defined_somewhere(self.key)
        return when(cells)

    def read(self, cell: Cell) -> Any:
        if self.get is not None:
            return self.get(cell)
        if self.format is Format.PERCENT:
            return cell.figure(self.key)
        return cell.value(self.key)


def _pct(x: float | None, digits: int = 1) -> str:
    return UNDEFINED if x is None else f"{100 * x:.{digits}f}"


def _interval_text(iv: Interval) -> str:
    if iv.low is None or iv.high is None:
        return ""
    return f"[{_pct(iv.low, 0)}, {_pct(iv.high, 0)}]"


def _temp(x: Any) -> str:
    try:
        t = float(x)
    except (TypeError, ValueError):
        return "?"
    return "?" if t != t else f"{t:g}"


def _show_figure(iv: Interval, *, digits: int = 1) -> Shown:
    if iv.point is None:
        why = iv.missing or ""
        return Shown(UNDEFINED, sub=why, note=f"not measured: {why}" if why else "not measured", style="missing")
    text = _pct(iv.point, digits)
    if iv.upper_bound:
        return Shown(f"{UPPER_BOUND_MARK} {text}", sub=_interval_text(iv), sort=iv.point,
                     note=f"an upper bound: C not measured ({iv.upper_bound})", style="bound")
    return Shown(text, sub=_interval_text(iv), sort=iv.point)


def show(column: Column, cell: Cell) -> Shown:
    """The value of ``column`` in ``cell`` as every renderer prints it (see :class:`Shown`)."""
    value = column.read(cell)
    sub = column.sub(cell) if column.sub is not None else None
    if isinstance(value, Interval):
        out = _show_figure(value)
        if column.format is not Format.PERCENT:
            out = replace(out, text=UNDEFINED if value.point is None else f"{value.point:.3f}")
    elif column.format is Format.TEMPERATURE:        # a NULL temperature of an old store: "?"
        out = Shown(_temp(value), sort=float(value) if isinstance(value, int | float) else None)
    elif value is None:
        out = Shown(UNDEFINED, style="missing")
    elif column.format is Format.YES_NO or isinstance(value, bool):
        out = Shown("yes" if value else "no", sort=int(bool(value)), style="yes" if value else "")
    elif column.format is Format.PERCENT and isinstance(value, int | float):
        out = Shown(_pct(float(value)), sort=float(value))
    elif column.format is Format.NUMBER and isinstance(value, int | float):
        out = Shown(f"{float(value):.3f}", sort=float(value))
    elif column.format is Format.COUNT and isinstance(value, int | float):
        out = Shown(str(int(value)), sort=float(value))
    else:
        out = Shown(str(value), sort=str(value))
    if sub is not None:
        out = replace(out, sub=sub)
    return column.decorate(cell, out) if column.decorate is not None else out


# -- the columns of a cell ---------------------------------------------------------------------------------

def _names(kind: str) -> Callable[[Cell], str]:
    def get(cell: Cell) -> str:
        return getattr(cell.names, kind) if cell.names is not None else str(getattr(cell.key, kind))
    return get


def _protocol_shown(cell: Cell) -> str:
    """The protocol as tables show it: its display name, its step (``flask [accuracy]``) and a decoding
    other than free (``vf-json (constrained)``)."""
    from .readings import protocol_label

    return protocol_label(cell)


#: the columns that say which cell a row is (every table of cells starts with them)
KEY_COLUMNS: tuple[Column, ...] = (
    Column("dataset", "dataset", Format.TEXT, _always, 1, "key", align="left", get=_names("dataset")),
    Column("judge", "judge", Format.TEXT, _always, 1, "key", align="left", get=_names("judge")),
    Column("protocol", "protocol", Format.TEXT, _always, 1, "key", align="left", get=_protocol_shown),
    Column("temperature", "temp", Format.TEMPERATURE, _always, 2, "key", title="temperature"),
)


def _pairs_sub(cell: Cell) -> str:
    n = cell.value("n_labelled_pairs")
    return "" if n is None else f"{n} labelled"


def _unparsed_sub(cell: Cell) -> str:
    return f"{cell.value('n_unparsed') or 0}/{cell.value('n_judgments') or 0}"


def _region(cell: Cell) -> Any:
    from .readings import region_phrase

    return region_phrase(cell, short=True)


def _t_decorate(cell: Cell, shown: Shown) -> Shown:
    """T shaded by its band (:func:`verdictlab.report.readings.t_band`, like the paper's Table 1) and the best T
    of its dataset marked ★."""
    from .readings import t_band

    band = t_band(cell.figure("T").point)
    style = shown.style if band is None else f"t{min(band, 4)}"
    return replace(shown, style=style, mark="★" if cell.best_T_in_dataset else "")


def _percent(key: str, label: str, prio: int, title: str, *, table: str = "figures", interval: bool = False,
             n: str | None = None, when: Callable[[Sequence[Cell]], bool] | None = _always, **kw: Any) -> Column:
    return Column(key, label, Format.PERCENT, when, prio, table, title=title, interval=interval, n=n, **kw)


def _percent_sign(_cell: Cell, shown: Shown) -> Shown:
    return shown if shown.style == "missing" else replace(shown, text=f"{shown.text}%")


#: every figure of a cell (:func:`verdictlab.stats.reliability`), in the JSON's order: the figures table shows
#: those of table "figures"; the JSON writes each (``X``, and ``X_lo``/``X_hi`` with ``interval``), ``null``
#: when not measured
CELL_FIGURES: tuple[Column, ...] = (
    _percent("parse_failure_rate", "unparsed", 2, "share of replies that could not be read (unparsed / judgments)",
             n="n_judgments", sub=_unparsed_sub, decorate=_percent_sign),
    _percent("C", "C", 1, "stochastic consistency: all repetitions agree", interval=True, n="n_units",
             viewer_outcome="unstable"),
    _percent("self_consistency", "SC", 3, "self-consistency: mean share of the modal verdict", n="n_units",
             when=None),
    _percent("phi", "φ", 1, "position flip rate", interval=True, n="n_order_pairs", viewer_outcome="flipped"),
    _percent("A", "A", 1, "accuracy against the label", interval=True, n="n_labelled_units", viewer_outcome="wrong"),
    _percent("A_dec", "A dec", 3, "accuracy on decisive (order-invariant) pairs", n="n_decisive", when=None),
    _percent("q", "q", 3, "credit of an undecisive pair (½, or measured with tie verdicts)", table="json"),
    _percent("A_max", "A max", 3, "the ceiling the flips allow: 1 − φ(1 − q)"),
    _percent("capability_gap", "gap", 3, "A max − A", when=None),
    _percent("A_corrected", "A − φq", 3, "the accuracy left after removing order coin-flips", table="json"),
    _percent("T", "T", 1, "trustworthy verdict rate C·(A − φq); ≤ an upper bound where C was not measured",
             interval=True, n="n_labelled_units", decorate=_t_decorate),
    _percent("T_joint", "T joint", 2, "the joint event of T, measured directly", n="n_joint_units"),
    _percent("tie_rate", "tie rate", 3, "share of readable verdicts that are a tie", table="json"),
)


def _figure_columns() -> tuple[Column, ...]:
    by_key = {c.key: c for c in CELL_FIGURES}
    order = ("C", "self_consistency", "phi", "A", "A_dec", "A_max", "capability_gap", "T", "T_joint",
             "parse_failure_rate")
    return (Column("n_pairs", "pairs", Format.COUNT, _always, 2, title="pairs judged (labelled pairs below)",
                   sub=_pairs_sub, viewer_outcome=""),
            *(by_key[k] for k in order),
            Column("region", "region", Format.TEXT, _always, 1, align="left", get=_region,
                   title="the failure region of (C, φ)"))


#: the figures table (Table-1 style): one row per cell, figures in %
FIGURE_COLUMNS: tuple[Column, ...] = _figure_columns()


def _agreement(name: str) -> Callable[[Cell], Any]:
    def get(cell: Cell) -> Any:
        a = cell.agreement
        if a is None:
            return None
        if name == "consistency_bias_paradox":
            return a.paradox
        if name == "position_bias" and a.get(name) is None and a.position_note:
            return a.position_note
        return a.get(name)
    return get


def _has_agreement(cells: Sequence[Cell]) -> bool:
    return any(c.agreement is not None for c in cells)


#: agreement and bias beside the figures (:func:`verdictlab.stats.agreement_by_cell`)
AGREEMENT_COLUMNS: tuple[Column, ...] = tuple(
    Column(key, label, fmt, _has_agreement, prio, "agreement", title=title, get=_agreement(key))
    for key, label, fmt, prio, title in (
        ("exact_match", "exact match", Format.NUMBER, 1, "exact match with the label (tie-excluded)"),
        ("kappa", "Cohen κ", Format.NUMBER, 1, "Cohen's κ"),
        ("alpha", "Krippendorff α", Format.NUMBER, 2, "Krippendorff's α"),
        ("kappa_deflation", "κ deflation", Format.NUMBER, 3, "exact match − κ"),
        ("position_bias", "position bias", Format.NUMBER, 1, "|share first-shown won − ½|"),
        ("test_retest", "test–retest", Format.NUMBER, 2, "α over repetitions"),
        ("consistency_bias_paradox", "paradox", Format.YES_NO, 2, "test–retest high with position bias high"),
        ("verbosity_bias", "verbosity r", Format.NUMBER, 3, "Pearson r of length difference with verdict"),
        ("n_agreement_units", "N units", Format.COUNT, 3, "(pair, order) units behind κ and α"),
        ("n_position", "N position", Format.COUNT, 3, "parsed A/B judgments behind position bias"),
    ))


def _decoding(cells: Sequence[Cell]) -> bool:
    return len({c.key.decoding for c in cells}) > 1


def _adaptive(cells: Sequence[Cell]) -> bool:
    return any(c.value("design") not in (None, "fixed") for c in cells)


#: report columns of the "more figures" table that are not a registered analysis' (the decoding mode, the design)
_MORE: tuple[Column, ...] = (
    Column("decoding", "decoding", Format.TEXT, _decoding, 2, "more", align="left"),
    Column("design", "design", Format.TEXT, _adaptive, 2, "more", align="left"),
)

def extra_columns(cells: Sequence[Cell]) -> tuple[Column, ...]:
    """The "more figures" table: the decoding mode and the design where cells differ in them, then the
    columns the registered cell-column analyses show (:class:`verdictlab.analyses.CellColumn`), in
    registration order."""
    from .. import analyses

    shown: list[Column] = list(_MORE)
    for cc in analyses.registered_cell_columns():
        for spec in cc.shown:
            shown.append(Column(spec.key, spec.label, Format(spec.format), None, spec.priority, "more",
                                title=spec.title or spec.label, interval=spec.format == "percent"))
    return tuple(shown)


@dataclass(frozen=True)
class TableSpec:
    """A table of cells every renderer prints: its ``name`` (figures, agreement, more), ``title``,
    ``caption`` and the columns it shows for these cells (the key columns first)."""

    name: str
    title: str
    caption: str
    columns: tuple[Column, ...] = field(default_factory=tuple)


def shown_columns(columns: Sequence[Column], cells: Sequence[Cell]) -> tuple[Column, ...]:
    """The columns a table of ``cells`` shows (their ``when_defined``)."""
    return tuple(c for c in columns if c.shows(cells))


def cell_tables(cells: Sequence[Cell], *, captions: dict[str, str]) -> list[TableSpec]:
    """The tables of cells of a report, in order: figures, more figures (where some column applies),
    agreement (where cells have it) -- each with the key columns first."""
    out = [TableSpec("figures", "Reliability per cell", captions.get("figures", ""),
                     KEY_COLUMNS + shown_columns(FIGURE_COLUMNS, cells))]
    more = shown_columns(extra_columns(cells), cells)
    if more:
        out.append(TableSpec("more", "More figures per cell", captions.get("more", ""), KEY_COLUMNS + more))
    if _has_agreement(cells):
        out.append(TableSpec("agreement", "Agreement with labels and bias", captions.get("agreement", ""),
                             KEY_COLUMNS + shown_columns(AGREEMENT_COLUMNS, cells)))
    return out


# -- labels of the analyses' columns and the columns a reader asks for ----------------------------------------

#: words for the analyses' column names that are not their own spelling with spaces (a name missing here
#: reads as its words: ``n_judgments_constrained`` -> "N judgments constrained")
_LABEL_WORDS: dict[str, str] = {"n": "N", "phi": "φ", "delta": "Δ", "lo": "low", "hi": "high", "temp": "temperature",
                                "pct": "%", "se": "SE", "ci": "CI", "kappa": "κ", "alpha": "α", "tau": "τ",
                                "id": "id", "elo": "Elo", "bt": "BT", "lc": "LC"}
#: the figures a difference column is named after with a "d" (``dC``, ``dphi``, ``dtie_rate``)
_DIFFERENCE_OF = {"C", "phi", "A", "T", "tie", "unparsed", "q"}
#: whole names whose label is not their words
_LABELS: dict[str, str] = {"A_dec": "A dec", "A_max": "A max", "T_joint": "T joint", "A_corrected": "A − φq",
                           "self_consistency": "SC", "parse_failure_rate": "unparsed"}


def column_label(name: str) -> str:
    """The header of an analysis' column: its snake_case name as words ("N judgments constrained",
    "Δ T", "φ low"), so a header wraps between words and never inside one; figure names (``T``, ``C``,
    ``A``) keep their case."""
    if name in _LABELS:
        return _LABELS[name]
    words = [w for w in name.split("_") if w]
    if words and words[0] != "d" and words[0].startswith("d") and words[0][1:] in _DIFFERENCE_OF:
        rest = _LABEL_WORDS.get(words[0][1:], words[0][1:])
        words[0:1] = ["Δ" + rest if len(rest) == 1 else f"Δ {rest}"]     # dphi_lo: Δφ low; dtie_rate: Δ tie rate
    return " ".join(_LABEL_WORDS.get(w.lower(), w) if w != "d" else "Δ" for w in words) or name


def _norm(name: str) -> str:
    return name.strip().lower().replace(" ", "_")


def all_columns() -> tuple[Column, ...]:
    """Every column a table of cells can show (the key columns, the figures, the more-figures table's and
    agreement's)."""
    return KEY_COLUMNS + FIGURE_COLUMNS + extra_columns(()) + AGREEMENT_COLUMNS


def check_column_names(names: Sequence[str]) -> list[str]:
    """The names of ``--columns`` (a column's key or label, any case), checked: ``ValueError`` naming the
    unknown ones and the known keys."""
    known = {_norm(c.key) for c in all_columns()} | {_norm(c.label) for c in all_columns()}
    out = [n.strip() for n in names if n.strip()]
    unknown = [n for n in out if _norm(n) not in known]
    if unknown:
        raise ValueError(f"unknown column(s) {', '.join(unknown)}; the columns are "
                         + ", ".join(dict.fromkeys(c.key for c in all_columns() if c.table != "key")))
    return out


def chosen_columns(columns: Sequence[Column], names: Sequence[str]) -> tuple[Column, ...]:
    """The columns of a table a reader named (by key or label, any case), the key columns always."""
    want = {_norm(n) for n in names}
    return tuple(c for c in columns if c.table == "key" or _norm(c.key) in want or _norm(c.label) in want)
