"""One self-contained HTML report (inline CSS/JS, plots as base64 ``data:`` images, no network).

The template prints; it never decides.  Everything it shows is prepared here from the typed report: the
tables of cells iterate the one column specification (:mod:`verdictlab.report.columns`) into rows of
printed values (text, small print, sort key, tooltip, viewer link), and every sentence is the report's
(filled once by :mod:`verdictlab.report.readings`).

Model outputs and dataset text are untrusted: the jinja2 environment autoescapes everything and no
template applies ``|safe`` to data.  Plots are embedded as ``<img src="data:...">`` so that even a
label carrying markup inside an SVG cannot run (images never execute scripts).
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from ..core.viewer_links import DEFAULT_VIEWER_URL, cell_anchor, cell_list_url, check_viewer_url, pair_url
from .columns import Column, Shown, TableSpec, cell_tables, column_label, show
from .lanes import SecondLane, lanes_for
from .model import Cell, DatasetDecision, DecisionEntry, Report
from .readings import cell_title, definition_unparsed_rule, plot_readings, shown_definitions, temperature_text
from .terminal import definition_interval, definition_value

TEMPLATE = "report.html.j2"

#: the CSS class of a value's style name (:class:`~verdictlab.report.columns.Shown`)
CSS: dict[str, str] = {"t0": "t70", "t1": "t60", "t2": "t50", "t3": "t40", "t4": "t00", "missing": "na",
                       "bound": "bound", "yes": "fail"}
#: the id of each table of cells in the page
TABLE_IDS: dict[str, str] = {"figures": "headline-table", "more": "extra-table", "agreement": "agreement-table"}


def _env() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("verdictlab.report", "templates"),
        autoescape=True,  # every {{ }} is HTML-escaped; data never gets |safe
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pretty"] = lambda x: json.dumps(x, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    env.filters["breakable"] = _breakable
    return env


#: the characters of a name a line may break after (a browser breaks a name at its spaces and hyphens, and
#: here after these; never inside a word)
_NAME_BREAKS = re.compile(r"([,:/=_])")


#: the longest run of a name without a break opportunity (a longer one -- a hostile id, a hash -- gets one
#: every so many characters rather than widening its table past the page)
_LONGEST_RUN = 20


def _breakable(text: str) -> Markup:
    """A name escaped, with a line-break opportunity after each comma, colon, slash, equals sign and
    underscore (``llamacpp:smollm2-135m``, ``sim:sk=0.8,pl=0.2`` wrap between their parts in a narrow
    column instead of inside a word or overflowing it)."""
    out = Markup("")
    for part in _NAME_BREAKS.split(str(text)):
        if _NAME_BREAKS.fullmatch(part):
            out += escape(part) + Markup("<wbr>")
            continue
        for word in re.split(r"(\s+)", part):     # a run longer than a column offers a break every so often
            out += Markup("<wbr>").join(escape(word[k:k + _LONGEST_RUN]) for k in range(0, len(word), _LONGEST_RUN))
    return out


def _sortval(x: Any) -> str:
    return "" if x is None else (f"{x:.6f}" if isinstance(x, float) else str(x))


def _html_value(col: Column, cell: Cell, viewer_url: str | None) -> dict[str, Any]:
    """One printed value of a table of cells: text (names breakable), small print, sort key, tooltip, CSS
    class and the viewer link of its column (``viewer_outcome``)."""
    v: Shown = show(col, cell)
    tip = v.note
    text: Any = v.text
    if col.table == "key":
        tip = str(getattr(cell.key, col.key)) if col.key != "temperature" else ""
        text = _breakable(v.text)
    elif col.key == "region" and cell.region:
        text = _region_badges(cell)
    href = link_title = ""
    if viewer_url and col.viewer_outcome is not None and v.style != "missing":
        href = viewer_url + cell_list_url({**cell.key.as_dict(), "step": cell.step}, outcome=col.viewer_outcome)
        link_title = "these pairs in the viewer (verdictlab view)"
    css = " ".join(x for x in ("l" if col.align == "left" else "", "nm" if col.table == "key" else "",
                                "reg" if col.key == "region" else "",
                                CSS.get(v.style, "")) if x)
    return {"text": text, "sub": v.sub, "sort": _sortval(v.sort if v.sort is not None else v.text), "tip": tip,
            "css": css, "href": href, "link_title": link_title, "mark": v.mark}


def _region_badges(cell: Cell) -> Markup:
    """The region of a cell as coloured badges: every region its interval reaches (``chaos or
    confidently-biased``), "any of the four" when it reaches them all."""
    reach = list(cell.regions_possible or (cell.region,))
    if len(reach) > 3:
        return Markup('<span class="region" title="{}">any of the four</span>').format(_region_title(cell))
    return Markup(" or ").join(Markup('<span class="region region-{0}">{0}</span>').format(r) for r in reach)


def _region_title(cell: Cell) -> str:
    from .readings import region_phrase

    return region_phrase(cell) or ""


def html_tables(report: Report, viewer_url: str | None) -> list[dict[str, Any]]:
    """The tables of cells as the template prints them (:func:`verdictlab.report.columns.cell_tables`)."""
    captions = {"figures": report.notes.get("region", ""), "agreement": report.notes.get("agreement_html", ""),
                "more": report.notes.get("more", "")}
    out = []
    for spec in cell_tables(report.cells, captions=captions):
        out.append(_html_table(spec, report.cells, viewer_url))
    return out


def _html_table(spec: TableSpec, cells: Sequence[Cell], viewer_url: str | None) -> dict[str, Any]:
    return {"name": spec.name, "id": TABLE_IDS.get(spec.name, spec.name), "title": spec.title,
            "caption": spec.caption,
            "columns": [{"label": c.label, "title": c.title, "left": c.align == "left"} for c in spec.columns],
            "rows": [{"css": "best" if spec.name == "figures" and c.best_T_in_dataset else "",
                      "cells": [_html_value(col, c, viewer_url) for col in spec.columns]} for c in cells]}


def script_hash() -> str:
    """CSP source for the report's one inline script: ``sha256-<base64>`` of the text between
    ``<script>`` and ``</script>`` in the template (static text, rendered byte for byte).  With it
    the page runs that script and nothing else, so even a failure of escaping could not run an
    injected script."""
    import base64
    import hashlib
    from importlib.resources import files

    src = files("verdictlab.report").joinpath("templates", TEMPLATE).read_text(encoding="utf-8")
    body = src.split("<script>", 1)[1].split("</script>", 1)[0]
    return "sha256-" + base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode("ascii")


def _audit(report: Report) -> dict[str, Any]:
    """The audit section: the run's parse counts (:func:`verdictlab.stats.parse_audit`) and tallies."""
    run = report.run
    totals = report.totals or {}
    rate = (run.audit or {}).get("parser_success_rate")
    return {**(run.audit or {}), "n_pairs": totals.get("n_pairs"), "n_labelled_pairs": totals.get("n_labelled_pairs"),
            "rate": "—" if rate is None else f"{100 * rate:.1f}",
            "parse_status_counts": run.parse_status_counts, "fallback_rules": run.fallback_rules}


def render_html(report: Report, out: str | Path | None = None, *, embed_plots: bool = True,
                plot_format: str = "png", title: str | None = None,
                viewer_url: str | None = DEFAULT_VIEWER_URL) -> str:
    """Render the report as one self-contained HTML page; write it to ``out`` when given.

    ``plot_format`` is ``"png"`` (default, smaller for many points) or ``"svg"``; either way the
    images are inline ``data:`` URIs, so the file needs no network and no side files.
    ``viewer_url``: where ``verdictlab view`` serves the run (default http://127.0.0.1:8765); the
    tables and the items that break the judge link to its pages (working while it runs); None or ""
    leaves the links out.  ``ValueError`` unless it is an ``http(s)://host[:port]`` address.
    """
    viewer = check_viewer_url(viewer_url) if viewer_url else None
    plots: list[dict[str, str]] = []
    decision_images: dict[str, str] = {}
    if embed_plots and report.cells:
        plots, decision_images = _images(report, plot_format)
    elif embed_plots and report.extra_tables:     # no pairwise cells (graders only): the analyses' figures
        plots = _analysis_images(report, plot_format)
    from ..core.guards import input_limits

    lim = input_limits()
    page = _page(report, viewer, decision_images, lim.html_max_output_chars)
    html = _render(page, plots, title)
    rows = list(page["broken"]["rows"])
    while len(html.encode("utf-8")) > lim.html_max_bytes and rows:     # shed the audit rows, flipped first kept
        rows = rows[: len(rows) // 2]
        page["broken"] = {**page["broken"], "rows": rows, "n_shown": len(rows)}
        html = _render(page, plots, title)
    size = len(html.encode("utf-8"))
    if size > lim.html_max_bytes:
        from ..core.guards import GuardError, env_name

        raise GuardError(f"the HTML report would be {size:,} bytes, more than the limit of {lim.html_max_bytes:,} "
                         f"(raise it with {env_name('html_max_bytes')}, or use --format json)")
    if out is not None:
        p = Path(out)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(html, encoding="utf-8")
    return html


def _cut_long_text(value: Any, limit: int) -> Any:
    """A copy of a value with every string longer than ``limit`` characters cut, saying how much was left
    out (the store keeps every text whole; VERDICTLAB_HTML_MAX_OUTPUT_CHARS raises it)."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        return value[:limit] + f" … [{len(value) - limit:,} more characters in run.sqlite]"
    if isinstance(value, Mapping):
        return {k: _cut_long_text(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut_long_text(v, limit) for v in value]
    return value


#: the cell figures a large report's second process draws, with the decision pictures and the analyses'
#: figures (measured at 5.4M judgments: about half of the drawing each side)
SECOND_LANE_FIGURES = ("spread",)


def _images(report: Report, plot_format: str) -> tuple[list[dict[str, str]], dict[str, str]]:
    """The figures (name, title, ``data:`` URI, reading; in :data:`~verdictlab.report.plots.CELL_FIGURES`
    order, then the analyses') and the decision pictures; a large report draws part of them in a forked
    second process (:mod:`verdictlab.report.lanes`)."""
    from .plots import CELL_FIGURES

    read = plot_readings(report)
    # an analysis' figure is read by its description
    read.update({n: str(t.get("description") or "") for n, t in report.extra_tables.items() if n not in read})

    def there(name: str) -> bool:
        return name in SECOND_LANE_FIGURES or name not in CELL_FIGURES

    jobs = {"decision": lambda: _decision_images(report, plot_format),
            "figures": lambda: _figure_uris(report, plot_format, read, there)}
    with SecondLane(jobs, use=lanes_for(report.run.n_judgments) == 2) as lane:
        here = _figure_uris(report, plot_format, read, lambda n: not there(n))
        lane.help()
        drawn = here + lane.result("figures")
        decision_images = lane.result("decision")
    rank = {n: i for i, n in enumerate(CELL_FIGURES)}
    return sorted(drawn, key=lambda p: rank.get(p["name"], len(rank))), decision_images


def _analysis_images(report: Report, plot_format: str) -> list[dict[str, str]]:
    """The registered analyses' figures alone (e.g. the cost curves' Pareto front of a graders-only run),
    each read by its analysis' description."""
    from .plots import CELL_FIGURES

    read = {n: str(t.get("description") or "") for n, t in report.extra_tables.items()}
    return _figure_uris(report, plot_format, read, lambda n: n not in CELL_FIGURES)


def _figure_uris(report: Report, plot_format: str, read: Mapping[str, str],
                 only: Callable[[str], bool]) -> list[dict[str, str]]:
    import matplotlib.pyplot as plt

    from .plots import figure_data_uri, figures

    out = []
    for name, ptitle, fig in figures(report, only):
        out.append({"name": name, "title": ptitle, "src": figure_data_uri(fig, fmt=plot_format),
                    "reading": read.get(name, "")})
        plt.close(fig)
    return out


def _decision_images(report: Report, plot_format: str) -> dict[str, str]:
    """dataset -> the ``data:`` URI of its trust-region picture (:func:`verdictlab.report.plots.plot_decision`)."""
    import matplotlib.pyplot as plt

    from .plots import decision_figures, figure_data_uri

    out = {}
    for dataset, fig in decision_figures(report):
        out[dataset] = figure_data_uri(fig, fmt=plot_format)
        plt.close(fig)
    return out


def _legend(report: Report) -> list[tuple[str, list[tuple[str, str]]]]:
    """``[(kind, [(id, display name), ...])]`` for the ids shown under another name."""
    out = []
    for kind in ("judge", "protocol", "dataset"):
        pairs = [(i, n) for i, n in sorted((report.display_names.get(kind) or {}).items()) if i != n]
        if pairs:
            out.append((kind, pairs))
    return out


def _entry(e: DecisionEntry, cell: Cell, viewer_url: str | None) -> dict[str, Any]:
    href = viewer_url + cell_list_url({**cell.key.as_dict(), "step": cell.step}) if viewer_url else ""
    band = CSS.get(f"t{min(b, 4)}", "") if (b := _band(e.T.point)) is not None else ""
    return {"number": e.number, "group": e.group, "configuration": _breakable(e.configuration),
            "configuration_id": e.configuration_id, "href": href, "T_text": e.T_text, "band": band,
            "region_short": e.region_short or "", "brief": e.brief, "reason": e.reason, "rule": e.rule,
            "caution": e.caution}


def _band(t: float | None) -> int | None:
    from .readings import t_band

    return t_band(t)


def _decision(d: DatasetDecision, report: Report, viewer_url: str | None, images: Mapping[str, str]) -> dict[str, Any]:
    groups = {g: [_entry(e, report.cells[e.cell_index], viewer_url) for e in d.group(g)]
              for g in ("use", "avoid", "below_best", "not_measured")}
    n = {g: len(v) for g, v in groups.items()}
    counts = (f"{n['use']} to use · {n['avoid']} to avoid · {n['below_best']} below the best"
              + (f" · {n['not_measured']} without T" if n["not_measured"] else ""))
    return {"dataset": d.dataset, "dataset_name": d.dataset_name, "headline": d.headline, "ranking": d.ranking if d.ranked_by_bound else "",
            "counts": counts, "missing": [m.line + "." for m in d.missing], "img": images.get(d.dataset),
            **groups, "use_more": n["use"] - 4 if n["use"] > 5 else 0,
            "avoid_more": n["avoid"] - 4 if n["avoid"] > 5 else 0}


def _definitions(report: Report) -> dict[str, Any]:
    """The definitions asked for: per cell its rows (value "—" with the reason where not measured) and the
    catalogue with each definition's unparsed rule."""
    cells = []
    for c in report.cells:
        if not c.definitions:
            continue
        rows = []
        for r in c.definitions:
            v = definition_value(r.figure)
            rows.append({"definition": r.definition, "title": r.values.get("title") or "", "variant": r.variant,
                         "value": v.text, "sub": v.sub, "sort": _sortval(r.figure.point),
                         "interval": definition_interval(r.values), "n": r.values.get("n"),
                         "left_out": r.values.get("n_left_out"), "unparsed": r.values.get("unparsed_rule") or ""})
        cells.append({"title": cell_title(c), "ids": f"{c.key.judge} / {c.key.protocol} / {c.key.dataset}",
                      "rows": rows})
    catalogue = [{**d, "unparsed_rule": definition_unparsed_rule(d, report.policy)} for d in shown_definitions(report)]
    return {"cells": cells, "catalogue": catalogue}


def _further(report: Report) -> list[dict[str, Any]]:
    """The registered analyses' tables: columns with a value in some row (a column empty in every row --
    ``step`` of a run without steps -- is left out of the page and named, kept in the JSON), values
    printed (counts as integers, numbers with three decimals, ids under their display names)."""
    names = {k: dict(report.display_names.get(k) or {}) for k in ("judge", "protocol", "dataset")}
    out: list[dict[str, Any]] = []
    for name, t in report.extra_tables.items():
        if t.get("error"):
            out.append({"name": name, "title": t.get("title") or name, "error": t["error"]})
            continue
        rows = t.get("rows") or []
        cols = list(t.get("columns") or [])
        keep = [k for k, _ in enumerate(cols) if not rows or any(r[k] not in (None, "") for r in rows)]
        sentences = {k for k in keep if any(isinstance(r[k], str) and len(r[k]) > _SENTENCE_CHARS for r in rows)}
        out.append({"name": name, "title": t.get("title") or name, "description": t.get("description") or "",
                    "columns": [{"label": column_label(cols[k]), "key": cols[k], "left": cols[k] in _TEXT_COLUMNS}
                                for k in keep],
                    "hidden": ", ".join(c for k, c in enumerate(cols) if k not in keep),
                    "rows": [[_further_value(cols[k], r[k], names, long=k in sentences) for k in keep] for r in rows],
                    "n": len(rows)})
    return out


_TEXT_COLUMNS = {"judge", "jurors", "dataset", "protocol", "remedy", "derived_protocol", "kind", "note", "step",
                 "criterion"}
#: a text column with a value longer than this is a column of sentences: it gets the room to wrap at its spaces
#: (CSS ``td.long``) instead of being squeezed one word wide into rows hundreds of pixels tall
_SENTENCE_CHARS = 40
_COUNT_COLUMNS = {"k", "new_calls", "calls_per_verdict", "extra_calls_per_verdict", "rounds", "round"}


def _further_value(col: str, v: Any, names: Mapping[str, Mapping[str, str]], *, long: bool = False) -> dict[str, Any]:
    if v is None:
        return {"text": "—", "sort": "", "css": ""}
    if isinstance(v, bool):
        return {"text": "yes" if v else "no", "sort": int(v), "css": ""}
    if isinstance(v, int | float):
        text = (str(int(v)) if isinstance(v, float) and v.is_integer() and (col.startswith("n_") or col in _COUNT_COLUMNS)
                else f"{v:.3f}" if isinstance(v, float) else str(v))
        return {"text": text, "sort": _sortval(v), "css": ""}
    if col in ("judge", "dataset", "protocol"):
        return {"text": _breakable(names[col].get(str(v), str(v))), "tip": str(v), "sort": str(v), "css": "l nm"}
    return {"text": str(v), "sort": str(v), "css": "l long" if long else "l"}


def _page(report: Report, viewer_url: str | None, images: Mapping[str, str], limit: int) -> dict[str, Any]:
    """Everything the template prints, prepared: no rule is left for the template to apply."""
    names = {k: dict(report.display_names.get(k) or {}) for k in ("judge", "protocol", "dataset")}
    names["category"] = {}
    broken: dict[str, Any] = _cut_long_text(dict(report.broken_items or {"rows": []}), limit)
    broken.setdefault("rows", [])
    rows = broken["rows"]
    for r in rows:
        r["link"] = (viewer_url + pair_url(str(r["dataset"]), str(r["item_id"]), cell_anchor(
            str(r["judge"]), str(r["protocol"]), float(r["temperature"]), str(r["decoding"]), str(r.get("step") or ""))))\
            if viewer_url else ""
        r["shown"] = {k: names[k].get(str(r.get(k)), str(r.get(k))) for k in ("judge", "protocol", "dataset")}
    filter_values = {k: [(v, names.get(k, {}).get(v, v)) for v in sorted({str(r.get(k)) for r in rows
                                                                          if r.get(k) is not None})]
                     for k in ("dataset", "protocol", "category", "judge")}
    sentences = [{"cells": [_html_value(col, c, None) for col in _key_columns()], "sentence": c.sentence}
                 for c in report.cells if c.sentence]
    return {"report": report, "run": report.run, "notes": report.notes, "tables": html_tables(report, viewer_url),
            "decision": [_decision(d, report, viewer_url, images) for d in report.decision],
            "leaderboards": report.leaderboards, "graders": report.graders,
            "legend": _legend(report), "viewer_url": viewer_url, "sentences": sentences,
            "definitions": _definitions(report), "further": _further(report), "audit": _audit(report),
            "broken": broken, "filter_values": filter_values, "dispersion": _dispersion(report),
            "meta": _cut_long_text(report.run.meta, limit),
            "engine": [_cut_long_text(e, limit) for e in report.run.engine]}


def _key_columns() -> tuple[Column, ...]:
    from .columns import KEY_COLUMNS

    return KEY_COLUMNS


def _dispersion(report: Report) -> list[dict[str, Any]]:
    labels, protocols, datasets = (report.display_names.get(k, {}) for k in ("judge", "protocol", "dataset"))

    def pct(x: float | None) -> str:
        return "—" if x is None else f"{100 * x:.1f}"

    return [{"dataset": d.dataset, "dataset_name": datasets.get(d.dataset, d.dataset), "judge": d.judge,
             "judge_name": labels.get(d.judge, d.judge), "temperature": temperature_text(d.temperature),
             "temperature_sort": _sortval(d.temperature), "protocols": f"{d.n_protocols_with_T}/{d.n_protocols}",
             "n_with_T": d.n_protocols_with_T, "delta": pct(d.delta_T_fmt), "delta_sort": _sortval(d.delta_T_fmt),
             "T_min": pct(d.T_min), "T_min_sort": _sortval(d.T_min), "T_max": pct(d.T_max),
             "T_max_sort": _sortval(d.T_max), "protocol_min": d.protocol_min or "",
             "protocol_min_name": protocols.get(d.protocol_min or "", d.protocol_min) or "—",
             "protocol_max": d.protocol_max or "",
             "protocol_max_name": protocols.get(d.protocol_max or "", d.protocol_max) or "—"}
            for d in report.format_dispersion]


def _render(page: Mapping[str, Any], plots: list[dict[str, str]], title: str | None) -> str:
    report: Report = page["report"]
    return _env().get_template(TEMPLATE).render(
        title=title or f"verdictlab report — {Path(report.run.run_dir or 'run').name}",
        plots=plots, generated=_dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        script_hash=script_hash(), **page)
