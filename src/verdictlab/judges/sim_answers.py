"""How the simulated judge writes its answer in each protocol's format.

A protocol only builds prompts and parses replies; writing a reply is the judge's business, so the
simulated judge keeps its answer styles here, chosen by the protocol id of the request (the part before
any ``@ARG``, so ``rubric@my_criteria.yaml`` answers like ``rubric`` and no file is read):

* any protocol that describes its answer as an :class:`~verdictlab.protocols.output_format.OutputFormat`
  (the five pairwise protocols, or a protocol of your own that declares ``output_format()``): the
  format filled in -- the verdict in the verdict slot, the rationale in the text slots.  A malformed
  answer is the format cut before its verdict, or prose;
* ``geval`` and ``flask`` (and their ``-correctness`` / ``-instruction`` variants): a JSON object with
  the rationale, a score per response on the default 1-5 scale (4 for the winner, 2 for the other) and
  the winner;
* ``rubric``: ``<reasoning>...</reasoning><result>PASS|FAIL|UNKNOWN</result>``, and its own verdict
  words: the item's label when the judge is right, otherwise the other result (UNKNOWN for a fifth of
  the wrong answers);
* ``transcript``: the rubric's shape with PASS or FAIL only (the item's label when right, else the other);
* ``pointwise``: ``{"rationale": ..., "score": GRADE}``, the grade being the item's label when right,
  otherwise a neighbouring grade of the protocol's scale (``pointwise@0-2``: 0, 1, 2);
* ``debate``: ``{"rationale": ..., "winner": ...}``.

Every malformed answer is text in the protocol's style that carries no readable verdict (the protocol
tests check that none of them parses).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..protocols.output_format import OutputFormat

GEVAL_IDS = frozenset({"geval", "geval-correctness", "geval-instruction",
                       "flask", "flask-correctness", "flask-instruction"})
#: scores written by the geval style, (first shown, second shown) by shown verdict (1-5 scale)
GEVAL_SCORES: dict[str, tuple[int, int]] = {"A": (4, 2), "B": (2, 4), "tie": (4, 4)}
_RUBRIC_RESULTS = ("PASS", "FAIL", "UNKNOWN")
_CUT_RATIONALE = "Both responses address the"


@dataclass(frozen=True)
class AnswerStyle:
    """How the answers to one protocol look.

    ``write(verdict, rationale)`` is a well-formed answer carrying ``verdict`` (shown terms, or the
    protocol's own words); ``malformed`` are answers without a readable verdict; ``label_only`` says
    the answer is the verdict alone (a backend can score it from token probabilities);
    ``own_verdict(label, correct, u)``, for protocols with their own verdict words, is the answer for
    an item labelled ``label`` -- right when ``correct``, else a wrong answer picked by ``u`` in [0, 1)."""

    write: Callable[[str, str], str]
    malformed: tuple[str, ...]
    label_only: bool = False
    own_verdict: Callable[[Any, bool, float], str] | None = None

    def malformed_answer(self, u: float) -> str:
        """One of the malformed answers, picked by ``u`` in [0, 1)."""
        return self.malformed[min(int(u * len(self.malformed)), len(self.malformed) - 1)]


# -- protocols that describe their answer as an output format ------------------------------------------
def _cut_before_verdict(fmt: OutputFormat) -> str:
    """The format written up to its verdict slot, a text slot on the way cut mid-sentence."""
    out = ""
    for seg in fmt.segments():
        if seg.kind == "fixed":
            out += seg.text
        elif seg.kind == "text":
            return out + _CUT_RATIONALE
        else:
            return out
    return out


def format_style(fmt: OutputFormat) -> AnswerStyle:
    """Answers in ``fmt``: the verdict in its slot, the rationale in every text slot."""
    def write(verdict: str, rationale: str) -> str:
        return fmt.render(verdict, {f: rationale for f in fmt.fields if f != fmt.verdict_field})

    if fmt.kind == "label":
        malformed: tuple[str, ...] = ("", "Response", "I think the")
    elif fmt.kind == "json":
        malformed = ('{"' + fmt.verdict_field[:4], _cut_before_verdict(fmt), '```json\n{"rationale": "')
    else:
        malformed = (f"<{fmt.root}><{fmt.verdict_field[:3]}", _cut_before_verdict(fmt), f"<{fmt.root}>")
    return AnswerStyle(write, malformed, label_only=fmt.kind == "label")


@lru_cache(maxsize=64)
def _declared_format(protocol_id: str) -> OutputFormat | None:
    """The output format the registered protocol ``protocol_id`` declares (None if it declares none or
    cannot be built without its argument)."""
    from ..protocols import get_protocol

    try:
        fmt = get_protocol(protocol_id).output_format()
    except Exception:  # noqa: BLE001 - an unknown or unbuildable protocol has no format to answer in
        return None
    return fmt if isinstance(fmt, OutputFormat) else None


# -- protocols with answers of their own ---------------------------------------------------------------
def _geval_write(verdict: str, rationale: str) -> str:
    if verdict not in GEVAL_SCORES:
        raise ValueError(f"geval answers 'A', 'B' or 'tie', got {verdict!r}")
    first, second = GEVAL_SCORES[verdict]
    return json.dumps({"rationale": rationale, "score_A": first, "score_B": second, "winner": verdict})


def _rubric_write(verdict: str, rationale: str) -> str:
    if verdict not in _RUBRIC_RESULTS:
        raise ValueError(f"rubric answers PASS, FAIL or UNKNOWN, got {verdict!r}")
    return f"<reasoning>{rationale}</reasoning><result>{verdict}</result>"


def _rubric_verdict(label: Any, correct: bool, u: float) -> str:
    from ..protocols.rubric import normalise_result

    lab = normalise_result(label)
    if correct and lab is not None:
        return lab
    if u < 0.2:
        return "UNKNOWN"
    return "FAIL" if lab == "PASS" else "PASS"


def _pass_fail_verdict(label: Any, correct: bool, u: float) -> str:
    """The transcript rubric's answer: the label when right, else the other of PASS / FAIL."""
    from ..protocols.rubric import normalise_result

    lab = normalise_result(label)
    if correct and lab in ("PASS", "FAIL"):
        return lab
    return "FAIL" if lab == "PASS" else "PASS"


def _pointwise_write(verdict: str, rationale: str) -> str:
    grade: Any = verdict
    try:
        f = float(verdict)
        grade = int(f) if f.is_integer() else f
    except (TypeError, ValueError):
        pass
    return json.dumps({"rationale": rationale, "score": grade})


def _pointwise_verdict(scale: tuple[Any, ...]) -> Callable[[Any, bool, float], str]:
    """The grade answered for a label: the label when right, else a neighbouring grade of ``scale``
    (up with ``u < 1/2`` where there is one), or label +/- 1 when the label is off the scale."""
    from ..protocols.pointwise import grade_text

    grades = [grade_text(x) for x in scale]

    def verdict(label: Any, correct: bool, u: float) -> str:
        g = grade_text(label)
        if correct and g is not None:
            return g
        if g in grades:
            i = grades.index(g)
            j = i + 1 if (u < 0.5 and i + 1 < len(grades)) or i == 0 else i - 1
            return str(grades[j])
        try:
            f = float(g) if g is not None else 0.0
            return grade_text(f + 1 if u < 0.5 or f <= 0 else f - 1) or "1"
        except ValueError:
            return "unknown"

    return verdict


def _pointwise_style(protocol_id: str) -> AnswerStyle:
    from ..protocols import get_protocol
    from ..protocols.pointwise import DEFAULT_SCALE

    try:    # pointwise@0-2 names its scale in the id; no file is read
        scale = tuple(getattr(get_protocol(protocol_id), "scale", DEFAULT_SCALE))
    except (KeyError, ValueError):
        scale = DEFAULT_SCALE
    # every shape is cut before a grade: a word grade ('"score": "good"') would parse, repaired
    return AnswerStyle(_pointwise_write, ('{"rationale": "The response', "It is hard to say.",
                                          '{"rationale": "x", "score": '),
                       own_verdict=_pointwise_verdict(scale))


def _debate_write(verdict: str, rationale: str) -> str:
    if verdict not in ("A", "B"):
        raise ValueError(f"debate answers 'A' or 'B', got {verdict!r}")
    return json.dumps({"rationale": rationale, "winner": verdict})


_OWN_STYLES: dict[str, Callable[[str], AnswerStyle]] = {
    "geval": lambda pid: AnswerStyle(_geval_write, ('{"rationale": "Both responses',
                                                    '{"rationale": "ok", "score_A": 3, "score_B": 3',
                                                    "I would prefer not to choose.")),
    "rubric": lambda pid: AnswerStyle(_rubric_write, ("<reasoning>The response seems", "I am not able to",
                                                      "<reasoning>x</reasoning><result>"),
                                      own_verdict=_rubric_verdict),
    "transcript": lambda pid: AnswerStyle(_rubric_write, ("<reasoning>The agent", "I cannot tell from this.",
                                                          "<reasoning>x</reasoning><result>"),
                                          own_verdict=_pass_fail_verdict),
    "pointwise": _pointwise_style,
    "debate": lambda pid: AnswerStyle(_debate_write, ('{"rationale": "Both answers', "I need more time.",
                                                      '{"winner": "')),
}


@lru_cache(maxsize=256)
def answer_style(protocol_id: str, output_format: OutputFormat | None = None) -> AnswerStyle:
    """The answer style for ``protocol_id`` (``output_format``: the format a constrained request
    carries).  ``LookupError`` for a protocol the simulated judge cannot answer."""
    base = protocol_id.partition("@")[0]
    own = "geval" if base in GEVAL_IDS else base
    if own in _OWN_STYLES:
        return _OWN_STYLES[own](protocol_id)
    fmt = output_format if output_format is not None else _declared_format(base)
    if fmt is None:
        raise LookupError(f"no answer style for protocol {protocol_id!r}: the simulated judge answers the "
                          f"packaged protocols and any protocol whose output_format() describes its answer")
    return format_style(fmt)


__all__ = ["AnswerStyle", "GEVAL_IDS", "GEVAL_SCORES", "answer_style", "format_style"]
