"""The judgment caller: one judge call with everything around it.

Every judge call of verdictlab -- the grid runner's, the debate's, any future executor's -- goes
through :meth:`JudgeCaller.call`, which owns, for one judge:

* the response cache (lookup before the call, entry handed to the writer after a success);
* concurrency (a semaphore of ``spec.concurrency``, capped by the backend's ``max_concurrency``)
  and the request / token rate limits (:class:`~verdictlab.limits.TokenBucket`);
* typed retries: the backend's :class:`~verdictlab.judges.base.RetryDecision` (rate limit /
  transient / fatal), never error text, with full-jitter backoff; a per-call timeout counts as
  transient;
* the run budget (calls, tokens, dollars): a call is reserved before it starts; once the budget
  is spent the caller stops the run cleanly (:class:`RunControl`);
* attempt accounting: one attempt row (ok / retry / failed) per call made;
* secret scrubbing: every error text and every answer passes :func:`verdictlab._redact.redact_text`
  (:func:`sanitized` also drops absurd token counts and costs before they are counted or stored).

The caller knows nothing of trials, protocols or stores: it takes a built
:class:`~verdictlab.judges.base.JudgeRequest` and returns a :class:`CallResult`.  Where attempts and
cache entries go is the :class:`CallLog` it is given (the store writer), where cached responses
come from is a :class:`ResponseCache` (the store).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import random
import time
from dataclasses import dataclass
from typing import Any, Protocol

from .._redact import redact_answer, redact_text
from ..config import JudgeSpec
from ..judges.base import JudgeAPI, JudgeCallError, JudgeRequest, JudgeResponse, RetryDecision
from ..limits import Budget, PriceTable, TokenBucket, backoff_delay, default_price_table

ERROR_LIMIT = 500   # characters of an error text kept (after scrubbing)


class CallLog(Protocol):
    """Where the caller reports what it did (the store writer implements it)."""

    def add_attempt(self, row: dict[str, Any]) -> None: ...

    def add_cache_entry(self, key: str, judge: str, response_json: str) -> None: ...


class ResponseCache(Protocol):
    def cache_get(self, key: str) -> str | None: ...


class Spend(Protocol):
    """Running totals the caller adds to (a :class:`~verdictlab.engine.summary.RunSummary` is one)."""

    calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: float


class RunControl:
    """Shared stop state of a run: the budget or an interrupt stops everything; ``reasons`` say why."""

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.reasons: list[str] = []

    @property
    def stopped(self) -> bool:
        return self.stop.is_set()

    def note(self, reason: str) -> None:
        """Record why (part of) the run stopped, without stopping the rest."""
        self.reasons.append(reason)

    def halt(self, reason: str) -> None:
        """Stop the whole run: calls in flight finish, nothing new starts."""
        if not self.stop.is_set():
            self.reasons.append(reason)
        self.stop.set()


@dataclass(slots=True)
class CallResult:
    """The outcome of one judgment call (retries included).

    ``response`` is None when the call failed for good (``error`` says why, scrubbed).  ``attempts``
    counts the calls made (0 for a cache hit).  ``latency_s`` is the wall time of the last attempt.
    """

    response: JudgeResponse | None
    attempts: int
    error: str | None = None
    cache_hit: bool = False
    latency_s: float | None = None
    cost_usd: float | None = None


def response_to_json(resp: JudgeResponse) -> str:
    return json.dumps({"text": resp.text, "tokens_in": resp.tokens_in, "tokens_out": resp.tokens_out,
                       "cost_usd": resp.cost_usd, "latency_s": resp.latency_s,
                       "choice_probs": resp.choice_probs, "top_logprobs": resp.top_logprobs,
                       "notes": list(resp.notes)})


def response_from_json(s: str) -> JudgeResponse:
    d = json.loads(s)
    return JudgeResponse(text=d["text"], tokens_in=d.get("tokens_in"), tokens_out=d.get("tokens_out"),
                         cost_usd=d.get("cost_usd"), latency_s=d.get("latency_s"),
                         choice_probs=d.get("choice_probs"), top_logprobs=d.get("top_logprobs"),
                         notes=list(d.get("notes") or []))


_MAX_COUNT = 2**53


def _sane_count(name: str, value: Any, notes: list[str]) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _MAX_COUNT):
        return value
    notes.append(f"usage {name}={str(value)[:20]} ignored (not a sane token count)")
    return None


def sanitized(resp: JudgeResponse) -> JudgeResponse:
    """What a server sent, made safe to count and store: secrets in the text masked (the one
    scrubber), token counts that are not integers in [0, 2**53) dropped with a note, a non-finite
    cost dropped.  A response that needs none of it is returned as is."""
    notes = list(resp.notes)
    tin = _sane_count("tokens_in", resp.tokens_in, notes)
    tout = _sane_count("tokens_out", resp.tokens_out, notes)
    cost = resp.cost_usd
    if cost is not None and not (isinstance(cost, int | float) and math.isfinite(cost)):
        notes.append(f"cost {str(cost)[:20]} ignored (not a finite number)")
        cost = None
    text = redact_answer(resp.text) if resp.text else resp.text
    if text == resp.text and len(notes) == len(resp.notes):
        return resp
    return dataclasses.replace(resp, text=text, tokens_in=tin, tokens_out=tout, cost_usd=cost, notes=notes)


def estimate_tokens(messages: Any) -> int:
    """A rough prompt size: characters / 4 (at least 1)."""
    return max(1, sum(len(m.get("content", "")) for m in messages) // 4)


def _no_log() -> CallLog:
    class _Null:
        def add_attempt(self, row: dict[str, Any]) -> None:
            return None

        def add_cache_entry(self, key: str, judge: str, response_json: str) -> None:
            return None

    return _Null()


@dataclass(slots=True)
class _SpendTotals:
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0


class JudgeCaller:
    """Calls one judge.  Build one per judge per run; share ``budget``, ``control`` and ``log``
    between the callers of a run."""

    def __init__(self, judge: JudgeAPI, spec: JudgeSpec | None = None, *, budget: Budget | None = None,
                 prices: PriceTable | None = None, log: CallLog | None = None,
                 cache: ResponseCache | None = None, control: RunControl | None = None,
                 spend: Spend | None = None, rng: random.Random | None = None,
                 backoff_base_s: float | None = None, backoff_cap_s: float | None = None,
                 bucket_factory: Any = None) -> None:
        self.judge = judge
        self.spec = spec or JudgeSpec(id=judge.judge_id)
        self.budget = budget or Budget()
        self.prices = prices or default_price_table()
        self.log = log or _no_log()
        self.cache = cache
        self.control = control or RunControl()
        self.spend: Spend = spend if spend is not None else _SpendTotals()
        self.rng = rng or random.Random(judge.judge_id)
        self.backoff_base_s = self.spec.backoff_base_s if backoff_base_s is None else backoff_base_s
        self.backoff_cap_s = self.spec.backoff_cap_s if backoff_cap_s is None else backoff_cap_s
        self.concurrency = min(self.spec.concurrency, judge.max_concurrency or self.spec.concurrency)
        self._slots = asyncio.Semaphore(self.concurrency)
        rpm, tpm = self.spec.requests_per_minute, self.spec.tokens_per_minute
        bucket_factory = bucket_factory or TokenBucket
        self.requests = bucket_factory(rpm) if rpm else None
        self.tokens = bucket_factory(tpm) if tpm else None
        self.halted: str | None = None      # set by the runner when this judge keeps failing

    # -- cache -----------------------------------------------------------------------------------
    def cache_key(self, request: JudgeRequest, rep: int) -> str:
        """The response-cache key: the full request *including the repetition index*, so one
        repetition is never served another repetition's answer."""
        return request.request_hash(provider=self.judge.provider, model=self.judge.model, rep=rep)

    def prompt_hash(self, request: JudgeRequest) -> str:
        return request.request_hash(provider=self.judge.provider, model=self.judge.model)

    def cached(self, key: str) -> JudgeResponse | None:
        if self.cache is None:
            return None
        text = self.cache.cache_get(key)
        return None if text is None else response_from_json(text)

    def cost_of(self, resp: JudgeResponse) -> float | None:
        if resp.cost_usd is not None:
            return resp.cost_usd
        return self.prices.cost(self.judge.provider, self.judge.model, resp.tokens_in, resp.tokens_out)

    # -- the call --------------------------------------------------------------------------------
    async def call(self, request: JudgeRequest, *, trial_id: str, cache_key: str | None = None) -> CallResult | None:
        """Answer ``request``: from the cache (when ``cache_key`` is given and cached), else by
        calling the judge with retries.  Returns None when the call was not finished because the
        run stopped (budget, halted judge) -- nothing is recorded for it then, so a rerun does it."""
        if cache_key:
            hit = self.cached(cache_key)
            if hit is not None:
                return CallResult(sanitized(hit), attempts=0, cache_hit=True, cost_usd=0.0)
        async with self._slots:
            return await self._call_with_retries(request, trial_id, cache_key)

    def _reserve(self) -> bool:
        if self.control.stopped or self.halted:
            return False
        if not self.budget.try_reserve():
            self.control.halt(f"budget: {self.budget.exhausted_reason}")
            return False
        return True

    async def _areserve(self) -> bool:
        """:meth:`_reserve` through the budget's awaitable reservation (a cluster budget fetches calls
        from its ledger without blocking the event loop; a local one is the same as the sync call)."""
        if self.control.stopped or self.halted:
            return False
        if not await self.budget.areserve():
            self.control.halt(f"budget: {self.budget.exhausted_reason}")
            return False
        return True

    async def _wait_for_limits(self, request: JudgeRequest) -> None:
        if self.requests is not None:
            await self.requests.acquire(1)
        if self.tokens is not None:
            await self.tokens.acquire(estimate_tokens(request.messages) + request.max_tokens)

    async def _call_with_retries(self, request: JudgeRequest, trial_id: str,
                                 cache_key: str | None) -> CallResult | None:
        attempt = 0
        while True:
            if not await self._areserve():
                return None
            attempt += 1
            self.spend.calls += 1
            await self._wait_for_limits(request)
            t0 = time.monotonic()
            resp, decision, err = await self._attempt(request)
            latency = time.monotonic() - t0
            if resp is not None:
                return self._succeeded(resp, trial_id, attempt, latency, cache_key)
            assert decision is not None and err is not None
            retry = decision.retry and attempt <= self.spec.max_retries
            self.log.add_attempt({"trial_id": trial_id, "judge": self.judge.judge_id, "attempt": attempt,
                                  "outcome": "retry" if retry else "failed", "error_kind": decision.kind.value,
                                  "error": err, "latency_s": latency})
            if not retry:
                return CallResult(None, attempts=attempt, error=err, latency_s=latency)
            await asyncio.sleep(backoff_delay(decision, attempt, rng=self.rng, base_s=self.backoff_base_s,
                                              cap_s=self.backoff_cap_s))

    async def _attempt(self, request: JudgeRequest) -> tuple[JudgeResponse | None, RetryDecision | None, str | None]:
        """One call: the response, or the retry decision and the scrubbed error text."""
        try:
            # a timeout scope, not wait_for: wait_for wraps every call in a task of its own
            async with asyncio.timeout(self.spec.timeout_s):
                return await self.judge.generate(request), None, None
        except JudgeCallError as exc:
            return None, exc.decision, f"{type(exc).__name__}: {redact_text(exc, limit=ERROR_LIMIT)}"
        except TimeoutError:
            return None, RetryDecision.transient(), f"timeout after {self.spec.timeout_s:g}s"
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a backend bug is not retried, but recorded
            return None, RetryDecision.fatal(), f"{type(exc).__name__}: {redact_text(exc, limit=ERROR_LIMIT)}"

    def _succeeded(self, resp: JudgeResponse, trial_id: str, attempt: int, latency: float,
                   cache_key: str | None) -> CallResult:
        resp = sanitized(resp)
        cost = self.cost_of(resp)
        self.budget.charge((resp.tokens_in or 0) + (resp.tokens_out or 0), cost)
        spend = self.spend
        spend.tokens_in += resp.tokens_in or 0
        spend.tokens_out += resp.tokens_out or 0
        spend.cost_usd += cost or 0.0
        self.log.add_attempt({"trial_id": trial_id, "judge": self.judge.judge_id, "attempt": attempt,
                              "outcome": "ok", "latency_s": latency})
        if cache_key:
            self.log.add_cache_entry(cache_key, self.judge.judge_id, response_to_json(resp))
        return CallResult(resp, attempts=attempt, latency_s=latency, cost_usd=cost)


__all__ = ["CallLog", "CallResult", "JudgeCaller", "ResponseCache", "RunControl", "Spend", "estimate_tokens",
           "response_from_json", "response_to_json"]
