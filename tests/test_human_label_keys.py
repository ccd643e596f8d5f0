"""Human labels name items by their full key (dataset + item id); a label file that cannot be used is
refused with one line naming file, row and field (exit 3), never applied to the wrong items; a label
plan out of range is a usage error (exit 2) naming the limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from verdictlab.analyses.human_labels import human_label_keys
from verdictlab.cli.main import app
from verdictlab.core.design import trial_id
from verdictlab.core.items import ItemError
from verdictlab.datasets.human_labels import HumanLabel, HumanLabelError, HumanLabels, read_human_labels
from verdictlab.store import RunStore
from verdictlab.workflows.human_label_runs import (
    MAX_PLANNED_LABELS,
    LabelPlanError,
    check_label_plan,
    labelled_judgments,
)

runner = CliRunner()


def _write_run(d: Path, datasets: dict[str, list[str]], *, n: int = 12) -> Path:
    """A run judged by one judge on ``direct`` over datasets whose items share the ids 0..n-1; the gold
    labels of each dataset are given per item (the judge always answers the gold label)."""
    rows = []
    for ds, labels in datasets.items():
        for i, label in enumerate(labels[:n]):
            for order in ("AB", "BA"):
                rows.append({"trial_id": trial_id("j", ds, str(i), "direct", order, 0.0, 0), "judge": "j",
                             "dataset": ds, "item_id": str(i), "protocol": "direct", "order": order,
                             "temperature": 0.0, "rep": 0, "step": "", "label": label, "verdict": label,
                             "parse_status": "ok"})
    with RunStore(d) as s:
        s.add_judgments(rows)
    return d


def _two_datasets(tmp_path: Path) -> Path:
    # d2's gold labels: 9 A of 12 (human win rate of A 0.75)
    return _write_run(tmp_path / "run", {"d1": ["A"] * 12, "d2": ["A"] * 9 + ["B"] * 3})


def _d1_file(tmp_path: Path, *, with_dataset: bool) -> Path:
    # labels for d1 only: 3 A of 12 (win rate 0.25)
    labels = ["A"] * 3 + ["B"] * 9
    f = tmp_path / ("labels.csv" if with_dataset else "labels_no_dataset.csv")
    head = "dataset,item_id,label\n" if with_dataset else "item_id,label\n"
    f.write_text(head + "".join((f"d1,{i},{lab}\n" if with_dataset else f"{i},{lab}\n")
                                for i, lab in enumerate(labels)))
    return f


# -- the input: a file labelling d1 only, in a run where d1 and d2 share ids -------------------------
def test_a_file_labelling_one_dataset_leaves_the_other_alone(tmp_path: Path) -> None:
    run = _two_datasets(tmp_path)
    df = labelled_judgments(run, _d1_file(tmp_path, with_dataset=True))
    assert df.loc[df["dataset"] == "d2", "label"].isna().all()          # before: d1's labels applied to d2
    d1 = df[(df["dataset"] == "d1") & (df["order"] == "AB")].sort_values("item_id", key=lambda s: s.astype(int))
    assert list(d1["label"]) == ["A"] * 3 + ["B"] * 9
    res = runner.invoke(app, ["validate", str(run), "--human", str(_d1_file(tmp_path, with_dataset=True)), "--format", "json"])
    assert res.exit_code == 0, res.output
    cells = {c["cell"]["dataset"]: c for c in json.loads(res.output)["cells"]}
    # d1: the file's 3 A of 12 -> human win rate 3/12 = 0.25; d2: no human label at all (not 0.25)
    assert cells["d1"]["human"]["value"] == pytest.approx(0.25) and cells["d1"]["n_labelled"] == 12
    assert cells["d2"]["n_labelled"] == 0 and cells["d2"]["human"]["value"] is None


def test_a_file_without_a_dataset_column_is_refused_when_an_id_names_two_datasets(tmp_path: Path) -> None:
    run = _two_datasets(tmp_path)
    f = _d1_file(tmp_path, with_dataset=False)
    res = runner.invoke(app, ["validate", str(run), "--human", str(f)])
    assert res.exit_code == 3, res.output
    # every row is listed at once (the first alone was): one line for all of them, the same problem
    lines = res.stderr.strip().splitlines()
    assert lines[0] == f"error: {f}: 12 problems:", lines
    assert lines[1] == ("  row 2, field 'item_id': item_id '0' names items of 2 datasets in this run ('d1', 'd2'); "
                        "add a 'dataset' column that says which (or name yours: --map dataset=COLUMN)"), lines
    assert len(lines) == 13 and all("names items of 2 datasets" in ln for ln in lines[1:])
    # where each id names one dataset, the same file joins on its one item
    only = _write_run(tmp_path / "one", {"d1": ["A"] * 12})
    assert labelled_judgments(only, f)["label"].notna().all()


def test_any_key_that_names_items_across_datasets() -> None:
    """The class: whatever datasets share an id, a row with a dataset labels exactly that item, a row
    without one labels the one item with its id or is refused -- never two items."""
    import pandas as pd

    judged = {"a": ["1", "2", "3"], "b": ["2", "3"], "c": ["3", "4"]}
    frame = pd.DataFrame([{"dataset": ds, "item_id": i, "verdict": "A", "label": None}
                          for ds, ids in judged.items() for i in ids])
    keys = {(ds, i) for ds, ids in judged.items() for i in ids}
    for ds, iid in sorted(keys):
        got = human_label_keys(frame, HumanLabels("f.csv", (HumanLabel(2, iid, "B", ds),)))
        assert got == {(ds, iid): "B"}
    for iid in ("1", "2", "3", "4"):
        owners = sorted(ds for ds, i in keys if i == iid)
        labels = HumanLabels("f.csv", (HumanLabel(2, iid, "B"),))
        if len(owners) == 1:
            assert human_label_keys(frame, labels) == {(owners[0], iid): "B"}
        else:
            with pytest.raises(ItemError, match=rf"f.csv, row 2, field 'item_id': item_id '{iid}' names items of "
                                                rf"{len(owners)} datasets"):
                human_label_keys(frame, labels)


# -- files that cannot be used: one line naming file, row and field, exit 3 -----------------------------------
def _refused(run: Path, f: Path) -> str:
    res = runner.invoke(app, ["validate", str(run), "--human", str(f)])
    assert res.exit_code == 3, res.output
    line = res.output.strip()
    assert "\n" not in line and line.startswith(f"error: {f}"), line
    return line


def test_a_repeated_header_column_is_refused(tmp_path: Path) -> None:
    run = _write_run(tmp_path / "run", {"d": ["A"] * 12})
    f = tmp_path / "dup.csv"
    f.write_text("item_id,label,item_id\n0,A,5\n")            # before: the last item_id column silently won
    assert "row 1, field 'item_id': header names column 'item_id' twice (columns 1 and 3)" in _refused(run, f)


@pytest.mark.parametrize(("name", "text", "row", "label"), [
    ("pass.csv", "item_id,label\n0,PASS\n", 2, "'PASS'"),       # CSV rows are file lines: the header is 1
    ("true.jsonl", '{"item_id": "0", "label": true}\n', 1, "'PASS'"),
    ("fail.jsonl", '{"item_id": "0", "label": false}\n', 1, "'FAIL'"),
])
def test_a_point_label_on_a_pair_is_refused(tmp_path: Path, name: str, text: str, row: int, label: str) -> None:
    run = _write_run(tmp_path / "run", {"d": ["A"] * 12})
    f = tmp_path / name
    f.write_text(text)
    line = _refused(run, f)             # before: an internal error (exit 1)
    assert f"row {row}, field 'label': {label} does not label a pair: item '0' of dataset 'd' takes A, B or tie" in line


def test_a_pair_label_on_a_point_item_is_refused(tmp_path: Path) -> None:
    rows = [{"trial_id": f"t{i}", "judge": "j", "dataset": "p", "item_id": str(i), "protocol": "rubric",
             "order": "AB", "temperature": 0.0, "rep": 0, "step": "c", "label": "PASS", "verdict": "PASS",
             "parse_status": "ok"} for i in range(3)]
    with RunStore(tmp_path / "run") as s:
        s.add_judgments(rows)
    f = tmp_path / "h.csv"
    f.write_text("item_id,label\n0,PASS\n1,A\n")
    assert "row 3, field 'label': 'A' does not label a point item" in _refused(tmp_path / "run", f)


def test_a_semicolon_separated_csv_is_named(tmp_path: Path) -> None:
    run = _write_run(tmp_path / "run", {"d": ["A"] * 12})
    f = tmp_path / "semi.csv"
    f.write_text("item_id;label\n0;A\n1;B\n")
    line = _refused(run, f)             # before: "field 'item_id': missing"
    assert "row 1: the header 'item_id;label' has its columns separated by ';', not ','" in line


def test_a_file_of_empty_labels_is_named(tmp_path: Path) -> None:
    run = _write_run(tmp_path / "run", {"d": ["A"] * 12})
    f = tmp_path / "empty.csv"
    f.write_text("item_id,label\n0,\n1,\n")
    assert "field 'label': every label is empty (2 row(s))" in _refused(run, f)


def test_an_id_not_in_the_run_names_its_row(tmp_path: Path) -> None:
    run = _write_run(tmp_path / "run", {"d": ["A"] * 12})
    f = tmp_path / "h.csv"
    f.write_text("item_id,label\n0,A\nnope,B\n")
    assert "row 3, field 'item_id': 1 labelled item(s) not in the run" in _refused(run, f)


def test_odd_ids_and_labels_are_refused_by_the_reader(tmp_path: Path) -> None:
    for text, where in (('{"item_id": true, "label": "A"}\n', "row 1, field 'item_id'"),
                        ('{"item_id": [1], "label": "A"}\n', "row 1, field 'item_id'"),
                        ('{"item_id": "1", "label": 1}\n', "row 1, field 'label'"),
                        ('{"item_id": "1"}\n', "row 1, field 'label'"),
                        ('{"label": "A"}\n', "row 1, field 'item_id'")):
        f = tmp_path / "h.jsonl"
        f.write_text(text)
        with pytest.raises(HumanLabelError, match=where):
            read_human_labels(f)


# -- label plans out of range: exit 2 with the limit --------------------------------------------------------
def test_label_plan_limits_known_values() -> None:
    # 95%: z = 1.959964; humans alone on a 0/1 outcome need at most z^2 / (4 h^2) labels.
    # h = 0.001 -> 3.8415 / 4e-6 = 960,365 <= 1,000,000: planned; h = 0.0009 -> 1,185,635 > 1,000,000: refused,
    # and the smallest half-width is z / (2 * sqrt(1e6)) = 0.00098 (rounded up)
    assert MAX_PLANNED_LABELS == 1_000_000
    check_label_plan(halfwidth=0.001)
    with pytest.raises(LabelPlanError, match=r"halfwidth of at least 0\.00098") as exc:
        check_label_plan(halfwidth=0.0009)
    assert exc.value.option == "halfwidth"
    for bad in (float("nan"), 0.0, -0.1, 1.0):
        with pytest.raises(LabelPlanError):
            check_label_plan(halfwidth=bad)
    check_label_plan(halfwidth=0.05, pool=10_000_000)
    with pytest.raises(LabelPlanError, match="pool must be between 2 and 10,000,000"):
        check_label_plan(halfwidth=0.05, pool=10_000_001)


@pytest.mark.parametrize(("args", "hint"), [(["--halfwidth", "1e-6"], "--halfwidth"),
                                            (["--halfwidth", "0.05", "--pool", "1000000000000"], "--pool")])
def test_plan_labels_out_of_range_is_a_usage_error(tmp_path: Path, args: list[str], hint: str) -> None:
    run = _write_run(tmp_path / "run", {"d": ["A"] * 6 + ["B"] * 6})
    res = runner.invoke(app, ["plan-labels", str(run), *args])      # before: MemoryError, exit 1
    assert res.exit_code == 2, res.output
    assert hint in res.output and ("1,000,000 human labels" in res.output or "10,000,000" in res.output)
