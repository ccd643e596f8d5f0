"""Report cells a user can trust: every table row joins exactly one cell on the full cell key
(judge, protocol, dataset, temperature, decoding), every cell has the same JSON keys, a cell judged
once is never called repeatable, and juries skip cells without usable figures.

Regression tests of four misleading figures a user met on the demo report:

* free cells carried the constrained cell's expected figures (``C_expected`` 0.864 and ``n_prob_pairs``
  16 on ``cot-json`` free, whose rows carry no P(A)): the expected-figures table was joined to the
  cells without the decoding dimension -- tested for the class, on every registered table;
* "Juries could not be computed: ValueError: p must be in [0, 1], got nan";
* a cell judged with one repetition was called "repeatable" though its C is 100% by construction;
* cells with missing figures dropped their JSON keys instead of writing null.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from _cells import cell_of
from verdictlab import analyses
from verdictlab.core.policy import FigurePolicy
from verdictlab.core.vocab import CELL_KEY

JUDGES = ("sim:skill=0.8,position_lock=0.2,noise=0.1,malformed=0.2,forced_first=0.3,seed=1",
          "sim:skill=0.65,position_lock=0.4,noise=0.2,malformed=0.3,forced_first=0.6,seed=2")

def _p_a(verdict: Any) -> float:
    """A verdict probability for a constrained row (the sim judge gives none; a local model does)."""
    return {"A": 0.9, "B": 0.1}.get(verdict, float("nan"))


@pytest.fixture(scope="module")
def grid_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two judges x two decodings x two temperatures (x one protocol, two orders, three repetitions) on
    8 pairs and their padding probe; the constrained rows get P(A), the free ones none -- the shape of
    the demo run whose free cells showed the constrained cells' expected figures."""
    from verdictlab.engine import run_config
    from verdictlab.engine.config import config_from_dict
    from verdictlab.store import RunStore, open_store

    base = tmp_path_factory.mktemp("grid")
    data = base / "pairs.jsonl"
    with data.open("w") as fh:
        for i in range(8):
            fh.write(json.dumps({"item_id": f"p{i}", "question": f"q{i}", "response_a": f"a{i}",
                                 "response_b": f"b{i}", "label": "A" if i % 2 else "B"}) + "\n")
    cfg = config_from_dict({"name": "grid", "datasets": [{"name": "jsonl", "path": str(data)},
                                                         {"name": "jsonl", "path": str(data), "probe": "padding"}],
                            "judges": list(JUDGES), "protocols": ["vf-json"], "decoding": ["free", "constrained"],
                            "temperatures": [0.0, 0.7], "repetitions": 3})
    run_config(cfg, base / "sim", progress=False)
    with open_store(base / "sim") as st:
        rows, items = st.judgments(), st.items()
    constrained = rows["decoding"] == "constrained"
    rows["p_a"] = np.where(constrained, rows["verdict"].map(_p_a), np.nan)
    out = RunStore(base / "run")
    out.write_items(items)
    out.add_judgments([{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
                       for r in rows.to_dict(orient="records")])
    out.close()
    return base / "run"


@pytest.fixture(scope="module")
def grid_doc(grid_run: Path) -> dict[str, Any]:
    """``verdictlab report RUN --json`` of the grid run."""
    from verdictlab.cli.main import app

    res = CliRunner().invoke(app, ["report", str(grid_run), "--format", "json", "--bootstrap", "20"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
        return float(a) == float(b)
    return a == b


def _matching_cells(row: dict[str, Any], cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cells a table row is about: equal on every cell-key column (and step) the row names."""
    keys = [k for k in (*CELL_KEY, "step") if row.get(k) is not None]
    return [c for c in cells if all(_same(c.get(k) if k != "step" else (c.get(k) or ""), row[k]) for k in keys)]


def join_problems(name: str, rows: list[dict[str, Any]], cells: list[dict[str, Any]],
                  spans: tuple[str, ...] = ()) -> list[str]:
    """Rows that do not join exactly one cell on the full cell key: a row must name every cell-key
    column its table does not span, and then match exactly one cell (a spanned column left empty: at
    least one, one per value of the spanned column)."""
    problems = []
    for row in rows:
        missing = [k for k in CELL_KEY if k not in spans and row.get(k) is None]
        if missing:
            problems.append(f"{name}: row lacks {missing}: {row}")
            continue
        match = _matching_cells(row, cells)
        spanned = any(row.get(k) is None for k in spans)
        if not match or (len(match) > 1 and not spanned):
            problems.append(f"{name}: row joins {len(match)} cells: {row}")
    return problems


def test_every_table_row_joins_exactly_one_cell_on_the_full_key(grid_run: Path, grid_doc: dict[str, Any]) -> None:
    """The class of the expected-figures defect: every registered analysis table and every cell-column
    frame of a run with two decodings, two temperatures and two judges names whole cells."""
    cells = grid_doc["cells"]
    assert len(cells) == 2 * 2 * 2 * 2          # judges x decodings x temperatures x datasets (base + probe)
    assert len({tuple(c[k] for k in CELL_KEY) for c in cells}) == len(cells)
    tables = grid_doc["run"]["analyses"]
    assert {"remedies", "juries", "decoding", "probes"} <= set(tables)
    problems = []
    for name, table in tables.items():
        assert "error" not in table, (name, table["error"])
        rows = [dict(zip(table["columns"], r, strict=True)) for r in table["rows"]]
        problems += join_problems(name, rows, cells, analyses.get(name).spans)
    from verdictlab.store import open_store

    with open_store(grid_run) as st:
        inp = analyses.AnalysisInput(st.judgments(), items=st.items(), items_frame=st.items_frame(), policy=FigurePolicy(n_bootstrap=0))
    frames = {cc.name: cc.fn(inp) for cc in analyses.registered_cell_columns()}
    assert frames["expected"] is not None and frames["classes"] is not None
    for name, frame in frames.items():
        if frame is not None:
            problems += join_problems(name, json.loads(frame.to_json(orient="records")), cells)
    assert problems == []


def test_free_cells_never_get_the_constrained_cells_expected_figures(grid_doc: dict[str, Any]) -> None:
    """report --json: only the constrained cells' rows carry P(A), so only they have expected figures;
    a free cell has C_expected and n_prob_pairs null (it had the constrained cell's 0.864 and 16)."""
    for cell in grid_doc["cells"]:
        if cell["decoding"] == "free":
            assert cell["C_expected"] is None and cell["n_prob_pairs"] is None, cell["protocol"]
        else:
            assert cell["n_prob_pairs"] == 8 and 0.0 <= cell["C_expected"] <= 1.0


def test_published_definitions_join_their_own_cell_on_the_full_key(grid_run: Path) -> None:
    """The same class for ``report --definitions``: each cell's figures under the published definitions
    are its own -- the definitions table names whole cells, verdictlab's own A in a cell's definitions
    equals that cell's A (free and constrained cells of one judge differ), and the soft win rate, which
    needs P(A), is only in the constrained cells (whose rows carry it); every cell has the key."""
    from verdictlab.analyses.definitions import definitions_table
    from verdictlab.report import build_report, report_json
    from verdictlab.store import open_store

    doc = report_json(build_report(grid_run, definitions="A,win-rate", policy=FigurePolicy(n_bootstrap=0)))
    cells = doc["cells"]
    with open_store(grid_run) as st:
        table = definitions_table(analyses.AnalysisInput(st.judgments(), items=st.items(), policy=FigurePolicy(n_bootstrap=0)),
                                  "A,win-rate")
    assert join_problems("definitions", json.loads(table.to_json(orient="records")), cells) == []
    for cell in cells:
        got = {r["definition"]: r for r in cell["definitions"]}
        assert got["A"]["value"] == pytest.approx(cell["A"]) and got["A"]["n"] == cell["n_labelled_units"]
        assert ("win-rate" in got) == (cell["decoding"] == "constrained"), (cell["decoding"], sorted(got))
    free_a = {(c["judge"], c["dataset"], c["temperature"]): c["A"] for c in cells if c["decoding"] == "free"}
    assert any(c["A"] != free_a[(c["judge"], c["dataset"], c["temperature"])] for c in cells
               if c["decoding"] == "constrained")


def test_every_cell_has_the_same_keys_null_when_undefined(grid_doc: dict[str, Any]) -> None:
    keys = set(grid_doc["cells"][0])
    assert {"C_expected", "T_expected", "A_3class", "agreement", "region", "sentence", "decoding"} <= keys
    for cell in grid_doc["cells"]:
        assert set(cell) == keys
    assert any(c["C_expected"] is None for c in grid_doc["cells"])   # present and null, not left out


def test_juries_skip_cells_without_usable_figures() -> None:
    """A cell whose every vote is unparsed has no juror accuracy (NaN under "exclude"): its jury rows
    are undefined (NaN), the other cell's are computed -- no "p must be in [0, 1], got nan"."""
    from verdictlab.stats import jury_majority_accuracy, jury_majority_accuracy_heterogeneous, jury_table

    assert math.isnan(jury_majority_accuracy(float("nan"), 3)) and math.isnan(jury_majority_accuracy(0.7, 3, rho=np.nan))
    assert math.isnan(jury_majority_accuracy_heterogeneous([0.7, float("nan"), 0.6]))
    rows = [{"judge": judge, "protocol": "direct", "dataset": "d", "temperature": 0.7, "decoding": "free",
             "item_id": f"p{i}", "order": "AB", "rep": r, "step": "", "label": "A",
             "verdict": None if judge == "mute" else ("A" if (i + r) % 3 else "B")}
            for judge in ("mute", "talks") for i in range(4) for r in range(3)]
    t = jury_table(pd.DataFrame(rows), policy=FigurePolicy(unparsed="exclude")).set_index(["judge", "k"])
    assert math.isnan(t.loc[("mute", 3), "p_single"]) and math.isnan(t.loc[("mute", 3), "predicted_independent"])
    assert math.isnan(t.loc[("mute", 3), "accuracy"]) and t.loc[("mute", 3), "n_no_verdict"] == 4
    # the talking judge, votes of reps 0, 1, 2 (A unless (item + rep) % 3 == 0): p0 B A A, p1 A A B,
    # p2 A B A, p3 B A A -> majority A everywhere: 4/4; one juror (rep 0): B A A B -> 2/4; all votes 8/12
    assert t.loc[("talks", 3), "accuracy"] == 1.0 and t.loc[("talks", 1), "p_single"] == pytest.approx(1 / 2)
    assert t.loc[("talks", 3), "p_single"] == pytest.approx(8 / 12)


def test_the_juries_table_of_a_run_with_a_mute_cell_is_computed(tmp_path: Path) -> None:
    from verdictlab.report import build_report, report_json
    from verdictlab.testing.synthetic_run import write_synthetic_run

    st = write_synthetic_run(tmp_path / "run", datasets=("d",), protocols=("direct",), temperatures=(0.7,),
                             judges=("sim:steady",), n_items=6, fail_rate=1.0)
    doc = report_json(build_report(st, policy=FigurePolicy(n_bootstrap=0)))
    assert "error" not in doc["run"]["analyses"]["juries"]


def test_one_repetition_is_never_called_repeatable() -> None:
    """R = 1: every verdict agrees with itself, so C = 100% says nothing.  Worked example: C = 1 (by
    construction), phi = 0.05, A = 0.9 in [0.8, 0.96], T = 1 * (0.9 - 0.025) = 0.875 -- the figures of a
    "Trustworthy ... repeatable" cell, which with one repetition it may not be called."""
    from verdictlab.report.readings import cell_region, cell_sentence

    cell = {"protocol": "direct", "judge": "j", "dataset": "d", "temperature": 0.0, "n_pairs": 40,
            "n_order_pairs": 40, "repetitions": 1, "n_judgments": 80, "n_unparsed": 0, "parse_failure_rate": 0.0,
            "C": 1.0, "phi": 0.05, "A": 0.9, "A_lo": 0.8, "A_hi": 0.96, "T": 0.875}
    s = cell_sentence(cell_of(cell))
    assert not s.startswith("Trustworthy") and "repeatable" not in s and "Deterministic" not in s
    assert "C not measured (one repetition)" in s and "region undefined" in s
    assert s.startswith("Better than chance; whether it is trustworthy is not known")
    assert cell_region(cell_of(cell)) is None
    # the same figures with three repetitions are trustworthy
    assert cell_sentence(cell_of({**cell, "repetitions": 3})).startswith("Trustworthy")


def test_a_single_repetition_run_has_no_regions_and_says_why(tmp_path: Path) -> None:
    from verdictlab.report import build_report
    from verdictlab.testing.synthetic_run import write_synthetic_run

    st = write_synthetic_run(tmp_path / "run", datasets=("d",), protocols=("direct", "vf-json"), temperatures=(0.0,),
                             judges=("sim:steady",), n_items=12, repetitions=1)
    rep = build_report(st, policy=FigurePolicy(n_bootstrap=0))
    # C is not measured at one repetition: no number (it was 1.0 "by construction"), the reason beside it
    assert rep.cells and all(c.value("repetitions") == 1 and c.figure("C").point is None
                             and c.missing["C"] == "one repetition" for c in rep.cells)
    for c in rep.cells:
        assert c.region is None and "C not measured (one repetition)" in c.sentence
        assert "repeatable" not in c.sentence and not c.sentence.startswith(("Trustworthy", "Deterministic"))
