"""The caller's limits -- the hand-written token bucket and retry loop of ``engine/limits.py`` and
``engine/caller.py`` -- against the well-kept libraries that do the same (aiolimiter's ``AsyncLimiter``,
tenacity's ``AsyncRetrying`` with ``wait_random_exponential``), as ratios measured in one process.

1. **Calls/s at the limit**: 32 tasks take one unit each, 600 times in all, from a limit of 200/s with a
   burst of one second (200): the achieved rate after the burst against the limit (1.00 = exact).
2. **CPU per call**: the process CPU time per acquisition, at the limit of (1) and with a limit that never
   binds (200,000 acquisitions in one task).
3. **Stop latency**: 200 tasks wait on a limit of 1/s; all are cancelled (what a stop does) 0.2 s later:
   the seconds until every task has ended.
4. **Tokens**: a token limit of 1,000/s (tokens_per_minute 60,000) asked for (a) one request of 1,500
   tokens, more than one second's worth, and (b) one request of 900 tokens while 20 tasks keep asking for
   100 tokens each: the seconds until the large request is served (first come, first served: after the
   requests queued before it).
5. **Retry loop**: the CPU per call of the loop around a call that answers at once (no retry) and of one
   that fails twice (rate limit, retry after 0 s) then answers: the hand loop against ``AsyncRetrying``.

    .venv/bin/python bench/limits_bench.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiolimiter import AsyncLimiter
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from verdictlab.engine.limits import TokenBucket, backoff_delay
from verdictlab.judges.base import JudgeCallError, RetryDecision

Acquire = Callable[[float], Awaitable[Any]]


def _bucket(rate_s: float) -> Acquire:
    return TokenBucket(rate_s * 60).acquire


def _leaky(rate_s: float) -> Acquire:
    return AsyncLimiter(max(1.0, rate_s), 1).acquire      # the same burst: one second's worth


LIMITERS = {"hand-written TokenBucket": _bucket, "aiolimiter AsyncLimiter": _leaky}


async def _rate(make: Callable[[float], Acquire], rate_s: float, n: int, tasks: int) -> tuple[float, float]:
    acquire = make(rate_s)
    done: list[float] = []

    async def worker(k: int) -> None:
        for _ in range(k):
            await acquire(1)
            done.append(time.perf_counter())

    cpu0 = time.process_time()
    await asyncio.gather(*(worker(n // tasks) for _ in range(tasks)))
    cpu = time.process_time() - cpu0
    burst = int(rate_s)
    after = sorted(done)[burst:]
    achieved = (len(after) - 1) / (after[-1] - after[0])
    return achieved / rate_s, cpu / len(done)


async def _free_cpu(make: Callable[[float], Acquire], n: int) -> float:
    acquire = make(1e9)
    cpu0 = time.process_time()
    for _ in range(n):
        await acquire(1)
    return (time.process_time() - cpu0) / n


async def _stop(make: Callable[[float], Acquire], waiters: int) -> float:
    acquire = make(1.0)
    await acquire(1)                                       # the burst is spent: everyone waits
    tasks = [asyncio.ensure_future(acquire(1)) for _ in range(waiters)]
    await asyncio.sleep(0.2)
    t0 = time.perf_counter()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return time.perf_counter() - t0


async def _large(make: Callable[[float], Acquire]) -> str:
    acquire = make(1000.0)
    try:
        await asyncio.wait_for(acquire(1500), 5)
    except ValueError as exc:
        return f"refused: {exc}"
    return "served (the bucket goes into debt)"


async def _starved(make: Callable[[float], Acquire], seconds: float) -> float | None:
    acquire = make(1000.0)
    stop = asyncio.Event()

    async def small() -> None:
        while not stop.is_set():
            await acquire(100)

    smalls = [asyncio.ensure_future(small()) for _ in range(20)]
    await asyncio.sleep(0.3)
    t0 = time.perf_counter()
    try:
        await asyncio.wait_for(acquire(900), seconds)
        waited: float | None = time.perf_counter() - t0
    except TimeoutError:
        waited = None
    stop.set()
    for s in smalls:
        s.cancel()
    await asyncio.gather(*smalls, return_exceptions=True)
    return waited


# -- the retry loop --------------------------------------------------------------------------------------
class _Flaky:
    """A call that fails ``fails`` times (rate limit, Retry-After 0 s), then answers."""

    def __init__(self, fails: int) -> None:
        self.fails = fails
        self.n = 0

    async def __call__(self) -> str:
        self.n += 1
        if self.n <= self.fails:
            raise JudgeCallError("429", RetryDecision.rate_limit(0.0))
        return "ok"


async def _hand_loop(call: _Flaky, rng: random.Random, max_retries: int = 3) -> str:
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call()
        except JudgeCallError as exc:
            if attempt > max_retries:
                raise
            await asyncio.sleep(backoff_delay(exc.decision, attempt, rng=rng, base_s=0.0))


def _retry_after(state: Any) -> float:
    exc = state.outcome.exception()
    after = getattr(getattr(exc, "decision", None), "retry_after_s", None)
    return float(after) if after is not None else wait_random_exponential(multiplier=0.0, max=30)(state)


async def _tenacity_loop(call: _Flaky, max_retries: int = 3) -> str:
    async for attempt in AsyncRetrying(stop=stop_after_attempt(max_retries + 1), wait=_retry_after,
                                       retry=retry_if_exception_type(JudgeCallError), reraise=True):
        with attempt:
            return await call()
    raise AssertionError("unreachable")


async def _loop_cpu(run: Callable[[_Flaky], Awaitable[str]], fails: int, n: int) -> float:
    cpu0 = time.process_time()
    for _ in range(n):
        await run(_Flaky(fails))
    return (time.process_time() - cpu0) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = ap.parse_args()
    n_free, n_loop = (50_000, 5_000) if args.quick else (200_000, 20_000)
    print(f"load: {os.getloadavg()}")
    for name, make in LIMITERS.items():
        ratio, cpu = asyncio.run(_rate(make, 200.0, 600, 32))
        free = asyncio.run(_free_cpu(make, n_free))
        stop = asyncio.run(_stop(make, 200))
        large = asyncio.run(_large(make))
        starved = asyncio.run(_starved(make, 5.0))
        shown = "not served in 5 s" if starved is None else f"{starved:.2f} s"
        print(f"{name}:\n  at 200/s: achieved / limit {ratio:.3f}, CPU {cpu * 1e6:.1f} us per call; "
              f"limit not binding: {free * 1e6:.1f} us per call\n  stop of 200 waiters: {stop * 1000:.1f} ms\n"
              f"  1,500 tokens from 1,000/s: {large}\n  900 tokens among 20 tasks of 100: {shown}")
    rng = random.Random(0)
    for fails in (0, 2):
        hand = asyncio.run(_loop_cpu(lambda c: _hand_loop(c, rng), fails, n_loop))
        ten = asyncio.run(_loop_cpu(_tenacity_loop, fails, n_loop))
        print(f"retry loop, {fails} failures before the answer: hand {hand * 1e6:.1f} us, tenacity {ten * 1e6:.1f} us "
              f"per call (ratio {ten / hand:.2f})")


if __name__ == "__main__":
    main()
