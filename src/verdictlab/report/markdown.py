"""Markdown rendering of a report (for pull requests, issues and notebooks).

The tables of cells iterate the report's one column specification (:mod:`verdictlab.report.columns`),
the same as the terminal and the HTML: the figures, the more-figures table of the registered cell-column
analyses and agreement.  Text that comes from the run (judge ids, dataset and protocol names, errors) is
escaped: ``|`` would break a table and ``<``/``>``/``&`` would let a Markdown renderer pass inline HTML
through.
"""

from __future__ import annotations

from collections.abc import Sequence

from .columns import Shown, TableSpec, cell_tables, show
from .model import Cell, DecisionEntry, Report
from .readings import cell_title, shown_definitions, temperature_text
from .terminal import definition_interval, definition_value

_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|", "`": "\\`", "*": "\\*", "_": "\\_",
            "[": "\\[", "]": "\\]", "\n": " ", "\r": " "}


def md_escape(text: object) -> str:
    """Escape run-supplied text for a Markdown table cell."""
    return "".join(_ESCAPES.get(ch, ch) for ch in str(text))


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], align: Sequence[str]) -> list[str]:
    sep = ["---:" if a == "r" else ":---" for a in align]
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _value(v: Shown) -> str:
    """A shown value in one Markdown cell: the value, its mark and its small print (an interval, an N, the
    reason a figure is missing) in brackets or parentheses."""
    mark = f" {v.mark}" if v.mark else ""
    text = f"**{md_escape(v.text)}**" if v.style == "yes" else md_escape(v.text)
    if not v.sub:
        return text + mark
    if v.sub.startswith("["):                   # an interval of ours: printed as it is
        return f"{text} {v.sub}{mark}"
    return f"{text} ({md_escape(v.sub)}){mark}"


def cells_markdown(spec: TableSpec, cells: Sequence[Cell]) -> list[str]:
    """One table of cells as Markdown lines, its columns the spec's."""
    lines = [f"### {spec.title}", ""]
    lines += _table([md_escape(c.label) for c in spec.columns],
                    [[_value(show(col, c)) for col in spec.columns] for c in cells],
                    ["l" if c.align == "left" else "r" for c in spec.columns])
    if spec.caption:
        lines += ["", md_escape(spec.caption) + "."]
    return [*lines, ""]


_GROUPS = (("use", "Use"), ("avoid", "Avoid"), ("below_best", "Below the best"), ("not_measured", "No T"))


def _entry(e: DecisionEntry) -> str:
    name = f"{e.number}. {md_escape(e.configuration)}"
    if e.group == "avoid":
        return f"{name} — **{md_escape(e.rule)}**: {md_escape(e.reason)}"
    if e.group == "not_measured":
        return f"{name} — {md_escape(e.reason)}"
    tail = f"; {md_escape(e.caution)}" if e.caution else ""
    region = f" · {md_escape(e.region_short)}" if e.region_short else ""
    return f"{name} — {md_escape(e.T_text)}{region} ({md_escape(e.brief)}){tail}"


def leaderboard_markdown(report: Report) -> list[str]:
    """The leaderboard block per judge configuration whose pairs name their systems, as Markdown lines."""
    lines: list[str] = []
    for b in report.leaderboards:
        lines += [f"### Leaderboard — {md_escape(b.dataset)} · {md_escape(b.configuration)}", "",
                  md_escape(b.ranking), "", md_escape(b.distinguishable), ""]
        lines += [f"- {md_escape(line)}" for line in b.changes]
        lines.append("")
    return lines


def grader_markdown(report: Report) -> list[str]:
    """The grader block per dataset and criterion, as Markdown lines."""
    lines: list[str] = []
    for b in report.graders:
        crit = f" · {md_escape(b.criterion)}" if b.criterion else ""
        lines += [f"### Graders — {md_escape(b.dataset)}{crit}", "", f"**{md_escape(b.headline)}**", ""]
        lines += [f"- {md_escape(line)}" for line in b.lines] + [""]
    return lines


def decision_markdown(report: Report) -> list[str]:
    """The decision per dataset as Markdown lines (:func:`verdictlab.report.readings.decision`)."""
    lines: list[str] = []
    for d in report.decision:
        lines += [f"### Decision — {md_escape(d.dataset_name)}", "", f"**{md_escape(d.headline)}**", "",
                  md_escape(d.ranking), ""]
        for group, title in _GROUPS:
            for e in d.group(group):
                lines.append(f"- {title}: {_entry(e)}")
        lines += [f"- Not measured: {md_escape(m.line)}" for m in d.missing]
        lines.append("")
    lines += leaderboard_markdown(report) + grader_markdown(report)
    if lines:
        lines += [md_escape(report.notes.get("test", "")), ""]
    legend = report.notes.get("names", "")
    return lines + ([md_escape(legend), ""] if legend else [])


def definitions_lines(report: Report) -> list[str]:
    """With published definitions asked for: per cell, the figures as the papers define them ("—" with
    the reason where not measured), then the definitions' sources and what each counts differently from A."""
    shown = shown_definitions(report)
    if not shown:
        return []
    lines = ["### Figures as the papers define them", ""]
    for c in report.cells:
        if not c.definitions:
            continue
        lines += [f"**{md_escape(cell_title(c))}**", ""]
        lines += _table(["definition", "variant", "value %", "interval", "N", "left out", "unparsed outputs"],
                        [[md_escape(r.definition), md_escape(r.variant), _value(definition_value(r.figure)),
                          definition_interval(r.values), str(r.values.get("n")), str(r.values.get("n_left_out")),
                          md_escape(r.values.get("unparsed_rule") or "")] for r in c.definitions],
                        ["l", "l", "r", "r", "r", "r", "l"])
        lines.append("")
    lines += _table(["definition", "source", "what it counts differently from A"],
                    [[md_escape(d["name"]), md_escape(d["source"]), md_escape(d["note"])] for d in shown],
                    ["l", "l", "l"])
    return [*lines, ""]


def _dispersion(report: Report) -> list[str]:
    fd = [d for d in report.format_dispersion if d.delta_T_fmt is not None]
    if not fd:
        return []
    labels, protocols = report.judge_labels, report.display_names.get("protocol", {})

    def pct(x: float | None) -> str:
        return "—" if x is None else f"{100 * x:.1f}"

    lines = ["### Format dispersion (ΔT_fmt = T_max − T_min over protocols)", ""]
    lines += _table(["dataset", "judge", "temperature", "ΔT_fmt", "T_min (protocol)", "T_max (protocol)"],
                    [[md_escape(d.dataset), md_escape(labels.get(d.judge, d.judge)), temperature_text(d.temperature),
                      pct(d.delta_T_fmt),
                      f"{pct(d.T_min)} ({md_escape(protocols.get(d.protocol_min or '', d.protocol_min))})",
                      f"{pct(d.T_max)} ({md_escape(protocols.get(d.protocol_max or '', d.protocol_max))})"] for d in fd],
                    ["l", "l", "r", "r", "l", "l"])
    return [*lines, ""]


def render_markdown(report: Report) -> str:
    """The decision, every table of cells (figures, more figures, agreement), format dispersion, the
    definitions asked for and the checklist."""
    notes = report.notes
    lines = [f"## verdictlab report — {md_escape(report.run.run_dir)}", "", md_escape(notes.get("counts", "")), ""]
    if not report.cells:     # a run of pointwise graders only has no pairwise cells: its graders' block
        return "\n".join(lines + [md_escape(notes.get("empty", "")), ""] + grader_markdown(report))
    lines += decision_markdown(report)
    captions = {"figures": notes.get("region", ""), "agreement": notes.get("agreement", ""),
                "more": notes.get("more", "")}
    for spec in cell_tables(report.cells, captions=captions):
        lines += cells_markdown(spec, report.cells)
        if spec.name == "figures":
            lines += [md_escape(notes.get("policy_short", "")), ""]
            if notes.get("single_repetition"):
                lines += [f"> {md_escape(notes['single_repetition'])}", ""]
    lines += _dispersion(report)
    lines += definitions_lines(report)
    lines += ["### Validation-protocol checklist", ""]
    lines += [f"- {'✅ PASS' if it.passed else '❌ FAIL'} — {md_escape(it.check)}: {md_escape(it.detail)}"
              for it in report.checklist]
    lines.append("")
    return "\n".join(lines)
