"""``pointwise``: one response graded on a scale (3-level, 1-5, ...), and agreement with human grades.

For :class:`~verdictlab.core.items.PointItem` datasets.  The scale is the item's ``scale`` (e.g.
``(0, 1, 2)`` from the Judge's Verdict loader) or the protocol's (default 1..5).  Reply (JSON,
reasoning first)::

    {"rationale": "...", "score": 2}

The verdict column holds the grade as text (``"2"``; words such as ``"partial"`` when the scale is
made of words).  Parse: strict = exactly ``rationale`` then ``score`` with a grade (closing brace may
be missing: the stop sequence); repaired = fences / prose dropped, other keys, a number in a
string, a complete ``"score": N`` field in a truncated object; failed = no grade.

Agreement with human grades is an analysis: :func:`verdictlab.analyses.rubric.pointwise_agreement`
and :func:`verdictlab.analyses.rubric.rubric_agreement`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from .base import ParseResult, Protocol
from .parsing import strip_fences

DEFAULT_SCALE: tuple[int, ...] = (1, 2, 3, 4, 5)
_SCORE_FIELD = re.compile(r"[\"']score[\"']\s*:\s*(?:\"([^\"\n]+)\"|'([^'\n]+)'|(-?\d+(?:\.\d+)?))")


def grade_text(value: Any) -> str | None:
    """A grade as stored text: integers without decimals, words lower-cased; None if empty."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        f = float(value)
        if f != f:
            return None
        return str(int(f)) if f.is_integer() else f"{f:g}"
    s = str(value).strip()
    if not s:
        return None
    try:
        return grade_text(float(s))
    except ValueError:
        return s.lower()


def parse_grade(text: str) -> ParseResult:
    """Parse a pointwise grading reply (rules in the module docstring)."""
    if text is None or not text.strip():
        return ParseResult(None, "failed", "empty output")
    t = text.strip()
    restored = t if t.endswith("}") else t + "}"
    try:
        obj = json.loads(restored)
    except ValueError:
        obj = None
    if isinstance(obj, dict) and list(obj) == ["rationale", "score"] and isinstance(obj["score"], int | float) \
            and not isinstance(obj["score"], bool):
        g = grade_text(obj["score"])
        if g is not None:
            return ParseResult(g, "ok", "", scores={"score": obj["score"]})
    body = strip_fences(t)
    start = body.find("{")
    cand = body[start:] if start >= 0 else body
    end = cand.rfind("}")
    if end >= 0:
        cand = cand[:end + 1]
    try:
        obj2 = json.loads(cand if cand.endswith("}") else cand + "}")
    except ValueError:
        obj2 = None
    if isinstance(obj2, dict) and "score" in obj2:
        g = grade_text(obj2["score"])
        if g is None:
            return ParseResult(None, "failed", f"score value {obj2['score']!r} is not a grade")
        return ParseResult(g, "repaired", "non-conforming object; score field read", scores={"score": obj2["score"]})
    hits = _SCORE_FIELD.findall(body)
    grades = {g for a, b, c in hits if (g := grade_text(a or b or c)) is not None}
    if len(grades) == 1:
        g = grades.pop()
        return ParseResult(g, "repaired", "score read from a truncated / non-JSON reply")
    if len(grades) > 1:
        return ParseResult(None, "failed", f"different scores named: {sorted(grades)}")
    return ParseResult(None, "failed", f"no score in {t[:40]!r}")


class PointwiseProtocol(Protocol):
    """Grade one response on the item's scale (or ``scale``, default 1..5)."""

    id = "pointwise"
    label_only = False
    allows_tie = False

    def __init__(self, *, scale: Sequence[Any] | None = None, use_reference: bool = True,
                 max_tokens: int = 120, protocol_id: str = "pointwise") -> None:
        self.id = protocol_id
        self.scale = tuple(scale) if scale is not None else DEFAULT_SCALE
        self.use_reference = bool(use_reference)
        self._max_tokens = int(max_tokens)

    def item_scale(self, item: Any) -> tuple[Any, ...]:
        return tuple(getattr(item, "scale", None) or self.scale)

    def messages(self, item: Any, order: str, *, step: str = "") -> list[dict[str, str]]:
        if not hasattr(item, "response"):
            raise InputError("the pointwise protocol needs PointItem datasets (one response each)")
        scale = self.item_scale(item)
        grades = ", ".join(str(g) for g in scale)
        system = ("You grade one response to a question. Judge correctness and usefulness; length is not a merit. "
                  "Reason briefly, then give one grade from the scale.")
        parts = [f"Question:\n{item.question}"]
        if self.use_reference and getattr(item, "reference", None):
            parts.append(f"Reference answer:\n{item.reference}")
        parts.append(f"Response:\n{item.response}")
        parts.append(f"Grades, worst to best: {grades}.\nReply with a JSON object only, reasoning first "
                     f"(at most 40 words): {{\"rationale\": \"your reasoning\", \"score\": <one of {grades}>}}")
        return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]

    def max_tokens(self) -> int:
        return self._max_tokens

    def stop(self) -> tuple[str, ...]:
        return ("}",)

    def parse(self, text: str) -> ParseResult:
        return parse_grade(text)


def make_pointwise(*, template_path: str | Path | None = None, **options: Any) -> PointwiseProtocol:
    """Registry factory (``pointwise@0-2`` or ``pointwise@1-5`` sets an integer scale)."""
    if template_path is not None and "scale" not in options:
        m = re.fullmatch(r"(-?\d+)-(-?\d+)", str(template_path))
        if not m:
            raise InputError(f"pointwise@{template_path}: expected a scale like 0-2 or 1-5")
        lo, hi = int(m.group(1)), int(m.group(2))
        options["scale"] = tuple(range(lo, hi + 1))
    return PointwiseProtocol(**options)
