"""Reading a verdict out of a judge's raw text: strict first, then documented repairs.

Every parser returns a :class:`~verdictlab.protocols.base.ParseResult` in *shown* terms
("A" = the response shown first).  The rules, in the order they are tried:

Strict (status ``ok``)
    The text is exactly the requested format.  Surrounding whitespace is allowed.  When the
    protocol's stop sequence (``}`` for JSON, ``</judgment>`` for XML) is missing at the end it is
    put back first: backends cut generation *at* the stop sequence and do not return it, so its
    absence is the expected shape of a well-formed answer, not an error.  ``detail`` says so.

Repairs (status ``repaired``; ``detail`` lists every repair applied)
    R1  markdown code fences (```json ... ```) and backticks are stripped;
    R2  prose before or after the JSON object / XML block is dropped;
    R3  JSON with single quotes or trailing commas is normalised;
    R4  the winner value is normalised: case ("a" -> "A"), quotes, asterisks, brackets and
        trailing punctuation, prefixes such as "Response A", "Answer (B)", "Option a";
    R5  the JSON/XML does not parse as a whole (e.g. truncated by max_tokens) but the winner field
        is *complete* (``"winner": "A"`` with its closing quote, or ``<winner>A</winner>``);
    R6  (label-only protocols) a reply that explicitly designates a winner, e.g.
        "Answer: B", "B.", "The better response is A", "Response B is better".

Failure (status ``failed``, verdict ``None``)
    Nothing unambiguous was found: empty or garbage text, a truncated answer without a complete
    winner field, a winner value such as "A or B", different winners named more than once, or a
    tie when the protocol does not allow ties.  ``detail`` says which.  Nothing is ever guessed.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .base import ParseResult

TIE_WORDS = frozenset({"tie", "draw", "equal", "both", "neither", "same", "equally good", "none"})

_PREFIX = r"(?:the\s+)?(?:response|answer|output|option|assistant|candidate)"
_VALUE_RE = re.compile(rf"^(?:{_PREFIX}\s*[_\-#]?\s*)?\(?\s*([ab])\s*\)?$", re.IGNORECASE)
_FENCE_RE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?|\n?\s*```\s*$")


def normalise_winner(value: Any, *, allows_tie: bool = False) -> tuple[str | None, str]:
    """Map a raw winner value to ``("A"|"B"|"tie"|None, note)``.

    ``note`` is ``"exact"`` for a literal ``A``/``B`` (or ``tie`` when allowed), ``"normalised"``
    when rule R4 was needed, or the reason it failed.
    """
    if not isinstance(value, str):
        return None, f"winner is not a string ({type(value).__name__})"
    if value in ("A", "B"):
        return value, "exact"
    if allows_tie and value == "tie":
        return "tie", "exact"
    v = value.strip().strip("\"'`*_ ").rstrip(".!:;,").strip()
    if not v:
        return None, "empty winner"
    m = _VALUE_RE.match(v)
    if m:
        return m.group(1).upper(), "normalised"
    if v.lower() in TIE_WORDS:
        if allows_tie:
            return "tie", "normalised"
        return None, f"tie ({value!r}) is not allowed by this protocol"
    return None, f"ambiguous or unknown winner value {value[:40]!r}"


def strip_fences(text: str) -> str:
    """R1: drop markdown code fences (also a lone opening fence) and stray backticks."""
    out = _FENCE_RE.sub("", text)
    return out.strip().strip("`").strip()


def _restore_stop(text: str, stop: tuple[str, ...]) -> tuple[str, bool]:
    """Put back a stop sequence the backend cut off (see module docstring)."""
    t = text.rstrip()
    for s in stop:
        if s.strip() and not t.endswith(s):
            return t + s, True
    return t, False


def _merge(verdicts: list[tuple[str | None, str]]) -> tuple[str | None, str]:
    """One verdict from several winner fields: all must agree, else failure."""
    found = {v for v, _ in verdicts if v is not None}
    if len(found) > 1:
        return None, f"conflicting winners named: {', '.join(sorted(found))}"
    if not found:
        return None, verdicts[0][1] if verdicts else "no winner field"
    v = found.pop()
    note = "normalised" if any(n == "normalised" for vv, n in verdicts if vv == v) else "exact"
    return v, note


# -- label only ---------------------------------------------------------------------------------
_LEADING_RE = re.compile(r"^\(?([AB])\)?(?:$|[.,:;)!\n]|\s+(?:is|wins)\b)")
_DESIGNATION_RES = (
    re.compile(rf"\b(?:winner|verdict|answer|choice|better\s+{_PREFIX}|better\s+one)\s*(?:is|:|=|-)\s*"
               rf"(?:{_PREFIX}\s*)?\(?([AB])\b", re.IGNORECASE),
    re.compile(rf"\b{_PREFIX}\s*\(?([AB])\)?\s+is\s+(?:the\s+)?better\b", re.IGNORECASE),
)


def parse_label(text: str, *, allows_tie: bool = False) -> ParseResult:
    """Parse a label-only reply (protocol ``direct``)."""
    if text is None or not text.strip():
        return ParseResult(None, "failed", "empty output")
    stripped = text.strip()
    if stripped in ("A", "B"):
        return ParseResult(stripped, "ok", "")
    if allows_tie and stripped == "tie":
        return ParseResult("tie", "ok", "")
    repairs = []
    cleaned = strip_fences(stripped)
    if cleaned != stripped:
        repairs.append("R1 fences stripped")
    v, note = normalise_winner(cleaned, allows_tie=allows_tie)
    if v is not None:
        return ParseResult(v, "repaired", "; ".join([*repairs, f"R4 winner {cleaned[:30]!r} normalised"]))
    if "not allowed" in note:
        return ParseResult(None, "failed", note)
    cleaned = cleaned.replace("*", "")
    found: set[str] = set()
    m = _LEADING_RE.match(cleaned)
    if m:
        found.add(m.group(1))
    for rx in _DESIGNATION_RES:
        found.update(x.upper() for x in rx.findall(cleaned))
    if len(found) == 1:
        v = found.pop()
        return ParseResult(v, "repaired", "; ".join([*repairs, f"R6 reply designates {v}"]))
    if len(found) > 1:
        return ParseResult(None, "failed", "both A and B designated as the winner")
    return ParseResult(None, "failed", f"no verdict in {cleaned[:40]!r}")


# -- JSON ---------------------------------------------------------------------------------------
_JSON_WINNER_RE = re.compile(r"[\"']winner[\"']\s*:\s*(?:\"([^\"\n]*)\"|'([^'\n]*)'|([A-Za-z]+)\s*[,}])")


def _loads_lenient(s: str) -> tuple[Any, str | None]:
    """json.loads, then with R3 (single quotes, trailing commas)."""
    try:
        return json.loads(s), None
    except (json.JSONDecodeError, ValueError):
        pass
    t = re.sub(r",\s*([}\]])", r"\1", s)
    if '"' not in t:
        t = t.replace("'", '"')
    try:
        return json.loads(t), "R3 single quotes / trailing commas normalised"
    except (json.JSONDecodeError, ValueError):
        return None, None


def _json_candidate(text: str, stop: tuple[str, ...], repairs: list[str]) -> tuple[str, str]:
    """Repairs R1-R2: the reply without fences and without text around the object -> (body, candidate)."""
    body = strip_fences(text)
    if body != text.strip():
        repairs.append("R1 fences stripped")
    start = body.find("{")
    if start > 0:
        repairs.append("R2 text before the object dropped")
    candidate = body[start:] if start >= 0 else body
    end = candidate.rfind("}")
    if end >= 0 and end < len(candidate.rstrip()) - 1:
        repairs.append("R2 text after the object dropped")
        candidate = candidate[:end + 1]
    candidate, _ = _restore_stop(candidate, stop)
    return body, candidate


def _json_object_verdict(obj: dict[str, Any], fields: tuple[str, ...], allows_tie: bool, notes: list[str],
                         repairs: list[str]) -> ParseResult:
    """A (leniently) parsed object: its winner field, normalised (R4), or failed."""
    if "winner" not in obj:
        return ParseResult(None, "failed", "JSON object has no 'winner' field")
    raw = obj["winner"]
    v, note = normalise_winner(raw, allows_tie=allows_tie)
    if v is None:
        return ParseResult(None, "failed", note)
    if note == "normalised":
        repairs.append(f"R4 winner {raw!r} normalised")
    if list(obj) != list(fields):
        repairs.append(f"fields {list(obj)} instead of {list(fields)}")
    if v == "tie" and not allows_tie:  # pragma: no cover - normalise_winner already refuses
        return ParseResult(None, "failed", "tie not allowed")
    return ParseResult(v, "repaired" if repairs else "ok", "; ".join(notes + repairs))


def _json_winner_text(body: str, allows_tie: bool, repairs: list[str]) -> ParseResult:
    """R5: the object does not parse; accept a complete winner field (all such fields must agree)."""
    hits = _JSON_WINNER_RE.findall(body)
    if not hits:
        return ParseResult(None, "failed", f"no complete winner field in {body[:40]!r}")
    verdicts = [normalise_winner(a or b or c, allows_tie=allows_tie) for a, b, c in hits]
    v, note = _merge(verdicts)
    if v is None:
        return ParseResult(None, "failed", note)
    repairs.append("R5 winner read from unparseable/truncated JSON")
    if note == "normalised":
        repairs.append("R4 winner normalised")
    return ParseResult(v, "repaired", "; ".join(repairs))


def parse_json(text: str, *, fields: tuple[str, ...] = ("winner", "rationale"), stop: tuple[str, ...] = ("}",),
               allows_tie: bool = False) -> ParseResult:
    """Parse ``{"winner": ..., "rationale": ...}`` (field order as in ``fields``)."""
    if text is None or not text.strip():
        return ParseResult(None, "failed", "empty output")
    restored, did_restore = _restore_stop(text, stop)
    notes = ["closing brace restored (stop sequence)"] if did_restore else []
    # strict
    try:
        obj = json.loads(restored)
    except (json.JSONDecodeError, ValueError):
        obj = None
    if (isinstance(obj, dict) and list(obj) == list(fields) and obj.get("winner") in ("A", "B")
            and all(isinstance(obj[f], str) for f in fields)):
        return ParseResult(obj["winner"], "ok", "; ".join(notes))
    # repairs
    repairs: list[str] = []
    body, candidate = _json_candidate(text, stop, repairs)
    obj, r3 = _loads_lenient(candidate)
    if r3:
        repairs.append(r3)
    if isinstance(obj, dict):
        return _json_object_verdict(obj, fields, allows_tie, notes, repairs)
    return _json_winner_text(body, allows_tie, repairs)


# -- XML ----------------------------------------------------------------------------------------
_XML_WINNER_RE = re.compile(r"<\s*winner\s*>(.*?)<\s*/\s*winner\s*>", re.IGNORECASE | re.DOTALL)


def parse_xml(text: str, *, fields: tuple[str, ...] = ("winner", "rationale"),
              stop: tuple[str, ...] = ("</judgment>",), allows_tie: bool = False) -> ParseResult:
    """Parse ``<judgment><winner>..</winner><rationale>..</rationale></judgment>`` (field order
    as in ``fields``)."""
    if text is None or not text.strip():
        return ParseResult(None, "failed", "empty output")
    restored, did_restore = _restore_stop(text, stop)
    notes = ["closing tag restored (stop sequence)"] if did_restore else []
    inner = r"\s*".join(
        r"<winner>(A|B)</winner>" if f == "winner" else rf"<{f}>[^<]*</{f}>" for f in fields)
    strict = re.compile(rf"^\s*<judgment>\s*{inner}\s*</judgment>\s*$", re.DOTALL)
    m = strict.match(restored)
    if m:
        return ParseResult(m.group(1), "ok", "; ".join(notes))
    repairs: list[str] = []
    body = strip_fences(text)
    if body != text.strip():
        repairs.append("R1 fences stripped")
    hits = _XML_WINNER_RE.findall(body)
    if not hits:
        return ParseResult(None, "failed", f"no complete <winner> tag in {body[:40]!r}")
    verdicts = [normalise_winner(h, allows_tie=allows_tie) for h in hits]
    v, note = _merge(verdicts)
    if v is None:
        return ParseResult(None, "failed", note)
    if note == "normalised":
        repairs.append("R4 winner normalised")
    repairs.append("R2/R5 winner read from a non-conforming XML block")
    return ParseResult(v, "repaired", "; ".join(notes + repairs))
