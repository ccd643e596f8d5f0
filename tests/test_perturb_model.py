"""Model-written perturbations: the write -> read -> validate -> filter pipeline on a scripted judge
(every outcome planted and counted), the replies' parsers on real-looking outputs, and the whole command
through the engine's caller against the local fake OpenAI server (attempt rows, cached replies, budget)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from verdictlab.core.items import PointItem, perturbation_of
from verdictlab.datasets.perturb import perturb_items
from verdictlab.datasets.perturb_model import ModelOptions
from verdictlab.engine.writing import write_with_judge
from verdictlab.judges.base import JudgeAPI, JudgeCallError, JudgeResponse, RetryDecision
from verdictlab.protocols.writing import parse_validation, parse_written, writing_template

runner = CliRunner()
SOURCE = "The boiling point of water at sea level is 100 degrees Celsius, which is 212 degrees Fahrenheit."


class ScriptedWriter(JudgeAPI):
    """Writes and validates by a script keyed on the case: every outcome of the pipeline planted."""

    provider = "scripted"

    def __init__(self, judge_id: str) -> None:
        super().__init__(judge_id, model="scripted")

    async def generate(self, request: Any) -> JudgeResponse:
        m = request.metadata
        case = m.get("case_id", "")
        if m["purpose"] == "perturb.validate":
            if case.startswith("s2~paraphrase"):
                return JudgeResponse("<reasoning>It adds a claim.</reasoning><result>INVALID</result>")
            if case.startswith("s3~paraphrase"):
                return JudgeResponse("Looks fine to me.")                       # no result: unparsed
            return JudgeResponse("<reasoning>Same facts.</reasoning><result>VALID</result>")
        text = {
            "s0~paraphrase.1": "At sea level water boils at 100 degrees Celsius, that is 212 degrees Fahrenheit.",
            "s0~paraphrase.2": "At sea level water boils at 100 degrees Celsius, that is 212 degrees Fahrenheit!",
            "s1~paraphrase.1": "In other words: " + SOURCE,
            "s1~paraphrase.2": SOURCE,
            "s4~paraphrase.2": "   ",
        }.get(case)
        if case == "s4~paraphrase.1":
            raise JudgeCallError("boom", RetryDecision.fatal())
        if m["kind"] == "label_flip":
            text = SOURCE.replace("100", "90") + f" ({m['target']})"
        return JudgeResponse(text if text is not None else f"```\nReworded response: {case} says it differently.\n```")


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("verdictlab.judges.make_judge", lambda jid: ScriptedWriter(jid))


def _items() -> list[PointItem]:
    return [PointItem(item_id=f"s{i}", dataset="d", question="At what temperature does water boil?", response=SOURCE,
                      label=label, scale=scale)
            for i, (label, scale) in enumerate([("PASS", None), (4, (1, 2, 3, 4, 5)), (2, (1, 2, 3, 4, 5)),
                                                (None, None), ("FAIL", None)])]


def test_every_outcome_of_the_pipeline_is_counted(scripted: None) -> None:
    suite = perturb_items(_items(), ["paraphrase", "label_flip"], seed=9, write=write_with_judge,
                          model=ModelOptions(writer="scripted:w", validator="scripted:v", variants=2))
    by_case = {d.case_id: d for d in suite.dropped}
    # s0: two near-identical rewordings (similarity 1.0 once case-folded into words): the second is dropped
    assert by_case["s0~paraphrase.2"].reason == "near_duplicate" and "to s0~paraphrase.1" in by_case["s0~paraphrase.2"].detail
    # s1: a copy behind a lead-in is too close to its source; an exact repeat is unchanged
    assert by_case["s1~paraphrase.1"].reason == "near_duplicate" and "s1 (source)" in by_case["s1~paraphrase.1"].detail
    assert by_case["s1~paraphrase.2"].reason == "unchanged"
    assert {by_case[f"s2~paraphrase.{k}"].reason for k in (1, 2)} == {"invalid"}
    assert {by_case[f"s3~paraphrase.{k}"].reason for k in (1, 2)} == {"validation_unparsed"}
    assert by_case["s4~paraphrase.1"].reason == "call_failed" and "boom" in by_case["s4~paraphrase.1"].detail
    assert by_case["s4~paraphrase.2"].reason == "unparsed"
    # label flips: s3 has no label; every second variant repeats the first
    assert by_case["s3~label_flip"].reason == "not_applicable"
    kept = {c.item_id: c for c in suite.cases}
    assert set(kept) == {"s0~paraphrase.1", "s0~label_flip.1", "s1~label_flip.1", "s2~label_flip.1",
                         "s4~label_flip.1"}
    # the targets: PASS -> FAIL, FAIL -> PASS, 4 (upper half of 1..5) -> 1, 2 (lower half) -> 5
    assert [kept[f"s{i}~label_flip.1"].label for i in (0, 4, 1, 2)] == ["FAIL", "PASS", 1, 5]
    assert suite.counts()["paraphrase"] == {"kept": 1, "near_duplicate": 2, "unchanged": 1, "invalid": 2,
                                            "validation_unparsed": 2, "call_failed": 1, "unparsed": 1}
    p = perturbation_of(kept["s0~paraphrase.1"])
    assert p is not None and p.kind == "paraphrase" and p.perturbation_class == "preserving" and not p.counts()
    meta = kept["s0~paraphrase.1"].meta["perturbation"]
    assert meta["template"] == writing_template("paraphrase").template_id and meta["model"] == "scripted:w"
    assert meta["seed"] == 9 and meta["variant"] == 1 and isinstance(meta["request_seed"], int)
    assert meta["validation"] == {"validator": "scripted:v", "verdict": "VALID", "parse_status": "ok",
                                  "reasoning": "Same facts."}
    assert meta["similarity"]["nearest"] == "s0 (source)" and meta["similarity"]["score"] < 0.9
    assert kept["s0~label_flip.1"].meta["perturbation"]["target"] == "FAIL"
    # 10 + 8 writes, then a validation for each of the 15 replies read (s1.2 unchanged, s4 failed / empty)
    assert len(suite.calls) == 10 + 8 + 15


def test_synthetic_levels_and_their_classes(scripted: None) -> None:
    item = PointItem(item_id="q", dataset="d", question="Q?", response="A.", label=3, scale=(1, 2, 3))
    suite = perturb_items([item], ["synthetic"], write=write_with_judge, model=ModelOptions(writer="scripted:w"))
    kinds = {c.item_id: (perturbation_of(c).kind, c.label) for c in suite.cases}  # type: ignore[union-attr]
    assert kinds == {"q~synthetic.1": ("synthetic.other_level", 1), "q~synthetic.2": ("synthetic.other_level", 2),
                     "q~synthetic.3": ("synthetic.same_level", 3)}


def test_parsers_on_real_looking_replies() -> None:
    assert parse_written("  A plain reworded text.  ").text == "A plain reworded text."
    r = parse_written('```\nReworded response:\n"The text."\n```')
    assert (r.text, r.status) == ("The text.", "repaired") and "fences" in r.detail and "label" in r.detail
    assert parse_written("   ").status == "failed" and parse_written(None).text is None
    ok = parse_validation("<reasoning>Facts kept.</reasoning><result>VALID")          # stop sequence cut
    assert (ok.verdict, ok.status) == ("VALID", "ok")
    assert parse_validation("Hmm.\n<result> invalid </result>").verdict == "INVALID"
    assert parse_validation("Reasoning...\nResult: **VALID**").status == "repaired"
    both = parse_validation("<result>VALID</result> or maybe <result>INVALID</result>")
    assert both.status == "failed" and "both" in both.detail
    assert parse_validation("I think it is fine.").verdict is None


def _points_file(tmp_path: Path, n: int = 4) -> Path:
    path = tmp_path / "points.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"item_id": f"q{i}", "question": f"What is {i} + {i}?",
                                 "response": f"It is {2 * i}. Adding {i} twice gives {2 * i}.",
                                 "label": "PASS" if i % 2 else "FAIL"}) + "\n")
    return path


def test_the_command_through_the_caller_against_the_fake_server(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    from verdictlab.cli.main import app
    from verdictlab.store import open_store
    from verdictlab.testing import FakeConfig, FakeOpenAIServer

    src = _points_file(tmp_path)
    run = tmp_path / "run"
    with FakeOpenAIServer(FakeConfig(api_key="sk-fake-local", seed=3)) as srv, pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERDICTLAB_API_KEY", "sk-fake-local")
        writer = f"openai-compatible:fake-judge@{srv.base_url}"
        args = ["perturb", "judges-verdict", "--path", str(src), "-O", "dataset=sums", "--kind", "paraphrase",
                "--kind", "label_flip", "--kind", "format.casing", "--writer", writer, "--run-dir", str(run)]
        first = runner.invoke(app, args)
        assert first.exit_code == 0, first.output
        second = runner.invoke(app, args)
        assert second.exit_code == 0, second.output
    assert "writing calls: 16 made for 16 prompt(s)" in first.stderr
    assert "writing calls: 0 made for 16 prompt(s) (16 answered by replies stored earlier)" in second.stderr
    with open_store(run) as st:
        attempts = st.attempts()
        suites = st.get_meta("perturbation_suites")
        cached = st.conn.execute("SELECT COUNT(*) FROM cache").fetchone()[0]
    # one attempt row per call made (8 writes, then 8 validations), each under its case's key
    assert len(attempts) == 16 and set(attempts["outcome"]) == {"ok"}
    assert attempts["trial_id"].str.match(r"^perturb:sums/q\d~(paraphrase|label_flip):(generate|validate)$").all()
    assert cached == 16 and len(suites) == 2 and suites[1]["spend"]["calls"] == 0
    assert suites[0]["writer"] == writer and suites[0]["similarity"]["threshold"] == 0.9
    assert "sk-fake-local" not in json.dumps(suites)
    lines = (run / "suite-sums.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4 + 4 + sum(suites[0]["counts"].get(k, {}).get("kept", 0) for k in ("paraphrase", "label_flip"))


def test_the_budget_stops_the_calls_cleanly(tmp_path: Path, scripted: None) -> None:
    from verdictlab.workflows.perturb import perturb_dataset

    res = perturb_dataset("judges-verdict", path=str(_points_file(tmp_path)), options={"dataset": "sums"},
                          kinds=["paraphrase"], run_dir=tmp_path / "run", writer="scripted:w", max_calls=3)
    assert res.stopped is not None and res.stopped.startswith("budget")
    # 3 writes made, the fourth not sent; no validation could be sent after that
    assert res.counts["paraphrase"] == {"not_sent": 4} and res.spend["calls"] == 3
