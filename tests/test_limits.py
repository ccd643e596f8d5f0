"""Engine limits: token bucket, backoff, budget, price table."""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from verdictlab.engine.limits import Budget, PriceTable, TokenBucket, backoff_delay
from verdictlab.judges.base import RetryDecision
from verdictlab.judges.prices import PriceTableError, default_price_table, packaged_price_table


# -- TokenBucket --------------------------------------------------------------------------------
class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_token_bucket_try_acquire_refills_at_rate() -> None:
    clock = FakeClock()
    # 120/min = 2 per second; capacity 2 (one second's worth)
    b = TokenBucket(120, clock=clock)
    assert b.capacity == 2
    assert b.try_acquire() and b.try_acquire()
    assert not b.try_acquire()
    clock.t = 0.5          # 0.5 s * 2/s = 1 token back
    assert b.try_acquire()
    assert not b.try_acquire()
    clock.t = 100.0        # refill is capped at capacity (2), not 200
    assert b.try_acquire() and b.try_acquire()
    assert not b.try_acquire()


def test_token_bucket_acquire_waits_for_rate() -> None:
    # 1200/min = 20/s, capacity 20.  Taking 30 units: 20 at once, 10 more need 10/20 = 0.5 s.
    async def go() -> float:
        b = TokenBucket(1200)
        t0 = time.monotonic()
        for _ in range(30):
            await b.acquire()
        return time.monotonic() - t0

    elapsed = asyncio.run(go())
    assert 0.4 <= elapsed < 1.5


def test_token_bucket_large_amount_goes_into_debt_not_deadlock() -> None:
    async def go() -> float:
        b = TokenBucket(6000, capacity=10)  # 100/s
        return await b.acquire(50)          # > capacity: allowed at once (bucket full), then debt

    assert asyncio.run(go()) == 0.0


def test_token_bucket_unlimited_and_invalid() -> None:
    assert asyncio.run(TokenBucket(None).acquire(10**9)) == 0.0
    with pytest.raises(ValueError):
        TokenBucket(0)
    with pytest.raises(ValueError):
        TokenBucket(-5)


# -- backoff ------------------------------------------------------------------------------------
def test_backoff_full_jitter_bounds_grow_and_cap() -> None:
    rng = random.Random(0)
    d = RetryDecision.transient()
    # attempt k: uniform(0, min(cap, base * 2**(k-1))) -> bounds 0.5, 1, 2, 4, ... capped at 3
    for attempt, upper in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 3.0), (10, 3.0), (10_000, 3.0)]:
        vals = [backoff_delay(d, attempt, base_s=0.5, cap_s=3.0, rng=rng) for _ in range(300)]
        assert min(vals) >= 0.0 and max(vals) <= upper
        # full jitter: spread over the whole range, not concentrated at the top
        assert min(vals) < 0.1 * upper and max(vals) > 0.9 * upper


def test_backoff_rate_limit_starts_from_double_base() -> None:
    class Top:
        def random(self) -> float:
            return 1.0  # always the upper bound

    # rate limit, attempt 1: upper = min(30, 2 * 0.5 * 2**0) = 1.0; transient: 0.5
    assert backoff_delay(RetryDecision.rate_limit(), 1, rng=Top()) == 1.0
    assert backoff_delay(RetryDecision.transient(), 1, rng=Top()) == 0.5


def test_backoff_honours_retry_after() -> None:
    rng = random.Random(1)
    d = RetryDecision.rate_limit(retry_after_s=7.0)
    vals = [backoff_delay(d, 1, base_s=0.5, rng=rng) for _ in range(200)]
    # never shorter than Retry-After; the jitter on top is at most base_s
    assert min(vals) >= 7.0 and max(vals) <= 7.5
    # absurd header values are bounded
    assert backoff_delay(RetryDecision.rate_limit(1e9), 1, rng=rng, max_retry_after_s=60) <= 60.5


def test_backoff_refuses_fatal() -> None:
    with pytest.raises(ValueError):
        backoff_delay(RetryDecision.fatal(), 1)


# -- Budget -------------------------------------------------------------------------------------
def test_budget_calls() -> None:
    b = Budget(max_calls=2)
    assert b.try_reserve() and b.try_reserve()
    assert not b.try_reserve()
    assert b.exhausted_reason is not None and "max_calls=2" in b.exhausted_reason
    b.release()
    assert b.exhausted_reason is None and b.try_reserve()


def test_budget_tokens_and_usd_and_unpriced() -> None:
    b = Budget(max_tokens=100, max_usd=0.01)
    assert b.try_reserve()
    b.charge(60, 0.004)
    assert b.exhausted_reason is None
    b.charge(40, None)      # 100 tokens -> token cap reached; cost unknown
    assert b.unpriced_calls == 1
    assert "token budget" in (b.exhausted_reason or "")
    assert not b.try_reserve()
    s = b.summary()
    assert s["tokens"] == 100 and s["usd_is_lower_bound"] is True

    b2 = Budget(max_usd=0.01)
    b2.charge(0, 0.006)
    b2.charge(0, 0.004)     # 0.006 + 0.004 = 0.010 >= 0.01
    assert "dollar budget" in (b2.exhausted_reason or "")


def test_budget_resumed_spend_and_no_limits() -> None:
    # a resumed run passes what earlier sessions used: 5 of 5 calls already made
    assert not Budget(max_calls=5, calls=5).try_reserve()
    free = Budget()
    for _ in range(1000):
        assert free.try_reserve()
    with pytest.raises(ValueError):
        Budget(max_calls=-1)


# -- PriceTable ---------------------------------------------------------------------------------
def test_price_table_packaged_costs() -> None:
    t = packaged_price_table()
    # gpt-4o-mini: $0.15 in / $0.60 out per 1M; 1000 in + 500 out = (150 + 300)/1e6 = 0.00045
    assert t.cost("openai", "gpt-4o-mini", 1000, 500) == pytest.approx(0.00045)
    # dated snapshot matches the glob; gpt-4o: 2.5 * 2000/1e6 = 0.005
    assert t.cost("openai", "gpt-4o-2024-08-06", 2000, 0) == pytest.approx(0.005)
    # the dated pattern of gpt-4o must not swallow gpt-4o-mini (0.15, not 2.50)
    assert t.lookup("openai", "gpt-4o-mini-2024-07-18") == (0.15, 0.60)
    # longest pattern wins: opus 4.5 is $5/$25, older opus 4 is $15/$75
    assert t.lookup("anthropic", "claude-opus-4-5-20251101") == (5.0, 25.0)
    assert t.lookup("anthropic", "claude-opus-4-20250514") == (15.0, 75.0)
    # local judges are free; unknown hosted models are unknown (None), not free
    assert t.cost("llamacpp", "smollm2", 10**6, 10**6) == 0.0
    assert t.cost("sim", "x", 5, 5) == 0.0
    assert t.cost("openai", "no-such-model", 10, 10) is None
    assert t.cost("openai-compatible", "llama", 10, 10) is None


def test_price_table_compat_and_merge(tmp_path) -> None:
    t = PriceTable({("openai-compatible", "my-model"): (1.0, 2.0)})
    # 1e6 in at $1 + 5e5 out at $2 = 1 + 1 = 2
    assert t.cost("openai-compatible", "my-model", 1_000_000, 500_000) == pytest.approx(2.0)
    f = tmp_path / "p.yaml"
    f.write_text("prices:\n  openai:\n    gpt-4o-mini: {input: 1.0, output: 1.0}\n"
                 "  openai-compatible:\n    local/*: [0, 0]\n")
    merged = packaged_price_table().merge(f)
    assert merged.lookup("openai", "gpt-4o-mini") == (1.0, 1.0)       # user overrides package
    assert merged.lookup("openai", "gpt-4o") == (2.5, 10.0)           # rest kept
    assert merged.cost("openai-compatible", "local/qwen", 10, 10) == 0.0
    assert str(f) in merged.sources


def test_price_table_env_extension(tmp_path, monkeypatch) -> None:
    f = tmp_path / "mine.yaml"
    f.write_text("unit: usd_per_million_tokens\nprices:\n  anthropic:\n    claude-test: [3, 4]\n")
    monkeypatch.setenv("VERDICTLAB_PRICES", str(f))
    assert default_price_table().lookup("anthropic", "claude-test") == (3.0, 4.0)
    assert PriceTable().lookup("anthropic", "claude-test") == (3.0, 4.0)
    monkeypatch.delenv("VERDICTLAB_PRICES")
    assert PriceTable().lookup("anthropic", "claude-test") is None


@pytest.mark.parametrize("body, field", [
    ("prices:\n  openai:\n    m: [1]\n", "prices.openai.m"),
    ("prices:\n  openai:\n    m: {input: -1, output: 1}\n", "prices.openai.m.input"),
    ("prices:\n  openai: 3\n", "prices.openai"),
    ("unit: usd_per_token\nprices: {}\n", "unit"),
    ("nothing: here\n", "prices"),
])
def test_price_file_errors_name_file_and_field(tmp_path, body: str, field: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(body)
    with pytest.raises(PriceTableError) as e:
        PriceTable.from_file(f)
    assert str(f) in str(e.value) and field in str(e.value)
