"""``transcript``: did the agent complete its task?  PASS / FAIL from the record of an agent's run.

For point items that carry a :class:`~verdictlab.core.items.Transcript` (an inspect_ai sample read by
``verdictlab import inspect --transcripts`` or the ``inspect-transcripts`` loader).  The prompt shows the
task (the item's question), the run compactly -- one numbered line per message with its role, the tool
calls an assistant message made (``-> calls add({"x": 1})``) and each tool result under the tool's name;
a message longer than ``max_chars`` keeps its start and its end around a note of how much was cut --
then the final answer (the item's response) and, when the item has one and ``use_reference`` is on, the
expected answer.  The grader reasons first and answers ``<result>PASS</result>`` (the task was done) or
``<result>FAIL</result>``.

Parse rules: those of the rubric protocol (:func:`verdictlab.protocols.rubric.parse_pass_fail`): strict =
a reasoning block and one result tag; repaired = one result tag elsewhere / another case, or a final
``Result: PASS`` line.  ``UNKNOWN`` is not an answer of this protocol: a reply giving it is unparsed
(``failed``, the detail says so), never folded into PASS or FAIL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .base import ParseResult, Protocol
from .rubric import parse_pass_fail

__all__ = ["TranscriptProtocol", "make_transcript", "render_transcript"]

RESULTS: tuple[str, ...] = ("PASS", "FAIL")
_SYSTEM = ("You check whether an AI agent completed the task it was given, from the record of what it did. "
           "Judge what the record shows: an answer the record does not support is not a completed task. "
           "Reason first, then give your result.")


def _cut(text: str, limit: int) -> str:
    """``text`` whole, or its start and end around ``[... N characters cut ...]`` when longer than ``limit``."""
    flat = text.strip()
    if len(flat) <= limit:
        return flat
    keep = max(limit // 2, 1)
    return f"{flat[:keep]} [... {len(flat) - 2 * keep:,} characters cut ...] {flat[-keep:]}"


def render_transcript(transcript: Any, *, max_chars: int = 600) -> str:
    """The messages of a transcript, one numbered block each (module docstring)."""
    lines = []
    for i, m in enumerate(transcript.messages, 1):
        head = f"tool result ({m.function or 'unnamed tool'})" if m.role == "tool" else m.role
        text = _cut(m.content, max_chars) if m.content.strip() else "(no text)"
        block = [f"[{i}] {head}: {text}"]
        for call in m.tool_calls:
            args = json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=str)
            block.append(f"    -> calls {call.function}({_cut(args, max_chars)})")
        if m.error:
            block.append(f"    error: {_cut(m.error, max_chars)}")
        lines.append("\n".join(block))
    return "\n".join(lines)


class TranscriptProtocol(Protocol):
    """PASS / FAIL on an agent transcript (options: ``max_chars`` per message, ``use_reference``)."""

    id = "transcript"
    label_only = False
    allows_tie = False
    verdict_choices = RESULTS

    def __init__(self, *, max_chars: int = 600, use_reference: bool = True, max_tokens: int = 200,
                 protocol_id: str = "transcript") -> None:
        if int(max_chars) < 40:
            raise ValueError(f"transcript: max_chars must be at least 40, got {max_chars}")
        self.id = protocol_id
        self.max_chars = int(max_chars)
        self.use_reference = bool(use_reference)
        self._max_tokens = int(max_tokens)

    def messages(self, item: Any, order: str, *, step: str = "") -> list[dict[str, str]]:
        transcript = getattr(item, "transcript", None)
        if transcript is None:
            raise ValueError("the transcript protocol needs items that carry an agent transcript (verdictlab "
                             "import inspect --transcripts, or the inspect-transcripts loader)")
        parts = [f"Task:\n{item.question}",
                 f"Record of the agent's run ({len(transcript.messages)} messages; a long message keeps its "
                 f"start and end):\n{render_transcript(transcript, max_chars=self.max_chars)}",
                 f"Final answer:\n{item.response.strip() or '(none)'}"]
        if self.use_reference and getattr(item, "reference", None):
            parts.append(f"Expected answer (for checking):\n{item.reference}")
        parts.append("Did the agent complete the task? Write your reasoning (at most 60 words) inside "
                     "<reasoning></reasoning>, then the result inside <result></result>: PASS or FAIL.")
        return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]

    def max_tokens(self) -> int:
        return self._max_tokens

    def stop(self) -> tuple[str, ...]:
        return ("</result>",)

    def parse(self, text: str) -> ParseResult:
        res = parse_pass_fail(text)
        if res.verdict == "UNKNOWN":
            return ParseResult(None, "failed", "UNKNOWN is not an answer here: the transcript rubric asks PASS or FAIL")
        return res


def make_transcript(*, template_path: str | Path | None = None, **options: Any) -> TranscriptProtocol:
    """Registry factory: ``transcript@N`` keeps N characters of each message (default 600)."""
    if template_path is not None and "max_chars" not in options:
        try:
            options["max_chars"] = int(str(template_path))
        except ValueError:
            raise ValueError(f"transcript@{template_path}: expected a number of characters, e.g. transcript@800") from None
    return TranscriptProtocol(**options)
