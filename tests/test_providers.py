"""API judge backends against the fake OpenAI-compatible server (and a mock Anthropic transport)."""

from __future__ import annotations

import asyncio
import json
import math
import sys
import uuid
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from verdictlab.judges import JudgeCallError, JudgeConfigError, JudgeRequest, RetryKind, make_judge
from verdictlab.judges.openai_api import (
    OpenAIJudge,
    choice_probs_from_top_logprobs,
    redact,
    retry_after_seconds,
)
from verdictlab.judges.prices import PriceTable
from verdictlab.testing import FakeConfig, FakeOpenAIServer

KEY = f"sk-test-{uuid.uuid4()}"
LABEL_PROMPT = ({"role": "system", "content": "You compare two answers."},
                {"role": "user", "content": "Which response is better? Reply with one letter only: A or B."})


@pytest.fixture()
def server():
    with FakeOpenAIServer(FakeConfig(api_key=KEY, seed=7)) as srv:
        yield srv


@pytest.fixture()
def key_env(monkeypatch):
    monkeypatch.setenv("VERDICTLAB_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def run(coro):
    return asyncio.run(coro)


async def _call(judge, request):
    try:
        return await judge.generate(request)
    finally:
        await judge.aclose()


async def _error(judge, request) -> JudgeCallError:
    with pytest.raises(JudgeCallError) as e:
        await _call(judge, request)
    return e.value


# -- openai-compatible: mapping, usage, cost --------------------------------------------------------
def test_params_mapped_and_usage_recorded(server, key_env) -> None:
    prices = PriceTable({("openai-compatible", "fake-judge"): (1.0, 2.0)})
    judge = OpenAIJudge("openai-compatible:fake-judge@x", "fake-judge", provider="openai-compatible",
                        base_url=server.base_url, key_env="VERDICTLAB_API_KEY", prices=prices)
    req = JudgeRequest(messages=LABEL_PROMPT, temperature=0.7, max_tokens=3, seed=11, stop=("\n",),
                       params={"top_p": 0.9})
    resp = run(_call(judge, req))
    body = server.bodies[-1]
    assert body["model"] == "fake-judge"
    assert body["messages"] == [dict(m) for m in LABEL_PROMPT]
    assert body["temperature"] == 0.7 and body["seed"] == 11 and body["stop"] == ["\n"]
    assert body["max_tokens"] == 3 and "max_completion_tokens" not in body
    assert body["top_p"] == 0.9                       # extra params pass through
    assert "logprobs" not in body                     # not label-only, not requested
    assert resp.text in ("A", "B")
    # fake usage: prompt_tokens = len(joined prompt) // 4, completion = max(1, len(text) // 4) = 1
    prompt = "\n".join(m["content"] for m in LABEL_PROMPT)
    assert resp.tokens_in == len(prompt) // 4 and resp.tokens_out == 1
    # cost: ($1 * tokens_in + $2 * 1) / 1e6
    assert resp.cost_usd == pytest.approx((resp.tokens_in * 1.0 + 2.0) / 1e6)
    assert resp.latency_s is not None and resp.latency_s > 0
    assert resp.notes == []


def test_unknown_price_is_none_not_zero(server, key_env) -> None:
    judge = make_judge(f"openai-compatible:fake-judge@{server.base_url}")
    resp = run(_call(judge, JudgeRequest(messages=LABEL_PROMPT)))
    assert resp.tokens_in is not None and resp.cost_usd is None


def test_openai_provider_uses_max_completion_tokens_and_skips_temperature_for_reasoning(
        server, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    # provider "openai" pointed at the fake server: o3-mini is a known reasoning family
    judge = OpenAIJudge("openai:o3-mini", "o3-mini", provider="openai", base_url=server.base_url)
    resp = run(_call(judge, JudgeRequest(messages=LABEL_PROMPT, temperature=0.5, max_tokens=5)))
    body = server.bodies[-1]
    # the 5-token limit is raised: reasoning tokens count against it
    assert "temperature" not in body and body["max_completion_tokens"] == 1024 and "max_tokens" not in body
    assert server.stats.get("rejected_temperature", 0) == 0       # never sent, never rejected
    assert any("temperature 0.5" in n for n in resp.notes)
    assert any("raised from 5 to 1024" in n for n in resp.notes)
    # a plain chat model on the openai provider: max_completion_tokens as asked, temperature sent
    judge = OpenAIJudge("openai:gpt-4o-mini", "gpt-4o-mini", provider="openai", base_url=server.base_url)
    resp = run(_call(judge, JudgeRequest(messages=LABEL_PROMPT, temperature=0.5, max_tokens=5)))
    body = server.bodies[-1]
    assert body["max_completion_tokens"] == 5 and body["temperature"] == 0.5 and resp.notes == []


def test_temperature_rejecting_model_retries_once_and_notes(server, key_env) -> None:
    # the fake server answers 400 (param=temperature) for models matching "reasoner*"
    judge = make_judge(f"openai-compatible:reasoner-1@{server.base_url}")

    async def two_calls():
        try:
            r1 = await judge.generate(JudgeRequest(messages=LABEL_PROMPT, temperature=0.7))
            r2 = await judge.generate(JudgeRequest(messages=LABEL_PROMPT, temperature=0.7))
            return r1, r2
        finally:
            await judge.aclose()

    r1, r2 = run(two_calls())
    assert r1.text in ("A", "B") and r2.text in ("A", "B")
    assert any("temperature" in n and "rejected" in n for n in r1.notes)
    assert any("temperature" in n for n in r2.notes)           # every affected row says so
    # one rejected request in total: the judge remembered the rejection for the second call
    assert server.stats["rejected_temperature"] == 1
    assert server.stats["requests"] == 3
    assert "temperature" in judge.describe()["dropped_params"]


# -- log-probabilities ------------------------------------------------------------------------------
def test_label_only_logprobs_give_choice_probs(server, key_env) -> None:
    judge = make_judge(f"openai-compatible:fake-judge@{server.base_url}")
    resp = run(_call(judge, JudgeRequest(messages=LABEL_PROMPT, verdict_choices=("A", "B"))))
    body = server.bodies[-1]
    assert body["logprobs"] is True and body["top_logprobs"] == 5
    # fake top-5 of the first token (p = logprob_top = 0.8): chosen 0.8, other (1-0.8)*0.9 = 0.18,
    # " chosen" 0.01, "The" 0.006, "**" 0.002.  Pool "X" and " X": chosen 0.81, other 0.18;
    # normalised over the two choices: 0.81/0.99 = 0.818181..., 0.18/0.99 = 0.181818...
    chosen = resp.text
    other = "B" if chosen == "A" else "A"
    assert resp.choice_probs is not None
    assert resp.choice_probs[chosen] == pytest.approx(0.81 / 0.99)
    assert resp.choice_probs[other] == pytest.approx(0.18 / 0.99)
    assert resp.top_logprobs is not None and len(resp.top_logprobs[0]) == 5
    assert resp.notes == []


def test_missing_choice_in_top_k_is_noted(server, key_env) -> None:
    server.config.logprobs_omit_other = True
    judge = make_judge(f"openai-compatible:fake-judge@{server.base_url}")
    resp = run(_call(judge, JudgeRequest(messages=LABEL_PROMPT, verdict_choices=("A", "B"))))
    other = "B" if resp.text == "A" else "A"
    assert resp.choice_probs == {resp.text: 1.0, other: 0.0}
    assert any("not in the first token's top" in n and other in n for n in resp.notes)


def test_choice_probs_helper_worked_values() -> None:
    # exp(-0.5) = 0.60653, exp(-1.5) = 0.22313, " A" exp(-3) = 0.04979 pooled with "A":
    # A = 0.60653 + 0.04979 = 0.65632; B = 0.22313; total 0.87945 -> A = 0.74628, B = 0.25372
    probs, notes = choice_probs_from_top_logprobs({"A": -0.5, "B": -1.5, " A": -3.0, "C": -2.0}, ("A", "B"))
    assert probs is not None and notes == []
    assert probs["A"] == pytest.approx(0.65632 / 0.87945, abs=1e-4)
    assert probs["B"] == pytest.approx(0.22313 / 0.87945, abs=1e-4)
    assert math.isclose(sum(probs.values()), 1.0)
    none, notes = choice_probs_from_top_logprobs({"The": -0.1}, ("A", "B"))
    assert none is None and "none of the verdict choices" in notes[0]


# -- errors -> typed decisions ----------------------------------------------------------------------
def test_429_is_rate_limit_with_retry_after(server, key_env) -> None:
    server.config.p_rate_limit = 1.0
    server.config.retry_after_s = 0.25          # sent as retry-after-ms: 250
    err = run(_error(make_judge(f"openai-compatible:fake-judge@{server.base_url}"),
                     JudgeRequest(messages=LABEL_PROMPT)))
    assert err.decision.kind is RetryKind.RATE_LIMIT
    assert err.decision.retry_after_s == pytest.approx(0.25)


@pytest.mark.parametrize("knob", ["p_server_error", "p_malformed"])
def test_5xx_and_malformed_are_transient(server, key_env, knob) -> None:
    setattr(server.config, knob, 1.0)
    err = run(_error(make_judge(f"openai-compatible:fake-judge@{server.base_url}"),
                     JudgeRequest(messages=LABEL_PROMPT)))
    assert err.decision.kind is RetryKind.TRANSIENT


def test_hang_times_out_as_transient(server, key_env) -> None:
    server.config.p_hang = 1.0
    judge = make_judge(f"openai-compatible:fake-judge@{server.base_url}")
    judge.timeout_s = 0.3
    err = run(_error(judge, JudgeRequest(messages=LABEL_PROMPT)))
    assert err.decision.kind is RetryKind.TRANSIENT and "Timeout" in str(err)


def test_400_is_fatal(server, key_env) -> None:
    err = run(_error(make_judge(f"openai-compatible:bad-model@{server.base_url}"),
                     JudgeRequest(messages=LABEL_PROMPT)))
    assert err.decision.kind is RetryKind.FATAL and "400" in str(err)
    assert server.stats["bad_request"] == 1       # no retry inside the judge


def test_401_is_fatal_and_key_never_in_message(server, monkeypatch) -> None:
    wrong = f"sk-test-{uuid.uuid4()}"
    monkeypatch.setenv("VERDICTLAB_API_KEY", wrong)
    judge = make_judge(f"openai-compatible:fake-judge@{server.base_url}")
    err = run(_error(judge, JudgeRequest(messages=LABEL_PROMPT)))
    assert err.decision.kind is RetryKind.FATAL and "401" in str(err)
    assert wrong not in str(err) and wrong not in repr(err)
    assert err.__cause__ is None and err.__suppress_context__


# -- ids, keys, description ------------------------------------------------------------------------
def test_describe_has_url_and_model_but_no_key(server, key_env) -> None:
    judge = make_judge(f"openai-compatible:fake-judge@{server.base_url}")
    d = judge.describe()
    assert d["base_url"] == server.base_url and d["model"] == "fake-judge"
    assert d["key_env"] == "VERDICTLAB_API_KEY"
    assert KEY not in json.dumps(d) and KEY not in repr(vars(judge))


def test_key_env_fragment_and_missing_key(server, monkeypatch) -> None:
    monkeypatch.setenv("MY_GATEWAY_KEY", KEY)
    judge = make_judge(f"openai-compatible:fake-judge@{server.base_url}#key_env=MY_GATEWAY_KEY")
    assert judge.base_url == server.base_url                   # the fragment is not part of the URL
    assert run(_call(judge, JudgeRequest(messages=LABEL_PROMPT))).text in ("A", "B")
    monkeypatch.delenv("MY_GATEWAY_KEY")
    with pytest.raises(JudgeConfigError, match="MY_GATEWAY_KEY"):
        make_judge(f"openai-compatible:fake-judge@{server.base_url}#key_env=MY_GATEWAY_KEY")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("VERDICTLAB_API_KEY", raising=False)
    with pytest.raises(JudgeConfigError, match="OPENAI_API_KEY"):
        make_judge("openai:gpt-4o-mini")
    with pytest.raises(JudgeConfigError, match="MODEL@BASE_URL"):
        make_judge("openai-compatible:no-url-here")


def test_openai_key_is_not_sent_to_other_hosts(server, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("VERDICTLAB_API_KEY", raising=False)
    err = run(_error(make_judge(f"openai-compatible:fake-judge@{server.base_url}"),
                     JudgeRequest(messages=LABEL_PROMPT)))
    assert "401" in str(err)          # the fake server saw no (valid) key


def test_missing_sdk_gives_install_hint(server, key_env, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)    # import openai -> ImportError
    judge = make_judge(f"openai-compatible:fake-judge@{server.base_url}")
    with pytest.raises(JudgeConfigError, match="pip install"):
        run(judge.generate(JudgeRequest(messages=LABEL_PROMPT)))


def test_redact_and_retry_after_parsing() -> None:
    assert redact(f"bad key {KEY} here", [KEY]) == "bad key [redacted] here"   # one scrubber, one mask
    leaked = f"sk-{uuid.uuid4().hex}"  # generated: no key-shaped literal in the repo
    assert leaked[:15] not in redact(f"key {leaked} leaked")
    assert retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= (retry_after_seconds({"retry-after": when}) or 0) <= 31
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


# -- anthropic (mock transport; the SDK's own HTTP client) --------------------------------------------
def _anthropic_judge(monkeypatch, handler, model="claude-3-5-haiku-latest"):
    httpx2 = pytest.importorskip("httpx2")
    pytest.importorskip("anthropic")
    from verdictlab.judges.anthropic_api import AnthropicJudge

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    return AnthropicJudge(f"anthropic:{model}", model, http_client=client)


def test_anthropic_params_usage_and_notes(monkeypatch) -> None:
    import httpx2

    seen = {}

    def handler(request):
        seen["body"] = json.loads(request.content)
        # SDK versions differ: x-api-key or a bearer token
        seen["key"] = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix(
            "Bearer ")
        return httpx2.Response(200, json={
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-3-5-haiku-latest",
            "content": [{"type": "text", "text": "B"}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 1000, "output_tokens": 10}})

    judge = _anthropic_judge(monkeypatch, handler)
    resp = run(_call(judge, JudgeRequest(messages=LABEL_PROMPT, temperature=1.5, max_tokens=4, seed=3,
                                         stop=("</judgment>", "\n"), logprobs=True)))
    body = seen["body"]
    assert seen["key"] == KEY
    assert body["system"] == LABEL_PROMPT[0]["content"]
    assert body["messages"] == [LABEL_PROMPT[1]]
    assert body["max_tokens"] == 4 and body["temperature"] == 1.0 and body["stop_sequences"] == ["</judgment>"]
    assert "seed" not in body
    assert resp.text == "B" and resp.tokens_in == 1000 and resp.tokens_out == 10
    # claude-3-5-haiku: $0.80 in, $4 out per 1M -> (1000*0.8 + 10*4)/1e6 = 0.00084
    assert resp.cost_usd == pytest.approx(0.00084)
    notes = " | ".join(resp.notes)
    assert "temperature 1.5" in notes and "seed" in notes and "log-prob" in notes
    assert "whitespace-only stop" in notes           # Anthropic rejects "\n" as a stop sequence
    assert KEY not in json.dumps(judge.describe())


@pytest.mark.parametrize("status, headers, kind, after", [
    (429, {"retry-after": "2"}, RetryKind.RATE_LIMIT, 2.0),
    (529, {}, RetryKind.TRANSIENT, None),
    (500, {}, RetryKind.TRANSIENT, None),
    (400, {}, RetryKind.FATAL, None),
    (401, {}, RetryKind.FATAL, None),
])
def test_anthropic_error_mapping(monkeypatch, status, headers, kind, after) -> None:
    import httpx2

    def handler(request):
        return httpx2.Response(status, headers=headers,
                               json={"type": "error", "error": {"type": "x", "message": f"fake {status}"}})

    err = run(_error(_anthropic_judge(monkeypatch, handler), JudgeRequest(messages=LABEL_PROMPT)))
    assert err.decision.kind is kind and err.decision.retry_after_s == after
    assert KEY not in str(err)


def test_anthropic_missing_key(monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(JudgeConfigError, match="ANTHROPIC_API_KEY"):
        make_judge("anthropic:claude-3-5-haiku-latest")


# -- vllm (no GPU: absent package, and the batching logic with a stand-in engine) --------------------
def test_vllm_absent_gives_clear_error(monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "vllm" else real(n, *a))
    with pytest.raises(JudgeConfigError, match="pip install vllm"):
        make_judge("vllm:/models/some-model")


def test_vllm_id_options(monkeypatch) -> None:
    import importlib.util

    from verdictlab.judges.vllm_offline import VLLMJudge

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: object() if n == "vllm" else real(n, *a))
    j = make_judge("vllm:/models/qwen|tensor_parallel_size=2,gpu_memory_utilization=0.8,batch_size=16")
    assert isinstance(j, VLLMJudge) and j.model == "/models/qwen" and j.batch_size == 16
    assert j.engine_kwargs == {"tensor_parallel_size": 2, "gpu_memory_utilization": 0.8}
    with pytest.raises(JudgeConfigError, match="name=value"):
        make_judge("vllm:/models/qwen|oops")


def test_vllm_batches_requests_and_maps_outputs() -> None:
    from types import SimpleNamespace as NS

    from verdictlab.judges.vllm_offline import VLLMJudge

    calls = []

    class FakeLLM:
        def chat(self, conversations, params, use_tqdm=False):
            calls.append(len(conversations))
            outs = []
            for conv, sp in zip(conversations, params, strict=True):
                word = conv[-1]["content"][-1]          # echo the last character
                lp = {1: NS(logprob=math.log(0.6), decoded_token=word),
                      2: NS(logprob=math.log(0.3), decoded_token="B" if word == "A" else "A")}
                outs.append(NS(prompt_token_ids=[0] * 7,
                               outputs=[NS(text=word, token_ids=[1], logprobs=[lp] if sp["logprobs"] else None)]))
            return outs

    judge = VLLMJudge("vllm:x", "x", llm=FakeLLM(), sampling_params_cls=dict, batch_size=4,
                      batch_window_s=0.05)

    async def go():
        reqs = [JudgeRequest(messages=({"role": "user", "content": f"q{i} A" if i % 2 else f"q{i} B"},),
                             verdict_choices=("A", "B")) for i in range(10)]
        try:
            return await asyncio.gather(*(judge.generate(r) for r in reqs))
        finally:
            await judge.aclose()

    out = run(go())
    assert sum(calls) == 10 and max(calls) <= 4 and len(calls) >= 3      # 10 requests in batches of <= 4
    assert [r.text for r in out] == ["B" if i % 2 == 0 else "A" for i in range(10)]
    # first-token probs 0.6 (echoed) and 0.3 (other): normalised 0.6/0.9 = 2/3
    assert out[1].choice_probs == pytest.approx({"A": 2 / 3, "B": 1 / 3})
    assert out[0].tokens_in == 7 and out[0].cost_usd == 0.0


# -- both HTTP transports behave the same ------------------------------------------------------------
@pytest.mark.parametrize("transport", ["httpx", "aiohttp", "aiohttp-direct"])
def test_transports_map_faults_identically(server, key_env, monkeypatch, transport) -> None:
    if transport.startswith("aiohttp"):
        pytest.importorskip("aiohttp")
    monkeypatch.setenv("VERDICTLAB_HTTP_TRANSPORT", transport)

    async def go():
        judge = make_judge(f"openai-compatible:fake-judge@{server.base_url}")
        judge.timeout_s = 0.3
        assert judge.describe()["transport"] == transport        # what the run meta records, before any call
        out = {}
        try:
            ok = await judge.generate(JudgeRequest(messages=LABEL_PROMPT, verdict_choices=("A", "B")))
            out["ok"] = (ok.text, ok.choice_probs is not None)
            assert judge.describe()["transport"] == transport
            for knob in ("p_rate_limit", "p_server_error", "p_malformed", "p_hang"):
                setattr(server.config, knob, 1.0)
                try:
                    await judge.generate(JudgeRequest(messages=LABEL_PROMPT))
                except JudgeCallError as e:
                    out[knob] = (e.decision.kind, e.decision.retry_after_s)
                setattr(server.config, knob, 0.0)
        finally:
            await judge.aclose()
        return out

    server.config.retry_after_s = 0.5
    out = run(go())
    assert out["ok"][0] in ("A", "B") and out["ok"][1]
    assert out["p_rate_limit"] == (RetryKind.RATE_LIMIT, 0.5)
    assert out["p_server_error"] == (RetryKind.TRANSIENT, None)
    assert out["p_malformed"] == (RetryKind.TRANSIENT, None)
    assert out["p_hang"] == (RetryKind.TRANSIENT, None)


@pytest.mark.parametrize("setting, expected", [(None, "aiohttp-direct"), ("aiohttp-direct", "aiohttp-direct"),
                                               ("aiohttp", "aiohttp"), ("httpx", "httpx")])
def test_the_transport_described_before_a_call_is_the_client_the_calls_use(server, key_env, monkeypatch, setting,
                                                                             expected) -> None:
    """Regression: the run meta (written from ``describe()`` before the first call) said "httpx" while
    the calls went through another client.  The default for an ``http://`` judge posts on its own aiohttp
    session (the SDK client is then never used for a call); otherwise the SDK client holds exactly the
    client class described."""
    import openai

    pytest.importorskip("aiohttp")
    if setting is None:
        monkeypatch.delenv("VERDICTLAB_HTTP_TRANSPORT", raising=False)
    else:
        monkeypatch.setenv("VERDICTLAB_HTTP_TRANSPORT", setting)
    judge = make_judge(f"openai-compatible:fake-judge@{server.base_url}")
    before = judge.describe()["transport"]
    run(_call(judge, JudgeRequest(messages=LABEL_PROMPT)))
    http_client = judge.client()._client
    posted_directly = judge._direct is not None
    run(judge.aclose())
    assert before == judge.describe()["transport"] == expected
    assert posted_directly == (expected == "aiohttp-direct")
    if expected != "aiohttp-direct":
        assert isinstance(http_client, openai.DefaultAioHttpClient if expected == "aiohttp" else openai.DefaultAsyncHttpxClient)


def test_an_unknown_or_removed_transport_setting_is_refused(key_env, monkeypatch) -> None:
    monkeypatch.setenv("VERDICTLAB_HTTP_TRANSPORT", "lean")
    with pytest.raises(JudgeConfigError, match="must be auto, aiohttp-direct, aiohttp or httpx"):
        make_judge("openai-compatible:fake-judge@http://127.0.0.1:9/v1")


# -- the fake server itself ----------------------------------------------------------------------------
def test_fake_server_process_knobs_stats_and_chunked_bodies() -> None:
    import urllib.request

    from verdictlab.testing import FakeOpenAIProcess

    with FakeOpenAIProcess(FakeConfig(api_key=KEY, reply_format="xml")) as proc:
        url = proc.base_url + "/chat/completions"
        body = json.dumps({"model": "fake-judge", "messages": [{"role": "user", "content": "A or B?"}],
                           "stop": ["</judgment>"]}).encode()

        def post(data, key=KEY):
            hdrs = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
            req = urllib.request.Request(url, data=data, headers=hdrs, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    return r.status, json.loads(r.read())
            except urllib.error.HTTPError as e:
                return e.code, json.loads(e.read())

        def post_chunked(data):   # two chunks, then the terminating zero-size chunk
            import socket

            half = len(data) // 2
            payload = (f"{half:x}\r\n".encode() + data[:half] + b"\r\n"
                       + f"{len(data) - half:x}\r\n".encode() + data[half:] + b"\r\n0\r\n\r\n")
            host, port = proc.base_url.split("//")[1].split("/")[0].split(":")
            with socket.create_connection((host, int(port)), timeout=10) as sock:
                sock.sendall(f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer "
                             f"{KEY}\r\nTransfer-Encoding: chunked\r\n\r\n".encode() + payload)
                return sock.recv(4096).split(b" ")[1]

        status, out = post(body)
        text = out["choices"][0]["message"]["content"]
        # XML reply cut at the stop sequence, as a real server does
        assert status == 200 and text.startswith("<judgment><winner>") and not text.endswith("</judgment>")
        assert post_chunked(body) == b"200"
        assert post(body, key="sk-wrong")[0] == 401
        proc.configure(p_rate_limit=1.0)
        assert post(body)[0] == 429
        assert proc.stats == {"requests": 4, "ok": 2, "unauthorized": 1, "rate_limit": 1}
        proc.reset()
        assert proc.stats == {}


@pytest.mark.parametrize("transport", ["aiohttp-direct", "aiohttp", "httpx"])
def test_every_transport_drops_a_rejected_param_names_the_key_and_a_refused_port(server, key_env, monkeypatch,
                                                                                  transport) -> None:
    """The direct aiohttp path builds the SDK's typed errors itself: a 400 naming ``param`` drops that
    parameter and retries once, a 401 is fatal and names the variable read, a refused connection is named
    as such -- the same on every transport."""
    import socket

    pytest.importorskip("aiohttp")
    monkeypatch.setenv("VERDICTLAB_HTTP_TRANSPORT", transport)
    judge = make_judge(f"openai-compatible:reasoner-1@{server.base_url}")
    resp = run(_call(judge, JudgeRequest(messages=LABEL_PROMPT, temperature=0.7)))
    assert resp.text in ("A", "B") and any("temperature" in n and "rejected" in n for n in resp.notes)
    assert server.stats["rejected_temperature"] == 1 and judge.describe()["transport"] == transport

    monkeypatch.setenv("VERDICTLAB_API_KEY", "wrong-" + KEY[::-1])
    err = run(_error(make_judge(f"openai-compatible:fake-judge@{server.base_url}"),
                     JudgeRequest(messages=LABEL_PROMPT)))
    assert err.decision.kind == RetryKind.FATAL and "HTTP 401" in str(err) and "VERDICTLAB_API_KEY" in str(err)
    assert KEY[::-1] not in str(err)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]          # closed again: nothing listens there
    err = run(_error(make_judge(f"openai-compatible:fake-judge@http://127.0.0.1:{port}/v1"),
                     JudgeRequest(messages=LABEL_PROMPT)))
    assert err.decision.kind == RetryKind.TRANSIENT
    assert f"connection refused: cannot connect to http://127.0.0.1:{port}/v1" in str(err)


def test_a_judge_that_cannot_post_directly_reads_aiohttp_direct_as_the_sdks_aiohttp(monkeypatch) -> None:
    """``aiohttp-direct`` is for chat-completions judges only: the Anthropic judge (``direct=False``)
    forced to it uses the SDK's aiohttp client, and says so; an ``https://`` chat judge is not direct
    unless forced."""
    import openai

    from verdictlab.judges.openai_api import choose_transport

    pytest.importorskip("aiohttp")
    monkeypatch.setenv("VERDICTLAB_HTTP_TRANSPORT", "aiohttp-direct")
    assert choose_transport(openai, "http://127.0.0.1:9/v1", direct=False) == "aiohttp"
    assert choose_transport(openai, "https://api.example.com/v1", direct=True) == "aiohttp-direct"
    monkeypatch.delenv("VERDICTLAB_HTTP_TRANSPORT")
    assert choose_transport(openai, "https://api.example.com/v1", direct=True) == "aiohttp"
    assert choose_transport(openai, "http://127.0.0.1:9/v1", direct=True) == "aiohttp-direct"
