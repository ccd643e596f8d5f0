"""``validate --human`` (and ``plan-labels --human``) read a published human-label file as it is, with the
import's ``--map``, ``--map-values`` and ``--id-from`` (the same code, :mod:`verdictlab.datasets.columns`):
a ``question_id, text, score`` file, or a bare list of labels, with no glue; every problem of the file is
listed at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.core.design import trial_id
from verdictlab.datasets.human_labels import read_human_labels
from verdictlab.store import RunStore
from verdictlab.workflows.human_label_runs import labelled_judgments

runner = CliRunner()
#: the humans' labels of items 1..12 (the judge answers A on every one of them)
HUMAN = ["A", "B", "tie", "A", "A", "B", "A", "B", "A", "A", "B", "A"]
SCORE = {"A": 1, "B": 2, "tie": 0}


@pytest.fixture
def run(tmp_path: Path) -> Path:
    rows = [{"trial_id": trial_id("j", "mt", str(i), "direct", order, 0.0, 0), "judge": "j", "dataset": "mt",
             "item_id": str(i), "protocol": "direct", "order": order, "temperature": 0.0, "rep": 0, "step": "",
             "label": None, "verdict": "A", "parse_status": "ok"} for i in range(1, 13) for order in ("AB", "BA")]
    with RunStore(tmp_path / "run") as s:
        s.add_judgments(rows)
    return tmp_path / "run"


def _labels(run: Path, human: Path, **reading: object) -> dict[str, str | None]:
    df = labelled_judgments(run, human, reading=reading)
    return {str(i): lab for i, lab in zip(df["item_id"], df["label"], strict=True)}


def test_a_published_question_id_text_score_file(run: Path, tmp_path: Path) -> None:
    f = tmp_path / "human.csv"
    f.write_text("question_id,text,score\n" + "".join(f'{i},"the answer, {i}",{SCORE[lab]}\n'
                                                      for i, lab in enumerate(HUMAN, start=1)))
    assert _labels(run, f, field_map={"item_id": "question_id", "label": "score"},
                   value_map={"label": {"1": "A", "2": "B", "0": "tie"}}) == {str(i): lab for i, lab in
                                                                               enumerate(HUMAN, start=1)}
    r = runner.invoke(app, ["validate", str(run), "--human", str(f), "--map", "item_id=question_id", "--map",
                            "label=score", "--map-values", "label:1=A,2=B,0=tie", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    (cell,) = json.loads(r.stdout)["cells"]
    # win rate of A over the 11 pairs humans decided (the tie, item 3, left out): A on 7 of 11
    assert cell["n_labelled"] == 11 and cell["human"]["value"] == pytest.approx(7 / 11)
    r = runner.invoke(app, ["plan-labels", str(run), "--halfwidth", "0.2", "--human", str(f), "--map",
                            "item_id=question_id", "--map", "label=score", "--map-values", "label:1=A,2=B,0=tie",
                            "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["cells"][0]["n_pilot"] == 11, r.stderr


@pytest.mark.parametrize("form", ["json", "jsonl"])
def test_a_bare_list_of_labels_numbered_by_row(run: Path, tmp_path: Path, form: str) -> None:
    f = tmp_path / f"labels.{form}"
    f.write_text(json.dumps(HUMAN) if form == "json" else "".join(json.dumps(lab) + "\n" for lab in HUMAN))
    assert _labels(run, f, id_from="row") == {str(i): lab for i, lab in enumerate(HUMAN, start=1)}
    r = runner.invoke(app, ["validate", str(run), "--human", str(f), "--id-from", "row", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    r = runner.invoke(app, ["validate", str(run), "--human", str(f), "--format", "json"])      # no ids: says how
    assert r.exit_code == 3 and "--id-from row" in r.stderr and "--map item_id=COLUMN" in r.stderr


def test_every_problem_of_a_published_file_at_once(run: Path, tmp_path: Path) -> None:
    f = tmp_path / "human.jsonl"
    f.write_text("\n".join([json.dumps({"question_id": 1, "score": 7}),          # a score the map does not name
                            "{not json",
                            json.dumps({"score": 1}),                           # no id
                            json.dumps({"question_id": 4, "score": 2}),
                            json.dumps({"question_id": 4, "score": 1}),         # labelled twice differently
                            json.dumps({"question_id": 99, "score": 1})]) + "\n")   # not in the run
    r = runner.invoke(app, ["validate", str(run), "--human", str(f), "--map", "item_id=question_id", "--map",
                            "label=score", "--map-values", "label:1=A,2=B,0=tie"])
    assert r.exit_code == 3
    text = r.stderr
    assert "5 problems" in text, text
    # the rows that were read are joined too, and the join's problem (the id not in the run) is listed
    # beside the reader's, in row order, naming the file's own column
    for part in ("row 1, field 'score'", "got 7", "row 2: invalid JSON", "row 3, field 'question_id'",
                 "row 5, field 'score': item '4' already labelled 'B' in row 4",
                 "row 6, field 'question_id': 1 labelled item(s) not in the run"):
        assert part in text, (part, text)
    assert text.index("row 5, field") < text.index("row 6, field"), text
    listed = [line.strip().split(":")[0] for line in text.splitlines() if line.startswith("  row")]
    assert listed == ["row 1, field 'score'", "row 2", "row 3, field 'question_id'", "row 5, field 'score'",
                      "row 6, field 'question_id'"], text
    good = tmp_path / "ok.jsonl"
    good.write_text(json.dumps({"question_id": 99, "score": 1}) + "\n" + json.dumps({"question_id": 98, "score": 1}))
    r = runner.invoke(app, ["validate", str(run), "--human", str(good), "--map", "item_id=question_id", "--map",
                            "label=score", "--map-values", "label:1=A"])
    assert r.exit_code == 3 and "2 labelled item(s) not in the run" in r.stderr and "rows 1, 2" in r.stderr


def test_the_options_need_a_label_file_and_name_known_fields(run: Path, tmp_path: Path) -> None:
    r = runner.invoke(app, ["validate", str(run), "--map", "item_id=question_id"])
    assert r.exit_code == 2 and "--human" in r.stderr
    f = tmp_path / "h.csv"
    f.write_text("id,label\n1,A\n")
    with pytest.raises(ValueError, match="unknown field"):
        read_human_labels(f, field_map={"verdict": "label"})
    with pytest.raises(ValueError, match="--map-values applies to label"):
        read_human_labels(f, field_map={"item_id": "id"}, value_map={"verdict": {"1": "A"}})


def test_the_documented_example_shows_real_figures(tmp_path: Path) -> None:
    """docs/human-labels.md's example: `validate` and `plan-labels` printed only "—" on the quick run ("too
    few labelled items: 7"); on the labelled example every figure the doc quotes is there."""
    examples = Path(__file__).resolve().parents[1] / "examples"
    run = tmp_path / "runs" / "labelled"
    r = runner.invoke(app, ["run", str(examples / "labelled.yaml"), "--run-dir", str(run), "--no-progress"])
    assert r.exit_code == 0, r.stderr
    r = runner.invoke(app, ["validate", str(run), "--format", "json"])
    (cell,) = json.loads(r.stdout)["cells"]
    assert cell["n_labelled"] == 56
    assert [round(x, 3) for x in (cell["judge"]["value"], cell["judge"]["lo"], cell["judge"]["hi"])] == [0.5, 0.385, 0.615]
    assert [round(x, 3) for x in (cell["human"]["value"], cell["human"]["lo"], cell["human"]["hi"])] == [0.5, 0.369, 0.631]
    assert round(cell["calibration"]["ece"], 3) == 0.160 and round(cell["isotonic"]["after"]["ece"], 3) == 0.024
    r = runner.invoke(app, ["plan-labels", str(run), "--halfwidth", "0.15", "--format", "json"])
    (plan,) = json.loads(r.stdout)["cells"]
    assert (plan["human_only"], plan["ppi"], plan["ppi_stratified"]) == (43, 34, 30)
    r = runner.invoke(app, ["validate", str(run), "--human", str(examples / "human-labels.csv"), "--map",
                            "item_id=question_id", "--map", "label=score", "--map-values", "label:1=A,2=B,0=tie",
                            "--format", "json"])
    assert r.exit_code == 0, r.stderr
    (cell,) = json.loads(r.stdout)["cells"]
    assert (cell["n_labelled"], cell["n_unlabelled"]) == (38, 20)
    assert [round(x, 3) for x in (cell["ppi"]["value"], cell["ppi"]["lo"], cell["ppi"]["hi"])] == [0.432, 0.282, 0.582]
    assert [round(x, 3) for x in (cell["human"]["value"], cell["human"]["lo"], cell["human"]["hi"])] == [0.447, 0.289, 0.605]
    assert round(cell["ppi"]["lam"], 2) == 0.20 and round(cell["ppi"]["ess"]) == 42


def test_a_dataset_column_under_its_own_name(tmp_path: Path) -> None:
    """An id judged in two datasets is named by the file's own dataset column (``--map dataset=set``), as
    import reads one; without it the id is refused as ambiguous, naming the file's id column."""
    rows = [{"trial_id": trial_id("j", ds, "1", "direct", order, 0.0, 0), "judge": "j", "dataset": ds,
             "item_id": "1", "protocol": "direct", "order": order, "temperature": 0.0, "rep": 0, "step": "",
             "label": None, "verdict": "A", "parse_status": "ok"} for ds in ("mt", "arena") for order in ("AB", "BA")]
    with RunStore(tmp_path / "run") as s:
        s.add_judgments(rows)
    f = tmp_path / "human.csv"
    f.write_text("qid,set,score\n1,mt,1\n1,arena,2\n")
    reading = {"field_map": {"item_id": "qid", "dataset": "set", "label": "score"},
               "value_map": {"label": {"1": "A", "2": "B"}}}
    df = labelled_judgments(tmp_path / "run", f, reading=reading)
    assert dict(zip(df["dataset"], df["label"], strict=True)) == {"mt": "A", "arena": "B"}
    r = runner.invoke(app, ["validate", str(tmp_path / "run"), "--human", str(f), "--map", "item_id=qid", "--map",
                            "dataset=set", "--map", "label=score", "--map-values", "label:1=A,2=B", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    cells = json.loads(r.stdout)["cells"]
    assert sorted(c["cell"]["dataset"] for c in cells) == ["arena", "mt"] and all(c["n_labelled"] == 1 for c in cells)
    r = runner.invoke(app, ["validate", str(tmp_path / "run"), "--human", str(f), "--map", "item_id=qid", "--map",
                            "label=score", "--map-values", "label:1=A,2=B"])
    # without its dataset the file labels item 1 twice (the reader's problem) and the id is ambiguous in the
    # run (the join's): both listed at once, each under the file's own column
    assert r.exit_code == 3 and "2 problems" in r.stderr, r.stderr
    assert "row 2, field 'qid': item_id '1' names items of 2 datasets" in r.stderr and "--map dataset=COLUMN" in r.stderr
    assert "row 3, field 'score': item '1' already labelled 'A' in row 2, now 'B'" in r.stderr


def test_ids_hashed_from_the_texts_as_import_hashes_them(tmp_path: Path) -> None:
    """A log without ids imported with ``--id-from hash`` and a label file without ids read with ``--id-from
    hash`` (its texts under its own column names, ``--map``) name the same items: the same code derives both."""
    judged = tmp_path / "judged.jsonl"
    judged.write_text("".join(json.dumps({"judge": "j", "protocol": "direct", "dataset": "mt", "order": o, "verdict": "A",
                                          "question": f"q{i}", "response_a": f"a{i}", "response_b": f"b{i}"}) + "\n"
                              for i in range(12) for o in ("AB", "BA")))
    r = runner.invoke(app, ["import", "jsonl", str(judged), "--run-dir", str(tmp_path / "run"), "--id-from", "hash"])
    assert r.exit_code == 0, r.stderr
    human = tmp_path / "human.csv"
    human.write_text("prompt,first,second,score\n" + "".join(f"q{i},a{i},b{i},{SCORE[lab]}\n"
                                                             for i, lab in enumerate(HUMAN)))
    r = runner.invoke(app, ["validate", str(tmp_path / "run"), "--human", str(human), "--id-from", "hash", "--map",
                            "question=prompt", "--map", "response_a=first", "--map", "response_b=second", "--map",
                            "label=score", "--map-values", "label:1=A,2=B,0=tie", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    (cell,) = json.loads(r.stdout)["cells"]
    assert cell["n_labelled"] == 11 and cell["human"]["value"] == pytest.approx(7 / 11)
