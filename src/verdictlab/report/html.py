"""One self-contained HTML report (inline CSS/JS, plots as base64 ``data:`` images, no network).

Model outputs and dataset text are untrusted: the jinja2 environment autoescapes everything and no
template applies ``|safe`` to data.  Plots are embedded as ``<img src="data:...">`` so that even a
label carrying markup inside an SVG cannot run (images never execute scripts).
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from ..core.viewer_links import DEFAULT_VIEWER_URL, cell_anchor, cell_list_url, check_viewer_url, pair_url
from .cell_fields import AGREEMENT_FIELDS, extra_cell_fields
from .lanes import SecondLane, lanes_for
from .readings import (
    decision_test_line,
    definition_unparsed_rule,
    missing_line,
    paradox_rule,
    plot_readings,
    region_caption,
    region_phrase,
    shown_definitions,
    single_rep_note,
    t_band,
    t_with_interval,
    unparsed_how,
)
from .terminal import (
    definition_interval,
    definition_value,
    interval,
    num,
    pct,
    protocol_label,
    protocol_name,
    shown_name,
    temp,
)

TEMPLATE = "report.html.j2"


def _env() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("verdictlab.report", "templates"),
        autoescape=True,  # every {{ }} is HTML-escaped; data never gets |safe
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = lambda x, digits=1: pct(x, digits=digits)
    env.filters["num"] = lambda x, digits=3: num(x, digits=digits)
    env.filters["sortval"] = lambda x: "" if x is None else (f"{x:.6f}" if isinstance(x, float) else str(x))
    env.filters["pretty"] = lambda x: json.dumps(x, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    env.filters["cellfmt"] = _cellfmt
    env.filters["tclass"] = _t_class
    env.filters["protocol_label"] = protocol_label
    env.filters["protocol_name"] = lambda c: _breakable(protocol_name(c))
    env.filters["shown"] = lambda c, kind: _breakable(shown_name(c, kind))
    env.filters["cell_url"] = lambda c, outcome="": cell_list_url(c, outcome=outcome)
    env.filters["pair_link"] = lambda r: pair_url(str(r["dataset"]), str(r["item_id"]), cell_anchor(
        str(r["judge"]), str(r["protocol"]), float(r["temperature"]), str(r["decoding"]),
        str(r.get("step") or "")))
    env.filters["tci"] = t_with_interval
    env.filters["breakable"] = _breakable
    env.filters["region_words"] = region_phrase
    env.filters["filled_columns"] = _filled_columns
    env.filters["missing"] = missing_line
    env.filters["temp"] = temp
    env.globals["interval"] = interval
    env.globals["def_interval"] = definition_interval
    env.globals["def_value"] = definition_value
    env.globals["def_unparsed"] = definition_unparsed_rule
    env.globals["paradox_rule"] = paradox_rule()
    return env


def _breakable(text: str) -> Markup:
    """A name escaped, with a line-break opportunity after each comma (``sim:sk=0.8,pl=0.2`` wraps at
    its commas in a narrow column instead of overflowing it)."""
    return Markup(",<wbr>").join(escape(part) for part in str(text).split(","))


def _filled_columns(table: Mapping[str, Any]) -> list[tuple[str, int]]:
    """``[(column, position)]`` of an analysis table's columns with a value in some row (a column empty
    in every row -- ``step`` of a run without steps -- is left out of the page, kept in the JSON)."""
    rows = table.get("rows") or []
    return [(str(col), k) for k, col in enumerate(table.get("columns") or [])
            if not rows or any(r[k] not in (None, "") for r in rows)]


_T_CLASSES = ("t70", "t60", "t50", "t40", "t00")


def _t_class(t: float | None) -> str:
    """CSS class of T's band (:data:`verdictlab.report.readings.T_BANDS`, like the paper's Table 1)."""
    band = t_band(t)
    return "" if band is None else _T_CLASSES[min(band, len(_T_CLASSES) - 1)]


_COUNT_COLUMNS = {"k", "new_calls", "calls_per_verdict", "extra_calls_per_verdict", "rounds", "round"}


def _cellfmt(v: float | int, col: str) -> str:
    """Counts as integers, other numbers with three decimals."""
    if isinstance(v, float) and v.is_integer() and (col.startswith("n_") or col in _COUNT_COLUMNS):
        return str(int(v))
    return f"{v:.3f}" if isinstance(v, float) else str(v)


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


def _audit(report: Mapping[str, Any]) -> dict[str, Any]:
    """The audit section: the run's parse counts (:func:`verdictlab.stats.parse_audit`) and tallies."""
    run = report["run"]
    totals = report.get("totals") or {}
    return {**(run.get("audit") or {}), "n_pairs": totals.get("n_pairs"),
            "n_labelled_pairs": totals.get("n_labelled_pairs"),
            "parse_status_counts": run.get("parse_status_counts", {}), "fallback_rules": run.get("fallback_rules", {})}


def render_html(report: Mapping[str, Any], out: str | Path | None = None, *, embed_plots: bool = True,
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
    if embed_plots and report["cells"]:
        plots, decision_images = _images(report, plot_format)
    from ..core.guards import input_limits

    lim = input_limits()
    report = _cut_long_text(report, lim.html_max_output_chars)
    html = _render(report, plots, title, viewer_url=viewer, decision_images=decision_images)
    rows = list((report.get("broken_items") or {}).get("rows") or [])
    while len(html.encode("utf-8")) > lim.html_max_bytes and rows:     # shed the audit rows, flipped first kept
        rows = rows[: len(rows) // 2]
        report = {**report, "broken_items": {**report["broken_items"], "rows": rows, "n_shown": len(rows)}}
        html = _render(report, plots, title, viewer_url=viewer, decision_images=decision_images)
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


#: the height of the report's frame in a notebook cell (the frame scrolls; its corner resizes it)
NOTEBOOK_FRAME_HEIGHT = "720px"


def notebook_html(report: Mapping[str, Any]) -> str:
    """The report for a notebook cell: :func:`render_html`'s self-contained page (no viewer links: no
    server runs beside a notebook) in a sandboxed ``iframe`` of its own, so its style and script stay out
    of the notebook's and the decision panel opens it."""
    page = render_html(report, viewer_url=None)
    return (f'<iframe srcdoc="{escape(page)}" sandbox="allow-scripts" title="verdictlab report" '
            f'style="width: 100%; height: {NOTEBOOK_FRAME_HEIGHT}; border: 1px solid #ccc; resize: vertical">'
            "</iframe>")


def _cut_long_text(value: Any, limit: int) -> Any:
    """A copy of the report with every string longer than ``limit`` characters cut, saying how much
    was left out (the store keeps every text whole; VERDICTLAB_HTML_MAX_OUTPUT_CHARS raises it)."""
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


def _images(report: Mapping[str, Any], plot_format: str) -> tuple[list[dict[str, str]], dict[str, str]]:
    """The figures (name, title, ``data:`` URI, reading; in :data:`~verdictlab.report.plots.CELL_FIGURES`
    order, then the analyses') and the decision pictures; a large report draws part of them in a forked
    second process (:mod:`verdictlab.report.lanes`)."""
    from .plots import CELL_FIGURES

    read = plot_readings(report)
    # an analysis' figure is read by its description
    read.update({n: str(t.get("description") or "") for n, t in (report.get("extra_tables") or {}).items()
                 if n not in read})

    def there(name: str) -> bool:
        return name in SECOND_LANE_FIGURES or name not in CELL_FIGURES

    jobs = {"decision": lambda: _decision_images(report, plot_format),
            "figures": lambda: _figure_uris(report, plot_format, read, there)}
    with SecondLane(jobs, use=lanes_for(int(report["run"].get("n_judgments") or 0)) == 2) as lane:
        here = _figure_uris(report, plot_format, read, lambda n: not there(n))
        lane.help()
        drawn = here + lane.result("figures")
        decision_images = lane.result("decision")
    rank = {n: i for i, n in enumerate(CELL_FIGURES)}
    return sorted(drawn, key=lambda p: rank.get(p["name"], len(rank))), decision_images


def _figure_uris(report: Mapping[str, Any], plot_format: str, read: Mapping[str, str],
                 only: Callable[[str], bool]) -> list[dict[str, str]]:
    import matplotlib.pyplot as plt

    from .plots import figure_data_uri, figures

    out = []
    for name, ptitle, fig in figures(report, only):
        out.append({"name": name, "title": ptitle, "src": figure_data_uri(fig, fmt=plot_format),
                    "reading": read.get(name, "")})
        plt.close(fig)
    return out


def _decision_images(report: Mapping[str, Any], plot_format: str) -> dict[str, str]:
    """dataset -> the ``data:`` URI of its trust-region picture (:func:`verdictlab.report.plots.plot_decision`)."""
    import matplotlib.pyplot as plt

    from .plots import decision_figures, figure_data_uri

    out = {}
    for dataset, fig in decision_figures(report):
        out[dataset] = figure_data_uri(fig, fmt=plot_format)
        plt.close(fig)
    return out


def _legend(report: Mapping[str, Any]) -> list[tuple[str, list[tuple[str, str]]]]:
    """``[(kind, [(id, display name), ...])]`` for the ids shown under another name."""
    names = report.get("display_names") or {}
    out = []
    for kind in ("judge", "protocol", "dataset"):
        pairs = [(i, n) for i, n in sorted((names.get(kind) or {}).items()) if i != n]
        if pairs:
            out.append((kind, pairs))
    return out


def _render(report: Mapping[str, Any], plots: list[dict[str, str]], title: str | None, *,
            viewer_url: str | None = None, decision_images: Mapping[str, str] | None = None) -> str:
    cells = report["cells"]
    images = decision_images or {}
    decision = [{**d, "img": images.get(str(d["dataset"]))} for d in report.get("decision") or []]
    names = {k: dict((report.get("display_names") or {}).get(k) or {}) for k in ("judge", "protocol", "dataset")}
    names["category"] = {}
    agr_fields: list[tuple[str, str]] = []
    if any(c.get("agreement") for c in cells):
        agr_fields = [(k, lab) for k, lab in AGREEMENT_FIELDS if any(k in (c.get("agreement") or {}) for c in cells)]
    bi = report.get("broken_items") or {"rows": []}
    return _env().get_template(TEMPLATE).render(
        title=title or f"verdictlab report — {Path(str(report['run'].get('run_dir', 'run'))).name}",
        report=report,
        run=report["run"],
        cells=cells,
        agr_fields=agr_fields,
        extra_fields=extra_cell_fields(cells),
        jl=report.get("judge_labels") or {},
        names=names,
        legend=_legend(report),
        decision=decision,
        test_line=decision_test_line(report["policy"].alpha,
                                     int(decision[0]["family_size"]) if decision else 0),
        region_caption=region_caption(),
        viewer_url=viewer_url,
        further_titles={n: (t.get("title", n), t.get("description", ""))
                        for n, t in (report.get("extra_tables") or {}).items()},
        single_rep=single_rep_note(cells),
        plots=plots,
        audit=_audit(report),
        broken=bi,
        filter_values={k: sorted({str(r.get(k)) for r in bi["rows"] if r.get(k) is not None})
                       for k in ("dataset", "protocol", "category", "judge")},
        sentences=[c.get("sentence") for c in cells],
        generated=_dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        policy=report["policy"],
        unparsed_how=unparsed_how(report["policy"], short=True), unparsed_audit=unparsed_how(report["policy"], audit=True),
        script_hash=script_hash(),
        definitions=shown_definitions(report),
    )

