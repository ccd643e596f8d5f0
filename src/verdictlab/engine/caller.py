"""The judgment caller: one judge call with everything around it.

Every judge call of verdictlab -- the grid runner's, the debate's, any future executor's -- goes
through :meth:`JudgeCaller.call`, which owns, for one judge:

* the response cache (lookup before the call, entry handed to the writer after a success);
* concurrency (a semaphore of ``spec.concurrency``, capped by the backend's ``max_concurrency``)
  and the request / token rate limits (:class:`~verdictlab.engine.limits.TokenBucket`);
* typed retries: the backend's :class:`~verdictlab.judges.base.RetryDecision` (rate limit /
  transient / fatal), never error text, with full-jitter backoff; a per-call timeout counts as
  transient;
* the run budget (calls, tokens, dollars): a call is reserved before it starts; once the budget
  is spent the caller stops the run cleanly (:class:`RunControl`);
* attempt accounting: one attempt row (ok / retry / failed) per call made;
* secret scrubbing: every error text and every answer passes :func:`verdictlab.core.redact.redact_text`
  (:func:`sanitized` also drops absurd token counts and costs before they are counted or stored).

An executor that has a judge's calls made elsewhere -- a provider batch job, an offline results
file, a Ray Data inference stage -- still goes through the caller, with its two public methods for
such calls: :meth:`JudgeCaller.reserve` before a request is sent (the budget, the call count, the
attempt number) and :meth:`JudgeCaller.record` when its result comes back (the scrubbing, the budget
charge, the attempt row, the cache entry and the retry decision), so every executor's calls are
counted, charged, cached and retried by the same rules as :meth:`JudgeCaller.call`'s own.

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

from ..core.redact import ERROR_LIMIT, redact_answer, redact_text
from ..judges.base import JudgeAPI, JudgeCallError, JudgeRequest, JudgeResponse, RetryDecision, RetryKind
from .config import JudgeSpec
from .limits import Budget, PriceTable, TokenBucket, backoff_delay, default_price_table


class CallLog(Protocol):
    """Where the caller reports what it did (the store writer implements it)."""

    def add_attempt(self, row: dict[str, Any]) -> None: ...

    def add_cache_entry(self, key: str, judge: str, response_json: str) -> None: ...


class CallRecords:
    """A :class:`CallLog` that keeps what it is told, for an executor that writes it elsewhere: a Ray
    worker sends the attempts and cache entries back to the driver with its rows; a results-file import
    writes them with its rows in one transaction.  Cache entries are ``(key, judge, response_json)``."""

    def __init__(self) -> None:
        self.attempts: list[dict[str, Any]] = []
        self.cache: list[tuple[str, str, str]] = []

    def add_attempt(self, row: dict[str, Any]) -> None:
        self.attempts.append(row)

    def add_cache_entry(self, key: str, judge: str, response_json: str) -> None:
        self.cache.append((key, judge, response_json))

    def drain(self) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]]]:
        """What was told since the last drain, and forget it."""
        out = self.attempts, self.cache
        self.attempts, self.cache = [], []
        return out


class ResponseCache(Protocol):
    def cache_get(self, key: str) -> str | None: ...


class Spend(Protocol):
    """Running totals the caller adds to (a :class:`~verdictlab.engine.summary.RunSummary` is one)."""

    calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: float
    retries: int          # calls that repeated a failed call of the same request
    rate_limited: int     # failed calls the server answered with a rate limit (HTTP 429)


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


@dataclass(frozen=True, slots=True)
class RetryLater:
    """:meth:`JudgeCaller.record`'s answer when the caller decides that a failed call made elsewhere is
    worth another attempt: the executor sends the request again (after :meth:`JudgeCaller.reserve`).
    ``attempt`` is the attempt that failed, ``error`` its scrubbed error."""

    attempt: int
    error: str


@dataclass(frozen=True, slots=True)
class Attempt:
    """One call of a judge, nothing around it (:func:`attempt_call`): the response, or the typed retry
    decision and the scrubbed error text; ``latency_s`` is its wall time."""

    response: JudgeResponse | None
    decision: RetryDecision | None = None
    error: str | None = None
    latency_s: float = 0.0


async def attempt_call(judge: JudgeAPI, request: JudgeRequest, *, timeout_s: float) -> Attempt:
    """Call ``judge`` once within ``timeout_s``: what :meth:`JudgeCaller.call` does per attempt, for a
    stage that makes calls elsewhere and hands the results to :meth:`JudgeCaller.record` (a timeout is
    transient; any other exception of the backend is recorded with its type and the backend's
    :meth:`~verdictlab.judges.base.JudgeAPI.error_decision` (fatal unless it says otherwise), never raised;
    every error text is scrubbed)."""
    t0 = time.monotonic()
    try:
        # a timeout scope, not wait_for: wait_for wraps every call in a task of its own
        async with asyncio.timeout(timeout_s):
            resp = await judge.generate(request)
        return Attempt(resp, latency_s=time.monotonic() - t0)
    except JudgeCallError as exc:
        decision, err = exc.decision, f"{type(exc).__name__}: {redact_text(exc, limit=ERROR_LIMIT)}"
    except TimeoutError:
        decision, err = RetryDecision.transient(), f"timeout after {timeout_s:g}s"
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # recorded with its type, and retried only when the backend says it may be
        decision, err = _decision_for(judge, exc), f"{type(exc).__name__}: {redact_text(exc, limit=ERROR_LIMIT)}"
    return Attempt(None, decision, err, time.monotonic() - t0)


def _decision_for(judge: JudgeAPI, exc: Exception) -> RetryDecision:
    """The backend's decision for an exception of its own (:meth:`JudgeAPI.error_decision`); fatal when
    the backend cannot say (its hook itself raised)."""
    try:
        decision = judge.error_decision(exc)
    except Exception:  # noqa: BLE001 - the hook of a broken backend must not break the run either
        return RetryDecision.fatal()
    return decision if isinstance(decision, RetryDecision) else RetryDecision.fatal()


def cache_allows(policy: str, temperature: float) -> bool:
    """Whether the run's cache policy (``on`` / ``off`` / ``auto``) lets a trial at ``temperature`` be
    answered from and stored in the response cache: ``auto`` caches only temperature 0, where a
    repeated call would give the same answer."""
    return policy == "on" or (policy == "auto" and temperature == 0.0)


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
    retries: int = 0
    rate_limited: int = 0


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
        self._pending: dict[str, int] = {}  # calls made elsewhere: trial id -> attempts reserved so far

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
        return self.judge.cost(self.prices, resp.tokens_in, resp.tokens_out)

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

    # -- calls made elsewhere (batch jobs, results files, Ray Data stages) ----------------------------
    def reserve(self, trial_id: str) -> int | None:
        """Reserve one call of ``trial_id`` that will be made elsewhere (a batch request, a line of a
        results file, a row of an inference stage): the run budget grants it and the call is counted,
        exactly as :meth:`call` does before each attempt.  Returns the attempt number it will be (1,
        then 2 for its first retry...), or None when the run is stopped, this judge is halted or the
        budget is spent (the run then stops cleanly; the request must not be sent)."""
        if not self._may_start() or not self._granted(self.budget.try_reserve()):
            return None
        self.spend.calls += 1
        n = self._pending.get(trial_id, 0) + 1
        if n > 1:
            self.spend.retries += 1
        self._pending[trial_id] = n
        return n

    def record(self, trial_id: str, *, response: JudgeResponse | None = None, error: str | None = None,
               decision: RetryDecision | None = None, cache_key: str | None = None,
               latency_s: float | None = None, batch_price: bool = False,
               can_retry: bool = True) -> CallResult | RetryLater:
        """Record the result of a call of ``trial_id`` that was made elsewhere, by the rules of
        :meth:`call`: the same scrubbing and sanity checks, the budget charge and the spend, one attempt
        row, the cache entry (when ``cache_key`` is given) and the retry decision.

        ``response`` is the answer as read from the batch output, results file or stage (the caller
        sanitises it); else ``error`` says why there is none and ``decision`` whether it may be retried
        (default: transient).  ``batch_price``: cost at the price table's batch rate.  ``can_retry``:
        False when the executor has no way to send the request again (an imported results file), so a
        failure is final.  Returns the :class:`CallResult` to store, or :class:`RetryLater` when the
        caller decides the call is worth another attempt (an attempt row ``retry`` is written; the
        executor sends it again after :meth:`reserve`)."""
        attempt = self._pending.pop(trial_id, 0) or 1     # a call reserved by an earlier session counts as 1
        if response is not None:
            resp = sanitized(response)
            cost = self.judge.cost(self.prices, resp.tokens_in, resp.tokens_out, batch=True) if batch_price \
                else self.cost_of(resp)
            if batch_price:
                resp = dataclasses.replace(resp, cost_usd=cost)
            return self._accepted(resp, trial_id, attempt, latency_s, cache_key, cost)
        decision = decision or RetryDecision.transient()
        if decision.kind is RetryKind.RATE_LIMIT:
            self.spend.rate_limited += 1
        err = redact_text(error or "no answer", limit=ERROR_LIMIT)
        retry = can_retry and self.worth_retrying(decision, attempt) and not self.halted
        self._log_failure(trial_id, attempt, decision, err, latency_s, retry)
        if retry:
            self._pending[trial_id] = attempt
            return RetryLater(attempt, err)
        return CallResult(None, attempts=attempt, error=err, latency_s=latency_s)

    def worth_retrying(self, decision: RetryDecision, attempt: int) -> bool:
        """The retry rule for every call: a retryable decision, and ``attempt`` within ``max_retries``
        retries of the first call."""
        return decision.retry and attempt <= self.spec.max_retries

    # -- internals -------------------------------------------------------------------------------
    def _may_start(self) -> bool:
        """No new call once the run is stopped or this judge is halted."""
        return not (self.control.stopped or self.halted)

    def _granted(self, granted: bool) -> bool:
        """The budget's answer to a reservation; a refusal stops the run."""
        if not granted:
            self.control.halt(f"budget: {self.budget.exhausted_reason}")
        return granted

    async def _areserve(self) -> bool:
        """One call from the budget through its awaitable reservation (a cluster budget fetches calls
        from its ledger without blocking the event loop; a local one is the same as the sync call)."""
        return self._may_start() and self._granted(await self.budget.areserve())

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
            if attempt > 1:
                self.spend.retries += 1
            await self._wait_for_limits(request)
            done = await attempt_call(self.judge, request, timeout_s=self.spec.timeout_s)
            if done.response is not None:
                resp = sanitized(done.response)
                return self._accepted(resp, trial_id, attempt, done.latency_s, cache_key, self.cost_of(resp))
            assert done.decision is not None and done.error is not None
            if done.decision.kind is RetryKind.RATE_LIMIT:
                self.spend.rate_limited += 1
            retry = self.worth_retrying(done.decision, attempt)
            self._log_failure(trial_id, attempt, done.decision, done.error, done.latency_s, retry)
            if not retry:
                return CallResult(None, attempts=attempt, error=done.error, latency_s=done.latency_s)
            await asyncio.sleep(backoff_delay(done.decision, attempt, rng=self.rng, base_s=self.backoff_base_s,
                                              cap_s=self.backoff_cap_s))

    def _log_failure(self, trial_id: str, attempt: int, decision: RetryDecision, err: str,
                     latency: float | None, retry: bool) -> None:
        self.log.add_attempt({"trial_id": trial_id, "judge": self.judge.judge_id, "attempt": attempt,
                              "outcome": "retry" if retry else "failed", "error_kind": decision.kind.value,
                              "error": err, "latency_s": latency})

    def _accepted(self, resp: JudgeResponse, trial_id: str, attempt: int, latency: float | None,
                  cache_key: str | None, cost: float | None) -> CallResult:
        """A (sanitised) answer: charged to the budget and the spend, its attempt row, its cache entry."""
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


__all__ = ["Attempt", "CallLog", "CallRecords", "CallResult", "JudgeCaller", "ResponseCache", "RetryLater", "RunControl", "Spend",
           "attempt_call", "cache_allows", "estimate_tokens", "response_from_json", "response_to_json"]
