"""Limits on judge calls: a token-bucket rate limiter, retry backoff and a run budget.

(The limits on input -- config size, nesting depth, report size -- are
:func:`verdictlab.core.guards.input_limits`.)  These are small, dependency-free building blocks the caller
(:mod:`verdictlab.engine.caller`) uses.  Two are written here although libraries exist, because a
measurement showed the library cannot do what the caller needs (``bench/limits_bench.py``, one process,
load 23 on two cores):

* the bucket, not aiolimiter's ``AsyncLimiter``: one bucket class serves the request limit and the
  token limit, and for tokens the library cannot do it -- it refuses a request larger than one
  second's worth (1,500 tokens from a limit of 1,000/s: ``ValueError``; the bucket serves it and goes
  into debt), and it serves smaller amounts first, so a 900-token request among 20 tasks asking for 100
  tokens was not served in 5 s (the bucket, first come first served: 2.9 s).  For unit requests the two
  are equal: 1.005 vs 1.000 of a 200/s limit achieved, 49 vs 53 us of CPU per call at the limit, 1.0 vs
  0.8 us when it does not bind, a stop of 200 waiters in 1.0 vs 3.2 ms -- no gain that would pay for a
  second limiter class beside this one.
* the backoff and the caller's retry loop, not tenacity: ``AsyncRetrying`` costs 21-37 us of CPU per call
  that needs no retry against 0.4 us for the loop in ``JudgeCaller`` (100 vs 11 us with two retries), and
  its ``wait_random_exponential`` draws its jitter from the global ``random``, not the caller's seeded
  generator; ``Retry-After`` would be a hand-written wait function either way.

* :class:`TokenBucket` -- ``rate_per_minute`` calls (or tokens) per minute with a burst capacity;
  ``await bucket.acquire(n)`` sleeps until ``n`` units are available.
* :func:`backoff_delay` -- exponential backoff with *full jitter* for a typed
  :class:`~verdictlab.judges.base.RetryDecision`; a provider's ``Retry-After`` is honoured.
* :class:`Budget` -- a cap on calls, tokens and dollars; ``try_reserve()`` before a call,
  ``charge()`` after it; ``exhausted_reason`` says why the run must stop.
* ``PriceTable`` -- re-exported from :mod:`verdictlab.judges.prices` (cost of a call in dollars).
"""

from __future__ import annotations

import asyncio
import math
import random
import threading
import time
from typing import Any, Protocol

from ..judges.base import RetryDecision, RetryKind
from ..judges.prices import PriceTable, default_price_table


class _RandomLike(Protocol):
    def random(self) -> float: ...


# -- rate limiting ------------------------------------------------------------------------------
class TokenBucket:
    """Asynchronous token bucket: at most ``rate_per_minute`` units per minute on average, with
    bursts of up to ``capacity`` units (default: one second's worth, at least 1).

    ``rate_per_minute=None`` means unlimited: :meth:`acquire` returns at once.
    Waiters are served first come, first served (an ``asyncio.Lock`` queues them), so one large
    request cannot be starved by many small ones.
    """

    def __init__(self, rate_per_minute: float | None, *, capacity: float | None = None,
                 clock: Any = time.monotonic) -> None:
        if rate_per_minute is not None and rate_per_minute <= 0:
            raise ValueError(f"rate_per_minute must be > 0 (or None for no limit), got {rate_per_minute}")
        self.rate_per_minute = float(rate_per_minute) if rate_per_minute is not None else None
        self._rate_s = (self.rate_per_minute or 0.0) / 60.0
        if capacity is None:
            capacity = max(1.0, self._rate_s)  # one second of traffic
        if capacity <= 0:
            raise ValueError("capacity must be > 0")
        self.capacity = float(capacity)
        self._clock = clock
        self._tokens = self.capacity
        self._last = clock()
        self._lock: asyncio.Lock | None = None

    @property
    def unlimited(self) -> bool:
        return self.rate_per_minute is None

    def _refill(self) -> None:
        now = self._clock()
        elapsed = now - self._last
        if elapsed > 0:
            self._tokens = min(self.capacity, self._tokens + elapsed * self._rate_s)
            self._last = now

    def try_acquire(self, amount: float = 1) -> bool:
        """Take ``amount`` units now if available; never waits."""
        if self.unlimited:
            return True
        self._refill()
        if self._tokens >= amount:
            self._tokens -= amount
            return True
        return False

    async def acquire(self, amount: float = 1) -> float:
        """Wait until ``amount`` units are available and take them.  Returns the seconds waited.

        An ``amount`` larger than the capacity is allowed: the bucket goes into debt, so a big
        request waits for its share instead of blocking forever.
        """
        if self.unlimited:
            return 0.0
        if amount <= 0:
            return 0.0
        if self._lock is None:
            self._lock = asyncio.Lock()
        waited = 0.0
        async with self._lock:
            self._refill()
            need = min(amount, self.capacity)
            while self._tokens < need:
                delay = (need - self._tokens) / self._rate_s
                await asyncio.sleep(delay)
                waited += delay
                self._refill()
            self._tokens -= amount  # may go negative for amount > capacity (debt)
        return waited


# -- retry backoff ------------------------------------------------------------------------------
def backoff_delay(decision: RetryDecision, attempt: int, *, base_s: float = 0.5, cap_s: float = 30.0,
                  rng: _RandomLike | None = None, max_retry_after_s: float = 600.0) -> float:
    """Seconds to wait before retrying after failed attempt number ``attempt`` (1-based).

    Exponential backoff with full jitter (AWS architecture blog, "Exponential Backoff And
    Jitter"): ``uniform(0, min(cap_s, base_s * 2**(attempt-1)))``.  When the provider sent a
    ``Retry-After`` (``decision.retry_after_s``) the delay is at least that long -- the jittered
    backoff is added on top of it (bounded by ``base_s``) so that many clients released by the
    same header do not return in lockstep; ``max_retry_after_s`` bounds absurd header values.
    Rate-limit decisions without a header back off from twice the base delay.
    A fatal decision raises ``ValueError``: it must not be retried.
    """
    if decision.kind is RetryKind.FATAL:
        raise ValueError("a fatal decision is not retried")
    if attempt < 1:
        attempt = 1
    r = (rng or random).random()
    base = base_s * (2.0 if decision.kind is RetryKind.RATE_LIMIT else 1.0)
    # 2**(attempt-1) overflows float for absurd attempt counts; clamp the exponent
    upper = min(cap_s, base * math.pow(2.0, min(attempt - 1, 60)))
    jitter = r * upper
    if decision.retry_after_s is not None and decision.retry_after_s >= 0:
        wait = min(float(decision.retry_after_s), max_retry_after_s)
        return wait + r * min(base_s, upper)
    return jitter


# -- budget -------------------------------------------------------------------------------------
class Budget:
    """Run budget on calls, tokens and dollars (``None`` = no cap).

    Protocol: call :meth:`try_reserve` before each API call -- it returns ``False`` (and sets
    :attr:`exhausted_reason`) once any cap is reached, so the engine stops scheduling new calls
    and finishes cleanly; after the call, :meth:`charge` the tokens and cost it used.  A reserved
    call that was not made after all can be handed back with :meth:`release`.

    Calls whose cost is unknown (``cost_usd=None``: a model missing from the price table) are
    counted in :attr:`unpriced_calls`; with ``max_usd`` set they make the dollar figure a lower
    bound, which :meth:`summary` reports.  Thread-safe.
    """

    def __init__(self, max_calls: int | None = None, max_tokens: int | None = None,
                 max_usd: float | None = None, *, calls: int = 0, tokens: int = 0,
                 usd: float = 0.0) -> None:
        for name, v in (("max_calls", max_calls), ("max_tokens", max_tokens), ("max_usd", max_usd)):
            if v is not None and v < 0:
                raise ValueError(f"{name} must be >= 0, got {v}")
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self.max_usd = max_usd
        # spend so far; a resumed run passes what earlier sessions used
        self.calls = int(calls)          # reserved (started) calls
        self.tokens = int(tokens)
        self.usd = float(usd)
        self.unpriced_calls = 0
        self._lock = threading.Lock()

    @property
    def exhausted_reason(self) -> str | None:
        """Why no further call may start, or ``None`` while the budget lasts."""
        if self.max_calls is not None and self.calls >= self.max_calls:
            return f"call budget reached ({self.calls} of max_calls={self.max_calls})"
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return f"token budget reached ({self.tokens} of max_tokens={self.max_tokens})"
        if self.max_usd is not None and self.usd >= self.max_usd:
            return f"dollar budget reached (${self.usd:.4f} of max_usd=${self.max_usd:.4f})"
        return None

    @property
    def exhausted(self) -> bool:
        return self.exhausted_reason is not None

    def try_reserve(self) -> bool:
        """Reserve one call if the budget allows it."""
        with self._lock:
            if self.exhausted_reason is not None:
                return False
            self.calls += 1
            return True

    async def areserve(self) -> bool:
        """:meth:`try_reserve` for callers on an event loop (a budget shared by processes overrides it
        to fetch calls without blocking: :class:`verdictlab.engine.ray_executor.LeasedBudget`)."""
        return self.try_reserve()

    def release(self) -> None:
        """Give back a reserved call that was never made (e.g. cancelled before sending)."""
        with self._lock:
            if self.calls > 0:
                self.calls -= 1

    def charge(self, tokens: int | None, cost_usd: float | None) -> None:
        """Record what a finished call used.  ``None`` values count as unknown, not zero."""
        with self._lock:
            if tokens:
                self.tokens += int(tokens)
            if cost_usd is None:
                self.unpriced_calls += 1
            else:
                self.usd += float(cost_usd)

    def summary(self) -> dict[str, Any]:
        """Spend so far, for progress bars and the run's meta table."""
        return {
            "calls": self.calls, "tokens": self.tokens, "usd": round(self.usd, 6),
            "unpriced_calls": self.unpriced_calls,
            "usd_is_lower_bound": self.unpriced_calls > 0,
            "max_calls": self.max_calls, "max_tokens": self.max_tokens, "max_usd": self.max_usd,
            "exhausted_reason": self.exhausted_reason,
        }


__all__ = ["Budget", "PriceTable", "TokenBucket", "backoff_delay",
           "default_price_table"]
