"""Calls made elsewhere go through the caller's public API: ``JudgeCaller.reserve`` before the request is
sent, ``JudgeCaller.record`` when its result comes back -- budget, call count, attempt rows, cache entries,
scrubbing and the retry decision by the same rules as ``JudgeCaller.call``.

The unit tests pin the two methods with values worked out by hand; the executor tests (provider batch
jobs, offline batch files; Ray Data in ``test_ray_executor.py``) would fail if an executor bypassed the
caller: every reservation and every recorded result is the caller's (spied on the class), the store
holds exactly one attempt row per recorded result, cache entries come with the caller's cache key, and
replacing the caller's retry rule changes what the executor retries."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from verdictlab.engine.caller import CallRecords, CallResult, JudgeCaller, RetryLater, RunControl
from verdictlab.engine.config import JudgeSpec
from verdictlab.engine.limits import Budget
from verdictlab.judges.base import JudgeAPI, JudgeResponse, RetryDecision
from verdictlab.judges.prices import PriceTable

# -- the two methods -----------------------------------------------------------------------------------


def _caller(*, max_retries: int = 1, max_calls: int | None = None) -> tuple[JudgeCaller, CallRecords]:
    judge = JudgeAPI("openai:m", "m")
    judge.provider = "openai"
    prices = PriceTable({("openai", "m"): (1.0, 2.0)})       # $ per 1M tokens in / out
    prices.batch_rates = {"openai": 0.5}
    log = CallRecords()
    caller = JudgeCaller(judge, JudgeSpec(id="openai:m", max_retries=max_retries), budget=Budget(max_calls=max_calls),
                         prices=prices, log=log, control=RunControl())
    return caller, log


def test_reserve_counts_the_call_and_numbers_the_attempts() -> None:
    caller, _ = _caller(max_calls=3)
    assert [caller.reserve("t1"), caller.reserve("t2"), caller.reserve("t1")] == [1, 1, 2]
    assert caller.spend.calls == 3 and caller.budget.calls == 3
    assert caller.reserve("t3") is None                        # max_calls = 3 reached
    assert caller.control.stopped and "call budget reached (3 of max_calls=3)" in caller.control.reasons[0]
    assert caller.spend.calls == 3


def test_a_halted_judge_or_a_stopped_run_reserves_nothing() -> None:
    caller, _ = _caller(max_calls=5)
    caller.halted = "halted for the test"
    assert caller.reserve("t1") is None and caller.budget.calls == 0 and caller.spend.calls == 0
    caller.halted = None
    caller.control.halt("stopped for the test")
    assert caller.reserve("t1") is None and caller.budget.calls == 0


def test_record_an_answer_charges_logs_caches_and_scrubs() -> None:
    caller, log = _caller()
    key = f"sk-{uuid.uuid4().hex}"
    assert caller.reserve("t1") == 1
    res = caller.record("t1", response=JudgeResponse(text=f"A, says {key}", tokens_in=1000, tokens_out=10**30),
                        cache_key="k1", latency_s=0.25)
    assert isinstance(res, CallResult) and res.attempts == 1 and res.response is not None
    assert key not in res.response.text and "[redacted]" in res.response.text
    # tokens_out 10**30 is not a sane count: dropped with a note.  cost = (1000 * $1 + 0 * $2) / 1e6
    assert res.response.tokens_out is None and any("tokens_out" in n for n in res.response.notes)
    assert res.cost_usd == pytest.approx(0.001)
    assert caller.budget.tokens == 1000 and caller.budget.usd == pytest.approx(0.001)
    assert (caller.spend.tokens_in, caller.spend.tokens_out) == (1000, 0)
    attempts, cache = log.drain()
    assert attempts == [{"trial_id": "t1", "judge": "openai:m", "attempt": 1, "outcome": "ok", "latency_s": 0.25}]
    assert [(k, j) for k, j, _ in cache] == [("k1", "openai:m")] and key not in cache[0][2]


def test_record_at_the_batch_price_and_without_a_cache_key() -> None:
    caller, log = _caller()
    caller.reserve("t1")
    res = caller.record("t1", response=JudgeResponse(text="B", tokens_in=1000, tokens_out=500, cost_usd=9.0),
                        batch_price=True)
    # list price (1000 * 1 + 500 * 2) / 1e6 = 0.002, times the batch rate 0.5 = 0.001 (the live cost 9.0 is replaced)
    assert isinstance(res, CallResult) and res.cost_usd == pytest.approx(0.001)
    assert res.response is not None and res.response.cost_usd == pytest.approx(0.001)
    assert log.drain()[1] == []


def test_the_caller_decides_retries_by_its_one_rule() -> None:
    caller, log = _caller(max_retries=1)
    caller.reserve("t1")
    first = caller.record("t1", error="HTTP 500", decision=RetryDecision.transient())
    assert first == RetryLater(1, "HTTP 500")                  # attempt 1 <= max_retries 1: retry
    assert caller.reserve("t1") == 2
    second = caller.record("t1", error="HTTP 500 again")       # default decision: transient
    assert isinstance(second, CallResult) and second.response is None
    assert (second.attempts, second.error) == (2, "HTTP 500 again")   # attempt 2 > max_retries 1: final
    caller.reserve("t2")
    fatal = caller.record("t2", error="HTTP 400", decision=RetryDecision.fatal())
    assert isinstance(fatal, CallResult) and fatal.attempts == 1
    caller.reserve("t3")
    final = caller.record("t3", error="HTTP 503", decision=RetryDecision.transient(), can_retry=False)
    assert isinstance(final, CallResult) and final.attempts == 1
    caller.reserve("t4")
    caller.halted = "halted for the test"
    assert isinstance(caller.record("t4", error="HTTP 503"), CallResult)      # a halted judge is not resent
    outcomes = [(a["trial_id"], a["attempt"], a["outcome"], a["error_kind"]) for a in log.drain()[0]]
    assert outcomes == [("t1", 1, "retry", "transient"), ("t1", 2, "failed", "transient"),
                        ("t2", 1, "failed", "fatal"), ("t3", 1, "failed", "transient"),
                        ("t4", 1, "failed", "transient")]


def test_a_result_reserved_by_an_earlier_session_is_attempt_one() -> None:
    caller, log = _caller()
    res = caller.record("t9", response=JudgeResponse(text="A"))     # a batch submitted before a crash
    assert isinstance(res, CallResult) and res.attempts == 1 and log.drain()[0][0]["attempt"] == 1


# -- executors (``caller_spy``: tests/conftest.py) --------------------------------------------------------
def _pairs(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "pairs.jsonl"
    with path.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({"item_id": i, "question": f"Question {i}?", "response_a": f"first {i}",
                                 "response_b": f"second {i}", "label": "AB"[i % 2]}) + "\n")
    return path


@pytest.fixture
def openai_batches(monkeypatch: pytest.MonkeyPatch):
    pytest.importorskip("openai")
    from verdictlab.testing import FakeConfig, FakeOpenAIServer

    key = f"sk-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with FakeOpenAIServer(FakeConfig(api_key=key, batch_polls=1)) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        yield srv


def _batch_config(tmp_path: Path) -> Any:
    from verdictlab.engine.config import config_from_dict

    # 4 items x 2 orders x 2 repetitions x temperatures (0, 1) = 32 trials; 16 at temperature 0 are cached
    return config_from_dict({"name": "batch", "datasets": [{"name": "jsonl", "path": str(_pairs(tmp_path, 4))}],
                             "judges": [{"id": "openai:gpt-4o-mini", "batch": True, "max_retries": 2}],
                             "protocols": ["direct"], "repetitions": 2, "temperatures": [0.0, 1.0],
                             "batch_poll_s": 0.01, "cache": "auto"}, source=tmp_path / "cfg.yaml")


def test_batch_executor_reserves_and_records_every_request_through_the_caller(tmp_path: Path, openai_batches,
                                                                               caller_spy) -> None:
    from verdictlab.engine import prepare_run, run_config
    from verdictlab.store import RunStore

    spy = caller_spy
    cfg = _batch_config(tmp_path)
    trials = prepare_run(cfg).trials
    bad = trials[1].trial_id
    openai_batches.config.update({"batch_fail_ids": [bad]})          # fails inside the first batch only
    summary = run_config(cfg, tmp_path / "run", progress=False)
    with RunStore(tmp_path / "run") as st:
        df = st.judgments()
        att = st.attempts()
        n_cache = st.conn.execute("SELECT COUNT(*) FROM cache").fetchone()[0]
    assert summary.complete and len(df) == 32 and df.verdict.notna().all()
    # one reservation and one recorded result per request sent: 32 + the retry of the failed one
    assert spy.reserved == spy.recorded and sum(spy.recorded.values()) == 33 and spy.recorded[bad] == 2
    assert summary.calls == 33 and len(att) == 33                    # one attempt row per recorded result
    assert Counter(att.trial_id) == spy.recorded
    # the cache entries are written with the caller's key, for the temperature-0 trials only
    cached = {t.trial_id for t in trials if t.temperature == 0.0}
    assert {t for t, k in spy.cache_keys.items() if k} == cached and n_cache == len(cached)


def test_batch_executor_follows_the_callers_retry_rule(tmp_path: Path, openai_batches,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from verdictlab.engine import prepare_run, run_config
    from verdictlab.store import RunStore

    monkeypatch.setattr(JudgeCaller, "worth_retrying", lambda self, decision, attempt: False)
    cfg = _batch_config(tmp_path)
    bad = prepare_run(cfg).trials[1].trial_id
    openai_batches.config.update({"batch_fail_ids": [bad]})
    run_config(cfg, tmp_path / "run", progress=False)
    assert openai_batches.stats["batches_created"] == 1               # no follow-up batch: the caller said no
    with RunStore(tmp_path / "run") as st:
        row = st.judgments().set_index("trial_id").loc[bad]
    assert row.parse_status == "failed" and row.attempts == 1


def test_batch_file_import_records_every_line_through_the_caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 caller_spy) -> None:
    pytest.importorskip("openai")
    import yaml

    from verdictlab.engine.batch_files import export_requests, import_results
    from verdictlab.engine.config import load_config
    from verdictlab.store import RunStore
    from verdictlab.testing.fake_openai import FakeConfig, _Handler

    _pairs(tmp_path, 3)
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump({
        "name": "offline", "datasets": [{"name": "jsonl", "path": "pairs.jsonl"}],
        "judges": [{"id": "openai-compatible:fake-judge@http://127.0.0.1:9/v1", "max_retries": 3}],
        "protocols": ["direct"], "repetitions": 2, "temperatures": [0.0, 1.0], "cache": "auto"}))
    cfg = load_config(tmp_path / "cfg.yaml")
    export_requests(cfg, tmp_path / "run", tmp_path / "req.jsonl")
    requests = [json.loads(line) for line in (tmp_path / "req.jsonl").read_text().splitlines()]
    bad = requests[0]["custom_id"]
    handler = _Handler(FakeConfig(batch_fail_ids=(bad,)))
    (_, ok), (_, err) = handler.batches._run_openai((tmp_path / "req.jsonl").read_bytes())
    (tmp_path / "res.jsonl").write_bytes(b"".join(handler.batches.files[f] for f in (ok, err) if f))
    monkeypatch.setattr(JudgeCaller, "worth_retrying", lambda self, decision, attempt: True)
    spy = caller_spy
    result = import_results(tmp_path / "res.jsonl", tmp_path / "run")
    with RunStore(tmp_path / "run") as st:
        df = st.judgments().set_index("trial_id")
        att = st.attempts()
        n_cache = st.conn.execute("SELECT COUNT(*) FROM cache").fetchone()[0]
    n = 3 * 2 * 2 * 2
    assert (result.n_answered, result.n_failed) == (n - 1, 1) and len(df) == n
    assert spy.reserved == spy.recorded == Counter({r["custom_id"]: 1 for r in requests})
    assert len(att) == n and Counter(att.trial_id) == spy.recorded
    # a results file is the last word: even a caller that would retry everything stores the failure
    assert df.loc[bad, "parse_status"] == "failed" and df.loc[bad, "attempts"] == 1
    assert att.set_index("trial_id").loc[bad, "outcome"] == "failed"
    # cache entries with the caller's key for the answered temperature-0 trials (half of the requests)
    zero = {t for t in df.index if df.loc[t, "temperature"] == 0.0}
    assert {t for t, k in spy.cache_keys.items() if k} == zero
    assert n_cache == len(zero - {bad})
