"""Plots of a report's cells (matplotlib, imported only inside the functions; Agg backend).

Every function takes the report's ``cells`` (:class:`~verdictlab.report.model.Cell`, figures as
fractions in [0, 1]) and an optional ``ax``; it returns the axes it drew on.  Colours follow the Okabe–Ito palette (safe for
colour-blind readers): colour = judge, marker = protocol.  Each plot has a short plain-language
reading (:func:`verdictlab.report.readings.plot_readings`) that the HTML report prints under it.  The
plots draw what the report gathered (the order-corrected accuracy A − φq is the cells' ``A_corrected``);
they compute no figure.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..stats import region_thresholds
from .model import Cell, DecisionEntry, DispersionRow, Report
from .readings import plot_readings

OKABE_ITO: tuple[str, ...] = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00",
                              "#F0E442", "#000000")
MARKERS: tuple[str, ...] = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
#: a region box narrower than this share of the axis gets its label turned upright (layout only)
NARROW_BOX = 0.2
REGION_COLOURS = {"trustworthy": "#009E73", "noisy-but-fair": "#56B4E9", "chaos": "#D55E00",
                  "confidently-biased": "#E69F00"}

Cells = Sequence[Cell]


def _mpl() -> Any:
    try:
        import matplotlib
    except ImportError as e:  # pragma: no cover - matplotlib is a core dependency
        raise ImportError("plots need matplotlib: pip install matplotlib") from e
    if matplotlib.get_backend().lower() != "agg":
        matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _ax(ax: Any, size: tuple[float, float] = (6.4, 4.6)) -> Any:
    if ax is not None:
        return ax
    plt = _mpl()
    _, ax = plt.subplots(figsize=size, layout="constrained")
    return ax


def _styles(cells: Cells) -> tuple[dict[str, str], dict[str, str]]:
    judges = sorted({c.key.judge for c in cells})
    protocols = sorted({c.key.protocol for c in cells})
    colours = {j: OKABE_ITO[i % len(OKABE_ITO)] for i, j in enumerate(judges)}
    markers = {p: MARKERS[i % len(MARKERS)] for i, p in enumerate(protocols)}
    return colours, markers


def _short(name: str, n: int = 28, *, escape: bool = True) -> str:
    """Cut a data-derived name for a plot and escape ``$`` so matplotlib never reads it as math."""
    cut = name if len(name) <= n else name[: n - 1] + "…"
    return cut.replace("$", r"\$") if escape else cut


def _labels(cells: Cells) -> dict[str, str]:
    """judge id -> display name (the report's ``judge_label`` when present)."""
    return {c.key.judge: c.names.judge if c.names is not None else c.key.judge for c in cells}


def _legends(ax: Any, colours: dict[str, str], markers: dict[str, str], *, loc: str = "best",
             labels: Mapping[str, str] | None = None) -> None:
    from matplotlib.lines import Line2D

    labels = labels or {}
    h1 = [Line2D([], [], color=c, marker="o", linestyle="", label=_short(labels.get(j, j), 40))
          for j, c in colours.items()]
    h2 = [Line2D([], [], color="#555555", marker=m, linestyle="", markerfacecolor="none", label=_short(p))
          for p, m in markers.items()]
    # outside the axes (right), so it never hides a point; ``loc`` is kept for API stability
    del loc
    leg = ax.legend(handles=h1 + h2, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                    borderaxespad=0.0, framealpha=0.85, ncol=1 if len(h1 + h2) < 16 else 2,
                    title="colour = judge\nmarker = protocol", title_fontsize=7)
    leg.set_zorder(10)


def _f(cell: Cell, name: str) -> float:
    """A defined figure of a cell as a float (callers draw only cells where it is defined)."""
    return float(cell.value(name))  # type: ignore[arg-type]


def _defined(cells: Cells, *names: str) -> list[Cell]:
    return [c for c in cells if all(c.value(n) is not None for n in names)]


def _scatter(ax: Any, cells: Cells, x: Callable[[Cell], float], y: Callable[[Cell], float]) -> None:
    colours, markers = _styles(cells)
    for c in cells:
        ax.scatter([x(c)], [y(c)], color=colours[c.key.judge], marker=markers[c.key.protocol],
                   s=36, alpha=0.85, edgecolors="white", linewidths=0.5, zorder=3)
    _legends(ax, colours, markers, labels=_labels(cells))


# -- the plots -----------------------------------------------------------------------------------

def plot_ceiling(cells: Cells, ax: Any = None) -> Any:
    """Accuracy A against flip rate φ, with the ceiling A_max = 1 − φ/2 (q = ½)."""
    import numpy as np

    ax = _ax(ax)
    pts = _defined(cells, "A", "phi")
    phi = np.linspace(0, 1, 101)
    ax.fill_between(phi, 1 - phi / 2, 1.02, color="#bbbbbb", alpha=0.35, zorder=1,
                    label="unreachable (above the ceiling)")
    ax.plot(phi, 1 - phi / 2, color="#333333", lw=1.5, zorder=2)
    ax.annotate("A = 1 − φ/2", xy=(0.62, 1 - 0.62 / 2), xytext=(0.66, 0.80), fontsize=8,
                arrowprops={"arrowstyle": "-", "color": "#333333"})
    ax.axhline(0.5, color="#999999", lw=0.8, ls=":", zorder=1)
    if pts:
        _scatter(ax, pts, lambda c: _f(c, "phi"), lambda c: _f(c, "A"))
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("position flip rate φ (share of pairs whose verdict flips on swap)")
    ax.set_ylabel("accuracy A")
    ax.set_title("Accuracy ceiling set by position flips")
    return ax


def plot_factors(cells: Cells, ax: Any = None) -> Any:
    """Consistency C against the order-corrected accuracy A − φq (the cells' ``A_corrected``), with iso-T
    curves T = C·(A − φq); a cell whose C is not measured (one repetition) has no point."""
    import numpy as np

    ax = _ax(ax)
    pts = _defined(cells, "C", "A_corrected")
    x = np.linspace(0.005, 1, 400)
    for t in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        y = t / x
        ok = y <= 1.0
        ax.plot(x[ok], y[ok], color="#999999", lw=0.7, ls="--", zorder=1)
        ax.text(t + 0.005, 0.985, f"T={t:.1f}", fontsize=6.5, color="#666666", rotation=90, va="top")
    if pts:
        _scatter(ax, pts, lambda c: _f(c, "A_corrected"), lambda c: _f(c, "C"))
    ax.set_xlim(min(0.0, min((_f(c, "A_corrected") for c in pts), default=0) - 0.02), 1.0)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("order-corrected accuracy A − φ·q")
    ax.set_ylabel("stochastic consistency C")
    ax.set_title("T factorised: consistency × corrected accuracy")
    return ax


def plot_regions(cells: Cells, ax: Any = None, *, c_high: float | None = None,
                 phi_low: float | None = None) -> Any:
    """Consistency C against flip rate φ, split into the four failure regions (thresholds: the report's,
    default :func:`verdictlab.stats.region_thresholds`)."""
    from matplotlib.patches import Rectangle

    th = region_thresholds()
    c_threshold = th["c_high"] if c_high is None else float(c_high)
    phi_threshold = th["phi_low"] if phi_low is None else float(phi_low)
    ax = _ax(ax)
    boxes = {
        "trustworthy": (0, c_threshold, phi_threshold, 1.02 - c_threshold),
        "confidently-biased": (phi_threshold, c_threshold, 1.02 - phi_threshold, 1.02 - c_threshold),
        "noisy-but-fair": (0, 0, phi_threshold, c_threshold),
        "chaos": (phi_threshold, 0, 1.02 - phi_threshold, c_threshold),
    }
    for name, (x0, y0, w, h) in boxes.items():
        ax.add_patch(Rectangle((x0, y0), w, h, color=REGION_COLOURS[name], alpha=0.16, zorder=0, lw=0))
    ax.text(0.98, 1.0, "confidently-biased", ha="right", va="top", fontsize=8, color="#8a5a00")
    ax.text(phi_threshold / 2, c_threshold / 2, "noisy-but-fair", ha="center", va="center", fontsize=7,
            rotation=90 if phi_threshold < NARROW_BOX else 0, color="#1f5f7a")
    ax.text(0.98, 0.02, "chaos", ha="right", va="bottom", fontsize=8, color="#8a3000")
    ax.axvline(phi_threshold, color="#666666", lw=0.8)
    ax.axhline(c_threshold, color="#666666", lw=0.8)
    pts = _defined(cells, "C", "phi")
    if pts:
        _scatter(ax, pts, lambda c: _f(c, "phi"), lambda c: _f(c, "C"))
        ax.add_artist(ax.get_legend())  # keep the judge/protocol legend beside the region legend
    # the regions by name and rule (the small trustworthy corner has no room for a label inside)
    rules = {"trustworthy": f"C ≥ {c_threshold:g}, φ ≤ {phi_threshold:g}",
             "noisy-but-fair": f"C < {c_threshold:g}, φ ≤ {phi_threshold:g}",
             "chaos": f"C < {c_threshold:g}, φ > {phi_threshold:g}",
             "confidently-biased": f"C ≥ {c_threshold:g}, φ > {phi_threshold:g}"}
    handles = [Rectangle((0, 0), 1, 1, color=REGION_COLOURS[n], alpha=0.35, label=f"{n}: {r}")
               for n, r in rules.items()]
    ax.legend(handles=handles, fontsize=7, loc="lower left", bbox_to_anchor=(1.02, 0.0), borderaxespad=0.0,
              title="failure regions", title_fontsize=7)
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(f"position flip rate φ (threshold {phi_threshold:g})")
    ax.set_ylabel(f"stochastic consistency C (threshold {c_threshold:g})")
    ax.set_title("Failure regions on (φ, C)")
    return ax


def _dispersion_key(dataset: str, judge: str, temperature: Any, decoding: Any, step: Any) -> tuple[str, ...]:
    return tuple(str(v if v is not None else "") for v in (dataset, judge, temperature, decoding, step))


def plot_format_dispersion(cells: Cells, ax: Any = None, *, dispersion: Sequence[DispersionRow] = ()) -> Any:
    """T per protocol for each judge × dataset (× temperature, decoding, step), with the range and
    ΔT_fmt = max − min of the report's format dispersion rows (``dispersion``) where given."""
    ax = _ax(ax, (7.2, 4.6))
    pts = _defined(cells, "T")
    temps = sorted({c.key.temperature for c in pts}, key=lambda t: (t is None, t or 0.0))
    groups: dict[tuple[str, ...], list[Cell]] = {}
    for c in pts:
        groups.setdefault(_dispersion_key(c.key.dataset, c.key.judge, c.key.temperature, c.key.decoding, c.step),
                          []).append(c)
    rows = {_dispersion_key(d.dataset, d.judge, d.temperature, d.decoding or "free", d.step or ""): d
            for d in dispersion}
    colours, markers = _styles(pts)
    labels = []
    for i, (key, cs) in enumerate(sorted(groups.items())):
        d = rows.get(key)
        if d is not None and d.delta_T_fmt is not None and d.T_min is not None and d.T_max is not None:
            ax.vlines(i, d.T_min, d.T_max, color="#999999", lw=2, zorder=1)
            ax.text(i, d.T_max + 0.02, f"Δ{100 * d.delta_T_fmt:.0f}", ha="center", fontsize=7, color="#333333")
        for c in cs:
            ax.scatter([i], [_f(c, "T")], color=colours[c.key.judge], marker=markers[c.key.protocol],
                       s=34, zorder=3, edgecolors="white", linewidths=0.5)
        ds, judge, t, dec, step = key
        extra = "".join(f"\n{v}" for v in (dec, step) if v and v != "free")
        labels.append(f"{_short(ds, 16)}\n{_short(_labels(cs)[judge], 16)}" + (f"\ntemp {t}" if len(temps) > 1 else "")
                      + extra)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=6.5, rotation=0 if len(labels) <= 10 else 60,
                       ha="center" if len(labels) <= 10 else "right")
    ax.set_ylim(min(0.0, min((_f(c, "T") for c in pts), default=0.0)) - 0.02, 1.05)
    ax.set_ylabel("trustworthy verdict rate T")
    ax.set_xlabel("dataset / judge" + (" / temperature" if len(temps) > 1 else "")
                  + " (Δ = ΔT_fmt in points)")
    ax.set_title("Format dispersion: T across protocols")
    if pts:
        _legends(ax, colours, markers, loc="lower left", labels=_labels(pts))
    return ax


def plot_temperature(cells: Cells, axes: Any = None) -> Any:
    """C and A − φq (``A_corrected``) against temperature, one line per judge × protocol × dataset (two
    panels)."""
    if axes is None:
        plt = _mpl()
        _, axes = plt.subplots(1, 2, figsize=(8.6, 3.8), layout="constrained", sharex=True)
    pts = _defined(cells, "C", "A_corrected")
    colours, markers = _styles(pts)
    lines: dict[tuple[str, str, str], list[Cell]] = {}
    for c in pts:
        lines.setdefault((c.key.judge, c.key.protocol, c.key.dataset), []).append(c)
    for (judge, protocol, _), cs in sorted(lines.items()):
        cs = sorted(cs, key=lambda c: c.key.temperature or 0.0)
        xs = [c.key.temperature for c in cs]
        for ax, f in zip(axes, (lambda c: _f(c, "C"), lambda c: _f(c, "A_corrected")), strict=True):
            ax.plot(xs, [f(c) for c in cs], color=colours[judge], marker=markers[protocol], lw=1, ms=4,
                    alpha=0.75)
    axes[0].set_ylabel("stochastic consistency C")
    axes[1].set_ylabel("order-corrected accuracy A − φ·q")
    for ax in axes:
        ax.set_xlabel("sampling temperature")
        ax.set_ylim(min(0.0, ax.get_ylim()[0]), 1.02)
    axes[0].set_title("Consistency vs temperature")
    axes[1].set_title("Corrected accuracy vs temperature")
    if pts:
        _legends(axes[1], colours, markers, loc="lower left", labels=_labels(pts))
    return axes


def plot_judge_spread(cells: Cells, ax: Any = None) -> Any:
    """T of every cell of each judge (box plus points): how much T moves across datasets and protocols."""
    ax = _ax(ax, (6.4, 4.2))
    pts = _defined(cells, "T")
    judges = sorted({c.key.judge for c in pts})
    colours, markers = _styles(pts)
    data = [[_f(c, "T") for c in pts if c.key.judge == j] for j in judges]
    if judges:
        ax.boxplot(data, positions=range(len(judges)), widths=0.5, showfliers=False,
                   medianprops={"color": "#333333"}, boxprops={"color": "#777777"},
                   whiskerprops={"color": "#777777"}, capprops={"color": "#777777"})
        for i, j in enumerate(judges):
            cs = [c for c in pts if c.key.judge == j]
            for k, c in enumerate(cs):
                jitter = ((k * 0.61803) % 1 - 0.5) * 0.3
                ax.scatter([i + jitter], [_f(c, "T")], color=colours[j], marker=markers[c.key.protocol],
                           s=22, alpha=0.8, zorder=3, edgecolors="white", linewidths=0.4)
        ax.set_xticks(range(len(judges)))
        names = _labels(pts)
        ax.set_xticklabels([_short(names[j], 22) for j in judges], fontsize=7, rotation=0 if len(judges) < 4 else 30)
        _legends(ax, colours, markers, loc="lower left", labels=_labels(pts))
    ax.set_ylim(min(0.0, min((_f(c, "T") for c in pts), default=0.0)) - 0.02, 1.02)
    ax.set_ylabel("trustworthy verdict rate T")
    ax.set_xlabel("judge (points: one per dataset × protocol × temperature cell)")
    ax.set_title("Spread of T per judge")
    return ax


#: how the decision panel's picture draws each group of configurations: (colour, marker, legend text)
DECISION_STYLES: dict[str, tuple[str, str, str]] = {
    "use": ("#009E73", "o", "use"), "below_best": ("#8a8f98", "o", "below the best"),
    "avoid": ("#D55E00", "X", "avoid"),
}
#: the iso-T lines of the decision picture: A − φ/2 = T (the T of a fully consistent judge, C = 1)
ISO_T = (0.2, 0.4, 0.6, 0.8)


def _bound(cell: Cell, name: str, side: str) -> float:
    """A figure's interval bound (``side`` "lo" or "hi"), the figure itself where the cell has none."""
    iv = cell.figure(name)
    v = iv.low if side == "lo" else iv.high
    return float(iv.point if v is None else v)  # type: ignore[arg-type]


def _box(cells: Cells) -> tuple[float, float, float]:
    """x limit and y limits of the decision picture: room for every interval (layout only)."""
    phis = [_bound(c, "phi", "hi") for c in cells]
    accs = [_bound(c, "A", "lo") for c in cells]
    return (min(1.06, max([*phis, 0.3]) + 0.08), max(-0.04, min([*accs, 0.45]) - 0.06), 1.04)


def _number_points(ax: Any, pts: Sequence[tuple[DecisionEntry, Cell]], x_max: float, y_min: float,
                   y_max: float) -> None:
    """The configurations' numbers beside their points, inside the frame: the numbers of points drawn at
    one place share one label ("3, 5, 7"), and a label sits on the side of its point that faces the
    middle of the picture (a point at φ = 1 is numbered on its left, one at the top below it)."""
    at: dict[tuple[float, float], list[DecisionEntry]] = {}
    for e, c in pts:
        at.setdefault((round(_f(c, "phi"), 3), round(_f(c, "A"), 3)), []).append(e)
    x_mid, y_mid = x_max / 2, (y_min + y_max) / 2
    for (x, y), es in sorted(at.items()):
        colour = DECISION_STYLES[min(es, key=lambda e: e.number).group][0]
        right, up = x < x_mid, y < y_mid
        ax.annotate(", ".join(str(e.number) for e in sorted(es, key=lambda e: e.number)), (x, y),
                    xytext=(4 if right else -4, 3 if up else -3), textcoords="offset points", fontsize=6.5,
                    color=colour, zorder=5, ha="left" if right else "right", va="bottom" if up else "top")


def plot_decision(entries: Sequence[DecisionEntry], cells: Cells, ax: Any = None) -> Any:
    """The trust-region picture of one dataset's decision: A against φ for each configuration
    (``entries`` of :func:`verdictlab.report.readings.decision`, each naming its cell by
    ``cell_index``), with both intervals as error bars, numbered like the decision's list and drawn
    by group (use / below the best / avoid); the ceiling A = 1 − φ/2 and the iso-T lines
    A − φ/2 = T of a fully consistent judge (a configuration's T is its C times the value of its line)."""
    import numpy as np

    ax = _ax(ax, (4.2, 3.1))
    pts = [(e, cells[e.cell_index]) for e in entries if e.group in DECISION_STYLES]
    pts = [(e, c) for e, c in pts if c.value("A") is not None and c.value("phi") is not None]
    x_max, y_min, y_max = _box([c for _, c in pts])
    phi = np.linspace(0, 1, 101)
    ax.fill_between(phi, 1 - phi / 2, 1.05, color="#bbbbbb", alpha=0.3, lw=0, zorder=0)
    ax.plot(phi, 1 - phi / 2, color="#333333", lw=1.2, zorder=1)
    for t in ISO_T:
        ax.plot(phi, t + phi / 2, color="#9a9a9a", lw=0.7, ls="--", zorder=1)
        y_end = t + x_max / 2
        if y_min < y_end < y_max:
            ax.text(x_max, y_end, f"T={t:g}", fontsize=6, color="#666666", ha="right", va="bottom")
    ax.axhline(0.5, color="#999999", lw=0.7, ls=":", zorder=1)
    for group, (colour, marker, label) in DECISION_STYLES.items():
        sel = [c for e, c in pts if e.group == group]
        for k, c in enumerate(sel):
            x, y = _f(c, "phi"), _f(c, "A")
            # a bootstrap interval need not hold its point: its bar then starts at the point
            xerr = [[max(x - _bound(c, "phi", "lo"), 0.0)], [max(_bound(c, "phi", "hi") - x, 0.0)]]
            yerr = [[max(y - _bound(c, "A", "lo"), 0.0)], [max(_bound(c, "A", "hi") - y, 0.0)]]
            ax.errorbar([x], [y], xerr=xerr, yerr=yerr, fmt=marker, color=colour, ms=5, lw=0.8, alpha=0.85,
                        capsize=0, zorder=3 if group != "use" else 4, label=label if k == 0 else None)
    _number_points(ax, pts, x_max, y_min, y_max)
    ax.set_xlim(-0.01, x_max)
    ax.set_ylim(y_min, y_max)
    ax.set_xlabel("position flip rate φ", fontsize=8)
    ax.set_ylabel("accuracy A", fontsize=8)
    ax.tick_params(labelsize=7)
    if pts:
        ax.legend(fontsize=6.5, loc="lower left", framealpha=0.85)
    return ax


def decision_figures(report: Report) -> list[tuple[str, Any]]:
    """``[(dataset, figure)]``: the trust-region picture of each dataset's decision."""
    plt = _mpl()
    out = []
    for d in report.decision:
        fig, ax = plt.subplots(figsize=(4.2, 3.1), layout="constrained")
        plot_decision([e for g in ("use", "below_best", "avoid") for e in d.group(g)], report.cells, ax)
        out.append((d.dataset, fig))
    return out


# -- all figures ---------------------------------------------------------------------------------

#: the figures drawn from the report's cells, in the order they are shown (the analyses' figures follow)
CELL_FIGURES: tuple[str, ...] = ("ceiling", "factors", "regions", "format", "temperature", "spread")


def figures(report: Report, only: Callable[[str], bool] | None = None) -> list[tuple[str, str, Any]]:
    """``[(name, title, figure)]`` for every plot that applies to the report's cells (in the order of
    :data:`CELL_FIGURES`), then the analyses' (:func:`analysis_figures`); ``only(name)`` false: not drawn."""
    want = only or (lambda _name: True)
    plt = _mpl()
    cells = report.cells
    th = report.region_thresholds or region_thresholds()
    out: list[tuple[str, str, Any]] = []
    specs: list[tuple[str, str, Callable[[Any], Any]]] = [
        ("ceiling", "Accuracy ceiling", lambda ax: plot_ceiling(cells, ax)),
        ("factors", "Consistency × corrected accuracy", lambda ax: plot_factors(cells, ax)),
        ("regions", "Failure regions", lambda ax: plot_regions(cells, ax, **th)),
    ]
    if any(d.n_protocols_with_T > 1 for d in report.format_dispersion):
        specs.append(("format", "Format dispersion", lambda ax: plot_format_dispersion(
            cells, ax, dispersion=report.format_dispersion)))
    for name, title, fn in specs:
        if not want(name):
            continue
        fig, ax = plt.subplots(figsize=(8.6, 4.6) if name == "format" else (7.4, 4.6), layout="constrained")
        fn(ax)
        out.append((name, title, fig))
    if want("temperature") and len({c.key.temperature for c in cells}) > 1:
        fig, axes = plt.subplots(1, 2, figsize=(9.6, 3.8), layout="constrained", sharex=True)
        plot_temperature(cells, axes)
        out.append(("temperature", "Temperature sweep", fig))
    if want("spread") and _defined(cells, "T"):
        fig, ax = plt.subplots(figsize=(7.4, 4.2), layout="constrained")
        plot_judge_spread(cells, ax)
        out.append(("spread", "Per-judge spread of T", fig))
    out += analysis_figures(report, want)
    return out


def analysis_figures(report: Report, only: Callable[[str], bool] | None = None) -> list[tuple[str, str, Any]]:
    """``[(name, title, figure)]`` of the registered analyses that draw one (``register(...,
    figure=fn)``), for each analysis table of the report that has rows; a figure that fails is left out,
    and so is one whose name ``only`` refuses."""
    from .. import analyses

    tables = report.extra_tables
    out: list[tuple[str, str, Any]] = []
    for a in analyses.registered():
        t = tables.get(a.name)
        if (only is not None and not only(a.name)) or a.figure is None or not t or t.get("error") or not t.get("rows"):
            continue
        try:
            fig = a.figure(t)
        except Exception:  # noqa: BLE001 - a figure is a nicety; never break the report for it
            continue
        if fig is not None:
            out.append((a.name, a.figure_title or a.title, fig))
    return out


def figure_data_uri(fig: Any, *, fmt: str = "svg") -> str:
    """A figure as a ``data:`` URI (SVG with text kept as text, or PNG at 110 dpi)."""
    import matplotlib

    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "verdictlab"}):
        fig.savefig(buf, format=fmt, dpi=110, metadata={"Date": None} if fmt == "svg" else None)
    mime = "image/svg+xml" if fmt == "svg" else "image/png"
    return f"data:{mime};base64,{base64.b64encode(buf.getvalue()).decode('ascii')}"


def write_plots(report: Report, out_dir: str | Path, *,
                formats: Sequence[str] = ("png", "svg")) -> list[Path]:
    """Write every figure of the report to ``out_dir`` as ``<name>.<fmt>``; returns the paths."""
    import matplotlib

    plt = _mpl()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, _, fig in figures(report):
        for fmt in formats:
            p = out / f"{name}.{fmt}"
            with matplotlib.rc_context({"svg.hashsalt": "verdictlab"}):
                fig.savefig(p, format=fmt, dpi=130, metadata={"Date": None} if fmt == "svg" else None)
            written.append(p)
        plt.close(fig)
    (out / "READINGS.txt").write_text(
        "\n\n".join(f"{k}: {v}" for k, v in plot_readings(report).items()) + "\n",
        encoding="utf-8")
    return written


PLOTS = {"ceiling": plot_ceiling, "factors": plot_factors, "regions": plot_regions,
         "format": plot_format_dispersion, "temperature": plot_temperature, "spread": plot_judge_spread}

__all__ = ["DECISION_STYLES", "OKABE_ITO", "PLOTS", "decision_figures", "figure_data_uri", "figures", "plot_ceiling",
           "plot_decision", "plot_factors", "plot_format_dispersion", "plot_judge_spread", "plot_regions",
           "plot_temperature", "write_plots"]
