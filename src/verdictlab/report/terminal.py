"""Terminal rendering of a report (rich tables, Table-1 style: one row per cell, figures in %).

The tables of cells iterate the report's one column specification (:mod:`verdictlab.report.columns`) and
print each value as :func:`~verdictlab.report.columns.show` formats it; every sentence is the report's
(filled once by :mod:`verdictlab.report.readings`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .columns import KEY_COLUMNS, Column, Shown, TableSpec, cell_tables, chosen_columns, show
from .model import Cell, DatasetDecision, DecisionEntry, Report
from .readings import cell_title, shown_definitions, temperature_text

#: how a value's style name (:class:`~verdictlab.report.columns.Shown`) prints on a terminal
STYLES: dict[str, str] = {"t0": "bold green", "t1": "green", "t2": "yellow", "t3": "dark_orange", "t4": "red",
                          "missing": "dim", "bound": "italic", "yes": "bold red"}


def _run_text(value: Any) -> Text:
    """Run-supplied text (judge ids, dataset and protocol names, errors) as plain text: never read as
    rich markup, so a dataset named ``[/bold]x`` prints as it is."""
    return Text(str(value))


def _cell_text(value: Shown) -> Text:
    t = Text(value.text, style=STYLES.get(value.style, ""))
    if value.mark:
        t.append(f" {value.mark}", style="bold")
    if value.sub:
        t.append("\n" + value.sub, style="dim")
    return t


#: the narrowest a name column (dataset, judge, protocol) is squeezed to before a column is dropped, and the
#: narrowest when even the most important columns do not fit
NAME_MIN_WIDTH, NAME_SQUEEZED_WIDTH = 12, 6
#: the widest a name column is with every column shown (--wide, --columns)
NAME_WIDE_WIDTH = 40


def _widest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


def _min_width(col: Column, cells: Sequence[Cell], name_width: int = NAME_MIN_WIDTH) -> int:
    """The narrowest ``col`` prints without breaking a word of its header, a figure or a region: a figure
    column its widest value line, a name column its widest word up to ``name_width``."""
    head = _widest_word(col.label)
    shown = [show(col, c) for c in cells]
    if col.key == "region":
        return max(head, max((_widest_word(v.text) for v in shown), default=0))
    if col.table == "key":
        return max(head, min(max((_widest_word(v.text) for v in shown), default=0), name_width))
    lines = max((max(len(v.text) + (len(v.mark) + 1 if v.mark else 0), len(v.sub)) for v in shown), default=0)
    return max(head, lines)


@dataclass(frozen=True)
class Fit:
    """The columns of a table of cells at a terminal's width (:func:`fit_columns`): those ``shown`` with
    their ``widths``, those ``dropped``, and whether the table is drawn ``compact`` (no vertical rules, the
    dataset in the title) because even the most important columns did not fit with rules."""

    shown: tuple[Column, ...]
    dropped: tuple[Column, ...]
    widths: dict[str, int]
    compact: bool = False


def fit_columns(columns: Sequence[Column], cells: Sequence[Cell], width: int) -> Fit:
    """The columns of a table that fit ``width`` terminal columns, dropping the least important first (the
    highest :attr:`~verdictlab.report.columns.Column.priority`, the rightmost of it); priority-1 columns
    (the configuration, T, C, φ, A, region) are never dropped.  Where those alone do not fit, the table
    goes compact: two characters between columns instead of three, the dataset column left out for the
    title when there is one dataset, and names squeezed to :data:`NAME_SQUEEZED_WIDTH`."""
    one_dataset = len({c.key.dataset for c in cells}) == 1
    for compact in (False, True):
        kept = [c for c in columns if not (compact and one_dataset and c.key == "dataset")]
        widths = {c.key: _min_width(c, cells, NAME_SQUEEZED_WIDTH if compact else NAME_MIN_WIDTH) for c in kept}
        gap = 2 if compact else 3         # rich: padding each side and a rule (compact: one pad, no rule)
        while sum(widths[c.key] + gap for c in kept) + 1 > width:
            droppable = [c for c in kept if c.priority > 1]
            if not droppable:
                break
            kept.remove(max(droppable, key=lambda c: (c.priority, kept.index(c))))
        spare = width - sum(widths[c.key] + gap for c in kept) - 1
        if spare >= 0 or compact:
            dropped = tuple(c for c in columns if c not in kept and not (compact and c.key == "dataset"))
            return Fit(tuple(kept), dropped, _widen({c.key: widths[c.key] for c in kept}, kept, cells, spare),
                       compact)
    raise AssertionError("unreachable")


def _widen(widths: dict[str, int], kept: Sequence[Column], cells: Sequence[Cell], spare: int) -> dict[str, int]:
    """The widths of the name columns (dataset first, then protocol, judge, region) grown into the ``spare``
    width, each up to its longest value."""
    out = dict(widths)
    for key in ("dataset", "protocol", "judge", "region"):
        col = next((c for c in kept if c.key == key), None)
        if col is None or spare <= 0:
            continue
        full = max((len(show(col, c).text) for c in cells), default=0)
        grow = max(0, min(spare, full - out[key]))
        out[key] += grow
        spare -= grow
    return out


def cells_table(spec: TableSpec, cells: Sequence[Cell], *, width: int | None = None) -> Table:
    """One table of cells: its columns (the spec's; with ``width``, those that fit it: :func:`fit_columns`,
    the dropped ones named in the caption), one row per cell, a section per dataset.  A header, a figure
    or a region never breaks inside a word; names wrap at their spaces."""
    fit = fit_columns(spec.columns, cells, width) if width is not None else Fit(
        tuple(spec.columns), (), {c.key: _min_width(c, cells, NAME_WIDE_WIDTH) for c in spec.columns})
    caption, title = spec.caption, spec.title
    if fit.dropped:
        caption = (f"{caption}\n" if caption else "") + DROPPED_NOTE.format(
            n=width, names=", ".join(c.label for c in fit.dropped))
    if fit.compact and not any(c.key == "dataset" for c in fit.shown) and cells:
        title = f"{title} — {show(KEY_COLUMNS[0], cells[0]).text}"
    tbl = Table(title=title, title_justify="left", header_style="bold", caption=caption or None,
                caption_justify="left")
    if fit.compact:
        tbl = Table(title=title, title_justify="left", header_style="bold", caption=caption or None,
                    caption_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), show_edge=False)
    for col in fit.shown:
        name = col.table == "key"
        tbl.add_column(col.label, justify="left" if col.align == "left" else "right", overflow="fold",
                       no_wrap=not name and col.key != "region", min_width=fit.widths[col.key],
                       width=fit.widths[col.key] if width is not None else None)
    last = None
    for c in cells:
        if last is not None and c.key.dataset != last:
            tbl.add_section()
        last = c.key.dataset
        tbl.add_row(*(_cell_text(show(col, c)) for col in fit.shown))
    return tbl


#: the note under a table that dropped columns to fit the terminal
DROPPED_NOTE = ("Not shown at {n} columns: {names} (report --wide shows every column; --columns T,C,phi,… "
                "chooses them; --format html or json has them all).")


def figures_table(cells: Sequence[Cell], *, title: str) -> Table:
    """The figures table of ``cells`` (the key columns and :data:`~verdictlab.report.columns.FIGURE_COLUMNS`)
    under ``title``."""
    from .columns import FIGURE_COLUMNS, KEY_COLUMNS
    from .readings import region_caption

    return cells_table(TableSpec("figures", title, region_caption(), KEY_COLUMNS + FIGURE_COLUMNS), cells)


def definitions_tables(report: Report) -> list[Table]:
    """With published definitions asked for (``report --definitions``): per cell, the figures as the
    papers define them (value in % to two decimals, as papers print them, interval, N, what the rules
    left out; "—" with the reason where the cell's figure is not measured), then one legend of the
    definitions: source, unparsed rule, what each counts differently from A."""
    if not report.definitions:
        return []
    titles = {d["name"]: d["title"] for d in report.definitions}
    out = []
    for c in report.cells:
        if not c.definitions:
            continue
        tbl = Table(title=f"Figures as the papers define them — {escape(cell_title(c))}", title_justify="left",
                    header_style="bold")
        for name, just in (("definition", "left"), ("", "left"), ("value %", "right"), ("interval", "right"),
                           ("N", "right"), ("left out", "right"), ("unparsed", "left")):
            tbl.add_column(name, justify=just, overflow="fold")  # type: ignore[arg-type]
        for r in c.definitions:
            title = titles.get(r.definition, "")
            shown = definition_value(r.figure)
            tbl.add_row(r.definition, _run_text(title if not r.variant else f"{title} — {r.variant}"),
                        _cell_text(shown), definition_interval(r.values), str(r.values.get("n")),
                        str(r.values.get("n_left_out")), _run_text(r.values.get("unparsed_rule") or ""))
        out.append(tbl)
    legend = Table(title="The definitions: source, and what each counts differently from A", title_justify="left",
                   header_style="bold")
    for name in ("definition", "source", "what it counts differently from A"):
        legend.add_column(name, overflow="fold")
    for d in shown_definitions(report):
        legend.add_row(str(d["name"]), _run_text(d["source"]), _run_text(d["note"]))
    out.append(legend)
    return out


def definition_value(figure: Any) -> Shown:
    """A definition's value in % to two decimals (as papers print them); "—" with the reason when missing."""
    if figure.point is None:
        return Shown("—", sub=figure.missing or "", style="missing")
    return Shown(f"{100 * figure.point:.2f}", sort=figure.point)


def definition_interval(row: Mapping[str, Any]) -> str:
    """``[lo, hi]`` of a definition's figure in % (one decimal), with its standard error where the
    source reports one."""
    lo, hi, se = row.get("lo"), row.get("hi"), row.get("standard_error")
    out = "" if lo is None or hi is None else f"[{100 * lo:.1f}, {100 * hi:.1f}]"
    return out + (f" SE {100 * se:.1f}" if se is not None else "")


def engine_table(engine: list[dict[str, Any]], labels: Mapping[str, str] | None = None) -> Table | None:
    if not engine:
        return None
    tbl = Table(title="Engine accounting", title_justify="left", header_style="bold")
    for name in ("judge", "trials", "attempts", "ok 1st try", "retried→ok", "failed for good",
                 "parse failed", "repaired", "fallback", "last error"):
        tbl.add_column(name, overflow="fold", justify="left" if name in ("judge", "last error") else "right")
    for e in engine:
        tbl.add_row(_run_text((labels or {}).get(str(e["judge"]), e["judge"])), str(e["trials"]),
                    str(e.get("attempts", "—")), str(e.get("ok_first_try", "—")), str(e.get("retried_then_ok", "—")),
                    Text(str(e.get("failed_for_good", 0)), style="red" if e.get("failed_for_good") else ""),
                    str(e.get("parse_failures", 0)), str(e.get("parse_repaired", 0)),
                    str(e.get("parse_fallback", 0)), _run_text(e.get("last_error") or "—"))
    return tbl


def checklist_table(report: Report) -> Table:
    tbl = Table(title="Validation-protocol checklist", title_justify="left", header_style="bold")
    tbl.add_column("", width=4)
    tbl.add_column("check", overflow="fold")
    tbl.add_column("this run", overflow="fold")
    for item in report.checklist:
        mark = Text("PASS", style="bold green") if item.passed else Text("FAIL", style="bold red")
        tbl.add_row(mark, _run_text(item.check), _run_text(item.detail))
    return tbl


def dispersion_table(report: Report) -> Table | None:
    """ΔT_fmt per judge and dataset, where more than one protocol was run."""
    fd = [d for d in report.format_dispersion if d.n_protocols > 1]
    if not fd:
        return None
    labels, protocols = report.judge_labels, report.display_names.get("protocol", {})
    tbl = Table(title="Format dispersion ΔT_fmt = T_max − T_min over protocols", title_justify="left",
                header_style="bold")
    for name in ("dataset", "judge", "temperature", "ΔT_fmt", "T_min (protocol)", "T_max (protocol)"):
        tbl.add_column(name, overflow="fold")

    def pct(x: float | None) -> str:
        return "—" if x is None else f"{100 * x:.1f}"

    for d in fd:
        tbl.add_row(_run_text(d.dataset), _run_text(labels.get(d.judge, d.judge)), temperature_text(d.temperature),
                    pct(d.delta_T_fmt),
                    _run_text(f"{pct(d.T_min)} ({protocols.get(d.protocol_min or '', d.protocol_min) or '—'})"),
                    _run_text(f"{pct(d.T_max)} ({protocols.get(d.protocol_max or '', d.protocol_max) or '—'})"))
    return tbl


def _entry_line(e: DecisionEntry) -> Text:
    """One configuration of the decision: its number, name, T and why."""
    line = Text(f"{e.number:>3} ")
    line.append_text(_run_text(e.configuration))
    if e.group == "avoid":
        line.append(f"  {e.rule}: ", style="bold red")
        line.append_text(_run_text(e.reason))
        return line
    if e.group == "not_measured":
        line.append(": " + e.reason, style="dim")
        return line
    from .readings import t_band

    band = t_band(e.T.point)
    line.append(f"  {e.T_text}", style=STYLES.get(f"t{min(band, 4)}", "") if band is not None else "dim")
    if e.region_short:
        line.append(f"  {e.region_short}", style="dim")
    line.append(f"  ({e.brief})", style="dim")
    if e.caution:
        line.append(f"; {e.caution}", style="yellow")
    return line


_GROUP_TITLES = {"use": ("use", "bold green"), "avoid": ("avoid", "bold red"),
                 "below_best": ("below the best", "bold"), "not_measured": ("no T", "dim")}


def decision_lines(report: Report) -> list[Text]:
    """The decision, per dataset: the answer and the ranking it used, then the configurations to use, to
    avoid, below the best and without a T, then what was not measured and why."""
    out: list[Text] = []
    for d in report.decision:
        out += _dataset_lines(d)
    out += leaderboard_lines(report)
    out += grader_lines(report)
    if out:
        out.append(Text(report.notes.get("test", ""), style="dim"))
    return out


def leaderboard_lines(report: Report) -> list[Text]:
    """The leaderboard block per judge configuration whose pairs name their systems: the ranking, which
    systems are distinguishable and what changes it (:func:`verdictlab.report.readings.leaderboard_blocks`)."""
    out: list[Text] = []
    for b in report.leaderboards:
        out.append(Text(f"Leaderboard — {b.dataset} · {b.configuration}", style="bold"))
        out += [Text("  " + line) for line in (b.ranking, b.distinguishable)]
        out += [Text("  " + line, style="dim") for line in b.changes]
    return out


def grader_lines(report: Report) -> list[Text]:
    """The grader block per dataset and criterion: which grader to use and why to avoid each other
    (:func:`verdictlab.report.readings.grader_blocks`)."""
    out: list[Text] = []
    for b in report.graders:
        crit = f" · {b.criterion}" if b.criterion else ""
        out.append(Text(f"Graders — {b.dataset}{crit}: ", style="bold").append_text(Text(b.headline)))
        out += [Text("  " + line, style="red" if bad else "") for line, bad in zip(b.lines, b.avoid, strict=True)]
    return out


def _dataset_lines(d: DatasetDecision) -> list[Text]:
    head = Text("Decision — ", style="bold")
    head.append_text(Text(d.dataset_name, style="bold"))
    head.append(": ")
    head.append_text(_run_text(d.headline))
    out = [head, Text("  " + d.ranking, style="dim")]
    for group, (title, style) in _GROUP_TITLES.items():
        for k, e in enumerate(d.group(group)):
            line = Text(f"  {title if k == 0 else '':<15}", style=style)
            out.append(line.append_text(_entry_line(e)))
    for m in d.missing:
        out.append(Text("  not measured   ", style="dim").append_text(_run_text(m.line)))
    return out


def render_terminal(report: Report, console: Console | None = None, *, wide: bool = False,
                    columns: Sequence[str] | None = None) -> None:
    """Print the report: the decision, the tables of cells, agreement and bias, the definitions, format
    dispersion, engine accounting and checklist.

    The tables of cells fit the console's width: the least important columns are dropped, with a note
    naming them (:func:`fit_columns`); ``wide`` shows every column, ``columns`` (keys or labels) only those
    named, after the configuration's."""
    console = console or Console()
    notes = report.notes

    def say(text: str, style: str = "") -> None:
        if text:
            console.print(_run_text(text), style=style, highlight=False)

    say(notes.get("lead", ""), "bold")
    if not report.cells:
        say(notes.get("empty_terminal", ""))
        for text in grader_lines(report):     # a run of pointwise graders only has no pairwise cells
            console.print(text, highlight=False)
        for line, style in analyses_lines(report):
            say(line, style)
        return
    for text in decision_lines(report):
        console.print(text, highlight=False)
    say(notes.get("names", ""), "dim")
    _print_cell_tables(console, report, wide=wide, columns=columns)
    for tbl in (*definitions_tables(report), dispersion_table(report),
                engine_table(report.run.engine, report.judge_labels), checklist_table(report)):
        if tbl is not None:
            console.print(tbl)
    say(notes.get("decoding", ""), "dim")
    for line, style in analyses_lines(report):
        say(line, style)
    say(notes.get("broken", ""))


def _print_cell_tables(console: Console, report: Report, *, wide: bool, columns: Sequence[str] | None) -> None:
    """The tables of cells: fitted to the console, or whole (``wide``), or only the ``columns`` named; the
    figures table followed by the unparsed policy and the one-repetition warning."""
    for spec in cell_tables(report.cells, captions=_captions(report)):
        if columns:
            spec = replace(spec, columns=chosen_columns(spec.columns, columns))
            if all(c.table == "key" for c in spec.columns):
                continue
        if wide or columns:
            _print_whole(console, spec, report.cells)
        else:
            _print_fitted(console, spec, report.cells)
        if spec.name == "figures":
            for key, style in (("policy", "dim"), ("single_repetition", "yellow")):
                if report.notes.get(key):
                    console.print(_run_text(report.notes[key]), style=style, highlight=False)


def _print_whole(console: Console, spec: TableSpec, cells: Sequence[Cell]) -> None:
    """A table of cells with every column of its spec, as wide as it takes and never a word broken (a pager
    or a wide window scrolls it)."""
    need = sum(_min_width(c, cells, NAME_WIDE_WIDTH) + 3 for c in spec.columns) + 1
    console_width = console.width
    console.width = max(console_width, need)
    try:
        console.print(cells_table(spec, cells), crop=False)
    finally:
        console.width = console_width


def _print_fitted(console: Console, spec: TableSpec, cells: Sequence[Cell]) -> None:
    """A table of cells fitted to the console; where it has to go compact, one table per dataset (the
    dataset in its title) so the dataset column can give its width to the figures."""
    groups: dict[str, list[Cell]] = {}
    for c in cells:
        groups.setdefault(c.key.dataset, []).append(c)
    if len(groups) == 1 or not fit_columns(spec.columns, cells, console.width).compact:
        console.print(cells_table(spec, cells, width=console.width))
        return
    for k, group in enumerate(groups.values()):
        last = k == len(groups) - 1
        console.print(cells_table(replace(spec, caption=spec.caption if last else ""), group, width=console.width))


def _captions(report: Report) -> dict[str, str]:
    return {"figures": report.notes.get("region", ""), "agreement": report.notes.get("agreement", ""),
            "more": report.notes.get("more", "")}


def analyses_lines(report: Report) -> list[tuple[str, str]]:
    """``(line, style)``: the registered analyses of the report by name with their row counts, and one
    line per analysis that could not be computed."""
    out: list[tuple[str, str]] = []
    for name, t in report.extra_tables.items():
        if t.get("error"):
            out.append((f"{t.get('title') or name} could not be computed: {t['error']}", "red"))
    names = [f"{k} ({len(v.get('rows') or [])} rows)" for k, v in report.extra_tables.items() if not v.get("error")]
    if names:
        out.append(("Further analyses in --format html and --format json (run.analyses): " + ", ".join(names) + ".", ""))
    return out
