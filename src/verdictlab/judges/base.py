"""The judge backend interface (``JudgeAPI``) and its request/response types.

A backend holds only client code: it turns one :class:`JudgeRequest` into one
:class:`JudgeResponse` or raises :class:`JudgeCallError` carrying a typed :class:`RetryDecision`.
The engine owns retries, rate limits, budgets, caching and storage.  Judges know nothing of
datasets or statistics.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from ..core.registry import MissingExtraError, Registry
from ..errors import IncompleteRunError, InputError

if TYPE_CHECKING:
    from .batch import BatchAdapter
    from .prices import PriceTable


class RetryKind(StrEnum):
    RATE_LIMIT = "rate_limit"      # 429 / provider rate limit: retry after backoff or Retry-After
    TRANSIENT = "transient"        # 5xx, connection reset, timeout: retry with backoff
    FATAL = "fatal"                # 4xx other than 429, auth, bad request: do not retry


@dataclass(frozen=True)
class RetryDecision:
    kind: RetryKind
    retry_after_s: float | None = None

    @property
    def retry(self) -> bool:
        return self.kind is not RetryKind.FATAL

    @classmethod
    def rate_limit(cls, retry_after_s: float | None = None) -> RetryDecision:
        return cls(RetryKind.RATE_LIMIT, retry_after_s)

    @classmethod
    def transient(cls, retry_after_s: float | None = None) -> RetryDecision:
        return cls(RetryKind.TRANSIENT, retry_after_s)

    @classmethod
    def fatal(cls) -> RetryDecision:
        return cls(RetryKind.FATAL)


class JudgeCallError(IncompleteRunError):
    """A call failed; ``decision`` says whether and how the engine may retry it.  The caller records it
    on the trial and the run goes on; a call that fails for good leaves the run incomplete."""

    def __init__(self, message: str, decision: RetryDecision) -> None:
        super().__init__(message)
        self.decision = decision


class JudgeConfigError(InputError):
    """A judge id or its parameters are invalid, or its SDK is missing (with an install hint)."""


@dataclass(frozen=True)
class JudgeRequest:
    """One call to a judge.

    ``messages`` are chat messages (``{"role", "content"}``).  ``metadata`` carries the trial key
    (judge, dataset, item_id, protocol, order, temperature, rep, step, decoding) and ``trial_id``.
    ``item`` is the item the request is about (a :class:`~verdictlab.core.items.PairItem` or
    :class:`~verdictlab.core.items.PointItem` in canonical terms; ``metadata["order"]`` says how it is
    shown).  The engine sets it on every request, whatever the judge: a backend that answers from the
    item itself -- the simulated judge, a test judge -- reads it there; a backend that calls a model
    sends only the messages and never the item.  It is not part of the request hash.
    ``verdict_choices`` lists the verdict tokens a label-only protocol expects (e.g. ("A", "B")),
    so a backend with log-probabilities can return their probabilities.
    """

    messages: tuple[dict[str, str], ...]
    temperature: float = 0.0
    max_tokens: int = 256
    seed: int | None = None
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    top_logprobs: int = 0
    verdict_choices: tuple[str, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    item: Any = None
    decoding: str = "free"          # free | constrained (verdictlab.core.vocab.Decoding)
    output_format: Any = None       # for constrained decoding: the protocol's output format

    def request_hash(self, *, provider: str, model: str, rep: int | None = None) -> str:
        """sha1 of everything that can change the answer: provider, model, messages, every
        generation parameter and the repetition index (so repetitions are never served from one
        cache entry)."""
        payload = {
            "provider": provider, "model": model, "messages": list(self.messages),
            "temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed,
            "stop": list(self.stop), "logprobs": self.logprobs, "top_logprobs": self.top_logprobs,
            "verdict_choices": list(self.verdict_choices), "params": self.params, "rep": rep,
        }
        if self.decoding != "free":      # free requests keep the hashes (cache keys) they always had
            payload["decoding"] = self.decoding
        return hashlib.sha1(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class JudgeResponse:
    """What a backend returns for one successful call."""

    text: str
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None
    # probability of each verdict choice *as shown* (e.g. {"A": 0.7, "B": 0.3}), if available
    choice_probs: dict[str, float] | None = None
    # raw top log-probabilities of generated tokens, if requested (list per position)
    top_logprobs: list[dict[str, float]] | None = None
    notes: list[str] = field(default_factory=list)   # e.g. "temperature not supported; omitted"


class JudgeAPI:
    """Base class for judge backends.  Subclasses implement :meth:`generate`.

    ``judge_id`` is the full id string from the config.  ``provider`` and ``model`` name the
    backend for cache keys and the audit trail.  ``max_concurrency`` is a backend's own cap
    (e.g. 1 for an in-process llama.cpp model).

    What the engine needs to know about a backend it asks the backend, never its provider's name:

    * ``assumed_latency_s`` -- seconds per call a plan assumes (``run --plan``'s duration; None: not
      estimated, e.g. GPU batch throughput);
    * :meth:`cost` -- the price lookup: dollars for a call's tokens (``free`` backends, which run on the
      user's machine, cost 0 without a price);
    * ``sdk`` -- the Python distribution the backend calls through, whose version the run records;
    * :meth:`batch_adapter` -- its provider batch API (``batch: true``), or None;
    * :meth:`ray_data_stage` -- a Ray Data inference stage that generates its answers on a cluster's
      GPUs (``executor: ray``), or None: then its calls are made one by one.
    """

    provider: str = "base"
    max_concurrency: int | None = None
    supports_logprobs: bool = False
    assumed_latency_s: float | None = 2.0       # a network call; measured figures on the backends that have one
    free: bool = False
    sdk: str | None = None

    def __init__(self, judge_id: str, model: str) -> None:
        self.judge_id = judge_id
        self.model = model

    async def generate(self, request: JudgeRequest) -> JudgeResponse:  # pragma: no cover
        raise NotImplementedError

    def constraint_mechanism(self, fmt: Any) -> str | None:
        """How this backend would constrain its output to ``fmt`` (an
        :class:`~verdictlab.protocols.output_format.OutputFormat`), or None when it cannot (the default):
        then no constrained trial is run for it, never a silently free one."""
        return None

    def error_decision(self, exc: Exception) -> RetryDecision:
        """The retry decision for an exception other than :class:`JudgeCallError` that :meth:`generate`
        raised: fatal (a backend bug is recorded, never retried) unless the backend knows better -- a judge
        written as a Python function retries the exceptions its author declared retryable."""
        return RetryDecision.fatal()

    def describe(self) -> dict[str, Any]:
        """Public, key-free description of the backend for the audit trail."""
        return {"judge": self.judge_id, "provider": self.provider, "model": self.model}

    def cost(self, prices: PriceTable, tokens_in: int | None, tokens_out: int | None, *,
             batch: bool = False) -> float | None:
        """Dollars for one call's tokens (``batch``: at the price table's batch rate); None when the
        price is unknown (never assumed free).  A ``free`` backend costs 0."""
        if self.free:
            return 0.0
        if batch:
            return prices.batch_cost(self.provider, self.model, tokens_in, tokens_out)
        return prices.cost(self.provider, self.model, tokens_in, tokens_out)

    def batch_adapter(self) -> BatchAdapter | None:
        """The backend's provider batch API (:class:`~verdictlab.judges.batch.BatchAdapter`), or None (the
        default): ``batch: true`` is refused for it."""
        return None

    def ray_data_stage(self) -> Callable[[], Callable[[Any], Any]] | None:
        """A builder of the Ray Data stage that generates this judge's answers on a cluster (called on the
        driver when the run starts), or None (the default): under ``executor: ray`` its calls are made one
        by one by Ray workers."""
        return None

    async def aclose(self) -> None:
        return None


# -- registry -----------------------------------------------------------------------------------
JudgeFactory = Callable[[str, str], JudgeAPI]
JUDGES: Registry[JudgeFactory] = Registry("judge provider", plugins="verdictlab.judges")


def register_judge(prefix: str, factory: str | JudgeFactory, *, description: str = "",
                   extra: str | None = None) -> None:
    """Register a backend for ids ``PREFIX:SPEC``.  ``factory`` is a callable
    ``(judge_id, spec) -> JudgeAPI`` or a lazy ``"module:attr"`` string."""
    JUDGES.register(prefix, factory, description=description, extra=extra)


def judge_prefixes() -> list[str]:
    return JUDGES.names()


_OFFLINE: contextvars.ContextVar[bool] = contextvars.ContextVar("verdictlab_offline_judge", default=False)


def building_offline() -> bool:
    """True while :func:`make_judge` builds a judge with ``offline=True`` (``run --plan``): the backend then
    needs no key, imports no SDK and loads no model; it only has to say its provider, model, concurrency cap
    and constraint mechanisms.  Such a judge is never called."""
    return _OFFLINE.get()


def make_judge(judge_id: str, *, offline: bool = False) -> JudgeAPI:
    """Build a backend from its id (``sim:...``, ``llamacpp:...``, ``openai-compatible:M@URL``...);
    ``offline``: for a plan only (see :func:`building_offline`)."""
    prefix, sep, spec = judge_id.partition(":")
    if not sep:
        raise JudgeConfigError(f"judge id {judge_id!r} must look like PROVIDER:SPEC "
                               f"(known providers: {', '.join(judge_prefixes())})")
    if prefix not in JUDGES:
        raise JudgeConfigError(f"unknown judge provider {prefix!r} in {judge_id!r} "
                               f"(known: {', '.join(judge_prefixes())})")
    try:
        factory = JUDGES.get(prefix)
    except MissingExtraError as exc:
        raise JudgeConfigError(f"judge {judge_id!r}: {exc}") from None
    token = _OFFLINE.set(offline)
    try:
        return factory(judge_id, spec)
    finally:
        _OFFLINE.reset(token)
