"""Paraphrases of questions by a named judge, for the ``paraphrase`` probe: one
temperature-0 call per question through the judgment caller (retries, limits, scrubbed errors).  The
engine hands this function to :func:`verdictlab.datasets.probes.paraphrase_probe`, so datasets never
call a judge themselves."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from .. import judges
from ..datasets.probes import PARAPHRASE_PROMPT
from .caller import JudgeCaller

__all__ = ["paraphrase_with_judge"]


def paraphrase_with_judge(judge_id: str, questions: Mapping[str, str], *, max_tokens: int = 512) -> dict[str, str]:
    """One temperature-0 call per question to ``judge_id`` through the engine's caller (retries,
    limits, scrubbed errors); returns item id -> reworded question (failed calls left out)."""
    judge = judges.make_judge(judge_id)
    caller = JudgeCaller(judge)

    async def one(item_id: str, q: str) -> tuple[str, str | None]:
        req = judges.JudgeRequest(messages=({"role": "user", "content": PARAPHRASE_PROMPT.format(question=q)},),
                                  temperature=0.0, max_tokens=max_tokens,
                                  metadata={"purpose": "paraphrase", "item_id": item_id})
        res = await caller.call(req, trial_id=f"paraphrase:{item_id}")
        text = res.response.text.strip() if res is not None and res.response is not None else ""
        return item_id, text or None

    async def run() -> list[tuple[str, str | None]]:
        try:
            return list(await asyncio.gather(*(one(i, q) for i, q in questions.items())))
        finally:
            await judge.aclose()

    return {i: t for i, t in asyncio.run(run()) if t is not None}
