"""Texts a named judge writes outside the trial grid -- the paraphrase probe's reworded questions,
``verdictlab perturb``'s test cases and their validations -- one call per prompt, every call through
the engine's caller (:class:`~verdictlab.engine.caller.JudgeCaller`: concurrency and rate limits, typed
retries, timeout, the budget, attempt accounting, the response cache, secret scrubbing).

Datasets never call a judge: the engine hands :func:`write_with_judge` (or a function built on it) to the
dataset transform that needs model-written text (:func:`verdictlab.datasets.probes.paraphrase_probe`,
:func:`verdictlab.datasets.perturb.perturb_items`)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from .. import judges
from ..protocols.writing import WritingPrompt, Written
from .caller import CallLog, JudgeCaller, ResponseCache, Spend
from .config import JudgeSpec
from .limits import Budget

__all__ = ["write_with_judge"]


def write_with_judge(judge_id: str, prompts: Mapping[str, WritingPrompt], *, log: CallLog | None = None,
                     cache: ResponseCache | None = None, budget: Budget | None = None,
                     spend: Spend | None = None, spec: JudgeSpec | None = None) -> dict[str, Written]:
    """Send every prompt (key -> :class:`~verdictlab.protocols.writing.WritingPrompt`) to ``judge_id``
    through one :class:`~verdictlab.engine.caller.JudgeCaller`; returns key -> :class:`Written`.

    ``log`` receives an attempt row per call (``trial_id`` = the key) and the cache entries; ``cache``
    answers a prompt asked before (keyed by the whole request and its ``rep``), so writing the same suite
    again reads the stored texts instead of paying for them; ``budget`` stops the calls cleanly when spent
    (a prompt not sent is missing from the result); ``spend`` adds up calls, tokens and dollars."""
    judge = judges.make_judge(judge_id)
    caller = JudgeCaller(judge, spec, budget=budget, log=log, cache=cache, spend=spend)

    async def one(key: str, prompt: WritingPrompt) -> tuple[str, Written | None]:
        req = judges.JudgeRequest(messages=prompt.messages, temperature=prompt.temperature,
                                  max_tokens=prompt.max_tokens, seed=prompt.seed, metadata=dict(prompt.metadata),
                                  item=prompt.item)
        cache_key = caller.cache_key(req, prompt.rep) if cache is not None else None
        res = await caller.call(req, trial_id=key, cache_key=cache_key)
        if res is None:                                   # the budget stopped it before it was sent
            return key, None
        resp = res.response
        return key, Written(text=None if resp is None else resp.text, error=res.error, attempts=res.attempts,
                            cache_hit=res.cache_hit, cost_usd=res.cost_usd,
                            tokens_in=None if resp is None else resp.tokens_in,
                            tokens_out=None if resp is None else resp.tokens_out)

    async def run() -> list[tuple[str, Written | None]]:
        try:
            return list(await asyncio.gather(*(one(k, p) for k, p in prompts.items())))
        finally:
            await judge.aclose()

    return {k: w for k, w in asyncio.run(run()) if w is not None}
