"""Single edits of an agent transcript that keep or flip whether the task was completed (written by a
rule; for point items that carry a :class:`~verdictlab.core.items.Transcript`).

``transcript.drop_tool_result`` (meaning-changing, PASS -> FAIL)
    the last tool result is removed: the agent's final answer now rests on a call whose result the
    record never shows, so the record no longer shows the task done.  Sources labelled PASS with at
    least one tool result.
``transcript.wrong_answer`` (meaning-changing, PASS -> FAIL)
    the final answer gives a wrong value: the reference answer's number where the answer states it,
    else the answer's last number, raised by a seeded 1-9, in the item's response and in the last
    assistant message alike.  Sources labelled PASS whose answer holds a number.
``transcript.reformat_message`` (meaning-preserving)
    the last assistant message (and the final answer) laid out again by the ``format.whitespace`` rule.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from ..core.items import PointItem, Transcript
from ..protocols.rubric import normalise_result
from .perturb_cases import Edit, NotApplicable
from .perturb_format import whitespace

__all__ = ["TRANSCRIPT_RULES", "drop_tool_result", "reformat_message", "wrong_answer"]

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _transcript(item: PointItem) -> Transcript:
    if item.transcript is None:
        raise NotApplicable("not a transcript")
    return item.transcript


def _completed(item: PointItem) -> None:
    if normalise_result(item.label) != "PASS":
        raise NotApplicable(f"the source is labelled {item.label!r}, not PASS: removing what completed the task "
                            "would not change its label")


def _replace_message(t: Transcript, index: int, content: str) -> Transcript:
    msgs = list(t.messages)
    msgs[index] = msgs[index].model_copy(update={"content": content})
    return Transcript(messages=tuple(msgs))


def drop_tool_result(item: PointItem, rng: random.Random) -> Edit:
    t = _transcript(item)
    _completed(item)
    results = t.tool_results()
    if not results:
        raise NotApplicable("the transcript has no tool result to remove")
    last = results[-1]
    removed = t.messages[last]
    kept = tuple(m for i, m in enumerate(t.messages) if i != last)
    return Edit(transcript=Transcript(messages=kept),
                params={"removed_message": last + 1, "function": removed.function, "tool_call_id": removed.tool_call_id})


def _wrong_value(answer: str, reference: str | None, rng: random.Random) -> tuple[str, str]:
    """``(value in the answer, wrong value)``."""
    ref = (reference or "").strip()
    spans = [m.group(0) for m in _NUMBER.finditer(answer)]
    if _NUMBER.fullmatch(ref) and ref in spans:
        old = ref
    elif spans:
        old = spans[-1]
    else:
        raise NotApplicable("the final answer holds no number to make wrong")
    step = rng.randint(1, 9)
    new = str(int(old) + step) if "." not in old else f"{float(old) + step:g}"
    return old, new


def _swap_last(text: str, old: str, new: str) -> str:
    """``text`` with its last standalone ``old`` number replaced by ``new``."""
    hits = [m for m in _NUMBER.finditer(text) if m.group(0) == old]
    if not hits:
        return text
    m = hits[-1]
    return text[:m.start()] + new + text[m.end():]


def wrong_answer(item: PointItem, rng: random.Random) -> Edit:
    t = _transcript(item)
    _completed(item)
    old, new = _wrong_value(item.response, item.reference, rng)
    response = _swap_last(item.response, old, new)
    final = t.last_assistant()
    transcript = t if final is None else _replace_message(t, final, _swap_last(t.messages[final].content, old, new))
    return Edit(response=response, transcript=transcript, params={"from": old, "to": new})


def reformat_message(item: PointItem, rng: random.Random) -> Edit:
    t = _transcript(item)
    final = t.last_assistant()
    if final is None:
        raise NotApplicable("no assistant message with text to reformat")
    content = t.messages[final].content
    edit = whitespace(content, rng)
    assert edit.response is not None
    response = edit.response if item.response.strip() == content.strip() else item.response
    return Edit(response=response, transcript=_replace_message(t, final, edit.response),
                params={"message": final + 1, **edit.params})


TRANSCRIPT_RULES: dict[str, Callable[[PointItem, random.Random], Edit]] = {
    "transcript.drop_tool_result": drop_tool_result, "transcript.wrong_answer": wrong_answer,
    "transcript.reformat_message": reformat_message}
#: the label a changing transcript edit leaves (the task no longer shown done)
CHANGED_LABEL: dict[str, Any] = {"transcript.drop_tool_result": "FAIL", "transcript.wrong_answer": "FAIL"}
