"""Agent transcripts as the graded object, on an inspect_ai log that inspect_ai itself writes here: an agent
(``mockllm/model``, scripted, offline) that calls an ``add`` tool and answers, scored by ``match`` (the gold
label: was the task done?) and by ``model_graded_qa`` with a scripted grader over 2 epochs.  Imported by
name, read by the loader, shown by the transcript rubric, perturbed by single edits, graded end to end."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

pytest.importorskip("inspect_ai")

from verdictlab.analyses import AnalysisInput, get  # noqa: E402
from verdictlab.cli.main import app  # noqa: E402
from verdictlab.core.items import PointItem, perturbation_of  # noqa: E402
from verdictlab.core.policy import FigurePolicy  # noqa: E402
from verdictlab.datasets import load_dataset  # noqa: E402
from verdictlab.datasets.perturb import perturb_items  # noqa: E402
from verdictlab.protocols import get_protocol  # noqa: E402
from verdictlab.store import open_store  # noqa: E402

pytestmark = pytest.mark.slow
runner = CliRunner()
N, EPOCHS = 6, 2
WRONG = 6          # the agent adds one too many on s6: match grades it I (task not done)
MISSED = 2         # the scripted grader grades s2 I although the agent got it right


@pytest.fixture(scope="module")
def agent_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ChatMessageTool, ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match, model_graded_qa
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool

    usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)   # mockllm would count with tiktoken

    @tool
    def add() -> Any:
        async def execute(x: int, y: int) -> int:
            """Add two numbers.

            Args:
                x: the first number
                y: the second number
            """
            return x + y

        return execute

    def agent(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        a, b = map(int, re.findall(r"\d+", messages[0].text)[:2])
        results = [m for m in messages if isinstance(m, ChatMessageTool)]
        if not results:
            out = ModelOutput.for_tool_call("mockllm/model", "add", {"x": a, "y": b}, tool_call_id=f"call-{a}-{b}")
        else:
            total = int(results[-1].text) + (1 if a == WRONG else 0)
            out = ModelOutput.from_content("mockllm/model", f"I added them with the tool. The answer is {total}.")
        out.usage = usage
        return out

    def grader(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        text = messages[-1].text
        out = ModelOutput.from_content("mockllm/model", "GRADE: I" if f"What is {MISSED} + {MISSED}?" in text
                                       else "GRADE: C")
        out.usage = usage
        return out

    task = Task(name="adder", dataset=MemoryDataset([Sample(id=f"s{i}", input=f"What is {i} + {i}?", target=str(2 * i))
                                                     for i in range(1, N + 1)]),
                solver=[use_tools([add()]), generate()], epochs=EPOCHS,
                scorer=[match(location="any"), model_graded_qa(model=get_model("mockllm/model", custom_outputs=grader))])
    out = tmp_path_factory.mktemp("agent")
    logs = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=agent), log_dir=str(out), display="none")
    assert logs[0].status == "success", logs[0].error
    return Path(logs[0].location)


def test_imported_by_name_with_a_gold_label_the_grader_gets_its_cell(agent_log: Path, tmp_path: Path) -> None:
    r = runner.invoke(app, ["import", "inspect", str(agent_log), "--transcripts", "--label-scorer", "match",
                            "--run-dir", str(tmp_path / "run")])
    assert r.exit_code == 0, r.output
    assert f"{N} transcript(s)" in r.stderr and f"labels from scorer 'match': {N} of {N} labelled" in r.stderr
    with open_store(tmp_path / "run") as st:
        items = {it.item_id: it for it in st.items()}
        judgments = st.judgments()
        inp = AnalysisInput(judgments, items=st.items(), policy=FigurePolicy(n_bootstrap=100))
    assert sorted(items) == [f"s{i}" for i in range(1, N + 1)]          # the epochs' runs are the same
    s1 = items["s1"]
    assert isinstance(s1, PointItem) and s1.transcript is not None and s1.label == "PASS"
    assert [m.role for m in s1.transcript.messages] == ["user", "assistant", "tool", "assistant"]
    call = s1.transcript.messages[1].tool_calls[0]
    assert (call.function, call.arguments, call.id) == ("add", {"x": 1, "y": 1}, "call-1-1")
    assert s1.transcript.messages[2].function == "add" and s1.transcript.messages[2].content == "2"
    assert items[f"s{WRONG}"].label == "FAIL" and items[f"s{WRONG}"].response.endswith(f"{2 * WRONG + 1}.")
    # only the model-graded scorer is a grader; match is the label
    assert set(judgments["protocol"]) == {"model_graded_qa"} and len(judgments) == N * EPOCHS
    cells = get("grader_cells")(inp)
    assert cells is not None and len(cells) == 1
    row = cells.iloc[0]
    # right on 4 of 6: it misses s2 (I on a PASS) and lets s6 through (C on a FAIL)
    assert row["n_items"] == N and row["C"] == 1.0 and row["accuracy"] == pytest.approx(4 / 6)
    assert row["T_reason"] and "perturb" in row["T_reason"]                     # no meaning-preserving cases yet
    decision = get("grader_decision")(inp)
    assert decision is not None and len(decision) == 1


def test_the_loader_and_the_transcript_rubric(agent_log: Path) -> None:
    load = load_dataset("inspect-transcripts", path=str(agent_log), label_scorer="match")
    assert load.name == "adder" and len(load.items) == N
    item = next(it for it in load.items if it.item_id == "s1")
    proto = get_protocol("transcript")
    user = proto.messages(item, "AB")[1]["content"]
    assert "[2] assistant: " in user and '-> calls add({"x": 1, "y": 1})' in user
    assert "[3] tool result (add): 2" in user and "Final answer:\nI added them with the tool. The answer is 2." in user
    assert "Expected answer (for checking):\n2" in user and "PASS or FAIL" in user
    assert (proto.parse("<reasoning>It used the tool.</reasoning><result>PASS").verdict, ) == ("PASS",)
    assert proto.parse("The agent did it.\nResult: fail").status == "repaired"
    unknown = proto.parse("<reasoning>Cannot tell.</reasoning><result>UNKNOWN</result>")
    assert unknown.verdict is None and "UNKNOWN is not an answer" in unknown.detail
    long = item.model_copy(update={"transcript": item.transcript.model_copy(update={"messages": (  # type: ignore[union-attr]
        item.transcript.messages[0].model_copy(update={"content": "x" * 1000}),)})})  # type: ignore[union-attr]
    assert "[... 400 characters cut ...]" in get_protocol("transcript@600").messages(long, "AB")[1]["content"]
    with pytest.raises(ValueError, match="needs items that carry an agent transcript"):
        proto.messages(item.model_copy(update={"transcript": None}), "AB")


def test_single_edits_keep_or_flip_task_completion(agent_log: Path) -> None:
    items = load_dataset("inspect-transcripts", path=str(agent_log), label_scorer="match").items
    kinds = ["transcript.reformat_message", "transcript.drop_tool_result", "transcript.wrong_answer", "format.casing"]
    suite = perturb_items(items, kinds, seed=4)
    counts = suite.counts()
    # the flips need a completed task: 5 PASS sources; the response kinds do not apply to transcripts
    assert counts["transcript.drop_tool_result"] == {"kept": N - 1, "not_applicable": 1}
    assert counts["transcript.wrong_answer"] == {"kept": N - 1, "not_applicable": 1}
    assert counts["transcript.reformat_message"] == {"kept": N}
    assert counts["format.casing"] == {"not_applicable": N}
    case = {c.item_id: c for c in suite.cases}
    dropped = case["s3~transcript.drop_tool_result"]
    assert dropped.label == "FAIL" and [m.role for m in dropped.transcript.messages] == ["user", "assistant", "assistant"]  # type: ignore[union-attr]
    wrong = case["s3~transcript.wrong_answer"]
    params = wrong.meta["perturbation"]["params"]
    assert params["from"] == "6" and wrong.label == "FAIL" and wrong.response.endswith(f"{params['to']}.")
    assert wrong.transcript.messages[-1].content == wrong.response  # type: ignore[union-attr]
    kept = case["s3~transcript.reformat_message"]
    assert kept.label == "PASS" and kept.response.split() == items[2].response.split() != kept.response
    assert perturbation_of(kept).perturbation_class == "preserving"  # type: ignore[union-attr]


def test_a_transcript_suite_graded_end_to_end(agent_log: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    r = runner.invoke(app, ["perturb", "inspect-transcripts", "--path", str(agent_log), "-O", "label_scorer=match",
                            "--kind", "transcript.reformat_message", "--kind", "transcript.drop_tool_result",
                            "--kind", "transcript.wrong_answer", "--run-dir", str(run)])
    assert r.exit_code == 0, r.output
    cfg = tmp_path / "grade.yaml"
    cfg.write_text(json.dumps({"name": "agents", "datasets": [{"name": "perturbations", "path": str(run / "suite-adder.jsonl")}],
                               "judges": ["sim:skill=0.9,invariance=0.8,sensitivity=0.7,seed=3"],
                               "protocols": ["transcript"], "repetitions": 2, "temperatures": [0.7]}), encoding="utf-8")
    r = runner.invoke(app, ["run", str(cfg), "--run-dir", str(run), "--no-progress"])
    assert r.exit_code == 0, r.output
    with open_store(run) as st:
        inp = AnalysisInput(st.judgments(), items=st.items(), policy=FigurePolicy(n_bootstrap=50))
        assert set(st.judgments()["parse_status"]) == {"ok"}
    effects = get("grader_perturbations")(inp).set_index("kind")
    assert set(effects.index) == {"transcript.reformat_message", "transcript.drop_tool_result", "transcript.wrong_answer"}
    assert effects.loc["transcript.reformat_message", "class"] == "preserving"
    assert effects.loc["transcript.drop_tool_result", "n_units"] == N - 1
    curation = get("perturbation_curation")(inp).set_index("kind")
    assert curation["n_counted"].sum() == 3 * N - 2                          # written by rules: every case counts
