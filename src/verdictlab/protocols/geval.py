"""``geval``: one call; the judge scores each response against a rubric and names a winner.

Output asked for (JSON, reasoning first)::

    {"rationale": "...", "score_A": 4, "score_B": 2, "winner": "A"}

Scores run from 1 to ``scale`` (default 5; 3 and 10 for the granularity probe).  The rubric comes
from package data per benchmark family (``rubric: auto|correctness|instruction`` or a YAML path;
see :mod:`verdictlab.protocols.rubrics`).

Stored scores (``ParseResult.scores``, in SHOWN terms like the verdict)
-----------------------------------------------------------------------
``score_shown_first``, ``score_shown_second``  the integer scores (``None`` when missing/invalid);
``contradiction``                               ``True`` when the named winner has the strictly
                                                lower score (or a tie is named over unequal scores);
``wscore_shown_first``, ``wscore_shown_second`` the probability-weighted score sum_k p(k) * k at
                                                the score token, when token log-probabilities exist.
:func:`canonical_scores` maps them to canonical ``score_a`` / ``score_b`` with the row's order.

A winner that contradicts the scores
------------------------------------
(Choose the rule in a run config through a rubric file: ``geval@my_rubric.yaml`` with
``geval: {options: {on_contradiction: scores}}``; ``scale`` and ``allows_tie`` work the same way.)
The verdict is what the judge *said* (the winner field) and the output parsed, so by default
(``on_contradiction="flag"``) the status stays ``ok``/``repaired``, ``detail`` says
"winner contradicts scores" and ``scores["contradiction"] = True``; reports count the flag.  The
parse status describes whether the text could be read, not whether the judge was coherent; folding
the two together would hide parser problems behind judge problems.  Other explicit choices:
``on_contradiction="scores"`` takes the verdict from the scores with status ``fallback`` and
``fallback_rule="scores-over-winner"`` (counted like every fallback); ``"fail"`` records no
verdict (status ``failed``).  Nothing is fixed silently.

Parse rules
-----------
Strict (``ok``): a JSON object with exactly ``rationale``, two score fields of one label set and
``winner``; integer scores; the closing brace may be missing (it is the stop sequence).
Repairs (``repaired``, each named in ``detail``): code fences / surrounding prose dropped, single
quotes / trailing commas normalised, other key order or extra keys, a normalised winner value
("Response A", "a"), fields read from a truncated object, a missing or invalid score (verdict
from the winner), a missing winner with *unequal* scores (verdict from the scores).  A score value
that ends the reply and could be the start of a longer valid score (``1`` of ``10``) is treated as
missing: the reply may have been cut there by the token limit.
Failed: nothing readable, conflicting winners, a missing winner with equal or missing scores, a
tie when ties are not allowed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.vocab import LABEL_SETS, Order
from ..errors import InputError
from .base import ParseResult, Protocol
from .parsing import normalise_winner, strip_fences
from .rubrics import load_rubric

#: label sets a response may be shown under (labels probe); index 0 = first shown
MAX_SCALE = 10
CONTRADICTION_RULES = ("flag", "scores", "fail")

_SUFFIX_TO_SHOWN = {"a": 0, "1": 0, "p": 0, "first": 0, "b": 1, "2": 1, "q": 1, "second": 1}
_SCORE_KEY_RE = re.compile(r"^score[\s_\-]*(?:for[\s_\-]*)?(?:response[\s_\-]*)?([a-z0-9]+)$", re.IGNORECASE)
_SCORE_TEXT_RE = re.compile(
    r"[\"']score[\s_\-]*(?:for[\s_\-]*)?(?:response[\s_\-]*)?([A-Za-z0-9]+)[\"']\s*:\s*\"?(-?\d+(?:\.\d+)?)")
# a score value that ends the reply: it may have been cut short by the token limit ("1" of "10")
_TRAILING_SCORE_RE = re.compile(
    r"[\"']score[\s_\-]*(?:for[\s_\-]*)?(?:response[\s_\-]*)?([A-Za-z0-9]+)[\"']\s*:\s*\"?(\d+)\s*$")
_WINNER_TEXT_RE = re.compile(r"[\"']winner[\"']\s*:\s*(?:\"([^\"\n]*)\"|'([^'\n]*)'|([A-Za-z0-9]+)\s*[,}])")


def _label_set(item: Any) -> tuple[str, str]:
    meta = getattr(item, "meta", None) or {}
    labels = meta.get("shown_labels")
    if labels is None:
        return LABEL_SETS["ab"]
    if isinstance(labels, str):
        if labels not in LABEL_SETS:
            raise InputError(f"unknown label set {labels!r}; known: {', '.join(LABEL_SETS)}")
        return LABEL_SETS[labels]
    first, second = (str(x) for x in labels)
    return first, second


def normalise_shown_winner(value: Any, *, allows_tie: bool) -> tuple[str | None, str]:
    """A winner value under any label set -> ``("A"|"B"|"tie"|None, note)`` in shown terms."""
    if isinstance(value, bool):
        return None, f"winner is not a label ({value!r})"
    if isinstance(value, int | float) and float(value) in (1.0, 2.0):
        return ("A" if float(value) == 1.0 else "B"), "normalised"
    if not isinstance(value, str):
        return None, f"winner is not a string ({type(value).__name__})"
    if value in ("A", "B"):
        return value, "exact"
    if value in ("1", "P"):
        return "A", "exact"
    if value in ("2", "Q"):
        return "B", "exact"
    if allows_tie and value == "tie":
        return "tie", "exact"
    v = value.strip().strip("\"'`*_ ").rstrip(".!:;,").strip()
    m = re.fullmatch(r"(?:the\s+)?(?:response|answer|output|option)?\s*[_\-#]?\s*\(?\s*([12pq])\s*\)?", v,
                     re.IGNORECASE)
    if m:
        return ("A" if m.group(1).lower() in ("1", "p") else "B"), "normalised"
    return normalise_winner(value, allows_tie=allows_tie)


def _score_value(raw: Any) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, str):
        try:
            raw = float(raw.strip())
        except ValueError:
            return None
    if isinstance(raw, int | float) and math.isfinite(raw) and float(raw).is_integer():
        k = int(raw)
        return k if 1 <= k <= MAX_SCALE else None
    return None


def _loads(text: str) -> tuple[Any, str | None]:
    try:
        return json.loads(text), None
    except ValueError:
        pass
    t = re.sub(r",\s*([}\]])", r"\1", text)
    if '"' not in t:
        t = t.replace("'", '"')
    try:
        return json.loads(t), "single quotes / trailing commas normalised"
    except ValueError:
        return None, None


def _extract_object(text: str) -> tuple[Any, list[str], bool, str]:
    """(object or None, repairs, strict, body).  ``strict`` is True when the text is exactly one
    JSON object, allowing a missing final brace (the stop sequence)."""
    t = text.strip()
    restored = t if t.endswith("}") else t + "}"
    try:
        obj = json.loads(restored)
        if isinstance(obj, dict):
            return obj, [], True, t
    except ValueError:
        pass
    repairs: list[str] = []
    body = strip_fences(t)
    if body != t:
        repairs.append("fences stripped")
    start = body.find("{")
    if start > 0:
        repairs.append("text before the object dropped")
    cand = body[start:] if start >= 0 else body
    end = cand.rfind("}")
    if 0 <= end < len(cand.rstrip()) - 1:
        repairs.append("text after the object dropped")
        cand = cand[:end + 1]
    if not cand.rstrip().endswith("}"):
        cand = cand.rstrip() + "}"
    obj, note = _loads(cand)
    if note:
        repairs.append(note)
    return (obj if isinstance(obj, dict) else None), repairs, False, body


def _verdict_from_scores(s1: int, s2: int, allows_tie: bool) -> str | None:
    if s1 > s2:
        return "A"
    if s2 > s1:
        return "B"
    return "tie" if allows_tie else None


def _contradicts(winner: str, s1: int | None, s2: int | None) -> bool:
    if s1 is None or s2 is None:
        return False
    return ((winner == "A" and s1 < s2) or (winner == "B" and s2 < s1)
            or (winner == "tie" and s1 != s2))


def _side(idx: int) -> str:
    return "first" if idx == 0 else "second"


@dataclass
class _Fields:
    """What a reply names: the two shown scores, the winner (raw), and notes on missing scores."""

    scores: list[int | None] = field(default_factory=lambda: [None, None])
    score_notes: list[str] = field(default_factory=list)
    winner_raw: Any = None
    have_winner: bool = False


def _fields_from_object(obj: dict[str, Any], strict: bool, repairs: list[str]) -> _Fields | ParseResult:
    """The fields of a parsed JSON object; a failed ParseResult for two score fields of one response."""
    f = _Fields()
    keys = list(obj)
    score_keys: dict[int, str] = {}
    for k in keys:
        m = _SCORE_KEY_RE.match(str(k).strip())
        if m and m.group(1).lower() in _SUFFIX_TO_SHOWN:
            idx = _SUFFIX_TO_SHOWN[m.group(1).lower()]
            if idx in score_keys:
                return ParseResult(None, "failed", f"two score fields for one response: {score_keys[idx]!r}, {k!r}")
            score_keys[idx] = str(k)
    for idx in (0, 1):
        if idx in score_keys:
            f.scores[idx] = _score_value(obj[score_keys[idx]])
            if f.scores[idx] is None:
                f.score_notes.append(f"score {score_keys[idx]!r} invalid ({obj[score_keys[idx]]!r})")
        else:
            f.score_notes.append(f"score of the {_side(idx)} response missing")
    if "winner" in obj:
        f.winner_raw, f.have_winner = obj["winner"], True
    expected_shape = (len(keys) == 4 and keys[0] == "rationale" and keys[3] == "winner"
                      and set(score_keys) == {0, 1} and set(keys[1:3]) == set(score_keys.values()))
    if strict and not expected_shape:
        repairs.append(f"fields {keys} instead of rationale, two scores, winner")
    if not strict and not repairs:
        repairs.append("object repaired")
    return f


def _fields_from_text(body: str, allows_tie: bool, repairs: list[str]) -> _Fields | ParseResult:
    """Truncated or broken JSON: the complete fields read from the text; failed if none or conflicting."""
    f = _Fields()
    hits = _WINNER_TEXT_RE.findall(body)
    found = {w for a, b, c in hits if (w := normalise_shown_winner(a or b or c, allows_tie=allows_tie)[0])}
    if len(found) > 1:
        return ParseResult(None, "failed", f"conflicting winners named: {', '.join(sorted(found))}")
    if hits:
        a, b, c = hits[0]
        f.winner_raw, f.have_winner = (a or b or c), True
    for suffix, val in _SCORE_TEXT_RE.findall(body):
        shown = _SUFFIX_TO_SHOWN.get(suffix.lower())
        if shown is not None and f.scores[shown] is None:
            f.scores[shown] = _score_value(val)
    for idx in (0, 1):
        if f.scores[idx] is None:
            f.score_notes.append(f"score of the {_side(idx)} response missing")
    if not f.have_winner and None in f.scores:
        return ParseResult(None, "failed", f"no readable JSON object or fields in {body[:40]!r}")
    repairs.append("fields read from a non-conforming / truncated object")
    return f


def _drop_cut_score(text: str, f: _Fields) -> None:
    """A reply that ends inside/at a score value which a longer valid score starts with (1 of 10, cut
    by the token limit): that score is unreliable and treated as missing."""
    cut = _TRAILING_SCORE_RE.search(strip_fences(text))
    if cut and _SUFFIX_TO_SHOWN.get(cut.group(1).lower()) is not None and int(cut.group(2)) * 10 <= MAX_SCALE:
        idx = _SUFFIX_TO_SHOWN[cut.group(1).lower()]
        if f.scores[idx] is not None:
            f.scores[idx] = None
            f.score_notes.append(f"score of the {_side(idx)} response ends the reply "
                                 f"({cut.group(2)!r} may be cut short)")


def _winner(f: _Fields, allows_tie: bool, repairs: list[str], out_scores: dict[str, Any]) -> str | ParseResult:
    """The named winner (normalised), else the one the two scores imply; a failed ParseResult if neither."""
    s1, s2 = f.scores
    if f.have_winner:
        w, note = normalise_shown_winner(f.winner_raw, allows_tie=allows_tie)
        if w is None:
            return ParseResult(None, "failed", note, scores=out_scores)
        if note == "normalised":
            repairs.append(f"winner {f.winner_raw!r} normalised")
        return w
    if s1 is None or s2 is None:
        return ParseResult(None, "failed", "; ".join(["no winner and no pair of scores", *repairs]),
                           scores=out_scores)
    from_scores = _verdict_from_scores(s1, s2, allows_tie)
    if from_scores is None:
        return ParseResult(None, "failed", "no winner and equal scores (ties not allowed)", scores=out_scores)
    repairs.append("winner missing; read from the scores")
    return from_scores


def parse_geval(text: str, *, allows_tie: bool = False, on_contradiction: str = "flag") -> ParseResult:
    """Parse a G-Eval reply (see the module docstring for the rules)."""
    if on_contradiction not in CONTRADICTION_RULES:
        raise InputError(f"on_contradiction must be one of {CONTRADICTION_RULES}, got {on_contradiction!r}")
    if text is None or not text.strip():
        return ParseResult(None, "failed", "empty output")
    obj, repairs, strict, body = _extract_object(text)
    fields = (_fields_from_object(obj, strict, repairs) if obj is not None
              else _fields_from_text(body, allows_tie, repairs))
    if isinstance(fields, ParseResult):
        return fields
    _drop_cut_score(text, fields)
    s1, s2 = fields.scores
    out_scores: dict[str, Any] = {"score_shown_first": s1, "score_shown_second": s2, "contradiction": False}
    repairs.extend(fields.score_notes)
    w = _winner(fields, allows_tie, repairs, out_scores)
    if isinstance(w, ParseResult):
        return w
    status = "repaired" if repairs else "ok"
    if s1 is None or s2 is None or not _contradicts(w, s1, s2):
        return ParseResult(w, status, "; ".join(repairs), scores=out_scores)
    out_scores["contradiction"] = True
    msg = f"winner contradicts scores (winner {w}, scores {s1} vs {s2})"
    if on_contradiction == "fail":
        return ParseResult(None, "failed", "; ".join([msg, *repairs]), scores=out_scores)
    if on_contradiction == "scores":
        v = _verdict_from_scores(s1, s2, allows_tie)
        if v is None:  # pragma: no cover - unequal scores always decide
            return ParseResult(None, "failed", msg, scores=out_scores)
        return ParseResult(v, "fallback", "; ".join([msg, "verdict taken from the scores", *repairs]),
                           scores=out_scores, fallback_rule="scores-over-winner")
    repairs.insert(0, msg)
    return ParseResult(w, status, "; ".join(repairs), scores=out_scores)


# -- probability-weighted scores ----------------------------------------------------------------
def weighted_scores(text: str, top_logprobs: Sequence[dict[str, float]] | None) -> dict[str, float]:
    """sum_k p(k) * k at each score token, from per-position top log-probabilities.

    The generated tokens are recovered by walking ``text`` with the position dicts (at each position
    the longest key that continues the text is the generated token).  At the token that carries a
    score value, p(k) is the probability mass of the tokens that are the digits 1..9 (renormalised
    over them).  Returns ``{}`` when the tokens cannot be aligned with the text or no digit mass is
    found.  Two-digit values (10 on a 1-10 scale) are tokenised differently by different models and
    are approximated by their first token.
    """
    if not top_logprobs or not text:
        return {}
    targets: dict[int, str] = {}
    for m in _SCORE_TEXT_RE.finditer(text):
        idx = _SUFFIX_TO_SHOWN.get(m.group(1).lower())
        if idx is not None:
            key = "wscore_shown_first" if idx == 0 else "wscore_shown_second"
            if key not in targets.values():
                targets[m.start(2)] = key
    out: dict[str, float] = {}
    cursor = 0
    for dist in top_logprobs:
        if cursor >= len(text) or not targets:
            break
        matches = [k for k in dist if k and text.startswith(k, cursor)]
        if not matches:
            return out
        end = cursor + len(max(matches, key=len))
        for off in [o for o in targets if cursor <= o < end]:
            mean = _digit_mean(dist)
            if mean is not None:
                out[targets[off]] = mean
            del targets[off]
        cursor = end
    return out


def _digit_mean(dist: dict[str, float]) -> float | None:
    """sum_k p(k) * k over the tokens that are the digits 1..9, renormalised over them (None: no mass)."""
    num = den = 0.0
    for k, lp in dist.items():
        ks = k.strip()
        if ks.isdigit() and len(ks) == 1 and ks != "0":
            p = math.exp(lp)
            num += p * int(ks)
            den += p
    return num / den if den > 0 else None


def canonical_scores(scores: dict[str, Any] | str | None, order: str) -> dict[str, Any]:
    """Shown-term G-Eval scores of one stored row -> ``score_a``, ``score_b`` (canonical),
    ``wscore_a``, ``wscore_b`` and ``contradiction``.  A row without scores -- NULL, however the frame
    holds it (None, NaN, pandas' NA: a score pair the source could not read, FastChat's ``[-1, -1]``) --
    gives None scores."""
    if isinstance(scores, str):
        scores = json.loads(scores) if scores else {}
    if not isinstance(scores, dict):
        scores = {}
    first, second = ("a", "b") if order == Order.AB else ("b", "a")
    return {
        f"score_{first}": scores.get("score_shown_first"), f"score_{second}": scores.get("score_shown_second"),
        f"wscore_{first}": scores.get("wscore_shown_first"), f"wscore_{second}": scores.get("wscore_shown_second"),
        "contradiction": bool(scores.get("contradiction", False)),
    }


def scores_frame(judgments: Any) -> Any:
    """Canonical score columns (score_a, score_b, wscore_a, wscore_b, contradiction) for every row of
    a judgments frame whose ``scores`` hold G-Eval-style shown-term scores; index as ``judgments``."""
    import pandas as pd

    recs = [canonical_scores(s, o) for s, o in zip(judgments["scores"], judgments["order"], strict=True)]
    return pd.DataFrame.from_records(recs, index=judgments.index,
                                     columns=["score_a", "score_b", "wscore_a", "wscore_b", "contradiction"])


# -- the protocol -------------------------------------------------------------------------------
class GEvalProtocol(Protocol):
    """One call, a 1..scale score per response against an ordered rubric, plus a winner.

    Options: ``rubric`` (``auto`` | ``correctness`` | ``instruction`` | YAML path), ``scale`` (3..10),
    ``allows_tie``, ``on_contradiction`` (``flag`` | ``scores`` | ``fail``), ``max_tokens``.
    Per item, ``meta["shown_labels"]`` (``ab`` | ``12`` | ``pq``) and ``meta["score_scale"]`` override
    the labels and the scale (the labels and granularity probes set them).
    """

    id = "geval"
    label_only = False
    verdict_choices = ("A", "B")
    wants_token_logprobs = True      # the engine asks backends that have them for top log-probabilities

    def __init__(self, *, rubric: str | Path = "auto", scale: int = 5, allows_tie: bool = False,
                 on_contradiction: str = "flag", max_tokens: int = 160, protocol_id: str = "geval") -> None:
        if not 2 <= int(scale) <= MAX_SCALE:
            raise InputError(f"scale must be between 2 and {MAX_SCALE}, got {scale}")
        if on_contradiction not in CONTRADICTION_RULES:
            raise InputError(f"on_contradiction must be one of {CONTRADICTION_RULES}, got {on_contradiction!r}")
        self.id = protocol_id
        self.rubric_spec = str(rubric)
        self.scale = int(scale)
        self.allows_tie = bool(allows_tie)
        self.on_contradiction = on_contradiction
        self._max_tokens = int(max_tokens)
        if self.rubric_spec != "auto":
            load_rubric(self.rubric_spec)  # fail early on a bad file

    def __repr__(self) -> str:
        return f"GEvalProtocol(rubric={self.rubric_spec!r}, scale={self.scale})"

    def rubric(self, item: Any) -> dict[str, Any]:
        return load_rubric(self.rubric_spec, dataset=getattr(item, "dataset", None))

    def system_prompt(self, item: Any) -> str:
        g = self.rubric(item)["geval"]
        lines = [str(g["system"]).strip(), "", "Rubric (most important first):"]
        lines += [f"{i}. {c['name']}: {c.get('description', '')}".rstrip(": ")
                  for i, c in enumerate(g["criteria"], start=1)]
        if g.get("guidance"):
            lines += ["", str(g["guidance"]).strip()]
        return "\n".join(lines)

    def item_scale(self, item: Any) -> int:
        meta = getattr(item, "meta", None) or {}
        return int(meta.get("score_scale", self.scale))

    def instruction(self, item: Any) -> str:
        la, lb = _label_set(item)
        scale = self.item_scale(item)
        winners = f"{la}, {lb} or tie" if self.allows_tie else f"{la} or {lb}"
        return (f"Score each response from 1 (poor) to {scale} (excellent) against the rubric, then name "
                f"the better one. Reply with a JSON object only, reasoning first (at most 40 words):\n"
                f'{{"rationale": "your reasoning", "score_{la}": <1-{scale}>, "score_{lb}": <1-{scale}>, '
                f'"winner": "{winners}"}}')

    def messages(self, item: Any, order: str, *, step: str = "") -> list[dict[str, str]]:
        first, second = item.shown(order)
        la, lb = _label_set(item)
        user = (f"Question:\n{item.question}\n\nResponse {la}:\n{first}\n\nResponse {lb}:\n{second}\n\n"
                f"{self.instruction(item)}")
        return [{"role": "system", "content": self.system_prompt(item)}, {"role": "user", "content": user}]

    def max_tokens(self) -> int:
        return self._max_tokens

    def stop(self) -> tuple[str, ...]:
        return ("}",)

    def parse(self, text: str) -> ParseResult:
        return parse_geval(text, allows_tie=self.allows_tie, on_contradiction=self.on_contradiction)

    def parse_response(self, response: Any) -> ParseResult:
        """Parse a :class:`~verdictlab.judges.base.JudgeResponse`, adding probability-weighted scores
        when the backend returned token log-probabilities."""
        res = self.parse(response.text)
        w = weighted_scores(response.text, getattr(response, "top_logprobs", None))
        if not w:
            return res
        return ParseResult(res.verdict, res.status, res.detail, scores={**res.scores, **w},
                           fallback_rule=res.fallback_rule)


def make_geval(*, template_path: str | Path | None = None, **options: Any) -> GEvalProtocol:
    """Registry factory.  ``template_path`` is accepted as an alias of ``rubric`` (a YAML file)."""
    from .rubrics import build_rubric_protocol

    return build_rubric_protocol(GEvalProtocol, "geval", template_path=template_path, **options)


def make_geval_correctness(*, template_path: str | Path | None = None, **options: Any) -> GEvalProtocol:
    """``geval-correctness``: G-Eval with the correctness-first rubric whatever the dataset."""
    return make_geval(template_path=template_path, family="correctness", protocol_id="geval-correctness",
                      **options)


def make_geval_instruction(*, template_path: str | Path | None = None, **options: Any) -> GEvalProtocol:
    """``geval-instruction``: G-Eval with the instruction-adherence-first rubric."""
    return make_geval(template_path=template_path, family="instruction", protocol_id="geval-instruction",
                      **options)
