"""Paraphrases of questions by a named judge, for the ``paraphrase`` probe: one temperature-0 call per
question through the engine's writing path (:func:`verdictlab.engine.writing.write_with_judge`: the
judgment caller's retries, limits and scrubbed errors).  The engine hands this function to
:func:`verdictlab.datasets.probes.paraphrase_probe`, so datasets never call a judge themselves."""

from __future__ import annotations

from collections.abc import Mapping

from ..datasets.probes import PARAPHRASE_PROMPT
from ..protocols.writing import WritingPrompt
from .writing import write_with_judge

__all__ = ["paraphrase_with_judge"]


def paraphrase_with_judge(judge_id: str, questions: Mapping[str, str], *, max_tokens: int = 512) -> dict[str, str]:
    """One temperature-0 call per question to ``judge_id`` (:func:`~verdictlab.engine.writing.write_with_judge`);
    returns item id -> reworded question (failed calls left out)."""
    prompts = {f"paraphrase:{item_id}": WritingPrompt(
        messages=({"role": "user", "content": PARAPHRASE_PROMPT.format(question=q)},), temperature=0.0,
        max_tokens=max_tokens, metadata={"purpose": "paraphrase", "item_id": item_id, "question": q})
        for item_id, q in questions.items()}
    written = write_with_judge(judge_id, prompts)
    out = {}
    for key, w in written.items():
        text = (w.text or "").strip()
        if text:
            out[key.removeprefix("paraphrase:")] = text
    return out
