"""Human labels (issue 12): per-cell estimates from judgments, the validate / plan-labels commands."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from verdictlab.analyses.human_labels import (
    budget_cells,
    human_label_rows,
    reliability_rows,
    validate_cells,
)
from verdictlab.core.policy import FigurePolicy
from verdictlab.stats import classical_mean, ppi_mean


def _rows(item: str, label: str | None, verdicts: Sequence[str | None], p_a: Sequence[float | None] | None = None,
          judge: str = "j", protocol: str = "direct") -> list[dict]:
    p = p_a or [None] * len(verdicts)
    return [{"judge": judge, "protocol": protocol, "dataset": "d", "temperature": 0.0, "item_id": item,
             "order": "AB" if k % 2 == 0 else "BA", "rep": k // 2, "step": "", "label": label,
             "verdict": v, "p_a": pk} for k, (v, pk) in enumerate(zip(verdicts, p, strict=True))]


def test_predictions_votes_p_a_ties_and_unparsed() -> None:
    rows = (_rows("1", "A", ["A", "A", "A", "B"])            # vote share 3/4
            + _rows("2", "B", ["B", "tie", "B", "B"])       # (0 + 1/2 + 0 + 0)/4 = 1/8
            + _rows("3", "tie", ["A", "A", "A", "A"])       # human tie: left out of labelled and unlabelled
            + _rows("4", None, ["A", None, "B", "A"])       # unparsed vote dropped: 2/3, unlabelled
            + _rows("5", None, [None, None, None, None]))   # no parsed vote: left out (exclude)
    cells = validate_cells(pd.DataFrame(rows))
    (v,) = cells
    assert v.quantity == "win_rate_A" and v.source == "votes"
    assert (v.n_items, v.n_labelled, v.n_unlabelled, v.n_excluded_labels, v.n_no_verdict) == (4, 2, 1, 1, 1)
    # judge-only stands on items 1, 2, 4: too few for an interval (minimum 10)
    assert v.judge.value is None and "at least 10" in str(v.judge.reason)
    assert any("tie" in n for n in v.notes) and any("without a parsed verdict" in n for n in v.notes)
    wrong = validate_cells(pd.DataFrame(rows), policy=FigurePolicy(unparsed="wrong"))[0]
    assert wrong.n_items == 5 and wrong.n_unlabelled == 2  # item 5 predicted 1/2


def _sample_frame(n_lab: int = 60, n_unl: int = 200, seed: int = 0, with_p_a: bool = True) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    for i in range(n_lab + n_unl):
        truth = "A" if rng.random() < 0.6 else "B"
        p = float(np.clip((0.75 if truth == "A" else 0.3) + rng.normal(0, 0.25), 0, 1))
        verdicts = ["A" if rng.random() < p else "B" for _ in range(4)]
        rows += _rows(str(i), truth if i < n_lab else None, verdicts, [p] * 4 if with_p_a else None)
    return pd.DataFrame(rows)


def test_cell_figures_match_the_stats_functions() -> None:
    df = _sample_frame()
    (v,) = validate_cells(df, target=0.8, delta=0.1)
    assert v.source == "p_a" and (v.n_labelled, v.n_unlabelled) == (60, 200)
    items = df.groupby("item_id", sort=True).agg(p=("p_a", "mean"), label=("label", "first"))
    lab = items["label"].notna()
    y = (items.loc[lab, "label"] == "A").to_numpy(float)
    f, fu = items.loc[lab, "p"].to_numpy(), items.loc[~lab, "p"].to_numpy()
    assert v.ppi.value == pytest.approx(ppi_mean(y, f, fu).value)
    assert v.human.value == pytest.approx(classical_mean(y).value)
    assert v.ppi.halfwidth is not None and v.human.halfwidth is not None
    assert v.ppi.halfwidth < v.human.halfwidth
    assert v.calibration.ece is not None and v.isotonic.after is not None
    # P(A) judge: the vote share across the 4 votes is calibrated as well
    assert v.vote_calibration is not None and v.vote_calibration.ece is not None
    assert v.vote_calibration.ece != v.calibration.ece
    table = human_label_rows([v])
    assert table.loc[0, "ppi"] == pytest.approx(v.ppi.value) and table.loc[0, "quantity"] == "win_rate_A"
    bins = reliability_rows([v])
    assert bins["n"].sum() == 60


def test_keep_labels_what_if() -> None:
    df = _sample_frame(n_lab=150, n_unl=0)
    (full,) = validate_cells(df)
    assert full.ppi.value is None and any("--keep-labels" in n for n in full.notes)
    (v,) = validate_cells(df, keep_labels=40, policy=FigurePolicy(seed=3))
    assert (v.n_labelled, v.n_unlabelled) == (40, 110)
    assert v.reference is not None and v.reference.value == pytest.approx(full.human.value)
    assert v.ppi.value is not None


def test_point_items_give_system_accuracy() -> None:
    rng = np.random.default_rng(1)
    rows: list[dict] = []
    for i in range(80):
        ok = rng.random() < 0.7
        verdicts = ["PASS" if rng.random() < (0.9 if ok else 0.2) else "FAIL" for _ in range(3)]
        rows += _rows(str(i), ("PASS" if ok else "FAIL") if i < 30 else None, verdicts, protocol="rubric")
    (v,) = validate_cells(pd.DataFrame(rows))
    assert v.quantity == "accuracy" and v.source == "votes" and (v.n_labelled, v.n_unlabelled) == (30, 50)
    assert v.vote_calibration is None  # votes are already the confidence
    assert v.ppi.value is not None and 0.4 < v.ppi.value < 1.0


def test_budget_cells() -> None:
    (b,) = budget_cells(_sample_frame(), halfwidth=0.05)
    assert b.budget.n_pilot == 60 and b.budget.n_unlabelled == 260
    assert b.budget.human_only is not None and b.budget.ppi is not None
    assert b.budget.ppi <= b.budget.human_only


# ---- CLI ---------------------------------------------------------------------------------------------

@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    from verdictlab.testing.synthetic_run import write_synthetic_run

    store = write_synthetic_run(tmp_path / "run", datasets=("pandalm",), protocols=("direct",),
                                temperatures=(0.0,), judges=("sim:steady",), n_items=120, repetitions=2)
    store.close()
    return tmp_path / "run"


def _app() -> typer.Typer:
    """The real CLI: its one error path turns a refused label file into exit 3 (docs/errors.md)."""
    from verdictlab.cli.main import app

    return app


def test_validate_cli(run_dir: Path) -> None:
    res = CliRunner().invoke(_app(), ["validate", str(run_dir), "--keep-labels", "40"])
    assert res.exit_code == 0, res.output
    assert "PPI++" in res.output and "ECE" in res.output and "all-label human estimate" in res.output
    res = CliRunner().invoke(_app(), ["validate", str(run_dir), "--format", "json", "--plots", str(run_dir / "plots")])
    assert res.exit_code == 0, res.output
    assert (run_dir / "plots" / "reliability.svg").stat().st_size > 0
    cell = json.loads(res.stdout)["cells"][0]
    assert cell["quantity"] == "win_rate_A" and cell["ppi"]["value"] is None and cell["ppi"]["reason"]


def test_validate_human_file(run_dir: Path, tmp_path: Path) -> None:
    from verdictlab.store import open_store

    with open_store(run_dir) as s:
        ids = sorted(s.judgments()["item_id"].unique())
    labels = tmp_path / "human.jsonl"
    labels.write_text("\n".join(json.dumps({"item_id": i, "label": "A" if k % 3 else "B"})
                                for k, i in enumerate(ids[:50])) + "\n")
    res = CliRunner().invoke(_app(), ["validate", str(run_dir), "--human", str(labels), "--format", "json"])
    assert res.exit_code == 0, res.output
    cell = json.loads(res.output)["cells"][0]
    assert cell["n_labelled"] == 50 and cell["ppi"]["value"] is not None
    csv_file = tmp_path / "human.csv"
    csv_file.write_text("item_id,label\n" + ids[0] + ",A\nno-such-item,B\n")
    res = CliRunner().invoke(_app(), ["validate", str(run_dir), "--human", str(csv_file)])
    assert res.exit_code == 3 and "no-such-item" in res.output and "not in the run" in res.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"item_id": ids[0], "label": "maybe"}) + "\n")
    res = CliRunner().invoke(_app(), ["validate", str(run_dir), "--human", str(bad)])
    assert res.exit_code == 3 and "row 1" in res.output and "'label'" in res.output


def test_plan_labels_cli(run_dir: Path) -> None:
    res = CliRunner().invoke(_app(), ["plan-labels", str(run_dir), "--halfwidth", "0.03"])
    assert res.exit_code == 0, res.output
    assert "humans only" in res.output and "PPI++ Neyman" in res.output
    res = CliRunner().invoke(_app(), ["plan-labels", str(run_dir), "--halfwidth", "0.05", "--format", "json"])
    b = json.loads(res.output)["cells"][0]
    # human-only by hand: ceil(1.96^2 var(y) / 0.05^2) with var(y) of the pilot (<= 0.25 -> <= 385)
    assert 0 < b["human_only"] <= 385 and b["ppi"] <= b["human_only"]
    res = CliRunner().invoke(_app(), ["plan-labels", str(run_dir), "--halfwidth", "0.05", "--pool", "5000", "--format", "json"])
    big = json.loads(res.output)["cells"][0]
    # a larger pool: the same humans-only count, PPI++ no worse (the judge's part of the variance shrinks)
    assert big["n_unlabelled"] == 5000 and big["human_only"] == b["human_only"] and big["ppi"] <= b["ppi"]
    res = CliRunner().invoke(_app(), ["plan-labels", str(tmp_path_missing := run_dir / "nope"), "--halfwidth", "0.03"])
    assert res.exit_code == 5 and str(tmp_path_missing) in res.output


def test_reliability_figure_and_decoding_key() -> None:
    df = _sample_frame(n_lab=80, n_unl=20)
    constrained = df.assign(decoding="constrained")
    both = pd.concat([df.assign(decoding="free"), constrained], ignore_index=True)
    cells = validate_cells(both)
    assert [v.cell["decoding"] for v in cells] == ["constrained", "free"]  # free and constrained never mixed
    assert list(human_label_rows(cells)["decoding"]) == ["constrained", "free"]
    bins = reliability_rows(cells)
    assert bins["n"].sum() == 160
    from verdictlab.analyses.human_labels import reliability_figure

    table = {"columns": list(bins.columns), "rows": bins.to_numpy().tolist()}
    fig = reliability_figure(table)
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 2
    # a run without the column is all 'free'; a pair label from another vocabulary is an error
    assert human_label_rows(validate_cells(df))["decoding"].tolist() == ["free"]
    with pytest.raises(ValueError, match="not a pair label"):
        validate_cells(df.assign(label=df["label"].where(df["label"].isna(), "PASS")))


def test_rubric_steps_are_separate_accuracy_cells() -> None:
    rng = np.random.default_rng(4)
    rows: list[dict] = []
    for i in range(60):
        for crit in ("correct", "complete"):
            ok = rng.random() < 0.6
            for r in _rows(str(i), ("PASS" if ok else "FAIL") if i < 30 else None,
                           ["PASS" if rng.random() < (0.85 if ok else 0.2) else "FAIL" for _ in range(2)],
                           protocol="rubric"):
                rows.append({**r, "step": crit})
    rows += [{**r, "step": "fluency"} for r in _rows("p", "A", ["A", "B"])]  # pair step rows: left out
    cells = validate_cells(pd.DataFrame(rows))
    assert [(v.cell["step"], v.quantity, v.n_labelled) for v in cells] == [
        ("complete", "accuracy", 30), ("correct", "accuracy", 30)]


def test_hostile_names_print_plainly(tmp_path: Path) -> None:
    # a judge id with rich markup and an escape sequence is printed literally, never interpreted
    df = _sample_frame(n_lab=40, n_unl=40)
    df["judge"] = "[/bold]x\x1b[2J"
    from verdictlab.store import RunStore

    store = RunStore(tmp_path / "run")
    rows = df.assign(trial_id=[f"t{i}" for i in range(len(df))], parse_status="ok").to_dict("records")
    store.add_judgments(rows)
    store.close()
    for cmd in (["validate", str(tmp_path / "run")], ["plan-labels", str(tmp_path / "run"), "--halfwidth", "0.1"]):
        res = CliRunner().invoke(_app(), cmd)
        assert res.exit_code == 0, res.output
        assert "[/bold]x\\x1b[2J" in res.output.replace("\n", "") and "\x1b[2J" not in res.output


def test_human_label_files_read_by_the_package_readers(tmp_path: Path) -> None:
    from verdictlab.datasets.human_labels import HumanLabelError, read_human_labels

    def as_dict(path: Path) -> dict[str, str | None]:
        return {r.item_id: r.label for r in read_human_labels(path).rows}

    # a quoted CSV cell holding U+2028 is one cell, not a line break (str.splitlines would cut it)
    csv_file = tmp_path / "h.csv"
    csv_file.write_text('item_id,label,note\n1,A,"a\u2028b"\n2,b,\n', encoding="utf-8")
    assert as_dict(csv_file) == {"1": "A", "2": "B"}
    # JSON Lines with a BOM and \r\n endings; an integer id becomes a string
    jl = tmp_path / "h.jsonl"
    jl.write_bytes(b'\xef\xbb\xbf{"item_id": 1, "label": "PASS"}\r\n{"item_id": "x", "label": null}\r\n')
    assert as_dict(jl) == {"1": "PASS", "x": None}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item_id": "1", "label": "A"}\n{"item_id": "1", "label": "B"}\n', encoding="utf-8")
    with pytest.raises(HumanLabelError, match="row 2.*already labelled"):
        read_human_labels(bad)
    nan = tmp_path / "nan.jsonl"
    nan.write_text('{"item_id": "1", "label": NaN}\n', encoding="utf-8")
    with pytest.raises(HumanLabelError, match="row 1"):
        read_human_labels(nan)


def test_no_human_labels_no_work() -> None:
    df = _sample_frame(n_lab=0, n_unl=50)
    assert validate_cells(df) == []
    assert budget_cells(df, halfwidth=0.05)[0].budget.human_only is None  # the pilot is empty: said why


def test_registered_with_the_reliability_figure() -> None:
    from verdictlab import analyses
    from verdictlab.analyses.human_labels import reliability_figure

    a = analyses.get("human_labels_reliability")
    assert a.figure is reliability_figure and "reliability" in a.figure_title.lower()
    assert analyses.get("human_labels").title.startswith("Human labels")


def test_cells_of_every_kind_in_one_frame_keep_their_own_items() -> None:
    # the cells are grouped once for the whole frame: each must still read only its own rows and kind
    rows = (_rows("1", "A", ["A", "B", "A", "A"], judge="pair")                 # votes 3/4
            + _rows("2", "B", ["B", "B", None, None], judge="pair")             # 0/2
            + _rows("1", "PASS", ["PASS", "FAIL", "PASS", "PASS"], judge="point", protocol="rubric")   # 3/4
            + _rows("1", "A", ["4", "5", "4", "5"], judge="graded")              # graded verdicts: no cell
            + _rows("1", "B", [None, None, None, None], judge="unparsed")        # no verdict: kind of its label
            + _rows("1", "A", ["A", "A", "A", "A"], judge="pair-step"))
    frame = pd.DataFrame(rows)
    frame.loc[frame["judge"] == "pair-step", "step"] = "round-1"              # pair step rows: left out
    cells = {v.key[0]: v for v in validate_cells(frame)}
    assert sorted(cells) == ["pair", "point", "unparsed"]
    assert (cells["pair"].quantity, cells["pair"].n_items, cells["pair"].n_labelled) == ("win_rate_A", 2, 2)
    assert cells["pair"].source == "votes" and cells["point"].quantity == "accuracy"
    assert (cells["point"].n_items, cells["point"].n_labelled) == (1, 1)
    # the unparsed cell: a pair cell (label B) whose one item has no parsed vote -> left out, counted
    assert (cells["unparsed"].quantity, cells["unparsed"].n_items, cells["unparsed"].n_no_verdict) == (
        "win_rate_A", 0, 1)
    wrong = {v.key[0]: v for v in validate_cells(frame, policy=FigurePolicy(unparsed="wrong"))}
    assert (wrong["unparsed"].n_items, wrong["unparsed"].n_no_verdict) == (1, 1)   # predicted 1/2


def test_item_ids_group_by_their_text() -> None:
    # the item id 7 and the text "7" are one item (ids are compared as text); items sort as text: "10" < "7"
    rows = _rows("7", "A", ["A", "A"]) + _rows("10", "B", ["B", "A"])
    frame = pd.DataFrame(rows, dtype=object)
    frame.loc[0, "item_id"] = 7
    from verdictlab.analyses.human_labels import _item_codes

    codes, texts = _item_codes(frame["item_id"])
    assert texts.tolist() == ["10", "7"] and codes.tolist() == [1, 1, 0, 0]
    (cell,) = validate_cells(frame)
    assert (cell.n_items, cell.n_labelled) == (2, 2)
