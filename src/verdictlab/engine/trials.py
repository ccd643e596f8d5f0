"""From a trial to a request, and from an answer to a :class:`~verdictlab.core.judgment.Judgment`.

These are the two ends of one judgment that do not depend on how trials are scheduled: every
executor builds requests with :meth:`RequestBuilder.build` and turns a
:class:`~verdictlab.engine.caller.CallResult` into a row with :func:`judgment_for`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

from ..core.design import Trial
from ..core.items import PairItem, PointItem, item_systems
from ..core.judgment import Judgment, make_judgment
from ..core.redact import redact_text
from ..core.vocab import DEFAULT_DECODING, VERDICTS, ParseStatus, swap
from ..judges.base import JudgeAPI, JudgeRequest, JudgeResponse
from ..protocols.base import ParseResult, Protocol
from .caller import ERROR_LIMIT, CallResult, cache_allows
from .config import JudgeSpec

Item = PairItem | PointItem
_GENERATION_KEYS = ("max_tokens", "seed")
_PAIR_VERDICTS = frozenset((*VERDICTS, None))


def derived_seed(run_seed: int, trial_id: str) -> int:
    """A per-trial sampling seed: reproducible across reruns, different for every repetition and
    order (the same seed for all repetitions would make them identical and C meaningless)."""
    h = hashlib.sha1(f"{run_seed}\x1f{trial_id}".encode()).hexdigest()
    return int(h[:8], 16) % (2**31 - 1)


def canonical_p_a(choice_probs: Mapping[str, float] | None, order: str) -> float | None:
    """P(canonical A wins) from the shown-terms choice probabilities, renormalised over A and B.

    Canonical A is shown as ``swap("A", order)`` ("A" for order AB, "B" for BA)."""
    if not choice_probs:
        return None
    pa, pb = choice_probs.get("A"), choice_probs.get("B")
    if pa is None or pb is None:
        return None
    total = float(pa) + float(pb)
    if not math.isfinite(total) or total <= 0:
        return None
    return float(choice_probs[swap("A", order) or "A"]) / total


def safe_parse(protocol: Protocol, text: str, response: JudgeResponse | None = None) -> ParseResult:
    """Parse, never raise.  The protocol's :meth:`~verdictlab.protocols.base.Protocol.parse_response`
    hook gets the whole response (e.g. geval: probability-weighted scores from log-probabilities)."""
    try:
        if response is not None:
            return protocol.parse_response(response)
        return protocol.parse(text)
    except Exception as exc:  # a parser bug must not kill the run; it is recorded instead
        return ParseResult(None, ParseStatus.FAILED.value, f"parser raised {type(exc).__name__}: {redact_text(exc, limit=200)}")


class RequestBuilder:
    """Builds the request of a trial for one judge (its spec's generation parameters, the run seed)."""

    def __init__(self, judge: JudgeAPI, spec: JudgeSpec, *, seed: int) -> None:
        self.judge = judge
        self.seed = seed
        self.params = {k: v for k, v in spec.params.items() if k not in _GENERATION_KEYS}
        self.max_tokens = spec.params.get("max_tokens")
        self.fixed_seed = spec.params.get("seed")

    def build(self, trial: Trial, item: Item, protocol: Protocol, tid: str) -> JudgeRequest:
        """The request of ``trial``: the protocol's messages for ``item`` in the trial's order, the
        judge's generation parameters, and the trial key and item for the backend (the same request
        whatever the judge).  May raise if the protocol cannot present ``item``."""
        messages = tuple(dict(m) for m in protocol.messages(item, trial.order, step=trial.step))
        use_logprobs = bool((protocol.label_only or protocol.wants_token_logprobs) and self.judge.supports_logprobs)
        return JudgeRequest(
            messages=messages, temperature=trial.temperature,
            max_tokens=int(self.max_tokens or protocol.max_tokens()),
            seed=self.fixed_seed if self.fixed_seed is not None else derived_seed(self.seed, tid),
            stop=tuple(protocol.stop()), logprobs=use_logprobs,
            top_logprobs=max(5, len(protocol.verdict_choices)) if use_logprobs else 0,
            verdict_choices=tuple(protocol.verdict_choices) if protocol.label_only else (), params=self.params,
            metadata={**trial.key(), "trial_id": tid}, item=item, decoding=trial.decoding,
            output_format=protocol.output_format() if trial.decoding != DEFAULT_DECODING else None,
        )


def _item_label(item: Item) -> str | None:
    if isinstance(item, PairItem):
        return item.label
    return None if item.label is None else str(item.label)


def failed_judgment(trial: Trial, item: Item, *, tid: str, error: str | None, attempts: int,
                    prompt_hash: str = "", detail: str = "no answer: the call failed") -> Judgment:
    """The row of a trial without an answer (the call failed for good, or the item could not be
    presented): verdict NULL, parse status ``failed``, the scrubbed error."""
    return make_judgment(judge=trial.judge, dataset=trial.dataset, item_id=trial.item_id, protocol=trial.protocol,
                         order=trial.order, temperature=trial.temperature, rep=trial.rep, step=trial.step,
                         decoding=trial.decoding, label=_item_label(item), category=item.category,
                         system_a=item_systems(item).get("system_a"), system_b=item_systems(item).get("system_b"),
                         parse_status=ParseStatus.FAILED.value, parse_detail=detail, prompt_hash=prompt_hash, attempts=attempts,
                         error=error, cache_hit=0)


def judgment_for(trial: Trial, item: Item, protocol: Protocol, result: CallResult, *, tid: str,
                 prompt_hash: str) -> Judgment:
    """The row of an answered (or failed) trial: parse the answer, map it to canonical terms."""
    resp = result.response
    if resp is None:
        return failed_judgment(trial, item, tid=tid, error=result.error, attempts=result.attempts,
                               prompt_hash=prompt_hash)
    parsed = safe_parse(protocol, resp.text, resp)
    pair = isinstance(item, PairItem)
    if pair and parsed.verdict not in _PAIR_VERDICTS:
        parsed = ParseResult(None, ParseStatus.FAILED.value, f"parser returned an unknown verdict {parsed.verdict!r}")
    detail = parsed.detail
    if resp.notes:
        detail = (detail + " | " if detail else "") + "backend notes: " + "; ".join(resp.notes)
    return make_judgment(
        judge=trial.judge, dataset=trial.dataset, item_id=trial.item_id, protocol=trial.protocol, order=trial.order,
        temperature=trial.temperature, rep=trial.rep, step=trial.step, decoding=trial.decoding, pair=pair,
        verdict=swap(parsed.verdict, trial.order) if pair else parsed.verdict, parse_status=parsed.status,
        label=_item_label(item), category=item.category, system_a=item_systems(item).get("system_a"),
        system_b=item_systems(item).get("system_b"), raw_output=resp.text, parse_detail=detail,
        fallback_rule=parsed.fallback_rule, scores=parsed.scores or None,
        p_a=canonical_p_a(resp.choice_probs, trial.order) if pair else None,
        latency_s=resp.latency_s if resp.latency_s is not None else result.latency_s,
        tokens_in=resp.tokens_in, tokens_out=resp.tokens_out,
        cost_usd=0.0 if result.cache_hit else result.cost_usd, attempts=result.attempts, error=None,
        cache_hit=int(result.cache_hit), prompt_hash=prompt_hash)


async def judge_trial(trial: Trial, item: Item, protocol: Protocol, builder: RequestBuilder, caller: Any,
                      cache: str) -> Judgment | None:
    """One trial judged through ``caller`` (a :class:`~verdictlab.engine.caller.JudgeCaller`): build the
    request, call (through the cache when ``cache`` allows it for this temperature), make the row.
    An item the protocol cannot present gives a failed row with the reason; None means the call did
    not finish (the run was stopped).  Every executor judges a trial with this, here or on a worker."""
    tid = trial.trial_id
    try:
        request = builder.build(trial, item, protocol, tid)
    except Exception as exc:   # one item the protocol cannot present must not sink the run
        err = f"protocol {trial.protocol!r} could not present this item: {type(exc).__name__}: {exc}"
        return failed_judgment(trial, item, tid=tid, attempts=0, error=redact_text(err, limit=ERROR_LIMIT))
    use_cache = cache_allows(cache, trial.temperature)
    result = await caller.call(request, trial_id=tid,
                               cache_key=caller.cache_key(request, trial.rep) if use_cache else None)
    if result is None:
        return None
    return judgment_for(trial, item, protocol, result, tid=tid, prompt_hash=caller.prompt_hash(request))


__all__ = ["RequestBuilder", "canonical_p_a", "derived_seed", "failed_judgment", "judge_trial", "judgment_for",
           "safe_parse"]
