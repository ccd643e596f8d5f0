"""Tables a person can read at common sizes: terminal tables that fit 80 and 120 columns (and a pipe) keeping
the configuration, T, C, φ, A and region and naming what they drop; ``--wide`` and ``--columns``; the
analyses' snake_case column names as words; the decision picture keeping every point and number inside its
frame.  (The HTML at 1,280 and 1,920 px is measured in a real browser: test_report_readable_browser.py.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from _cells import report_of
from verdictlab.core.policy import FigurePolicy
from verdictlab.report import build_report, render_terminal
from verdictlab.report.columns import check_column_names, column_label
from verdictlab.testing.synthetic_run import write_synthetic_run

#: a judge id as long as real ones, with no space in it
LONG_JUDGE = "llamacpp:smollm2-135m-instruct-q8_0"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("readable") / "run"
    st = write_synthetic_run(d, datasets=("llmbar-natural", "pandalm"), judges=(LONG_JUDGE, "sim:steady"),
                             protocols=("direct", "cot-json"), temperatures=(0.0, 0.7), n_items=10, repetitions=3)
    st.close()
    return d


@pytest.fixture(scope="module")
def report(run_dir: Path) -> Any:
    return build_report(run_dir, policy=FigurePolicy(n_bootstrap=30))


def _terminal(report: Any, width: int, **kw: Any) -> str:
    con = Console(width=width, record=True, file=open("/dev/null", "w"), color_system=None)  # noqa: SIM115
    render_terminal(report, con, **kw)
    return con.export_text()


def _figures_table(text: str) -> tuple[list[str], str]:
    """The figures table's lines (from its title to its caption) and the whole table block."""
    start = text.index("Reliability per cell")
    end = text.index("Region: the failure region", start)
    block = text[start:end]
    return block.splitlines(), block


@pytest.mark.parametrize("width", [80, 120])
def test_the_figures_table_fits_and_keeps_the_important_columns(report: Any, width: int) -> None:
    text = _terminal(report, width)
    lines, block = _figures_table(text)
    assert max(len(line.rstrip()) for line in lines) <= width
    header = " ".join(lines[1:4])
    for label in ("judge", "protocol", "C", "φ", "A", "T", "region"):
        assert re.search(rf"(^|[\s┃│]){re.escape(label)}($|[\s┃│])", header), (label, header)
    # no header and no figure broken inside a word: the region names and headers come whole
    assert "datas" not in block.replace("dataset", "") and "protoc\n" not in block
    for region in ("trustworthy", "noisy-but-fair", "confidently-biased", "chaos"):
        for part in (region[: k] for k in range(3, len(region))):
            assert not re.search(rf"{re.escape(part)}\s*[│┃]?\s*$", block, re.M) or part == region, part
    # what was dropped is named, with how to see it
    note = " ".join(text[text.index("Not shown at"):].split("\n")[:3])
    assert f"Not shown at {width} columns" in note and "--wide" in note and "--columns" in note
    assert "unparsed" in note or "T joint" in note


def test_wide_shows_every_column_and_columns_chooses(report: Any) -> None:
    wide = _terminal(report, 80, wide=True)
    lines, _ = _figures_table(wide)
    for label in ("pairs", "SC", "A dec", "A max", "gap", "T joint", "unparsed", "temp"):
        assert label in " ".join(lines[:5]), label
    assert "Not shown at" not in wide
    assert LONG_JUDGE in wide                  # names whole when every column is asked for
    chosen = _terminal(report, 80, columns=["T", "unparsed"])
    lines, _ = _figures_table(chosen)
    head = " ".join(lines[1:4])
    assert "unparsed" in head and " T " in head and " φ " not in head and "region" not in head


def test_a_pipe_gets_the_fitted_table(run_dir: Path) -> None:
    """A pipe (CliRunner's output is not a terminal) gets the data console's width and the fitted table."""
    from verdictlab.cli.main import app
    from verdictlab.cli.output import WIDE

    res = CliRunner().invoke(app, ["report", str(run_dir), "--bootstrap", "30"])
    assert res.exit_code == 0, res.output
    lines, _ = _figures_table(res.output)
    assert max(len(line.rstrip()) for line in lines) <= WIDE
    assert "region" in lines[2] or "region" in lines[1]


def test_cli_columns_and_wide(run_dir: Path) -> None:
    from verdictlab.cli.main import app

    runner = CliRunner()
    res = runner.invoke(app, ["report", str(run_dir), "--bootstrap", "30", "--columns", "T,phi"])
    assert res.exit_code == 0, res.output
    head = " ".join(_figures_table(res.output)[0][1:4])
    assert " T " in head and "φ" in head and " A " not in head
    bad = runner.invoke(app, ["report", str(run_dir), "--columns", "T,bogus"])
    assert bad.exit_code == 2 and "bogus" in bad.output and "T_joint" in bad.output
    wide = runner.invoke(app, ["report", str(run_dir), "--bootstrap", "30", "--wide"])
    assert wide.exit_code == 0 and "T joint" in wide.output and "Not shown at" not in wide.output


def test_check_column_names_takes_keys_and_labels() -> None:
    assert check_column_names(["T", " phi", "φ", "A max", "T_joint", ""]) == ["T", "phi", "φ", "A max", "T_joint"]
    with pytest.raises(ValueError, match="nope"):
        check_column_names(["nope"])


@pytest.mark.parametrize(("name", "label"), [
    ("n_judgments_constrained", "N judgments constrained"), ("dphi_lo", "Δφ low"), ("dC", "ΔC"),
    ("dtie_rate", "Δ tie rate"), ("d_unparsed", "Δ unparsed"), ("temperature", "temperature"), ("T", "T"),
    ("A_max", "A max"), ("win_rate_A", "win rate A"), ("calls_per_verdict", "calls per verdict")])
def test_analysis_columns_read_as_words(name: str, label: str) -> None:
    assert column_label(name) == label
    assert "_" not in column_label(name)


# -- the decision picture -----------------------------------------------------------------------------------

def _cell(judge: str, protocol: str, phi: float, a: float) -> dict[str, Any]:
    return {"judge": judge, "protocol": protocol, "dataset": "d1", "temperature": 0.0, "C": 1.0, "phi": phi,
            "phi_lo": max(0.0, phi - 0.3), "phi_hi": min(1.0, phi + 0.2), "A": a, "A_lo": max(0.0, a - 0.2),
            "A_hi": min(1.0, a + 0.2), "q": 0.5, "T": a - phi / 2, "T_lo": 0.0, "T_hi": 1.0,
            "A_max": 1 - phi / 2, "capability_gap": 1 - phi / 2 - a, "A_corrected": a - phi / 2,
            "n_pairs": 8, "n_labelled_pairs": 8}


@pytest.mark.parametrize("where", ["right frame", "corners"])
def test_the_decision_picture_keeps_every_point_and_number_inside_its_frame(where: str) -> None:
    """The demo's picture: every point at φ = 1 (all replies one position) piled on the right frame, their
    numbers overlapping and cut; and points in the four corners of the picture."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from verdictlab.report.plots import decision_figures

    if where == "right frame":
        recs = [_cell(f"j{k}", p, 1.0, 0.5) for k in range(3) for p in ("direct", "cot-json", "vf-json")]
    else:
        recs = [_cell("j1", "direct", 0.0, 1.0), _cell("j2", "direct", 1.0, 1.0), _cell("j3", "direct", 0.0, 0.0),
                _cell("j4", "direct", 1.0, 0.0), _cell("j5", "direct", 0.5, 0.5)]
    rep = report_of(recs)
    ((_, fig),) = decision_figures(rep)
    try:
        fig.canvas.draw()
        ax = fig.axes[0]
        frame = ax.get_window_extent()
        numbers = [t for t in ax.texts if re.fullmatch(r"[\d, ]+", t.get_text())]
        shown = {int(n) for t in numbers for n in t.get_text().split(", ")}
        placed = {e.number for d in rep.decision for g in ("use", "below_best", "avoid") for e in d.group(g)}
        assert shown == placed and placed
        for t in ax.texts:                     # numbers and the iso-T labels
            box = t.get_window_extent()
            assert frame.x0 - 0.5 <= box.x0 and box.x1 <= frame.x1 + 0.5, (t.get_text(), box, frame)
            assert frame.y0 - 0.5 <= box.y0 and box.y1 <= frame.y1 + 0.5, (t.get_text(), box, frame)
        boxes = [t.get_window_extent() for t in numbers]
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
        for c in rep.cells:                    # every point inside the frame, not on it
            assert x0 < c.value("phi") < x1 and y0 < c.value("A") < y1
        whole = fig.get_window_extent()
        for t in (ax.xaxis.label, ax.yaxis.label, ax.get_legend()):
            if t is not None:
                b = t.get_window_extent()
                assert whole.x0 <= b.x0 and b.x1 <= whole.x1 and whole.y0 <= b.y0 and b.y1 <= whole.y1
    finally:
        plt.close(fig)
