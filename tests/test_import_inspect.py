"""The ``inspect`` importer on a log that inspect_ai itself writes here: a task graded by
``model_graded_qa`` over 3 epochs, the solver and the grader both served by the project's fake
OpenAI-compatible server (no network, no key: a fresh ``sk-test-<uuid>``)."""

from __future__ import annotations

import math
import uuid
from collections import defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("inspect_ai")

from verdictlab.analyses import AnalysisInput, get  # noqa: E402
from verdictlab.cli.main import app  # noqa: E402
from verdictlab.core.items import ItemError  # noqa: E402
from verdictlab.core.policy import FigurePolicy  # noqa: E402
from verdictlab.importers import import_into  # noqa: E402
from verdictlab.importers.inspect_log import grade, import_inspect  # noqa: E402
from verdictlab.store import open_store  # noqa: E402
from verdictlab.testing.fake_openai import FakeConfig, FakeOpenAIServer  # noqa: E402

pytestmark = pytest.mark.slow

EPOCHS = 3
N_SAMPLES = 4
# the fake server answers a JSON template with the same keys; "score" gets one of the listed grades.
# X is outside the grade pattern: inspect_ai records such a grade as unscored.
INSTRUCTIONS = ('Grade the submitted answer. Reply with a JSON object only, in this template: '
                '{"rationale": "<one sentence>", "score": <one of C, I, X>}')


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory) -> tuple[Path, Path]:
    """(.eval log, the same log written as .json) from one inspect_ai eval."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.log import write_eval_log
    from inspect_ai.model import GenerateConfig, get_model
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import generate

    out = tmp_path_factory.mktemp("inspect")
    key = f"sk-test-{uuid.uuid4()}"
    with FakeOpenAIServer(FakeConfig(api_key=key, seed=7)) as srv, pytest.MonkeyPatch.context() as mp:
        mp.setenv("FAKE_API_KEY", key)
        mp.setenv("FAKE_BASE_URL", srv.base_url)
        grader = get_model("openai-api/fake/fake-judge", base_url=srv.base_url, api_key=key,
                           config=GenerateConfig(temperature=1.0))
        task = Task(name="grading_demo",
                    dataset=MemoryDataset([Sample(id=f"s{i}", input=f"What is {i} + {i}?", target=str(2 * i))
                                           for i in range(N_SAMPLES)]),
                    solver=generate(), epochs=EPOCHS,
                    scorer=model_graded_qa(instructions=INSTRUCTIONS, grade_pattern=r'"score"\s*:\s*"([CI])"',
                                           model=grader))
        logs = inspect_eval(task, model="openai-api/fake/fake-judge", log_dir=str(out / "logs"),
                            display="none", temperature=0.0)
    assert logs[0].status == "success"
    eval_path = Path(logs[0].location)
    json_path = out / "copy.json"
    write_eval_log(logs[0], str(json_path), format="json")
    return eval_path, json_path


def _raw_grades(path: Path) -> dict[str, list[str | None]]:
    """Grades per sample in epoch order, straight from inspect_ai's log API (the expected values)."""
    from inspect_ai.log import read_eval_log

    out: dict[str, list[str | None]] = defaultdict(list)
    for s in sorted(read_eval_log(str(path)).samples, key=lambda s: (str(s.id), s.epoch)):
        v = s.scores["model_graded_qa"].value
        out[str(s.id)].append(None if isinstance(v, float) and math.isnan(v) else v)
    return out


def test_epochs_become_repetitions(inspect_logs):
    eval_path, _ = inspect_logs
    batch = import_inspect(eval_path)
    rows = batch.judgments
    assert len(rows) == N_SAMPLES * EPOCHS
    assert {(r["judge"], r["protocol"], r["dataset"], r["temperature"], r["order"]) for r in rows} == {
        ("openai-api/fake/fake-judge", "model_graded_qa", "grading_demo", 1.0, "AB")}
    assert sorted({r["rep"] for r in rows}) == list(range(EPOCHS))
    expected = _raw_grades(eval_path)
    got: dict[str, list[str | None]] = defaultdict(list)
    for r in sorted(rows, key=lambda r: (r["item_id"], r["rep"])):
        got[r["item_id"]].append(r["verdict"])
        assert r["parse_status"] == ("failed" if r["verdict"] is None else "ok")
        assert r["shown_first_won"] is None              # pointwise: no presentation order effect
    assert got == expected
    assert all(v in ("C", "I", None) for vs in got.values() for v in vs)
    assert {it.item_id for it in batch.items} == {f"s{i}" for i in range(N_SAMPLES)}
    assert batch.items[0].question.startswith("What is") and batch.items[0].reference == "0"
    assert "epoch = repetition" in batch.notes[0]


def test_json_log_reads_the_same_and_reimport_is_a_noop(inspect_logs, tmp_path):
    eval_path, json_path = inspect_logs
    first = import_into("inspect", eval_path, run_dir=tmp_path)
    assert first.n_inserted == N_SAMPLES * EPOCHS and first.n_items == N_SAMPLES
    again = import_into("inspect", json_path, run_dir=tmp_path)     # same grades, other file format
    assert (again.n_inserted, again.n_replaced, again.n_identical) == (0, 0, N_SAMPLES * EPOCHS)


def test_grader_consistency_analysis(inspect_logs, tmp_path):
    eval_path, _ = inspect_logs
    import_into("inspect", eval_path, run_dir=tmp_path)
    with open_store(tmp_path) as store:
        inp = AnalysisInput(store.judgments(), items=store.items())
    table = get("grader_consistency")(inp)
    assert table is not None and len(table) == 1
    row = table.iloc[0]
    # expected C by hand from the raw grades: a sample agrees when its parsed grades (>= 2) are equal
    units = [[g for g in gs if g is not None] for gs in _raw_grades(eval_path).values()]
    units = [u for u in units if len(u) >= 2]
    assert row["n_units"] == len(units) and row["repetitions"] <= EPOCHS
    assert row["C"] == pytest.approx(sum(len(set(u)) == 1 for u in units) / len(units))


def test_cli_and_errors(inspect_logs, tmp_path):
    eval_path, _ = inspect_logs
    r = CliRunner().invoke(app, ["import", "inspect", str(eval_path), "--run-dir", str(tmp_path / "r"),
                                 "--scorer", "model_graded_qa"])
    assert r.exit_code == 0, r.output
    assert f"imported {N_SAMPLES * EPOCHS} new judgment(s)" in r.output
    with pytest.raises(ItemError, match="no scores from scorer 'nope'"):
        import_inspect(eval_path, scorer="nope")
    bad = tmp_path / "bad.eval"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ItemError, match="not a readable inspect_ai log"):
        import_inspect(bad)


def test_grade_text():
    assert (grade("C"), grade(1.0), grade(0.5), grade(True), grade(float("nan")), grade(None)) == (
        "C", "1", "0.5", "true", None, None)
    assert grade({"b": 1, "a": "x"}) == '{"a": "x", "b": 1}'


def test_an_inspect_grader_gets_a_cell_and_a_place_in_the_decision(inspect_logs, tmp_path):
    # regression: a run of graded inspect samples reported "0 cells, N pointwise judgments" and its grader
    # appeared in no decision; now it has a grader cell (C over the epochs) and a row in the decision
    # (unranked: the log carries no human label, so no agreement and no trust figure)
    import io

    from rich.console import Console

    from verdictlab.report import build_report, render_terminal

    eval_path, _ = inspect_logs
    import_into("inspect", eval_path, run_dir=tmp_path)
    with open_store(tmp_path) as store:
        inp = AnalysisInput(store.judgments(), items=store.items(), policy=FigurePolicy(n_bootstrap=50))
    cells = get("grader_cells")(inp)
    assert cells is not None and len(cells) == 1
    row = cells.iloc[0]
    assert (row["judge"], row["protocol"], row["dataset"], row["n_items"]) == (
        "openai-api/fake/fake-judge", "model_graded_qa", "grading_demo", N_SAMPLES)
    consistency = get("grader_consistency")(inp).iloc[0]
    assert row["C"] == pytest.approx(consistency["C"]) and row["T_reason"] == "no human labels"
    decision = get("grader_decision")(inp)
    assert len(decision) == 1 and decision.iloc[0]["unranked_because"] == "no human labels"
    buf = io.StringIO()
    render_terminal(build_report(tmp_path, policy=FigurePolicy(n_bootstrap=0)), Console(file=buf, width=200, color_system=None))
    assert f"{N_SAMPLES * EPOCHS} pointwise judgment(s) in 1 grader cell(s)" in buf.getvalue()
    assert "grader_decision" in buf.getvalue()
