"""`verdictlab drift` compares verdicts on the same items only: items whose content differs between the runs
are refused (exit 3, the first item and what differs named) or, asked, left out on both sides and counted;
options out of range and runs that share nothing are one clear line (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.core.design import trial_id
from verdictlab.core.items import PairItem
from verdictlab.core.policy import FigurePolicy
from verdictlab.store import RunStore
from verdictlab.workflows.drift import DriftError, DriftRun, drift_pair_report, item_differences

runner = CliRunner()


def _items(n: int, *, swapped: frozenset[int] = frozenset()) -> list[PairItem]:
    """Pairs x0..x{n-1} (label A: the better answer first); the ``swapped`` ones with their responses
    swapped and their label flipped -- the same question, another item."""
    out = []
    for i in range(n):
        good, bad = f"right answer {i}", f"wrong answer {i}"
        out.append(PairItem(item_id=f"x{i}", dataset="anchor", question=f"q{i}?",
                            response_a=bad if i in swapped else good, response_b=good if i in swapped else bad,
                            label="B" if i in swapped else "A"))
    return out


def _run(d: Path, items: list[PairItem], judge: str = "sim:j") -> Path:
    """A run whose judge always picks the better answer (the label), in both orders."""
    rows = [{"trial_id": trial_id(judge, it.dataset, it.item_id, "direct", o, 0.0, 0), "judge": judge,
             "dataset": it.dataset, "item_id": it.item_id, "protocol": "direct", "order": o, "temperature": 0.0,
             "rep": 0, "step": "", "label": it.label, "verdict": it.label, "parse_status": "ok"}
            for it in items for o in ("AB", "BA")]
    with RunStore(d) as s:
        s.write_items(items)
        s.add_judgments(rows)
    return d


def test_swapped_responses_and_flipped_labels_are_refused(tmp_path: Path) -> None:
    # the input: same judge and ids, responses swapped and labels flipped in B.  Before: flip rate
    # 1.000, kappa -0.60, "equivalent: yes" and no warning.
    a = _run(tmp_path / "a", _items(40))
    b = _run(tmp_path / "b", _items(40, swapped=frozenset(range(40))))
    res = runner.invoke(app, ["drift", str(a), str(b), "--bootstrap", "50"])
    assert res.exit_code == 3, res.output
    line = res.output.strip()
    assert "\n" not in line and line.startswith(f"error: {b}: 40 item(s) judged in both runs differ from {a}")
    assert "item 'x0' of dataset 'anchor' (response_a, response_b, label differ)" in line
    assert "--exclude-changed-items" in line


def test_changed_items_left_out_on_both_sides_when_asked(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", _items(40))
    b = _run(tmp_path / "b", _items(40, swapped=frozenset({3, 7, 11})))
    res = runner.invoke(app, ["drift", str(a), str(b), "--bootstrap", "50", "--format", "json", "--exclude-changed-items"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    check = rep["item_check"]
    assert check["compared"] == "question, responses and label" and check["n_changed"] == 3
    assert [d["item_id"] for d in check["excluded"]] == ["x11", "x3", "x7"]       # sorted keys
    (cell,) = rep["cells"]
    # 37 unchanged items x 2 orders, the same verdicts on both sides
    assert cell["n_units"] == 74 and cell["flip_rate"] == 0 and cell["equivalent"] == "yes"
    res = runner.invoke(app, ["drift", str(a), str(b), "--bootstrap", "50", "--exclude-changed-items"])
    assert res.exit_code == 0 and "3 item(s) whose content differs between the runs left out" in res.output


def test_without_stored_items_the_labels_are_compared(tmp_path: Path) -> None:
    items = _items(12)
    ra = DriftRun("a", _frame(items))
    rb = DriftRun("b", _frame(_items(12, swapped=frozenset({5}))))
    diffs, texts = item_differences(ra, rb)
    assert not texts and [(d.item_id, d.fields) for d in diffs] == [("x5", ("label",))]
    rep = drift_pair_report([ra, DriftRun("b", _frame(items))], policy=FigurePolicy(n_bootstrap=20))
    assert rep["item_check"]["compared"] == "labels only (a run store keeps no item text)"


def _frame(items: list[PairItem]):  # type: ignore[no-untyped-def]
    import pandas as pd

    return pd.DataFrame([{"judge": "sim:j", "dataset": it.dataset, "item_id": it.item_id, "protocol": "direct",
                          "order": o, "temperature": 0.0, "rep": 0, "step": "", "label": it.label,
                          "verdict": it.label, "parse_status": "ok"} for it in items for o in ("AB", "BA")])


def test_two_judges_of_one_run_need_no_item_check(tmp_path: Path) -> None:
    d = _run(tmp_path / "r", _items(20), judge="sim:a")
    _run(d, _items(20), judge="sim:b")
    res = runner.invoke(app, ["drift", str(d), "--judge-a", "sim:a", "--judge-b", "sim:b", "--format", "json", "--bootstrap", "20"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["item_check"]["compared"] == "none: two judges of one run"


@pytest.mark.parametrize("margin", ["nan", "inf", "0", "-0.1", "1.5"])
def test_a_margin_out_of_range_is_a_usage_error(tmp_path: Path, margin: str) -> None:
    a = _run(tmp_path / "a", _items(10))
    res = runner.invoke(app, ["drift", str(a), str(a), "--margin", margin])   # before: NaN margin accepted
    assert res.exit_code == 2, res.output
    assert res.output.strip() == f"error: --margin must be in (0, 1] (a difference in accuracy), got {float(margin)}"


def test_runs_without_a_shared_cell_name_each_side(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", _items(10))
    b_items = [it.model_copy(update={"dataset": "other"}) for it in _items(10)]
    b = _run(tmp_path / "b", b_items)
    res = runner.invoke(app, ["drift", str(a), str(b)])
    assert res.exit_code == 2, res.output
    assert (f"no cell (protocol x dataset x temperature) was judged on both sides: {a} (sim:j) has "
            f"direct · anchor · T=0; {b} (sim:j) has direct · other · T=0") in res.output


def test_a_series_needs_runs_after_its_baseline(tmp_path: Path) -> None:
    runs = [_run(tmp_path / f"r{k}", _items(10)) for k in range(3)]
    res = runner.invoke(app, ["drift", *map(str, runs), "--baseline", "3"])
    assert res.exit_code == 2 and "needs at least one run after the baseline runs" in res.output


def test_a_series_checks_every_run_against_the_first(tmp_path: Path) -> None:
    runs = [_run(tmp_path / f"r{k}", _items(10, swapped=frozenset({2}) if k == 2 else frozenset()))
            for k in range(3)]
    res = runner.invoke(app, ["drift", *map(str, runs)])
    assert res.exit_code == 3 and "item 'x2' of dataset 'anchor'" in res.output
    with pytest.raises(DriftError, match="one run: name the two judges"):
        drift_pair_report([DriftRun("a", _frame(_items(4)))])
