"""The simulated judge writes its own answers (judges/sim_answers.py): for every registered protocol, a
well-formed answer parses with status ``ok`` and carries the verdict written, and no malformed answer
parses.  The protocols themselves hold no simulated-judge hook."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from verdictlab.core.items import PairItem, PointItem
from verdictlab.judges import JudgeCallError, JudgeRequest, make_judge
from verdictlab.judges.sim_answers import answer_style
from verdictlab.protocols import PAIRWISE_IDS, ParseResult, Protocol, get_protocol, protocol_ids
from verdictlab.protocols.output_format import OutputFormat
from verdictlab.protocols.registry import PROTOCOLS, register_protocol

RATIONALE = 'It is right; the other <is> "wrong".'


def _verdicts(pid: str) -> tuple[str, ...]:
    if pid.startswith("rubric"):
        return ("PASS", "FAIL", "UNKNOWN")
    if pid.startswith("transcript"):
        return tuple(get_protocol(pid).verdict_choices)
    if pid.startswith("pointwise"):
        return tuple(str(g) for g in get_protocol(pid).scale)  # type: ignore[attr-defined]
    return ("A", "B")


@pytest.mark.parametrize("pid", [*protocol_ids(), "pointwise@0-2"])
def test_every_protocol_parses_the_sim_answer_it_is_given(pid: str) -> None:
    p, style = get_protocol(pid), answer_style(pid)
    for verdict in _verdicts(pid):
        res = p.parse(style.write(verdict, RATIONALE))
        assert (res.verdict, res.status) == (verdict, "ok"), (pid, verdict, res)
    for u in (0.0, 0.34, 0.67, 0.99):
        assert p.parse(style.malformed_answer(u)).status == "failed", (pid, style.malformed_answer(u))


@pytest.mark.parametrize("pid", PAIRWISE_IDS)
@pytest.mark.parametrize("verdict", ["A", "B"])
def test_pairwise_answers_parse_with_and_without_the_stop_sequence(pid: str, verdict: str) -> None:
    p = get_protocol(pid)
    text = answer_style(pid).write(verdict, RATIONALE)
    assert p.parse(text) == ParseResult(verdict, "ok", "")
    for s in p.stop():
        if s.strip():
            cut = p.parse(text[: -len(s)])   # what a backend returns: the stop string is cut off
            assert (cut.verdict, cut.status) == (verdict, "ok") and "restored" in cut.detail


def test_the_protocol_base_class_has_no_simulated_judge_hook() -> None:
    for hook in ("render", "render_malformed", "sim_verdict"):
        assert not hasattr(Protocol, hook)
        for pid in protocol_ids():
            assert not hasattr(get_protocol(pid), hook), (pid, hook)


def test_an_id_with_a_file_argument_is_answered_without_reading_the_file() -> None:
    # rubric@FILE resolves next to the config; the simulated judge answers like `rubric` and opens nothing
    style = answer_style("rubric@/no/such/criteria.yaml")
    assert style.write("PASS", "x") == "<reasoning>x</reasoning><result>PASS</result>"
    assert answer_style("vf-json@/no/such/wording.yaml").write("A", "x") == '{"winner": "A", "rationale": "x"}'


class _Yes(Protocol):
    id = "toy-yes"

    def output_format(self) -> OutputFormat:
        return OutputFormat(kind="xml", fields=("why", "winner"), root="answer")


def test_a_protocol_of_your_own_is_answered_through_its_output_format() -> None:
    register_protocol("toy-yes", lambda **kw: _Yes())
    try:
        assert answer_style("toy-yes").write("B", "x") == "<answer><why>x</why><winner>B</winner></answer>"
    finally:
        PROTOCOLS.unregister("toy-yes")


def _request(protocol: str, item: Any, order: str = "AB") -> JudgeRequest:
    return JudgeRequest(messages=({"role": "user", "content": "q"},), item=item,
                        metadata={"dataset": item.dataset, "item_id": item.item_id, "protocol": protocol,
                                  "order": order, "temperature": 0.0, "rep": 0, "step": ""})


def test_the_sim_judge_answers_from_the_item_on_the_request() -> None:
    judge = make_judge("sim:skill=1")
    pair = PairItem(item_id="x", dataset="d", question="q", response_a="a", response_b="b", label="A")
    # skill 1: the labelled winner, in shown terms (canonical A is shown second in BA)
    assert asyncio.run(judge.generate(_request("direct", pair, "AB"))).text == "A"
    assert asyncio.run(judge.generate(_request("direct", pair, "BA"))).text == "B"
    point = PointItem(item_id="y", dataset="p", question="q", response="r", label="FAIL")
    assert "<result>FAIL</result>" in asyncio.run(judge.generate(_request("rubric", point))).text


def test_an_unknown_protocol_is_a_fatal_call_error() -> None:
    judge = make_judge("sim:skill=1")
    pair = PairItem(item_id="x", dataset="d", question="q", response_a="a", response_b="b", label="A")
    with pytest.raises(JudgeCallError, match="no answer style for protocol 'no-such'") as exc:
        asyncio.run(judge.generate(_request("no-such", pair)))
    assert not exc.value.decision.retry
