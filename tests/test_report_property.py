"""The report only renders: every number in ``report --json`` is the value the public stats / analysis
function returns for the same policy (issue 10 item 5), on several simulated runs with ties (labels and
judge verdicts), unparsed outputs and one-order pairs, under both unparsed policies.  Plus the
regression tests of the three inconsistencies the issue names."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from _cells import cell_of, cells_of
from verdictlab import analyses
from verdictlab.analyses.remedies import REPORT_REMEDIES, remedy_table, single_verdict_rows
from verdictlab.core.policy import FigurePolicy
from verdictlab.core.vocab import CELL_KEY
from verdictlab.report import build_report, report_json
from verdictlab.report.build import dispersion_rows, frame_table
from verdictlab.report.json_doc import decision_json, json_ready
from verdictlab.report.readings import (
    TABLE_READINGS,
    cell_sentence,
    decision,
    plot_readings,
    validation_checklist,
)
from verdictlab.stats import (
    agreement_by_cell,
    best_in_group,
    cell_regions,
    cell_regions_possible,
    cells_lacking_an_order,
    failure_region,
    format_dispersion,
    jury_table,
    modal_verdicts,
    reliability,
    versus_best,
)
from verdictlab.testing.synthetic_run import write_synthetic_run

RUNS: dict[str, dict[str, Any]] = {
    # two datasets, two temperatures, some unparsed outputs, label ties (every 11th item)
    "grid": dict(datasets=("d1", "d2"), protocols=("direct", "vf-json"), temperatures=(0.0, 0.7), n_items=12,
                 repetitions=3, seed=11, fail_rate=0.08),
    # judge ties (q measured), many unparsed outputs, a third of the pairs judged in one order only
    "ties": dict(datasets=("d1",), protocols=("direct", "cot-json", "vf-xml"), temperatures=(0.7,), n_items=14,
                 repetitions=3, seed=5, judge_tie_rate=0.12, one_order_share=0.3, fail_rate=0.15),
    # free and constrained decoding of the same pairs: separate cells in every figure and table
    "decoding": dict(datasets=("d1",), protocols=("direct", "vf-json"), temperatures=(0.0,), n_items=10,
                     repetitions=3, seed=8, fail_rate=0.1, decodings=("free", "constrained")),
    # two repetitions (split modes), heavy parse failures, half the pairs in one order
    "sparse": dict(datasets=("d1",), protocols=("direct",), temperatures=(0.0,), n_items=10, repetitions=2,
                   seed=2, fail_rate=0.3, one_order_share=0.5, judges=("sim:steady", "sim:biased", "sim:x")),
}
POLICIES = ("exclude", "wrong")
N_BOOT, SEED, CONF = 40, 9, 0.9
_REPORTS: dict[tuple[str, str], Any] = {}


def _report(run_dir: Path, policy: str) -> Any:
    """The report of a run under a policy (built once per module: building is the slow part)."""
    key = (str(run_dir), policy)
    if key not in _REPORTS:
        _REPORTS[key] = build_report(run_dir, policy=FigurePolicy(unparsed=policy, confidence=CONF, n_bootstrap=N_BOOT, seed=SEED))
    return _REPORTS[key]


def _same(got: Any, want: Any, where: str) -> None:
    """A JSON value equals the function's value (NaN / NA <-> null; numbers to 1e-12)."""
    if want is None or want is pd.NA or (isinstance(want, float) and math.isnan(want)):
        assert got is None, f"{where}: {got!r} != undefined"
        return
    if isinstance(want, bool | np.bool_):
        assert got is bool(want), f"{where}: {got!r} != {want!r}"
    elif isinstance(want, int | float | np.integer | np.floating):
        assert got is not None and abs(float(got) - float(want)) <= 1e-12, f"{where}: {got!r} != {want!r}"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def _key(rec: dict[str, Any], cols: list[str]) -> tuple[Any, ...]:
    return tuple(float(rec[c]) if c == "temperature" else rec[c] for c in cols)


@pytest.fixture(scope="module", params=sorted(RUNS))
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    d = tmp_path_factory.mktemp(request.param) / "run"
    st = write_synthetic_run(d, **RUNS[request.param])
    st.close()
    from verdictlab.store import open_store

    with open_store(d) as s:
        return d, (s.judgments(), s.items_frame(), list(s.items()))


def _check_cells(doc: dict[str, Any], rep: Any, ref: pd.DataFrame, keys: list[str], policy: str) -> None:
    """Every column of stats.reliability, the region, the best mark and the sentence of each cell."""
    cells = {_key(c, keys): c for c in doc["cells"]}
    typed = {_key(c, keys): t for c, t in zip(doc["cells"], rep.cells, strict=True)}
    assert len(cells) == len(ref) == len(doc["cells"])
    regions = dict(zip((_key(r, keys) for r in ref.to_dict(orient="records")), cell_regions(ref), strict=True))
    for rec in ref.to_dict(orient="records"):
        cell = cells[_key(rec, keys)]
        for col, want in rec.items():
            _same(cell[col], want, f"{policy} cell {_key(rec, keys)} {col}")
        region = regions[_key(rec, keys)]
        _same(cell["region"], None if region == "undefined" else region, "region")
        assert cell["sentence"] == typed[_key(rec, keys)].sentence == cell_sentence(typed[_key(rec, keys)])
    best = best_in_group(ref, by="dataset", value="T")
    for rec, b in zip(ref.to_dict(orient="records"), best, strict=True):
        assert cells[_key(rec, keys)]["best_T_in_dataset"] is bool(b)


def _check_decision(doc: dict[str, Any], rep: Any, ref: pd.DataFrame, j: pd.DataFrame, keys: list[str],
                    policy: str) -> None:
    """Each cell's regions_possible and vs_best are stats.cell_regions_possible and stats.versus_best of
    the same cells (tested at 1 - confidence); run.decision is readings.decision of the cells, and every
    T it quotes is its cell's."""
    cells = {_key(c, keys): c for c in doc["cells"]}
    vs = versus_best(j, ref, policy=FigurePolicy(unparsed=policy, confidence=CONF))
    for rec, reach, row in zip(ref.to_dict(orient="records"), cell_regions_possible(ref),
                               vs.to_dict(orient="records"), strict=True):
        cell = cells[_key(rec, keys)]
        assert cell["regions_possible"] == (list(reach) or None)
        for col, want in row.items():
            if col != "best_row":
                _same(cell["vs_best"][col], want, f"{policy} vs_best {col}")
    again = decision(rep.cells, alpha=1.0 - CONF, family_size=vs.attrs["family_size"])
    assert rep.decision == again and doc["run"]["decision"] == json_ready([decision_json(d) for d in again])
    for d in doc["run"]["decision"]:
        for group in ("use", "avoid", "below_best", "not_measured"):
            for e in d[group]:
                cell = doc["cells"][e["cell_index"]]
                assert cell["dataset"] == d["dataset"] and (e["T"], e["T_lo"], e["T_hi"]) == (
                    cell["T"], cell["T_lo"], cell["T_hi"])


def _check_agreement(doc: dict[str, Any], agr: pd.DataFrame, keys: list[str], policy: str) -> None:
    """Every column of stats.agreement_by_cell under cells[i].agreement."""
    cells = {_key(c, keys): c for c in doc["cells"]}
    for rec in agr.to_dict(orient="records"):
        cell = cells[_key(rec, keys)]
        for col, want in rec.items():
            if col not in keys:
                _same(cell["agreement"][col], want, f"{policy} agreement {col}")


def _check_dispersion(doc: dict[str, Any], ref: pd.DataFrame, policy: str) -> None:
    """run.format_dispersion = stats.format_dispersion of the same cells."""
    fd_by = ["judge", "dataset", "temperature"] + [c for c in ("step", "decoding") if c in ref.columns]
    fd = format_dispersion(ref, by=fd_by)
    got_fd = {_key(r, fd_by): r for r in doc["run"]["format_dispersion"]}
    assert len(got_fd) == len(fd)
    for rec in fd.to_dict(orient="records"):
        row = got_fd[_key(rec, fd_by)]
        for col, want in rec.items():
            _same(row[col], want, f"{policy} format_dispersion {col}")


def _check_broken(rep: Any, j: pd.DataFrame, policy: str) -> None:
    """The broken-items counts from stats.modal_verdicts (P = 0 flipped, N = 0 unstable)."""
    by = [*CELL_KEY, "step"]
    mv = modal_verdicts(j, policy=FigurePolicy(unparsed=policy), by=by)
    pair = mv.groupby([*by, "item_id"])
    flipped = pair["order_invariant"].agg(lambda s: bool((s == False).any()))  # noqa: E712
    unstable = pair["consistent"].agg(lambda s: bool((~s).any()))
    assert rep.broken_items["n_flipped"] == int(flipped.sum())
    assert rep.broken_items["n_unstable"] == int(unstable.sum())
    assert rep.broken_items["n_total"] == int((flipped | unstable).sum())


def _check_analyses(doc: dict[str, Any], inp: analyses.AnalysisInput, policy: str) -> None:
    """Every run.analyses table is its registered function's table under the same policy (plus the
    report's reading of each row where readings has one); remedies and juries also as a script would
    call the public functions."""
    tables = doc["run"]["analyses"]
    assert {"remedies", "juries"} <= set(tables)
    for name, table in tables.items():
        assert "error" not in table, (name, table.get("error"))
        frame = analyses.get(name)(inp)
        assert frame is not None
        if name in TABLE_READINGS:
            frame = frame.assign(reading=[TABLE_READINGS[name](r) for r in frame.to_dict(orient="records")])
        want = frame_table(frame)
        assert table["columns"] == want["columns"] and table["rows"] == want["rows"], name
    direct = frame_table(remedy_table(single_verdict_rows(inp.pairs), remedies=REPORT_REMEDIES, policy=FigurePolicy(unparsed=policy, confidence=CONF, seed=SEED)))
    assert tables["remedies"]["rows"] == direct["rows"]
    juries = frame_table(jury_table(inp.pairs[inp.pairs["step"].fillna("") == ""], policy=FigurePolicy(unparsed=policy)))
    assert tables["juries"]["rows"] == juries["rows"]


def _check_cell_columns(doc: dict[str, Any], inp: analyses.AnalysisInput, ref: pd.DataFrame, keys: list[str],
                        policy: str) -> set[str]:
    """Columns merged into the cells by registered cell-column analyses equal their function's values,
    joined on the full cell key; every cell carries every declared column (null where the analysis has
    no row for it).  Returns the names of those columns."""
    added: set[str] = set()
    for cc in analyses.registered_cell_columns():
        added |= set(cc.columns)
        for cell in doc["cells"]:
            assert set(cc.columns) <= set(cell), (cc.name, set(cc.columns) - set(cell))
        frame = cc.fn(inp)
        if frame is None or frame.empty:
            continue
        shared = [c for c in keys if c in frame.columns]
        assert set(CELL_KEY) <= set(shared), (cc.name, shared)
        for rec in frame.to_dict(orient="records"):
            match = [c for c in doc["cells"] if _key(c, shared) == _key(rec, shared)]
            assert len(match) <= 1, (cc.name, rec)
            for col, want in rec.items():
                if col in shared or col in ref.columns:
                    continue
                added.add(col)
                for cell in match:
                    _same(cell[col], want, f"{policy} {cc.name} {col}")
    return added


@pytest.mark.parametrize("policy", POLICIES)
def test_every_json_number_is_the_public_functions_value(run: tuple[Path, Any], policy: str) -> None:
    run_dir, (j, items_frame, items) = run
    rep = _report(run_dir, policy)
    doc = report_json(rep)
    json.dumps(doc, allow_nan=False)
    assert doc["unparsed"] == policy
    ref = reliability(j, policy=FigurePolicy(unparsed=policy, confidence=CONF, n_bootstrap=N_BOOT, seed=SEED), q="auto")
    keys = [c for c in (*CELL_KEY, "step") if c in ref.columns]
    _check_cells(doc, rep, ref, keys, policy)
    _check_decision(doc, rep, ref, j, keys, policy)
    _check_agreement(doc, agreement_by_cell(j, policy=FigurePolicy(unparsed=policy), items=items_frame), keys, policy)
    _check_dispersion(doc, ref, policy)
    checklist = validation_checklist(rep.cells, cells_lacking_an_order(j))
    assert rep.checklist == checklist and doc["run"]["checklist"] == [dataclasses.asdict(c) for c in checklist]
    _check_broken(rep, j, policy)
    inp = analyses.AnalysisInput(j, items=items, items_frame=items_frame, policy=FigurePolicy(unparsed=policy, confidence=CONF, n_bootstrap=N_BOOT, seed=SEED))
    _check_analyses(doc, inp, policy)
    added = _check_cell_columns(doc, inp, ref, keys, policy)
    # no number in a cell comes from anywhere else, and every cell has the same keys
    covered = set(ref.columns) | added | {"agreement", "region", "sentence", "best_T_in_dataset", "judge_label",
                                          "regions_possible", "vs_best", "display", "missing", "upper_bounds"}
    for cell in doc["cells"]:
        assert set(cell) <= covered, set(cell) - covered
        assert set(cell) == set(doc["cells"][0])


@pytest.mark.parametrize("policy", POLICIES)
def test_the_none_row_of_every_remedy_table_is_its_cell(run: tuple[Path, Any], policy: str) -> None:
    run_dir, _ = run
    doc = report_json(_report(run_dir, policy))
    key = CELL_KEY
    cells = {tuple(c[k] for k in key): c for c in doc["cells"]}
    t = doc["run"]["analyses"]["remedies"]
    cols = t["columns"]
    none_rows = [dict(zip(cols, r, strict=True)) for r in t["rows"] if r[cols.index("remedy")] == "none"]
    assert len(none_rows) == len(cells)
    for row in none_rows:
        cell = cells[tuple(row[k] for k in key)]
        for name in ("A", "phi", "C", "T", "tie_rate", "n_pairs", "n_labelled_pairs"):
            _same(row[name], cell[name], f"{policy} remedies none {name}")


# -- regression tests of the inconsistencies issue 10 names ------------------------------------------

def test_unparsed_wrong_reaches_the_remedy_table(tmp_path: Path) -> None:
    """`report RUN --json --unparsed wrong` on a run with unparsed outputs gave a cell T of 0.268 while
    run.analyses.remedies, row remedy = none, gave 0.563 (the exclude value): the further tables
    never received the policy.  Now the none row is the cell under either policy, and the policy moves
    both (unparsed outputs counted as wrong lower T)."""
    write_synthetic_run(tmp_path / "run", datasets=("d",), protocols=("direct",), temperatures=(0.0,),
                        judges=("sim:steady",), n_items=16, fail_rate=0.3, seed=4).close()
    t_by_policy = {}
    for policy in POLICIES:
        res = CliRunner().invoke(app_(), ["report", str(tmp_path / "run"), "--format", "json", "--unparsed", policy,
                                          "--bootstrap", "0"])
        assert res.exit_code == 0, res.output
        doc = json.loads(res.stdout)
        (cell,) = doc["cells"]
        t = doc["run"]["analyses"]["remedies"]
        none = [dict(zip(t["columns"], r, strict=True)) for r in t["rows"]
                if r[t["columns"].index("remedy")] == "none"]
        assert len(none) == 1 and none[0]["T"] == pytest.approx(cell["T"], abs=1e-12)
        t_by_policy[policy] = cell["T"]
    assert t_by_policy["wrong"] < t_by_policy["exclude"]


def app_() -> Any:
    from verdictlab.cli.main import app

    return app


def test_report_and_stats_format_dispersion_agree() -> None:
    """report/build.py had its own format_dispersion: on cells where one of two protocols has no T it
    said Δ 0.0 / 1 protocol where stats said None / 2 (or the reverse).  Both now count the protocols
    run (2), the ones with a T (1), and give no spread from a single protocol.  The report's rows are
    stats.format_dispersion's, gathered (dispersion_rows: one name, one home)."""
    report_fd = dispersion_rows

    cells = [{"judge": "j", "protocol": "direct", "dataset": "d", "temperature": 0.0, "T": 0.4},
             {"judge": "j", "protocol": "vf-json", "dataset": "d", "temperature": 0.0, "T": None}]
    (row,) = report_fd(cells_of(cells))
    (ref,) = format_dispersion(pd.DataFrame(cells).astype({"T": float})).to_dict(orient="records")
    assert row.n_protocols == ref["n_protocols"] == 2
    assert row.n_protocols_with_T == ref["n_protocols_with_T"] == 1
    assert row.delta_T_fmt is None and math.isnan(ref["delta_T_fmt"])
    assert row.T_min == row.T_max == ref["T_min"] == 0.4 and row.protocol_min == "direct"
    assert row.T_by_protocol == {"direct": 0.4, "vf-json": None}


def test_sentence_never_contradicts_the_region() -> None:
    """One cell was region "noisy-but-fair" in the plot and "Trustworthy … repeatable" in the sentence
    beside it: the sentence had its own thresholds (C >= 0.5 and T >= 0.6 sufficed).  Worked example:
    C = 0.8 < 0.9 (not reproducible enough), phi = 0.05 <= 0.2, A = 0.9 with interval [0.8, 0.96]
    (better than chance), T = 0.8 * (0.9 - 0.05 / 2) = 0.70 >= 0.6."""
    cell = {"protocol": "direct", "judge": "j", "dataset": "d", "temperature": 0.7, "n_pairs": 40,
            "n_order_pairs": 40, "repetitions": 3, "n_judgments": 240, "n_unparsed": 0,
            "parse_failure_rate": 0.0, "C": 0.8, "phi": 0.05, "A": 0.9, "A_lo": 0.8, "A_hi": 0.96, "T": 0.70}
    assert failure_region(cell["C"], cell["phi"]) == "noisy-but-fair"
    s = cell_sentence(cell_of(cell))
    assert not s.startswith("Trustworthy") and "region noisy-but-fair" in s
    assert s.startswith("Better than chance but not trustworthy: re-asking changes its verdict too often")
    # the same figures with C = 0.95 are in the trustworthy region, and only then is it said
    s = cell_sentence(cell_of({**cell, "C": 0.95, "T": 0.83}))
    assert s.startswith("Trustworthy") and "region trustworthy" in s


@pytest.mark.parametrize("policy", POLICIES)
def test_report_sentences_and_plot_regions_agree(run: tuple[Path, Any], policy: str) -> None:
    rep = _report(run[0], policy)
    for c in rep.cells:
        assert c.sentence.startswith("Trustworthy") <= (c.region == "trustworthy")
        assert c.region is None or f"region {c.region}" in c.sentence
    counts: dict[str, int] = {}
    for c in rep.cells:
        if c.region and c.figure("C").point is not None and c.figure("phi").point is not None:
            counts[c.region] = counts.get(c.region, 0) + 1
    text = plot_readings(rep)["regions"]
    for name, n in counts.items():
        assert f"{n} {name}" in text
