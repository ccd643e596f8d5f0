"""Terminal table and the `verdictlab report` command (JSON and table output)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rich.console import Console
from typer.testing import CliRunner

from _cells import cells_of
from verdictlab.cli.main import app
from verdictlab.core.policy import FigurePolicy
from verdictlab.report import build as build_mod
from verdictlab.report import build_report, render_terminal
from verdictlab.testing.synthetic_run import write_synthetic_run


def _frame_for(judgments: pd.DataFrame) -> pd.DataFrame:
    """A stand-in reliability frame with one row per cell and fixed, recognisable figures."""
    keys = judgments[["judge", "protocol", "dataset", "temperature"]].drop_duplicates()
    rows = []
    for i, k in enumerate(keys.to_dict(orient="records")):
        rows.append({**k, "step": "", "n_pairs": 24, "n_labelled_pairs": 22, "n_units": 48, "n_judgments": 144,
                     "n_unparsed": 2, "parse_failure_rate": 2 / 144, "repetitions": 3, "C": 0.9, "C_lo": 0.8,
                     "C_hi": 0.95, "self_consistency": 0.96, "phi": 0.2, "phi_lo": 0.1, "phi_hi": 0.3,
                     "A": 0.7 + 0.001 * i, "A_lo": 0.6, "A_hi": 0.8, "A_dec": 0.75, "n_decisive": 18, "q": 0.5,
                     "A_max": 0.9, "capability_gap": 0.2, "T": 0.54 + 0.001 * i, "T_lo": 0.45, "T_hi": 0.63,
                     "T_joint": 0.5, "tie_rate": 0.0, "n_split_modes": 0, "unparsed_policy": "exclude"})
    rows[0]["T"] = np.nan
    return pd.DataFrame(rows)


@pytest.fixture
def synthetic_run(tmp_path: Path) -> Path:
    st = write_synthetic_run(tmp_path / "run", n_items=6, protocols=("direct", "cot-json"), temperatures=(0.0,))
    st.close()
    return tmp_path / "run"


def test_render_terminal_shows_every_cell_and_policy(synthetic_run: Path) -> None:
    from verdictlab.store import open_store

    with open_store(synthetic_run) as st:
        frame = _frame_for(st.judgments())
        rep = build_report(st, frame=frame, policy=FigurePolicy(n_bootstrap=200))
    buf = io.StringIO()
    render_terminal(rep, Console(file=buf, width=200, color_system=None))
    out = buf.getvalue()
    # 2 judges x 2 protocols x 2 datasets = 8 cells
    assert "8 cells" in out
    assert out.count("sim:steady") >= 4 and out.count("sim:biased") >= 4
    assert "excluded from every figure" in out and "--unparsed exclude" in out
    assert "54.1" in out  # T of the second cell: 0.541 -> 54.1 %
    assert "[45, 63]" in out  # its interval in %
    assert "Validation-protocol checklist" in out and "Engine accounting" in out
    assert "timed out after 60 s" in out  # the trial that failed for good
    assert "sk-test" not in out


def test_cli_report_json(monkeypatch: pytest.MonkeyPatch, synthetic_run: Path) -> None:
    monkeypatch.setattr(build_mod, "reliability", lambda j, **kw: _frame_for(j))
    res = CliRunner().invoke(app, ["report", str(synthetic_run), "--format", "json", "--unparsed", "wrong"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert set(doc) == {"schema_version", "run", "unparsed", "cells"}
    assert doc["unparsed"] == "wrong" and len(doc["cells"]) == 8
    assert all(c["T"] is None or 0 <= c["T"] <= 1 for c in doc["cells"])
    assert sum(c["T"] is None for c in doc["cells"]) == 1
    assert "THIS-MUST-NOT-APPEAR" not in res.stdout


def test_cli_report_table_and_missing_run(monkeypatch: pytest.MonkeyPatch, synthetic_run: Path,
                                          tmp_path: Path) -> None:
    monkeypatch.setattr(build_mod, "reliability", lambda j, **kw: _frame_for(j))
    res = CliRunner().invoke(app, ["report", str(synthetic_run)])
    assert res.exit_code == 0, res.output
    assert "Reliability per cell" in res.stdout
    res = CliRunner().invoke(app, ["report", str(tmp_path / "nowhere")])
    assert res.exit_code == 5 and "no run store" in res.output     # store problem (docs/errors.md)


def test_cli_json_with_real_stats_matches_reliability(synthetic_run: Path) -> None:
    from verdictlab.stats import reliability
    from verdictlab.store import open_store

    res = CliRunner().invoke(app, ["report", str(synthetic_run), "--format", "json", "--bootstrap", "30"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    with open_store(synthetic_run) as st:
        frame = reliability(st.judgments(), policy=FigurePolicy(unparsed="exclude", n_bootstrap=0))
    assert len(doc["cells"]) == len(frame) == 8
    by_key = {(r.judge, r.protocol, r.dataset, r.temperature): r for r in frame.itertuples()}
    for cell in doc["cells"]:
        ref = by_key[(cell["judge"], cell["protocol"], cell["dataset"], cell["temperature"])]
        for name in ("C", "phi", "A", "T", "T_joint", "A_max", "self_consistency", "parse_failure_rate"):
            v = getattr(ref, name)
            assert (cell[name] is None and np.isnan(v)) or abs(cell[name] - v) < 1e-12, name
            assert cell[name] is None or 0.0 <= cell[name] <= 1.0
        assert cell["n_pairs"] == ref.n_pairs and cell["n_judgments"] == ref.n_judgments
        assert {"kappa", "alpha", "exact_match", "position_bias", "test_retest",
                "consistency_bias_paradox"} <= set(cell["agreement"])
        assert cell["T_lo"] is None or cell["T_lo"] <= cell["T"] <= cell["T_hi"]


def test_empty_run_reports_without_error(tmp_path: Path) -> None:
    from verdictlab.report import render_html
    from verdictlab.store import RunStore

    RunStore(tmp_path / "empty").close()
    rep = build_report(tmp_path / "empty")
    assert rep.cells == [] and rep.broken_items is not None and rep.broken_items["n_total"] == 0
    buf = io.StringIO()
    render_terminal(rep, Console(file=buf, width=120))
    assert "No judgments in this run yet." in buf.getvalue()
    html = render_html(rep)
    assert "<table" in html and "No pair flipped" in html


def test_single_repetition_warning() -> None:
    from verdictlab.report.readings import single_rep_note

    # one of two cells was run once: its C is not measured (it was 100% by construction)
    assert single_rep_note(cells_of([{"repetitions": 1}, {"repetitions": 3}])).startswith("1 of 2 cells have a single")
    assert single_rep_note(cells_of([{"repetitions": 3}])) == ""


def test_decoding_line_names_what_could_not_be_constrained() -> None:
    from verdictlab.report.readings import decoding_line

    run = {"decoding_mechanisms": {"sim:x": {"direct": "sim: forced label", "vf-json": "sim: json schema"},
                                   "openai:m": {"vf-xml": "not constrainable: no XML grammar"}}}
    assert decoding_line(run) == ("Constrained decoding: 2 of 3 judge × protocol pairs constrained; not "
                                  "constrainable, so not run constrained: openai:m × vf-xml (no XML grammar).")
    assert decoding_line({}) == ""
