"""Call limits for the engine: rate limits (token buckets), retry backoff, run budget, prices.

Minimal API agreed between the engine and the providers work (first version written by the engine
owner; the providers helper owns and extends this module):

- ``TokenBucket(rate_per_minute).acquire(amount)``  (async) waits until ``amount`` units are free.
- ``backoff_delay(decision, attempt, *, base_s=0.5, cap_s=30.0, rng) -> float``
- ``Budget(max_calls, max_tokens, max_usd)`` with ``.try_reserve() -> bool``,
  ``.charge(tokens, cost_usd)`` and ``.exhausted_reason -> str | None``.
- ``PriceTable().cost(provider, model, tokens_in, tokens_out) -> float | None``.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field

from .judges.base import RetryDecision, RetryKind


class TokenBucket:
    """A token bucket refilled continuously at ``rate_per_minute``; capacity is one minute's worth.

    ``acquire(amount)`` waits until ``amount`` units are available and takes them.  An amount
    larger than the capacity is allowed (it waits until the bucket is full, then goes into debt)
    so one huge request can never deadlock the run.
    """

    def __init__(self, rate_per_minute: float, *, capacity: float | None = None) -> None:
        if rate_per_minute <= 0:
            raise ValueError("rate_per_minute must be > 0")
        self.rate_per_s = rate_per_minute / 60.0
        self.capacity = float(capacity if capacity is not None else rate_per_minute)
        self._level = self.capacity
        self._stamp = time.monotonic()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self._level = min(self.capacity, self._level + (now - self._stamp) * self.rate_per_s)
        self._stamp = now

    async def acquire(self, amount: float = 1.0) -> None:
        async with self._lock:
            need = min(float(amount), self.capacity)
            while True:
                self._refill()
                if self._level >= need:
                    self._level -= float(amount)
                    return
                await asyncio.sleep((need - self._level) / self.rate_per_s)


def backoff_delay(decision: RetryDecision, attempt: int, *, base_s: float = 0.5, cap_s: float = 30.0,
                  rng: random.Random | None = None) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based): full-jitter exponential backoff,
    never shorter than a provider's ``retry_after_s``.  Rate limits start from a longer base."""
    rng = rng or random.Random()
    base = base_s * (2.0 if decision.kind is RetryKind.RATE_LIMIT else 1.0)
    ceiling = min(cap_s, base * (2 ** max(0, attempt - 1)))
    delay = rng.uniform(ceiling / 2, ceiling)
    if decision.retry_after_s is not None:
        delay = max(delay, float(decision.retry_after_s))
    return delay


@dataclass
class Budget:
    """Run budget.  ``try_reserve()`` books one call if no limit is reached; ``charge`` adds the
    tokens and dollars a call used.  Spend from an earlier (resumed) session can be given with
    ``calls`` / ``tokens`` / ``usd``."""

    max_calls: int | None = None
    max_tokens: int | None = None
    max_usd: float | None = None
    calls: int = 0
    tokens: int = 0
    usd: float = 0.0
    _reason: str | None = field(default=None, repr=False)

    @property
    def exhausted_reason(self) -> str | None:
        if self.max_calls is not None and self.calls >= self.max_calls:
            return f"call budget reached ({self.calls} of max_calls={self.max_calls})"
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return f"token budget reached ({self.tokens} of max_tokens={self.max_tokens})"
        if self.max_usd is not None and self.usd >= self.max_usd:
            return f"dollar budget reached (${self.usd:.4f} of max_usd={self.max_usd})"
        return None

    def try_reserve(self) -> bool:
        if self.exhausted_reason is not None:
            return False
        self.calls += 1
        return True

    def charge(self, tokens: int | None, cost_usd: float | None) -> None:
        self.tokens += int(tokens or 0)
        self.usd += float(cost_usd or 0.0)


# USD per million tokens (input, output).  Public list prices; verify before relying on them.
DEFAULT_PRICES: dict[tuple[str, str], tuple[float, float]] = {
    ("openai", "gpt-4o"): (2.50, 10.00),
    ("openai", "gpt-4o-mini"): (0.15, 0.60),
    ("anthropic", "claude-3-5-haiku-latest"): (0.80, 4.00),
    ("anthropic", "claude-3-5-sonnet-latest"): (3.00, 15.00),
}
FREE_PROVIDERS = frozenset({"sim", "llamacpp", "vllm"})


class PriceTable:
    """Cost of a call from its token counts.  Local and simulated judges cost 0; an unknown
    hosted model costs ``None`` (unknown, not zero)."""

    def __init__(self, prices: dict[tuple[str, str], tuple[float, float]] | None = None) -> None:
        self.prices = dict(DEFAULT_PRICES if prices is None else prices)

    def cost(self, provider: str, model: str, tokens_in: int | None, tokens_out: int | None) -> float | None:
        if provider in FREE_PROVIDERS:
            return 0.0
        price = self.prices.get((provider, model))
        if price is None:
            return None
        return ((tokens_in or 0) * price[0] + (tokens_out or 0) * price[1]) / 1e6
