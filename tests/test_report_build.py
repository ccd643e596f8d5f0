"""Report building: cells from a reliability frame, JSON shape, engine accounting, format dispersion,
checklist, items that break the judge, secrets never reaching the report."""

from __future__ import annotations

import json
import math
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _cells import cell_of, cells_of
from verdictlab.core.design import trial_id
from verdictlab.core.items import PairItem
from verdictlab.core.policy import FigurePolicy
from verdictlab.core.redact import redact_value as redact
from verdictlab.report import build_report, report_json
from verdictlab.report.build import broken_items, dispersion_rows, engine_rows, mark_best
from verdictlab.store import RunStore

#: generated per run, so no key-shaped literal is tracked in the repo
FAKE_KEY = f"sk-{uuid.uuid4().hex}"

def _frame(rows: list[dict]) -> pd.DataFrame:
    base = {"step": "", "n_labelled_pairs": 2, "n_units": 4, "n_judgments": 12, "n_unparsed": 0,
            "parse_failure_rate": 0.0, "repetitions": 3, "self_consistency": 1.0, "A_dec": 1.0,
            "n_decisive": 2, "q": 0.5, "tie_rate": 0.0, "n_split_modes": 0, "unparsed_policy": "exclude"}
    return pd.DataFrame([{**base, **r} for r in rows])


def _tiny_store(tmp_path: Path) -> RunStore:
    """Two pairs, one judge, one protocol, T=0, R=3, both orders.

    pair p1 (label A): AB -> A,A,A ; BA -> A,A,A   stable, no flip
    pair p2 (label B): AB -> A,A,A ; BA -> B,B,A   BA unstable; modes A vs B -> flipped
    """
    st = RunStore(tmp_path / "run")
    st.write_items([
        PairItem(item_id="p1", dataset="d", question="q1", response_a="a1", response_b="b1", label="A",
                 category="math"),
        PairItem(item_id="p2", dataset="d", question="q2 <b>bold</b>", response_a="a2", response_b="b2",
                 label="B", category="code"),
    ])
    verdicts = {("p1", "AB"): "AAA", ("p1", "BA"): "AAA", ("p2", "AB"): "AAA", ("p2", "BA"): "BBA"}
    rows = []
    for (item, order), vs in verdicts.items():
        for rep, v in enumerate(vs):
            rows.append({"trial_id": trial_id("j", "d", item, "direct", order, 0.0, rep), "judge": "j",
                         "dataset": "d", "item_id": item, "protocol": "direct", "order": order,
                         "temperature": 0.0, "rep": rep, "step": "", "label": "A" if item == "p1" else "B",
                         "category": "math" if item == "p1" else "code", "raw_output": f"raw {item} {order} {rep}",
                         "verdict": v, "parse_status": "ok", "attempts": 1})
    st.add_judgments(rows)
    st.set_meta("config", {"judge": {"model": "x", "api_key": FAKE_KEY}, "temperature": 0.0})
    return st


def test_cells_carry_frame_values_as_fractions_and_nan_as_null(tmp_path: Path) -> None:
    st = _tiny_store(tmp_path)
    # Figures as the stats function would give them for the tiny store (worked out by hand):
    # C: units (p1,AB),(p1,BA),(p2,AB) stable, (p2,BA) not -> 3/4 = 0.75
    # phi: p1 modes A/A same, p2 modes A/B differ -> 1/2 = 0.5
    # A: (p1,AB)=A ok, (p1,BA)=A ok, (p2,AB)=A wrong (label B), (p2,BA)=B ok -> 3/4 = 0.75
    # T = C*(A - phi/2) = 0.75*(0.75-0.25) = 0.375
    frame = _frame([{"judge": "j", "protocol": "direct", "dataset": "d", "temperature": 0.0, "n_pairs": 2,
                     "C": 0.75, "C_lo": 0.30, "C_hi": 0.95, "phi": 0.5, "phi_lo": 0.09, "phi_hi": 0.91,
                     "A": 0.75, "A_lo": 0.30, "A_hi": 0.95, "A_max": 0.75, "capability_gap": 0.0,
                     "T": 0.375, "T_lo": np.nan, "T_hi": np.nan, "T_joint": 0.5}])
    rep = build_report(st, frame=frame, policy=FigurePolicy(n_bootstrap=10))
    doc = report_json(rep)
    assert set(doc) == {"schema_version", "run", "unparsed", "cells"}
    assert doc["schema_version"] == 1 and doc["unparsed"] == "exclude"
    (cell,) = doc["cells"]
    assert cell["C"] == 0.75 and cell["phi"] == 0.5 and cell["T"] == 0.375
    assert cell["T_lo"] is None and cell["T_hi"] is None  # NaN -> null
    text = json.dumps(doc, allow_nan=False)  # strict JSON: would raise on NaN
    assert FAKE_KEY[:11] not in text and "api_key" not in text
    assert doc["run"]["meta"]["config"]["judge"]["model"] == "x"
    assert doc["run"]["judges"] == ["j"] and doc["run"]["n_judgments"] == 12
    assert cell["best_T_in_dataset"] is False  # one cell with T in its dataset: nothing to compare
    # C=0.75 < 0.9 and phi=0.5 > 0.1 -> chaos (default thresholds) unless stats says otherwise
    assert cell["region"] in ("chaos",)


def test_broken_items_flags_flip_and_instability(tmp_path: Path) -> None:
    st = _tiny_store(tmp_path)
    bi = broken_items(st.judgments(), st.items_frame())
    # only p2 breaks: AB modal A, BA modal B (flipped) and BA = B,B,A (unstable)
    assert bi["n_total"] == 1 and bi["n_flipped"] == 1 and bi["n_unstable"] == 1
    (row,) = bi["rows"]
    assert row["item_id"] == "p2" and row["modal_AB"] == "A" and row["modal_BA"] == "B"
    assert row["question"] == "q2 <b>bold</b>" and row["category"] == "code"
    assert [r["raw_output"] for r in row["orders"]["BA"]] == ["raw p2 BA 0", "raw p2 BA 1", "raw p2 BA 2"]


def test_engine_accounting_counts_from_attempts_table() -> None:
    # trial t1: ok first try; t2: retry then ok; t3: retry then failed for good ("boom")
    attempts = pd.DataFrame([
        {"id": 1, "trial_id": "t1", "judge": "j", "attempt": 1, "outcome": "ok", "error_kind": None, "error": None},
        {"id": 2, "trial_id": "t2", "judge": "j", "attempt": 1, "outcome": "retry", "error_kind": "rate_limit",
         "error": "429"},
        {"id": 3, "trial_id": "t2", "judge": "j", "attempt": 2, "outcome": "ok", "error_kind": None, "error": None},
        {"id": 4, "trial_id": "t3", "judge": "j", "attempt": 1, "outcome": "retry", "error_kind": "server",
         "error": "503"},
        {"id": 5, "trial_id": "t3", "judge": "j", "attempt": 2, "outcome": "failed", "error_kind": "server",
         "error": "boom with Bearer abcdefghijkl"},
    ])
    judgments = pd.DataFrame({"judge": ["j", "j"], "parse_status": ["ok", "failed"], "cost_usd": [0.1, 0.2],
                              "tokens_in": [1, 2], "tokens_out": [3, 4], "cache_hit": [0, 1],
                              "attempts": [1, 2], "error": [None, None], "verdict": ["A", None]})
    (row,) = engine_rows(attempts, judgments)
    assert row["attempts"] == 5 and row["ok_first_try"] == 1 and row["retried_then_ok"] == 1
    assert row["failed_for_good"] == 1 and row["parse_failures"] == 1
    assert row["last_error"] == "boom with [redacted]"
    assert row["error_kinds"] == {"rate_limit": 1, "server": 2}
    assert math.isclose(row["cost_usd"], 0.3) and row["cache_hits"] == 1


def test_format_dispersion_and_best_marks() -> None:
    cells = cells_of([{"judge": "j", "dataset": "d", "temperature": 0.0, "protocol": p, "T": t}
                      for p, t in (("direct", 0.40), ("vf-json", 0.55), ("cot-json", 0.62), ("cot-xml", None))])
    cells.append(cell_of({"judge": "k", "dataset": "d", "temperature": 0.0, "protocol": "direct", "T": 0.70}))
    (fd_j, fd_k) = dispersion_rows(cells)
    # j: T over protocols {0.40, 0.55, 0.62}, undefined one left out -> delta = 0.62 - 0.40 = 0.22
    assert fd_j.protocol_min == "direct" and fd_j.protocol_max == "cot-json"
    assert fd_j.delta_T_fmt is not None and math.isclose(fd_j.delta_T_fmt, 0.22) and fd_j.n_protocols_with_T == 3
    assert fd_k.delta_T_fmt is None and fd_k.T_max == 0.70  # one protocol: no spread
    mark_best(cells)
    assert [c.best_T_in_dataset for c in cells] == [False, False, False, False, True]


def test_regions_default_thresholds() -> None:
    from verdictlab.report.readings import cell_region

    kw = {"c_high": 0.9, "phi_low": 0.1}
    assert cell_region(cell_of({"C": 0.95, "phi": 0.05}), **kw) == "trustworthy"
    assert cell_region(cell_of({"C": 0.60, "phi": 0.05}), **kw) == "noisy-but-fair"
    assert cell_region(cell_of({"C": 0.60, "phi": 0.40}), **kw) == "chaos"
    assert cell_region(cell_of({"C": 0.99, "phi": 0.40}), **kw) == "confidently-biased"
    assert cell_region(cell_of({"C": None, "phi": 0.4}), **kw) is None
    # one repetition: C is not measured (1 by construction), so no region, as without phi
    assert cell_region(cell_of({"C": 1.0, "phi": 0.05, "repetitions": 1}), **kw) is None


def test_redact_drops_secret_keys_and_masks_values() -> None:
    meta = {"openai": {"api_key": "x", "base_url": "http://h", "headers": {"Authorization": "Bearer zzzzzzzzzz"}},
            "note": f"used sk-proj-{uuid.uuid4().hex} here", "max_tokens": 64, "tokens_out": 3}
    out = redact(meta)
    assert out == {"openai": {"base_url": "http://h", "headers": {}}, "note": "used [redacted] here",
                   "max_tokens": 64, "tokens_out": 3}


def test_unparsed_policy_validated(tmp_path: Path) -> None:
    st = _tiny_store(tmp_path)
    with pytest.raises(ValueError, match="unparsed"):
        build_report(st, policy=FigurePolicy(unparsed="guess"), frame=_frame([]))


def test_broken_items_follow_the_unparsed_policy() -> None:
    """pair p3: AB -> A, A, (unparsed); BA -> A, A, A.
    exclude: AB is A,A (stable), modes A/A -> not broken.
    wrong:   AB is A,A,unparsed -> unstable; modes A/A -> not flipped.
    pair p4: AB -> A, B; BA -> A, A.  AB's mode is split (1 A, 1 B) -> not order-invariant (flipped)
    and unstable under either policy."""
    rows = []
    for item, order, vs in (("p3", "AB", ["A", "A", None]), ("p3", "BA", ["A", "A", "A"]),
                            ("p4", "AB", ["A", "B"]), ("p4", "BA", ["A", "A"])):
        for rep, v in enumerate(vs):
            rows.append({"judge": "j", "protocol": "direct", "dataset": "d", "temperature": 0.0, "step": "",
                         "item_id": item, "order": order, "rep": rep, "verdict": v, "label": "A",
                         "category": None, "raw_output": "x", "parse_status": "ok" if v else "failed",
                         "parse_detail": None})
    j = pd.DataFrame(rows)
    ex = broken_items(j, pd.DataFrame(), policy=FigurePolicy(unparsed="exclude"))
    assert [(r["item_id"], r["flipped"], r["unstable"]) for r in ex["rows"]] == [("p4", True, True)]
    assert ex["rows"][0]["modal_AB"] == "split"
    wr = broken_items(j, pd.DataFrame(), policy=FigurePolicy(unparsed="wrong"))
    assert [(r["item_id"], r["flipped"], r["unstable"]) for r in wr["rows"]] == [("p4", True, True),
                                                                               ("p3", False, True)]


def test_judge_labels_shorten_long_ids_and_stay_unique() -> None:
    from verdictlab.report.build import judge_labels

    long1 = "sim:skill=0.7,position_lock=0.35,noise=0.1,malformed=0.03,seed=2"
    labels = judge_labels(["openai:gpt-4o-mini", long1], width=26)
    # skill and seed no longer share "s"; whole key=value parts are dropped, never a value cut in two
    assert labels == {"openai:gpt-4o-mini": "openai:gpt-4o-mini", long1: "sim:sk=0.7,pl=0.35,n=0.1,…"}
    # two ids equal after cutting to width 10 get numbered
    a, b = "backend:aaaaaaaaaaaaaaaaa-1", "backend:aaaaaaaaaaaaaaaaa-2"
    lab = judge_labels([a, b], width=10)
    assert lab == {a: "backend:a… #1", b: "backend:a… #2"}


def test_pointwise_rows_stay_out_of_pairwise_figures(tmp_path: Path) -> None:
    from verdictlab.core.items import PointItem

    st = _tiny_store(tmp_path)
    st.write_items([PointItem(item_id="q1", dataset="graded", question="2+2?", response="4", label="PASS")])
    st.add_judgments([{"trial_id": trial_id("j", "graded", "q1", "rubric", "AB", 0.0, rep), "judge": "j",
                       "dataset": "graded", "item_id": "q1", "protocol": "rubric", "order": "AB",
                       "temperature": 0.0, "rep": rep, "step": "", "label": "PASS", "raw_output": "PASS",
                       "verdict": "PASS", "parse_status": "ok"} for rep in range(3)])
    rep = build_report(st, policy=FigurePolicy(n_bootstrap=20))
    # only the pairwise cell (j, direct, d, 0.0); the 3 rubric judgments are counted apart
    assert [(c.key.dataset, c.key.protocol) for c in rep.cells] == [("d", "direct")]
    assert rep.run.n_pointwise_judgments == 3 and rep.run.n_judgments == 15
    assert rep.broken_items is not None and rep.broken_items["n_total"] == 1  # p2 only, as without the pointwise rows
    assert "error" not in rep.extra_tables


def test_further_tables_reach_the_report(tmp_path: Path) -> None:
    from verdictlab.testing.synthetic_run import write_synthetic_run

    st = write_synthetic_run(tmp_path / "run", datasets=("d",), protocols=("direct",), temperatures=(0.0,),
                             judges=("sim:steady",), n_items=6)
    rep = build_report(st, policy=FigurePolicy(n_bootstrap=20))
    remedies = rep.extra_tables["remedies"]
    assert {"remedy", "T", "dT"} <= set(remedies["columns"])
    # one cell -> one row per remedy, the first being "none"
    col = remedies["columns"].index("remedy")
    assert remedies["rows"][0][col] == "none"
    assert json.dumps(rep.extra_tables, allow_nan=False)


def test_json_carries_the_further_analyses_under_run(tmp_path):
    """A sim run over two orders and 3 repetitions supports the remedy and jury tables; the JSON
    document gives them under run.analyses as columns + rows (and keeps its four top-level keys)."""
    from verdictlab.engine import run_config
    from verdictlab.engine.config import RunConfig
    from verdictlab.report import build_report
    from verdictlab.report.build import report_json

    cfg = RunConfig(name="analyses", datasets=[{"name": "demo"}],
                    judges=["sim:skill=0.8,position_lock=0.2,noise=0.1,seed=3"],
                    protocols=["vf-json"], temperatures=[0.7], repetitions=3)
    run_config(cfg, tmp_path / "run", progress=False)
    doc = report_json(build_report(tmp_path / "run", policy=FigurePolicy(n_bootstrap=50)))
    assert list(doc) == ["schema_version", "run", "unparsed", "cells"]
    analyses = doc["run"]["analyses"]
    assert "remedies" in analyses
    table = analyses["remedies"]
    assert table["columns"] and table["rows"]
    assert all(len(r) == len(table["columns"]) for r in table["rows"])


def test_single_order_cells_need_both_orders(tmp_path: Path) -> None:
    """With one presentation order the first-shown share is the share of one canonical side (position
    and quality confounded): such a cell shows no position bias but "needs both orders", and the
    checklist's position-bias line cannot pass (issue 11 item 4 wording)."""
    from verdictlab.testing.synthetic_run import write_synthetic_run

    st = write_synthetic_run(tmp_path / "run", datasets=("d",), protocols=("direct", "vf-json"),
                             temperatures=(0.0,), judges=("sim:steady",), n_items=8, one_order_share=1.0)
    doc = report_json(build_report(st, policy=FigurePolicy(n_bootstrap=0)))
    assert len(doc["cells"]) == 2
    for cell in doc["cells"]:
        assert cell["phi"] is None and cell["n_order_pairs"] == 0
        assert cell["agreement"]["position_bias"] is None and cell["agreement"]["share_first_won"] is None
        assert cell["agreement"]["position_bias_note"] == "needs both orders"
    checks = {c["check"]: c for c in doc["run"]["checklist"]}
    assert checks["Both presentation orders run (position swap)"]["passed"] is False
    pos = checks["Position bias checked even where test–retest is high"]
    assert pos["passed"] is False and pos["detail"].startswith("needs both orders: 2 of 2 cells ran one order only")


def test_cell_columns_of_registered_analyses_reach_the_cells(tmp_path: Path) -> None:
    """A registered cell-column analysis adds its columns to the matching cells (JSON cells[i].X), and
    the renderers list them under "More figures per cell"."""
    from verdictlab import analyses
    from verdictlab.core.vocab import CELL_KEY
    from verdictlab.report import render_html, render_markdown
    from verdictlab.report.columns import extra_columns
    from verdictlab.testing.synthetic_run import write_synthetic_run

    @analyses.register_cell_columns("_test_cols", columns=("T_expected",))
    def _cols(inp: analyses.AnalysisInput) -> pd.DataFrame:
        keys = inp.pairs[list(CELL_KEY)].drop_duplicates()    # the full cell key, decoding included
        return keys.assign(T_expected=0.625)  # the synthetic run has no p_a: no real expected figures

    @analyses.register_cell_columns("_test_partial_key", columns=("x_partial",))
    def _partial(inp: analyses.AnalysisInput) -> pd.DataFrame:
        keys = inp.pairs[["judge", "protocol", "dataset", "temperature"]].drop_duplicates()
        return keys.assign(x_partial=1.0)     # no decoding: it would join every decoding's cell

    try:
        st = write_synthetic_run(tmp_path / "run", datasets=("d",), protocols=("direct",), temperatures=(0.0,),
                                 judges=("sim:steady",), n_items=6)
        rep = build_report(st, policy=FigurePolicy(n_bootstrap=0))
    finally:
        analyses.CELL_COLUMNS.unregister("_test_cols")
        analyses.CELL_COLUMNS.unregister("_test_partial_key")
    (cell,) = report_json(rep)["cells"]
    assert cell["T_expected"] == 0.625
    # a frame without the full cell key is refused and shown as an error; its column is null, not guessed
    assert cell["x_partial"] is None
    err = report_json(rep)["run"]["analyses"]["cell_columns:_test_partial_key"]["error"]
    assert err.startswith("ValueError: cell columns '_test_partial_key': rows lack cell-key column(s) ['decoding']")
    assert ("T_expected", "T expected") in [(c.key, c.label) for c in extra_columns(rep.cells) if c.shows(rep.cells)]
    assert "More figures per cell" in render_html(rep, embed_plots=False) and render_markdown(rep)


def test_protocol_label_names_step_and_a_non_free_decoding() -> None:
    from verdictlab.report.readings import protocol_label

    assert protocol_label(cell_of({"protocol": "vf-json", "decoding": "free"})) == "vf-json"
    assert protocol_label(cell_of({"protocol": "vf-json", "decoding": "constrained"})) == "vf-json (constrained)"
    assert protocol_label(cell_of({"protocol": "flask", "step": "accuracy"})) == "flask [accuracy]"


def test_broken_items_keep_decoding_modes_apart() -> None:
    """One pair judged free (A, A in both orders) and constrained (B, B in both orders): each decoding is
    its own cell, so neither is unstable or flipped -- mixing them would make both orders 'unstable'."""
    rows = [{"judge": "j", "protocol": "vf-json", "dataset": "d", "temperature": 0.0, "step": "", "item_id": "p",
             "order": order, "rep": rep, "verdict": v, "label": "A", "category": None, "raw_output": "x",
             "parse_status": "ok", "parse_detail": None, "decoding": dec}
            for dec, v in (("free", "A"), ("constrained", "B")) for order in ("AB", "BA") for rep in range(2)]
    bi = broken_items(pd.DataFrame(rows), pd.DataFrame())
    assert bi["n_total"] == 0


def test_a_failing_analysis_is_shown_not_fatal(tmp_path: Path) -> None:
    """An analysis that raises becomes its table's error (JSON, terminal, HTML); the report still builds."""
    import io

    from rich.console import Console

    from verdictlab import analyses
    from verdictlab.report import render_html, render_terminal
    from verdictlab.testing.synthetic_run import write_synthetic_run

    @analyses.register("_test_boom", title="Boom table", description="raises")
    def _boom(inp: analyses.AnalysisInput) -> pd.DataFrame:
        raise RuntimeError(f"broken with key {FAKE_KEY}")

    try:
        st = write_synthetic_run(tmp_path / "run", datasets=("d",), protocols=("direct",), temperatures=(0.0,),
                                 judges=("sim:steady",), n_items=4)
        rep = build_report(st, policy=FigurePolicy(n_bootstrap=0))
    finally:
        analyses.ANALYSES.unregister("_test_boom")
    table = report_json(rep)["run"]["analyses"]["_test_boom"]
    assert table["title"] == "Boom table" and table["error"].startswith("RuntimeError: broken with key")
    assert FAKE_KEY not in table["error"]  # errors go through the one scrubber
    assert "remedies" in report_json(rep)["run"]["analyses"]  # the others are still there
    buf = io.StringIO()
    render_terminal(rep, Console(file=buf, width=200, color_system=None))
    assert "Boom table could not be computed: RuntimeError" in buf.getvalue()
    assert "This analysis could not be computed" in render_html(rep, embed_plots=False)


def test_reports_of_odd_stores_still_render(tmp_path: Path) -> None:
    """A store holding a NULL temperature (old stores could) formats as "?"; a run of pointwise
    judgments only says so instead of "No judgments"; a paraphrased item shows its original question."""
    import io
    from dataclasses import replace

    from rich.console import Console

    from verdictlab.report import render_html, render_markdown, render_terminal
    from verdictlab.report.columns import KEY_COLUMNS, show

    rep = build_report(_tiny_store(tmp_path), policy=FigurePolicy(n_bootstrap=0))
    temperature = next(c for c in KEY_COLUMNS if c.key == "temperature")
    for c in rep.cells:
        c.key = replace(c.key, temperature=None)
        assert show(temperature, c).text == "?"
        c.key = replace(c.key, temperature=float("nan"))
        assert show(temperature, c).text == "?"
        c.key = replace(c.key, temperature=None)
    assert rep.broken_items is not None
    rep.broken_items["rows"][0]["original_question"] = "the question before paraphrase"
    buf = io.StringIO()
    render_terminal(rep, Console(file=buf, width=200, color_system=None))
    assert "?" in buf.getvalue() and render_markdown(rep)
    assert "Original question (before paraphrase" in render_html(rep, embed_plots=False)
    st = RunStore(tmp_path / "points")
    from verdictlab.core.items import PointItem

    st.write_items([PointItem(item_id="q1", dataset="graded", question="2+2?", response="4", label="PASS")])
    st.add_judgments([{"trial_id": trial_id("j", "graded", "q1", "rubric", "AB", 0.0, 0), "judge": "j",
                       "dataset": "graded", "item_id": "q1", "protocol": "rubric", "order": "AB",
                       "temperature": 0.0, "rep": 0, "step": "", "label": "PASS", "raw_output": "PASS",
                       "verdict": "PASS", "parse_status": "ok"}])
    buf = io.StringIO()
    render_terminal(build_report(st, policy=FigurePolicy(n_bootstrap=0)), Console(file=buf, width=200, color_system=None))
    assert "1 pointwise judgment(s) in 1 grader cell(s)" in buf.getvalue()
