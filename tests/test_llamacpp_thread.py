"""The embedded judge's speed fixes (issue 17), on the real GGUF: every llama.cpp call on one thread,
and the logits memo that lets a repetition skip the forward passes it already made."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from test_llamacpp_judge import _model_available, _request
from verdictlab.datasets import load_dataset
from verdictlab.judges import make_judge
from verdictlab.protocols import get_protocol

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def judge():
    reason = _model_available()
    if reason:
        pytest.skip(reason)
    return make_judge("llamacpp:smollm2-135m")


@pytest.fixture(scope="module")
def item():
    return load_dataset("demo", pairs=1).items[0]


def _count_evals(judge, monkeypatch) -> list[int]:
    """Records the tokens each _eval evaluated (0 for a memo hit)."""
    evaluated: list[int] = []
    inner = judge._eval

    def counted(llm, tokens):
        reused = inner(llm, tokens)
        evaluated.append(len(tokens) - reused)
        return reused

    monkeypatch.setattr(judge, "_eval", counted)
    return evaluated


def test_every_call_runs_on_one_thread(judge, item, monkeypatch) -> None:
    """Defect: asyncio.to_thread put consecutive calls on different pool threads, each with its own
    OpenMP team; the idle team spun on the cores the next call needed (one-token decode 30-36 ms
    instead of 11 ms on 2 cores).  Ten calls from two event loops: one thread."""
    seen: set[int] = set()
    inner = judge._generate_sync

    def recording(request):
        seen.add(threading.get_ident())
        return inner(request)

    monkeypatch.setattr(judge, "_generate_sync", recording)

    async def calls(reps):
        for rep in reps:
            await judge.generate(_request(item, "direct", "AB", rep))

    asyncio.run(calls(range(5)))
    asyncio.run(calls(range(5, 10)))
    assert len(seen) == 1 and threading.get_ident() not in seen


def test_a_repetition_reuses_the_remembered_logits(judge, item, monkeypatch) -> None:
    """The second repetition of a label-only trial evaluates nothing before its answer, and reads the
    same P(A) as a judge that evaluates everything afresh (no prefix reuse, no memo)."""
    evaluated = _count_evals(judge, monkeypatch)
    judge.llama().reset()
    first = asyncio.run(judge.generate(_request(item, "direct", "BA", 0)))
    second = asyncio.run(judge.generate(_request(item, "direct", "BA", 1)))
    assert evaluated[0] > 50 and evaluated[1] == 0
    assert first.choice_probs == second.choice_probs
    judge.reuse_prefix = False
    try:
        fresh = asyncio.run(judge.generate(_request(item, "direct", "BA", 1)))
    finally:
        judge.reuse_prefix = True
    assert fresh.choice_probs is not None and second.choice_probs is not None
    assert fresh.choice_probs["A"] == pytest.approx(second.choice_probs["A"], abs=1e-3)


def test_a_constrained_repetition_with_the_same_verdict_evaluates_no_fixed_text(judge, item, monkeypatch) -> None:
    """vf-json at temperature 0: the verdict is the same every time, so from the second repetition on
    neither the verdict slot nor the fixed text after it (``", "rationale": "``) is evaluated again;
    the answer is the same as the first one's (same seed-free argmax, same greedy rationale)."""
    evaluated = _count_evals(judge, monkeypatch)
    judge.llama().reset()
    outs = [asyncio.run(judge.generate(_request(item, "vf-json", "AB", rep, temperature=0.0,
                                                decoding="constrained"))) for rep in range(3)]
    assert len(evaluated) == 6                       # two slots (verdict, rationale) per call
    assert evaluated[0] > 50 and evaluated[1] > 0    # the first call reads the prompt and the fixed text
    assert evaluated[2:] == [0, 0, 0, 0]
    assert outs[0].text == outs[1].text == outs[2].text
    assert get_protocol("vf-json").parse(outs[2].text).verdict in ("A", "B")


def test_sampling_from_remembered_logits_is_llama_cpps_own_sampling(judge) -> None:
    """_sample_logits (the sampler chain applied to a copy of the logits) draws exactly the token
    llama_sampler_sample draws from the context, seed for seed."""
    llm = judge.llama()
    tokens = llm.tokenize(b"Write one short sentence about the sea:", add_bos=True)
    judge.llama().reset()
    judge._eval(llm, list(tokens))
    drawn = []
    for seed in range(60):
        llm.set_seed(seed)
        a = llm._init_sampler(temp=1.0, **judge._sampling(_DummyRequest())).sample(llm._ctx, -1)
        llm.set_seed(seed)
        b = judge._sample_logits(llm._init_sampler(temp=1.0, **judge._sampling(_DummyRequest())))
        drawn.append((a, b))
    assert all(a == b for a, b in drawn)
    assert len({a for a, _ in drawn}) > 1           # the seeds did draw different tokens
    assert np.array_equal(judge._logits, np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),)))


class _DummyRequest:
    params: dict = {}


def test_a_repetition_that_draws_the_same_tokens_makes_no_forward_pass(judge, item, monkeypatch) -> None:
    """The memo covers every generated position: at temperature 0 the second and third repetitions of
    a constrained vf-json trial (verdict, fixed text, greedy rationale) and of a free direct trial
    call llama.cpp's decode not once, and answer exactly as the first."""
    llm = judge.llama()
    decoded: list[int] = []
    inner = llm.eval

    def counting(tokens):
        decoded.append(len(tokens))
        return inner(tokens)

    monkeypatch.setattr(llm, "eval", counting)
    for pid, decoding in (("vf-json", "constrained"), ("direct", "free")):
        llm.reset()
        outs = []
        for rep in range(3):
            decoded.clear()
            outs.append(asyncio.run(judge.generate(_request(item, pid, "BA", rep, temperature=0.0,
                                                            decoding=decoding))))
            if rep == 0:
                assert sum(decoded) > 50
            else:
                assert decoded == [], (pid, rep, decoded)
        assert outs[0].text == outs[1].text == outs[2].text
        assert outs[0].choice_probs == outs[2].choice_probs


def test_the_grammar_mechanism_always_completes_the_format(judge) -> None:
    """Defect: the grammar's text slot was unbounded while the token cap was an estimate, so a long
    rationale hit the cap mid-format: 4 of these 12 cot-xml calls (bench/local_judge_bench.py
    --grammar: 2 pairs x 2 orders x 3 repetitions, T 0.7) came back unreadable.  Now the grammar bounds
    the text slot in characters and the cap covers the longest output the grammar allows."""
    from verdictlab.judges import JudgeRequest

    proto = get_protocol("cot-xml")
    fmt = proto.output_format()
    assert f"{{0,{fmt.text_max_chars}}}" in fmt.gbnf()
    items = load_dataset("demo", pairs=2).items
    judge.constrain_with = "grammar"
    try:
        texts = []
        for it in items:
            for order in ("AB", "BA"):
                for rep in range(3):
                    req = JudgeRequest(messages=tuple(proto.messages(it, order)), temperature=0.7,
                                       max_tokens=proto.max_tokens(), stop=proto.stop(), seed=rep,
                                       decoding="constrained", output_format=fmt,
                                       metadata={"dataset": "demo", "item_id": it.item_id, "protocol": "cot-xml",
                                                 "order": order, "temperature": 0.7, "rep": rep, "step": ""})
                    texts.append(asyncio.run(judge.generate(req)).text)
    finally:
        judge.constrain_with = "slots"
    unread = [t for t in texts if proto.parse(t).verdict is None]
    assert unread == [], unread
