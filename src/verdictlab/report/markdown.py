"""Markdown rendering of a report (for pull requests, issues and notebooks).

Text that comes from the run (judge ids, dataset and protocol names, errors) is escaped: ``|``
would break a table and ``<``/``>``/``&`` would let a Markdown renderer pass inline HTML through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .readings import (
    decision_test_line,
    missing_line,
    policy_line,
    region_caption,
    region_phrase,
    shown_definitions,
    single_rep_note,
)
from .terminal import (
    cell_title,
    definition_interval,
    definition_value,
    interval,
    names_line,
    num,
    pct,
    protocol_name,
    shown_name,
    t_with_interval,
    temp,
)

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


def _fig(cell: Mapping[str, Any], name: str) -> str:
    iv = interval(cell, name)
    return pct(cell.get(name)) + (f" {iv}" if iv else "")


_GROUPS = (("use", "Use"), ("avoid", "Avoid"), ("below_best", "Below the best"), ("not_measured", "No T"))


def _entry(e: Mapping[str, Any], cells: Sequence[Mapping[str, Any]]) -> str:
    name = f"{e['number']}. {md_escape(e['configuration'])}"
    if e["group"] == "avoid":
        return f"{name} — **{md_escape(e['rule'])}**: {md_escape(e['reason'])}"
    if e["group"] == "not_measured":
        return f"{name} — {md_escape(e['reason'])}"
    tail = f"; {md_escape(e['caution'])}" if e.get("caution") else ""
    region = f" · {md_escape(e['region_short'])}" if e.get("region_short") else ""
    return f"{name} — {t_with_interval(cells[int(e['cell_index'])])}{region} ({md_escape(e['brief'])}){tail}"


def decision_markdown(report: Mapping[str, Any]) -> list[str]:
    """The decision per dataset as Markdown lines (:func:`verdictlab.report.readings.decision`)."""
    lines: list[str] = []
    cells = report["cells"]
    for d in report.get("decision") or []:
        lines += [f"### Decision — {md_escape(d['dataset_name'])}", "", f"**{md_escape(d['headline'])}**", ""]
        for group, title in _GROUPS:
            for e in d.get(group) or []:
                lines.append(f"- {title}: {_entry(e, cells)}")
        lines += [f"- Not measured: {md_escape(missing_line(m))}" for m in d.get("missing") or []]
        lines.append("")
    if lines:
        first = (report.get("decision") or [{}])[0]
        lines += [md_escape(decision_test_line(report["policy"].alpha,
                                               int(first.get("family_size") or 0))), ""]
    legend = names_line(report)
    return lines + ([md_escape(legend), ""] if legend else [])


def definitions_lines(report: Mapping[str, Any]) -> list[str]:
    """With published definitions asked for: per cell, the figures as the papers define them, then the
    definitions' sources and what each counts differently from A."""
    shown = shown_definitions(report)
    if not shown:
        return []
    lines = ["### Figures as the papers define them", ""]
    for c in report["cells"]:
        rows = c.get("definitions") or []
        if not rows:
            continue
        lines += [f"**{md_escape(cell_title(c))}**", ""]
        lines += _table(["definition", "variant", "value %", "interval", "N", "left out", "unparsed outputs"],
                        [[md_escape(r["definition"]), md_escape(r.get("variant") or ""), md_escape(definition_value(r)),
                          definition_interval(r), str(r.get("n")), str(r.get("n_left_out")),
                          md_escape(r.get("unparsed_rule") or "")] for r in rows],
                        ["l", "l", "r", "r", "r", "r", "l"])
        lines.append("")
    lines += _table(["definition", "source", "what it counts differently from A"],
                    [[md_escape(d["name"]), md_escape(d["source"]), md_escape(d["note"])] for d in shown],
                    ["l", "l", "l"])
    return [*lines, ""]


def render_markdown(report: Mapping[str, Any]) -> str:
    """The headline figures per cell, agreement and bias, format dispersion and the checklist."""
    cells = report["cells"]
    run = report["run"]
    lines = [f"## verdictlab report — {md_escape(run.get('run_dir', ''))}", "",
             f"{run.get('n_judgments', 0)} judgments, {len(cells)} cells (judge × protocol × dataset × "
             f"temperature).", ""]
    if not cells:
        return "\n".join(lines + ["No judgments in this run yet.", ""])
    lines += decision_markdown(report)
    lines += ["### Reliability per cell", ""]
    rows = []
    for c in cells:
        star = " ★" if c.get("best_T_in_dataset") else ""
        rows.append([md_escape(shown_name(c, "dataset")), md_escape(c.get("judge_label") or c["judge"]),
                     md_escape(protocol_name(c)),
                     temp(c.get("temperature")), f"{c.get('n_pairs')} ({c.get('n_labelled_pairs')} lab.)",
                     _fig(c, "C"), _fig(c, "phi"), _fig(c, "A"), pct(c.get("A_max")), _fig(c, "T") + star,
                     pct(c.get("T_joint")),
                     f"{pct(c.get('parse_failure_rate'))}% ({c.get('n_unparsed')}/{c.get('n_judgments')})",
                     md_escape(region_phrase(c, short=True) or "—")])
    lines += _table(["dataset", "judge", "protocol", "temp", "pairs", "C", "φ", "A", "A_max", "T", "T_joint",
                     "unparsed", "region"], rows, ["l", "l", "l", "r", "r", "r", "r", "r", "r", "r", "r", "r", "l"])
    lines += ["", md_escape(policy_line(report, legend=False) + " " + region_caption() + "."), ""]
    note = single_rep_note(cells)
    if note:
        lines += [f"> {note}", ""]
    agr = [c for c in cells if c.get("agreement")]
    if agr:
        rows = []
        for c in agr:
            a = c["agreement"]
            paradox = a.get("consistency_bias_paradox")
            if a.get("test_retest") is None or a.get("position_bias") is None:
                paradox = None
            rows.append([md_escape(shown_name(c, "dataset")), md_escape(c.get("judge_label") or c["judge"]),
                         md_escape(protocol_name(c)), temp(c.get("temperature")),
                         num(a.get("exact_match"), digits=3), num(a.get("kappa"), digits=3),
                         num(a.get("alpha"), digits=3), num(a.get("kappa_deflation"), digits=3),
                         (md_escape(a["position_bias_note"]) if a.get("position_bias") is None
                          and a.get("position_bias_note") else num(a.get("position_bias"), digits=3)),
                         num(a.get("test_retest"), digits=3),
                         "—" if paradox is None else ("**yes**" if paradox else "no"),
                         str(a.get("n_agreement_units", "—"))])
        lines += ["### Agreement with labels and bias", ""]
        lines += _table(["dataset", "judge", "protocol", "temp", "exact", "κ", "α", "κ defl.", "pos. bias",
                         "retest", "paradox", "N units"], rows,
                        ["l", "l", "l", "r", "r", "r", "r", "r", "r", "r", "l", "r"])
        lines.append("")
    fd = [d for d in report.get("format_dispersion", []) if d.get("delta_T_fmt") is not None]
    if fd:
        lines += ["### Format dispersion (ΔT_fmt = T_max − T_min over protocols)", ""]
        lines += _table(["dataset", "judge", "temp", "ΔT_fmt", "T_min (protocol)", "T_max (protocol)"],
                        [[md_escape(d["dataset"]), md_escape(report.get("judge_labels", {}).get(d["judge"],
                                                                                             d["judge"])),
                          temp(d.get("temperature")), pct(d["delta_T_fmt"]),
                          f"{pct(d['T_min'])} ({md_escape(d['protocol_min'])})",
                          f"{pct(d['T_max'])} ({md_escape(d['protocol_max'])})"] for d in fd],
                        ["l", "l", "r", "r", "l", "l"])
        lines.append("")
    lines += definitions_lines(report)
    lines += ["### Validation-protocol checklist", ""]
    lines += [f"- {'✅ PASS' if it['passed'] else '❌ FAIL'} — {md_escape(it['check'])}: {md_escape(it['detail'])}"
              for it in report.get("checklist", [])]
    lines.append("")
    return "\n".join(lines)
