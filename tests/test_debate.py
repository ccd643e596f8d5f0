"""Debate: rounds stored as rows, explicit counted fallbacks, round-1 vs final figures."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pandas as pd
import pytest

from verdictlab.analyses.debate import debate_summary
from verdictlab.core.items import PairItem
from verdictlab.engine.debate import DebateSettings, run_debate, run_debate_async
from verdictlab.judges.base import JudgeAPI, JudgeRequest, JudgeResponse
from verdictlab.store import RunStore


def _say(winner: str) -> str:
    return json.dumps({"rationale": f"I prefer {winner}.", "winner": winner})


class Scripted(JudgeAPI):
    """Answers by round (``step``) from a script; the shown winner for each round, or raw text."""

    provider = "script"

    def __init__(self, judge_id: str, script: dict[str, str]) -> None:
        super().__init__(judge_id, model="script")
        self.script = script
        self.seen: list[JudgeRequest] = []

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        self.seen.append(request)
        out = self.script[request.metadata["step"]]
        return JudgeResponse(text=_say(out) if out in ("A", "B") else out, tokens_in=10, tokens_out=5)


ITEM = PairItem(item_id="x", dataset="d", question="q", response_a="good", response_b="bad", label="A")


def _run(tmp_path: Path, j1: dict[str, str], j2: dict[str, str], **kw: object) -> tuple[pd.DataFrame, Scripted, Scripted]:
    a, b = Scripted("s:one", j1), Scripted("s:two", j2)
    with RunStore(tmp_path / "run") as store:
        asyncio.run(run_debate_async([ITEM], [a, b], store, DebateSettings(orders=("AB",), **kw)))
        df = store.judgments()
    return df.set_index(["judge", "step"]), a, b


def test_rebuttal_until_agreement(tmp_path: Path) -> None:
    df, a, b = _run(tmp_path, {"round-1": "A", "round-2": "A"}, {"round-1": "B", "round-2": "A"})
    assert set(df.index) == {("s:one", "round-1"), ("s:two", "round-1"), ("s:one", "round-2"), ("s:two", "round-2"),
                             ("debate(s:one | s:two)", "")}
    final = df.loc[("debate(s:one | s:two)", "")]
    assert final["verdict"] == "A" and final["parse_status"] == "ok"
    assert json.loads(final["scores"]) == {"rounds": 2, "agreed": True}
    # the round-2 prompt of judge two shows judge one's round-1 argument and verdict
    assert "The other judge chose A, arguing: I prefer A." in b.seen[1].messages[1]["content"]
    assert len(a.seen) == 2                   # stopped on agreement, not at round 3


def test_disagreement_rule(tmp_path: Path) -> None:
    script1 = {f"round-{k}": "A" for k in (1, 2, 3)}
    script2 = {f"round-{k}": "B" for k in (1, 2, 3)}
    df, _, _ = _run(tmp_path, script1, script2)
    assert df.loc[("debate(s:one | s:two)", ""), "verdict"] == "tie"
    assert len(df) == 3 * 2 + 1
    df2, _, _ = _run(tmp_path / "b", script1, script2, final_rule="first-judge", rounds=1)
    assert df2.loc[("debate(s:one | s:two)", ""), "verdict"] == "A" and len(df2) == 3


def test_fallbacks_are_explicit_and_counted(tmp_path: Path) -> None:
    garbage = {"round-1": "I refuse", "round-2": "A"}
    # none: judge one has no round-1 verdict; round 2 both say A -> agreement, no fallback involved
    df, _, _ = _run(tmp_path / "none", garbage, {"round-1": "A", "round-2": "A"})
    assert df.loc[("s:one", "round-1"), "parse_status"] == "failed"
    assert pd.isna(df.loc[("s:one", "round-1"), "verdict"])
    assert df.loc[("debate(s:one | s:two)", ""), "parse_status"] == "ok"
    # paper: round-1 failure -> first-shown (A), counted; both agree at once -> final rests on it
    df, _, _ = _run(tmp_path / "paper", garbage, {"round-1": "A"}, fallback="paper")
    r1 = df.loc[("s:one", "round-1")]
    assert (r1["verdict"], r1["parse_status"], r1["fallback_rule"]) == ("A", "fallback", "first-shown")
    final = df.loc[("debate(s:one | s:two)", "")]
    assert (final["verdict"], final["parse_status"], final["fallback_rule"]) == ("A", "fallback", "depends-on-fallback")
    # previous: a round-2 failure keeps the round-1 verdict
    df, _, _ = _run(tmp_path / "prev", {"round-1": "B", "round-2": "???", "round-3": "B"},
                    {"round-1": "A", "round-2": "A", "round-3": "A"}, fallback="previous")
    r2 = df.loc[("s:one", "round-2")]
    assert (r2["verdict"], r2["fallback_rule"]) == ("B", "previous-round")
    assert df.loc[("s:one", "round-3"), "parse_status"] == "ok"
    assert pd.isna(df.loc[("debate(s:one | s:two)", ""), "fallback_rule"])    # round 3 parsed


def test_order_ba_is_stored_canonical(tmp_path: Path) -> None:
    a, b = Scripted("s:one", {"round-1": "B"}), Scripted("s:two", {"round-1": "B"})
    with RunStore(tmp_path / "run") as store:
        asyncio.run(run_debate_async([ITEM], [a, b], store, DebateSettings(orders=("BA",))))
        df = store.judgments()
    # BA shows response_b first: shown B = response_a = canonical A
    assert set(df["verdict"]) == {"A"}
    assert "Response A:\nbad" in a.seen[0].messages[1]["content"]


def test_sim_debate_summary(tmp_path: Path) -> None:
    items = [PairItem(item_id=f"p{i}", dataset="d", question="q", response_a="a", response_b="b",
                      label="A" if i % 2 else "B") for i in range(30)]
    s = DebateSettings(rounds=3, fallback="paper", repetitions=1)
    n = run_debate(items, ["sim:skill=0.9,seed=1,malformed=0.2", "sim:skill=0.6,seed=2"], tmp_path / "run", s)
    assert n == 60
    with RunStore(tmp_path / "run") as store:
        df = store.judgments()
    summ = debate_summary(df).iloc[0]
    assert summ["n_debates"] == 60 and summ["n_labelled"] == 60
    assert 1.0 <= summ["mean_rounds"] <= 3.0
    assert summ["n_round_fallbacks"] > 0                     # malformed outputs fell back, and it shows
    assert summ["n_final_depending_on_fallback"] > 0
    assert summ["n_final_depending_on_fallback"] <= summ["n_round_fallbacks"]
    assert 0.0 <= summ["round1_accuracy"] <= 1.0 and 0.0 <= summ["final_accuracy"] <= 1.0
    # resume: nothing is debated twice
    assert run_debate(items, ["sim:skill=0.9,seed=1,malformed=0.2", "sim:skill=0.6,seed=2"], tmp_path / "run", s) == 0


def test_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="fallback"):
        DebateSettings(fallback="guess")
    with pytest.raises(ValueError, match="final_rule"):
        DebateSettings(final_rule="coin")


def test_debate_cli_and_run_refusal(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from verdictlab.cli.main import app

    data = tmp_path / "pairs.jsonl"
    with data.open("w") as fh:
        for i in range(5):
            fh.write(json.dumps({"item_id": f"p{i}", "question": "q", "response_a": "a", "response_b": "b",
                                 "label": "A" if i % 2 else "B"}) + "\n")
    cfg = tmp_path / "debate.yaml"
    cfg.write_text("name: deb\ndatasets: [{name: jsonl, path: pairs.jsonl}]\n"
                   "judges: ['sim:skill=0.9,seed=1', 'sim:skill=0.6,seed=2']\nprotocols: [debate]\nrepetitions: 1\n")
    res = CliRunner().invoke(app, ["debate", str(cfg), "--run-dir", str(tmp_path / "run"), "--fallback", "previous"])
    assert res.exit_code == 0, res.output
    assert "10 debate(s) run" in res.output and "round-1 accuracy" in res.output
    # `verdictlab run` refuses the debate protocol instead of running it as one call
    res = CliRunner().invoke(app, ["run", str(cfg)])
    assert res.exit_code != 0 and "verdictlab debate" in res.output


class Flaky(Scripted):
    """Fails its first call with a transient error, then follows the script."""

    def __init__(self, judge_id: str, script: dict[str, str]) -> None:
        super().__init__(judge_id, script)
        self.failed = False

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        from verdictlab.judges.base import JudgeCallError, RetryDecision

        if not self.failed:
            self.failed = True
            raise JudgeCallError("503 upstream busy", RetryDecision.transient())
        return await super().generate(request)


def test_debate_calls_go_through_the_caller(tmp_path: Path) -> None:
    """Issue 10: debate turns are judge calls like any other -- typed retries, attempt accounting and
    the run budget apply (the debate used to have its own retry loop and skip all of them)."""
    from verdictlab.engine.limits import Budget

    a, b = Flaky("s:one", {"round-1": "A"}), Scripted("s:two", {"round-1": "A"})
    with RunStore(tmp_path / "run") as store:
        n = asyncio.run(run_debate_async([ITEM], [a, b], store, DebateSettings(orders=("AB",))))
        att = store.attempts()
        df = store.judgments().set_index(["judge", "step"])
    assert n == 1
    # judge one: a retry then ok (2 attempts); judge two: ok at once -> 3 attempt rows in all
    assert sorted(att["outcome"]) == ["ok", "ok", "retry"]
    assert att.loc[att["outcome"] == "retry", "error_kind"].tolist() == ["transient"]
    assert df.loc[("s:one", "round-1"), "attempts"] == 2 and df.loc[("s:two", "round-1"), "attempts"] == 1
    # a budget of one call: the second debater's turn cannot start, so the debate is not stored
    # (it is redone on resume) and nothing beyond the budget is called
    c, d = Scripted("s:one", {"round-1": "A"}), Scripted("s:two", {"round-1": "A"})
    with RunStore(tmp_path / "run2") as store:
        n = asyncio.run(run_debate_async([ITEM], [c, d], store, DebateSettings(orders=("AB",), concurrency=1),
                                         budget=Budget(max_calls=1)))
        assert n == 0 and store.count() == 0
    assert len(c.seen) + len(d.seen) == 1
