"""Plotting API: what each plot draws, labels on every axis, files written by --plots."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import matplotlib
import numpy as np
import pytest

from _cells import cells_of, report_of
from verdictlab.report import plots as P
from verdictlab.report.build import across_cells
from verdictlab.report.model import Cell, DispersionRow, Report
from verdictlab.report.readings import plot_readings


def _dispersed() -> DispersionRow:
    """A format-dispersion row of two protocols with T (what makes the format plot drawn)."""
    return DispersionRow(judge="j1", dataset="d1", temperature=0.0, decoding="free", step=None, n_protocols=2,
                         n_protocols_with_T=2, T_by_protocol={"direct": 0.54, "cot-json": 0.3}, T_min=0.3,
                         T_max=0.54, protocol_min="cot-json", protocol_max="direct", delta_T_fmt=0.24)


def _recs() -> list[dict]:
    # three cells with hand-picked figures; the third has T undefined (no labelled pairs).
    # A_max = 1 - phi/2, capability_gap = A_max - A and A_corrected = A - phi q as stats.reliability gives them:
    # cell 1: A_max 0.8, gap 0.0, A - phi q 0.6; cell 2: A_max 0.95, gap 0.25, 0.65; cell 3: A_max 1.0, A undefined
    return [
        {"judge": "j1", "protocol": "direct", "dataset": "d1", "temperature": 0.0, "C": 0.9, "phi": 0.4,
         "A": 0.8, "q": 0.5, "T": 0.9 * (0.8 - 0.2), "A_max": 0.8, "capability_gap": 0.0, "A_corrected": 0.6},
        {"judge": "j2", "protocol": "cot-json", "dataset": "d1", "temperature": 0.7, "C": 0.5, "phi": 0.1,
         "A": 0.7, "q": 0.5, "T": 0.5 * (0.7 - 0.05), "A_max": 0.95, "capability_gap": 0.25, "A_corrected": 0.65},
        {"judge": "j2", "protocol": "direct", "dataset": "d2", "temperature": 0.0, "C": 0.95, "phi": 0.0,
         "A": None, "q": 0.5, "T": None, "A_max": 1.0, "capability_gap": None, "A_corrected": None},
    ]


def _cells() -> list[Cell]:
    return cells_of(_recs())


def _report(recs: list[dict], **thresholds: float) -> Report:
    """A report holding the cells of ``recs`` and the across-cell figures stats gives for them."""
    rep = report_of(recs)
    rep.across_cells = across_cells(rep.cells)
    rep.region_thresholds = dict(thresholds)
    return rep


def _readings(recs: list[dict], **thresholds: float) -> dict[str, str]:
    """The plot readings of a report holding the cells of ``recs``."""
    return plot_readings(_report(recs, **thresholds))


@pytest.mark.parametrize("name", ["ceiling", "factors", "regions", "format", "spread"])
def test_every_plot_labels_its_axes(name: str) -> None:
    ax = P.PLOTS[name](_cells())
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
    assert matplotlib.get_backend().lower() == "agg"
    import matplotlib.pyplot as plt

    plt.close(ax.figure)


def test_ceiling_line_and_points() -> None:
    ax = P.plot_ceiling(_cells())
    line = ax.lines[0]
    x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    # the ceiling A_max = 1 - phi/2: at phi = 0.4 it is 0.8, at phi = 1 it is 0.5
    assert np.isclose(np.interp(0.4, x, y), 0.8) and np.isclose(y[-1], 0.5)
    # cells 1 and 2 have A and phi; cell 3 (A undefined) is left out -> 2 scatter points at (phi, A)
    pts = np.vstack([c.get_offsets() for c in ax.collections if type(c).__name__ == "PathCollection"])
    assert sorted(map(tuple, pts.round(6))) == [(0.1, 0.7), (0.4, 0.8)]


def test_factors_places_cells_at_corrected_accuracy() -> None:
    ax = P.plot_factors(_cells())
    pts = np.vstack([c.get_offsets() for c in ax.collections if type(c).__name__ == "PathCollection"])
    # x = A - phi*q: cell 1 -> 0.8 - 0.2 = 0.6 (C 0.9); cell 2 -> 0.7 - 0.05 = 0.65 (C 0.5)
    assert sorted(map(tuple, pts.round(6))) == [(0.6, 0.9), (0.65, 0.5)]
    # iso-T curves are C = T / x: the T=0.5 curve passes through (0.625, 0.8)
    curves = [ln for ln in ax.lines if ln.get_linestyle() == "--"]
    assert len(curves) == 9
    x, y = (np.asarray(a) for a in (curves[4].get_xdata(), curves[4].get_ydata()))
    assert np.isclose(np.interp(0.625, x, y), 0.8, atol=1e-3)


def test_readings_are_read_from_the_cells_and_their_figures() -> None:
    r = _readings(_recs(), c_high=0.9, phi_low=0.1)
    # cell 1: C 0.9 >= 0.9, phi 0.4 > 0.1 -> confidently-biased; cell 2: C 0.5, phi 0.1 -> noisy-but-fair;
    # cell 3: C 0.95, phi 0 -> trustworthy
    assert "1 confidently-biased" in r["regions"] and "1 noisy-but-fair" in r["regions"]
    assert "1 trustworthy" in r["regions"]
    # best T is cell 1: 0.9 * 0.6 = 0.54 -> 54%
    assert "Best T: 54%" in r["factors"]
    # no cell carries T_joint here, so no independence sentence
    assert "T_joint" not in r["factors"]
    cells = [dict(c, T_joint=t) for c, t in zip(_recs()[:2], (0.51, 0.335), strict=True)]
    # |0.51 - 0.54| = 3 points, |0.335 - 0.325| = 1 point -> mean 2.0; largest 0.51 - 0.54 = -3.0 (cell 1)
    r2 = _readings(cells)["factors"]
    assert "differs by 2.0 points on average over 2 cells (largest: -3.0 points, j1, direct, d1)" in r2
    # ceiling: cell 1 at A_max 0.8 = A (on the ceiling), cell 2 at A_max 0.95 vs A 0.7 -> 1 of 2 near
    assert "1 of 2 cells lie within 2 points of the ceiling" in r["ceiling"]


def test_write_plots_writes_png_and_svg(tmp_path: Path) -> None:
    report = _report(_recs(), c_high=0.9, phi_low=0.2)
    report.format_dispersion = [_dispersed()]
    paths = P.write_plots(report, tmp_path / "plots")
    names = sorted(p.name for p in paths)
    # two temperatures -> the temperature sweep is drawn too
    assert names == sorted(f"{n}.{f}" for n in ("ceiling", "factors", "regions", "format", "temperature",
                                                 "spread") for f in ("png", "svg"))
    assert all(p.stat().st_size > 5000 for p in paths)
    assert (tmp_path / "plots" / "ceiling.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "ceiling:" in (tmp_path / "plots" / "READINGS.txt").read_text()


def test_single_temperature_has_no_sweep() -> None:
    report = _report([c for c in _recs() if c["temperature"] == 0.0])
    report.format_dispersion = []
    names = [n for n, _, fig in P.figures(report)]
    assert names == ["ceiling", "factors", "regions", "spread"]


def test_temperature_reading_from_cells() -> None:
    # one line (j, p, d): C 0.9 -> 0.6 (falls 30 points), A - phi/2: 0.7 - 0.1 = 0.6 -> 0.7 - 0.1 = 0.6 (flat)
    cells = [{"judge": "j", "protocol": "p", "dataset": "d", "temperature": t, "C": c, "A": 0.7, "phi": 0.2,
              "q": 0.5, "T": None, "A_corrected": 0.6} for t, c in ((0.0, 0.9), (1.0, 0.6))]
    r = _readings(cells)["temperature"]
    assert "consistency falls by 30 points and corrected accuracy barely moves" in r
    assert "mostly a consistency effect" in r


def test_dollar_signs_in_names_do_not_break_plots(tmp_path: Path) -> None:
    # without escaping, text between two "$" is parsed as mathtext and an unknown command raises on draw
    cells = [dict(c, judge=c["judge"] + r" $\nosuchcmd$ costs $5", dataset=r"set $\alsonot$") for c in _recs()]
    report = _report(cells)
    report.format_dispersion = [_dispersed()]
    paths = P.write_plots(report, tmp_path, formats=("png",))
    assert len(paths) == 6


def test_a_registered_analysis_can_draw_its_table() -> None:
    """register(..., figure=fn): the report's figures include fn(table) for an analysis table with rows."""
    from verdictlab import analyses

    drawn: list[dict] = []

    def fig(table):  # type: ignore[no-untyped-def]
        drawn.append(table)
        import matplotlib.pyplot as plt

        return plt.figure()

    analyses.register("_test_fig", title="Test figure", figure=fig)(lambda inp: None)
    try:
        report = _report([])
        report.extra_tables = {"_test_fig": {"columns": ["x"], "rows": [[1.0]]}}
        names = [(n, t) for n, t, _ in P.analysis_figures(report)]
        assert names == [("_test_fig", "Test figure")] and drawn[0]["rows"] == [[1.0]]
        report.extra_tables = {"_test_fig": {"columns": ["x"], "rows": []}}
        assert P.analysis_figures(report) == []
    finally:
        analyses.ANALYSES.unregister("_test_fig")


def test_decision_picture_draws_an_interval_that_does_not_hold_its_point() -> None:
    """A bootstrap interval need not hold its point estimate (and a Wilson bound once came out 2.8e-17
    above a phi of 0): matplotlib refuses a negative error bar, so the bar starts at the point."""
    recs = [{**_recs()[0], "phi": 0.0, "phi_lo": 2.7755575615628914e-17, "phi_hi": 0.35,
             "A_lo": 0.81, "A_hi": 0.9}]
    report = _report(recs)
    (entry,) = (e for g in ("use", "avoid", "below_best", "not_measured") for e in report.decision[0].group(g))
    entries = [dataclasses.replace(entry, cell_index=0, group="use", number=1)]
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    P.plot_decision(entries, report.cells, ax)
    (container,) = ax.containers
    assert len(container.lines[2]) == 2           # both bars drawn (x and y)
    plt.close(fig)
