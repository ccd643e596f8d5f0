"""Terminal rendering of a report (rich tables, Table-1 style: one row per cell, figures in %).  Every
sentence and reading rule comes from :mod:`verdictlab.report.readings`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..core.vocab import DEFAULT_DECODING
from .cell_fields import AGREEMENT_FIELDS, extra_cell_fields
from .readings import (
    T_BANDS,
    agreement_caption,
    decision_test_line,
    decoding_line,
    missing_line,
    policy_line,
    region_caption,
    region_phrase,
    shown_definitions,
    single_rep_note,
    t_band,
    t_with_interval,
)


def temp(x: Any) -> str:
    """A temperature for tables (``0.7``); ``"?"`` when the store has none (old stores could hold NULL)."""
    try:
        t = float(x)
    except (TypeError, ValueError):
        return "?"
    return "?" if t != t else f"{t:g}"


def pct(x: float | None, *, digits: int = 1) -> str:
    """A fraction as a percentage (``0.723 -> '72.3'``); ``None`` -> ``'—'``."""
    return "—" if x is None else f"{100 * x:.{digits}f}"


def num(x: float | None, *, digits: int = 2) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def interval(cell: Mapping[str, Any], name: str) -> str:
    lo, hi = cell.get(f"{name}_lo"), cell.get(f"{name}_hi")
    if lo is None or hi is None:
        return ""
    return f"[{pct(lo, digits=0)}, {pct(hi, digits=0)}]"


def _fig(cell: Mapping[str, Any], name: str, *, style: str = "") -> Text:
    t = Text(pct(cell.get(name)), style=style)
    iv = interval(cell, name)
    if iv:
        t.append("\n" + iv, style="dim")
    return t


_T_STYLES = ("bold green", "green", "yellow", "dark_orange", "red")


def _t_style(t: float | None) -> str:
    """Shading like the paper's Table 1, by the bands of :data:`verdictlab.report.readings.T_BANDS`
    (>= 70 / 60-70 / 50-60 / 40-50 / < 40)."""
    band = t_band(t)
    return "dim" if band is None else _T_STYLES[min(band, len(T_BANDS))]


def _run_text(value: Any) -> Text:
    """Run-supplied text (judge ids, dataset and protocol names, errors) as plain text: never read as
    rich markup, so a dataset named ``[/bold]x`` prints as it is."""
    return Text(str(value))


def protocol_label(cell: Mapping[str, Any]) -> str:
    """The protocol of a cell as tables show it: with its step (``flask [accuracy]``) and a decoding
    mode other than ``free`` (``vf-json (constrained)``)."""
    label = str(cell["protocol"])
    if cell.get("step"):
        label += f" [{cell['step']}]"
    dec = cell.get("decoding")
    if dec and dec != DEFAULT_DECODING and str(dec) not in label:  # (callers may have named it already)
        label += f" ({dec})"
    return label


def shown_name(cell: Mapping[str, Any], kind: str) -> str:
    """The display name of a cell's ``kind`` (judge, protocol, dataset): ``cell["display"]`` when the
    report gave it one, else the id."""
    return str((cell.get("display") or {}).get(kind) or cell.get(kind))


def protocol_name(cell: Mapping[str, Any]) -> str:
    """:func:`protocol_label` under the protocol's display name."""
    return protocol_label({**cell, "protocol": shown_name(cell, "protocol")})


def _jl(row: Mapping[str, Any], labels: Mapping[str, str] | None = None) -> str:
    """The short display name of a row's judge."""
    if row.get("judge_label"):
        return str(row["judge_label"])
    return str((labels or {}).get(str(row["judge"]), row["judge"]))


def figures_table(cells: list[dict[str, Any]], *, title: str) -> Table:
    tbl = Table(title=title, title_justify="left", show_lines=False, header_style="bold",
                caption=region_caption(), caption_justify="left")
    judge_width = min(32, max((len(_jl(c)) for c in cells), default=5))
    for name, justify in (("dataset", "left"), ("judge", "left"), ("protocol", "left"), ("temp", "right"),
                          ("pairs", "right"), ("C", "right"), ("SC", "right"), ("φ", "right"),
                          ("A", "right"), ("A_dec", "right"), ("A_max", "right"), ("gap", "right"),
                          ("T", "right"), ("T_joint", "right"), ("unparsed", "right"), ("region", "left")):
        tbl.add_column(name, justify=justify, overflow="fold",  # type: ignore[arg-type]
                       min_width=judge_width if name == "judge" else None)
    last_ds = None
    for c in cells:
        ds = c["dataset"]
        if last_ds is not None and ds != last_ds:
            tbl.add_section()
        last_ds = ds
        best = " ★" if c.get("best_T_in_dataset") else ""
        n_lab = c.get("n_labelled_pairs")
        pairs = f"{c.get('n_pairs', '—')}" + (f"\n({n_lab} lab.)" if n_lab is not None else "")
        unparsed = (f"{pct(c.get('parse_failure_rate'))}%\n{c.get('n_unparsed', 0)}/{c.get('n_judgments', 0)}"
                    if c.get("parse_failure_rate") is not None else "—")
        tbl.add_row(
            _run_text(shown_name(c, "dataset")), _run_text(_jl(c)), _run_text(protocol_name(c)),
            temp(c.get("temperature")),
            pairs, _fig(c, "C"), pct(c.get("self_consistency")), _fig(c, "phi"), _fig(c, "A"),
            pct(c.get("A_dec")), pct(c.get("A_max")), pct(c.get("capability_gap")),
            Text.assemble(_fig(c, "T", style=_t_style(c.get("T"))), (best, "bold")),
            pct(c.get("T_joint")), unparsed, region_phrase(c, short=True) or "—",
        )
    return tbl


def agreement_table(cells: list[dict[str, Any]]) -> Table | None:
    rows = [c for c in cells if c.get("agreement")]
    if not rows:
        return None
    present = [(k, lab) for k, lab in AGREEMENT_FIELDS if any(k in c["agreement"] for c in rows)]
    # the Ns behind the agreement figures (units = pair x order; position = parsed A/B judgments)
    extra = [k for k in ("n_agreement_units", "n_position") if any(k in c["agreement"] for c in rows)]
    tbl = Table(title="Agreement with labels and bias", title_justify="left", header_style="bold",
                caption=agreement_caption(), caption_justify="left")
    short = {"exact_match": "exact", "kappa": "κ", "alpha": "α", "kappa_deflation": "κ defl.",
             "position_bias": "pos. bias", "test_retest": "retest", "consistency_bias_paradox": "paradox",
             "verbosity_bias": "verb. r", "n_agreement_units": "N units", "n_position": "N pos."}
    judge_width = min(32, max((len(_jl(c)) for c in rows), default=5))
    for name in ("dataset", "judge", "protocol", "temp"):
        tbl.add_column(name, overflow="fold", min_width=judge_width if name == "judge" else None)
    for k, lab in present:
        tbl.add_column(short.get(k, lab), justify="right")
    for k in extra:
        tbl.add_column(short.get(k, k), justify="right")
    for c in rows:
        a = c["agreement"]
        vals: list[Text | str] = []
        for k, _ in present + [(k, k) for k in extra]:
            v = a.get(k)
            if k == "consistency_bias_paradox" and (a.get("test_retest") is None or a.get("position_bias") is None):
                v = None  # undefined inputs: neither yes nor no
            if k == "position_bias" and v is None and a.get("position_bias_note"):
                vals.append(Text(str(a["position_bias_note"]), style="dim"))
            elif isinstance(v, bool):
                vals.append(Text("YES", style="bold red") if v else Text("no"))
            elif isinstance(v, float):
                vals.append(num(v, digits=3))
            else:
                vals.append("—" if v is None else str(v))
        tbl.add_row(_run_text(shown_name(c, "dataset")), _run_text(_jl(c)), _run_text(protocol_name(c)),
                    temp(c.get("temperature")), *vals)
    return tbl


def extra_table(cells: list[dict[str, Any]]) -> Table | None:
    """Cell columns added by registered analyses (A 3-class, macro F1, expected figures) and the
    decoding mode, where some cell has them."""
    fields = extra_cell_fields(cells)
    if not fields:
        return None
    tbl = Table(title="More figures per cell", title_justify="left", header_style="bold")
    for name in ("dataset", "judge", "protocol", "temp"):
        tbl.add_column(name, overflow="fold")
    for _, lab in fields:
        tbl.add_column(lab, justify="right")
    for c in cells:
        vals: list[Text | str] = []
        for k, _ in fields:
            v = c.get(k)
            vals.append(_fig(c, k) if isinstance(v, float) else _run_text("—" if v is None else v))
        tbl.add_row(_run_text(shown_name(c, "dataset")), _run_text(_jl(c)), _run_text(protocol_name(c)),
                    temp(c.get("temperature")), *vals)
    return tbl


def cell_title(cell: Mapping[str, Any]) -> str:
    """``judge / protocol / dataset / T=t`` (+ the decoding when it is not free, + the step of a
    multi-call protocol): one cell in a title."""
    dec = cell.get("decoding")
    tail = (f" / {dec}" if dec and dec != DEFAULT_DECODING else "") + (f" / {cell['step']}" if cell.get("step") else "")
    return (f"{_jl(cell)} / {protocol_name(cell)} / {shown_name(cell, 'dataset')} / "
            f"T={temp(cell.get('temperature'))}{tail}")


def definition_value(row: Mapping[str, Any]) -> str:
    """A definition's figure in % (two decimals, as papers print them), or "—" and the reason the cell
    has none (its ``missing``)."""
    if row.get("missing"):
        return f"— ({row['missing']})"
    return pct(row.get("value"), digits=2)


def definition_interval(row: Mapping[str, Any]) -> str:
    """``[lo, hi]`` of a definition's figure in % (one decimal), with its standard error where the
    source reports one."""
    lo, hi, se = row.get("lo"), row.get("hi"), row.get("standard_error")
    out = "" if lo is None or hi is None else f"[{pct(lo)}, {pct(hi)}]"
    return out + (f" SE {pct(se)}" if se is not None else "")


def definitions_tables(report: Mapping[str, Any]) -> list[Table]:
    """With published definitions asked for (``report --definitions``): per cell, the figures as the
    papers define them (value in % to two decimals, as papers print them, interval, N, what the rules
    left out), then one legend of the definitions: source, unparsed rule, what each counts differently
    from A."""
    catalogue = report.get("definitions") or []
    if not catalogue:
        return []
    titles = {d["name"]: d["title"] for d in catalogue}
    out = []
    for c in report["cells"]:
        rows = c.get("definitions") or []
        if not rows:
            continue
        tbl = Table(title=f"Figures as the papers define them — {escape(cell_title(c))}", title_justify="left",
                    header_style="bold")
        for name, just in (("definition", "left"), ("", "left"), ("value %", "right"), ("interval", "right"),
                           ("N", "right"), ("left out", "right"), ("unparsed", "left")):
            tbl.add_column(name, justify=just, overflow="fold")  # type: ignore[arg-type]
        for r in rows:
            tbl.add_row(f"{r['definition']}", _run_text(titles.get(r["definition"], "")) if not r.get("variant")
                        else _run_text(f"{titles.get(r['definition'], '')} — {r['variant']}"),
                        definition_value(r), definition_interval(r), str(r.get("n")),
                        str(r.get("n_left_out")), _run_text(r.get("unparsed_rule") or ""))
        out.append(tbl)
    legend = Table(title="The definitions: source, and what each counts differently from A", title_justify="left",
                   header_style="bold")
    for name in ("definition", "source", "what it counts differently from A"):
        legend.add_column(name, overflow="fold")
    for d in shown_definitions(report):
        legend.add_row(str(d["name"]), _run_text(d["source"]), _run_text(d["note"]))
    out.append(legend)
    return out


def engine_table(engine: list[dict[str, Any]], labels: Mapping[str, str] | None = None) -> Table | None:
    if not engine:
        return None
    tbl = Table(title="Engine accounting", title_justify="left", header_style="bold")
    for name in ("judge", "trials", "attempts", "ok 1st try", "retried→ok", "failed for good",
                 "parse failed", "repaired", "fallback", "last error"):
        tbl.add_column(name, overflow="fold", justify="left" if name in ("judge", "last error") else "right")
    for e in engine:
        tbl.add_row(_run_text(_jl(e, labels)), str(e["trials"]), str(e.get("attempts", "—")),
                    str(e.get("ok_first_try", "—")), str(e.get("retried_then_ok", "—")),
                    Text(str(e.get("failed_for_good", 0)), style="red" if e.get("failed_for_good") else ""),
                    str(e.get("parse_failures", 0)), str(e.get("parse_repaired", 0)),
                    str(e.get("parse_fallback", 0)), _run_text(e.get("last_error") or "—"))
    return tbl


def checklist_table(checklist: list[dict[str, Any]]) -> Table:
    tbl = Table(title="Validation-protocol checklist", title_justify="left", header_style="bold")
    tbl.add_column("", width=4)
    tbl.add_column("check", overflow="fold")
    tbl.add_column("this run", overflow="fold")
    for item in checklist:
        mark = Text("PASS", style="bold green") if item["passed"] else Text("FAIL", style="bold red")
        tbl.add_row(mark, _run_text(item["check"]), _run_text(item["detail"]))
    return tbl


def analyses_lines(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(line, style)``: the registered analyses of the report by name with their row counts, and one
    line per analysis that could not be computed."""
    extra = report.get("extra_tables") or {}
    out: list[tuple[str, str]] = []
    for name, t in extra.items():
        if t.get("error"):
            out.append((f"{t.get('title') or name} could not be computed: {t['error']}", "red"))
    names = [f"{k} ({len(v.get('rows') or [])} rows)" for k, v in extra.items() if not v.get("error")]
    if names:
        out.append(("Further analyses in --format html and --format json (run.analyses): " + ", ".join(names) + ".", ""))
    return out


def dispersion_table(rows: list[dict[str, Any]], labels: Mapping[str, str]) -> Table | None:
    """ΔT_fmt per judge and dataset, where more than one protocol was run."""
    fd = [d for d in rows if d.get("n_protocols", 0) > 1]
    if not fd:
        return None
    tbl = Table(title="Format dispersion ΔT_fmt = T_max − T_min over protocols", title_justify="left",
                header_style="bold")
    for name in ("dataset", "judge", "temp", "ΔT_fmt", "T_min (protocol)", "T_max (protocol)"):
        tbl.add_column(name, overflow="fold")
    for d in fd:
        tbl.add_row(_run_text(d["dataset"]), _run_text(_jl(d, labels)), temp(d.get("temperature")),
                    pct(d.get("delta_T_fmt")),
                    _run_text(f"{pct(d.get('T_min'))} ({d.get('protocol_min') or '—'})"),
                    _run_text(f"{pct(d.get('T_max'))} ({d.get('protocol_max') or '—'})"))
    return tbl


def _entry_line(e: Mapping[str, Any], cells: list[dict[str, Any]]) -> Text:
    """One configuration of the decision: its number, name, T and why."""
    line = Text(f"{e['number']:>3} ")
    line.append_text(_run_text(e["configuration"]))
    if e["group"] == "avoid":
        line.append(f"  {e['rule']}: ", style="bold red")
        line.append_text(_run_text(e["reason"]))
        return line
    if e["group"] == "not_measured":
        line.append(": " + str(e["reason"]), style="dim")
        return line
    line.append(f"  {t_with_interval(cells[int(e['cell_index'])])}", style=_t_style(e.get("T")))
    if e.get("region_short"):
        line.append(f"  {e['region_short']}", style="dim")
    line.append(f"  ({e['brief']})", style="dim")
    if e.get("caution"):
        line.append(f"; {e['caution']}", style="yellow")
    return line


_GROUP_TITLES = {"use": ("use", "bold green"), "avoid": ("avoid", "bold red"),
                 "below_best": ("below the best", "bold"), "not_measured": ("no T", "dim")}


def decision_lines(report: Mapping[str, Any]) -> list[Text]:
    """The decision, per dataset: the answer, then the configurations to use, to avoid, below the best
    and without a T, then what was not measured (:func:`verdictlab.report.readings.decision`)."""
    cells = report["cells"]
    out: list[Text] = []
    for d in report.get("decision") or []:
        head = Text("Decision — ", style="bold")
        head.append_text(Text(str(d["dataset_name"]), style="bold"))
        head.append(": ")
        head.append_text(_run_text(d["headline"]))
        out.append(head)
        for group, (title, style) in _GROUP_TITLES.items():
            for k, e in enumerate(d.get(group) or []):
                line = Text(f"  {title if k == 0 else '':<15}", style=style)
                out.append(line.append_text(_entry_line(e, cells)))
        for m in d.get("missing") or []:
            out.append(Text("  not measured   ", style="dim").append_text(_run_text(missing_line(m))))
    if out:
        first = (report.get("decision") or [{}])[0]
        out.append(Text(decision_test_line(report["policy"].alpha,
                                           int(first.get("family_size") or 0)), style="dim"))
    return out


def names_line(report: Mapping[str, Any]) -> str:
    """The ids shown under a shorter name: ``Names: judge X = id; ...``; empty when none is.  Read
    from the cells' values (their id and ``display`` name), never from the keys of
    ``display_names``: a terminal view makes the values of a report printable, not its keys."""
    seen: dict[str, dict[str, str]] = {"judge": {}, "protocol": {}, "dataset": {}}
    for c in report.get("cells") or []:
        for kind, ids in seen.items():
            ids[str(c[kind])] = shown_name(c, kind)
    pairs = [f"{kind} {n} = {i}" for kind in seen for i, n in sorted(seen[kind].items()) if i != n]
    return ("Names: " + "; ".join(pairs)) if pairs else ""


def render_terminal(report: Mapping[str, Any], console: Console | None = None) -> None:
    """Print the report: figures per cell, agreement/bias, engine accounting, checklist."""
    console = console or Console()
    run = report["run"]
    cells = report["cells"]
    console.print(f"[bold]verdictlab report[/bold] — {escape(str(run.get('run_dir', '')))}  "
                  f"({run.get('n_judgments', 0)} judgments, {len(cells)} cells)", highlight=False)
    if not cells:
        n_point = int(run.get("n_pointwise_judgments") or 0)
        graders = ((report.get("extra_tables") or {}).get("grader_cells") or {}).get("rows") or []
        console.print(f"{n_point} pointwise judgment(s) in {len(graders)} grader cell(s) (tables grader_cells and "
                      f"grader_decision below), no pairwise cells." if n_point
                      else "No judgments in this run yet.", highlight=False)
        for line, style in analyses_lines(report):
            console.print(_run_text(line), style=style, highlight=False)
        return
    labels = report.get("judge_labels") or {}
    for text in [*decision_lines(report), *([Text(names_line(report), style="dim")] if names_line(report) else [])]:
        console.print(text, highlight=False)
    console.print(figures_table(cells, title="Reliability per cell (judge × protocol × dataset × temperature)"))
    console.print(_run_text(policy_line(report)), style="dim", highlight=False)
    single = single_rep_note(cells)
    if single:
        console.print(_run_text(single), style="yellow", highlight=False)
    for tbl in (extra_table(cells), agreement_table(cells), *definitions_tables(report)):
        if tbl is not None:
            console.print(tbl)
    fdt = dispersion_table(report.get("format_dispersion", []), labels)
    if fdt is not None:
        console.print(fdt)
    eng = engine_table(run.get("engine", []), labels)
    if eng is not None:
        console.print(eng)
    console.print(checklist_table(report.get("checklist", [])))
    dec = decoding_line(run)
    if dec:
        console.print(_run_text(dec), style="dim", highlight=False)
    for line, style in analyses_lines(report):
        console.print(_run_text(line), style=style, highlight=False)
    bi = report.get("broken_items") or {}
    if bi.get("n_total"):
        console.print(f"{bi['n_total']} (pair × cell) combinations break the judge: {bi['n_flipped']} flipped "
                      f"under the swap, {bi['n_unstable']} unstable across repetitions "
                      f"(see --format html for the items side by side).", highlight=False)
