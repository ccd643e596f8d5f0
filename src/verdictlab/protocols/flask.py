"""``flask``: one call per criterion, then a majority vote across criteria.

The criteria (four by default) come from the rubric family of the dataset (package data, see
:mod:`verdictlab.protocols.rubrics`; ``rubric: auto|correctness|instruction|PATH``).  Each criterion
call is its own trial and judgment row, with ``step`` = the criterion name, so C and phi can be
computed per criterion.  Each call answers in the G-Eval JSON format (scores for both responses on
that one criterion, then the winner) and is parsed by :func:`verdictlab.protocols.geval.parse_geval`.

The aggregate verdict over criteria and the per-criterion figures are analyses, not protocol code:
:func:`verdictlab.analyses.flask.aggregate_criteria` and :func:`verdictlab.analyses.flask.flask_table`
(the old names here still resolve to them, lazily).

Cost: calls per evaluation = number of criteria (reported by :func:`flask_table`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InputError
from .base import ParseResult, Protocol
from .geval import CONTRADICTION_RULES, GEvalProtocol, _label_set, parse_geval
from .rubrics import load_rubric


class FlaskProtocol(Protocol):
    """One call per criterion of the rubric family; options as :class:`GEvalProtocol` (``rubric``,
    ``scale``, ``allows_tie``, ``on_contradiction``, ``max_tokens``)."""

    id = "flask"
    label_only = False
    wants_token_logprobs = True
    verdict_choices = ("A", "B")

    def __init__(self, *, rubric: str | Path = "auto", scale: int = 5, allows_tie: bool = False,
                 on_contradiction: str = "flag", max_tokens: int = 140, protocol_id: str = "flask") -> None:
        if on_contradiction not in CONTRADICTION_RULES:
            raise InputError(f"on_contradiction must be one of {CONTRADICTION_RULES}, got {on_contradiction!r}")
        self.id = protocol_id
        self.rubric_spec = str(rubric)
        self.scale = int(scale)
        self.allows_tie = bool(allows_tie)
        self.on_contradiction = on_contradiction
        self._max_tokens = int(max_tokens)
        # the renderer / instruction wording is shared with geval
        self._geval = GEvalProtocol(rubric=rubric, scale=scale, allows_tie=allows_tie,
                                    on_contradiction=on_contradiction)

    def __repr__(self) -> str:
        return f"FlaskProtocol(rubric={self.rubric_spec!r})"

    def criteria(self, item: Any) -> list[dict[str, Any]]:
        return list(load_rubric(self.rubric_spec, dataset=getattr(item, "dataset", None))["flask"]["criteria"])

    def steps(self, item: Any) -> tuple[str, ...]:
        return tuple(str(c["name"]) for c in self.criteria(item))

    def messages(self, item: Any, order: str, *, step: str = "") -> list[dict[str, str]]:
        crit = {str(c["name"]): c for c in self.criteria(item)}
        if step not in crit:
            raise ValueError(f"flask: unknown criterion step {step!r}; this item's criteria: {', '.join(crit)}")
        c = crit[step]
        system = str(load_rubric(self.rubric_spec, dataset=getattr(item, "dataset", None))["flask"]["system"]).strip()
        first, second = item.shown(order)
        la, lb = _label_set(item)
        user = (f"Question:\n{item.question}\n\nResponse {la}:\n{first}\n\nResponse {lb}:\n{second}\n\n"
                f"[Criterion: {c.get('title', c['name'])}] {c['question']}\n\n"
                f"{self._geval.instruction(item).replace('against the rubric', 'on this criterion only')}")
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def max_tokens(self) -> int:
        return self._max_tokens

    def stop(self) -> tuple[str, ...]:
        return ("}",)

    def parse(self, text: str) -> ParseResult:
        return parse_geval(text, allows_tie=self.allows_tie, on_contradiction=self.on_contradiction)

    def parse_response(self, response: Any) -> ParseResult:
        return self._geval.parse_response(response)


def make_flask(*, template_path: str | Path | None = None, **options: Any) -> FlaskProtocol:
    from .rubrics import build_rubric_protocol

    return build_rubric_protocol(FlaskProtocol, "flask", template_path=template_path, **options)


def make_flask_correctness(*, template_path: str | Path | None = None, **options: Any) -> FlaskProtocol:
    return make_flask(template_path=template_path, family="correctness", protocol_id="flask-correctness",
                      **options)


def make_flask_instruction(*, template_path: str | Path | None = None, **options: Any) -> FlaskProtocol:
    return make_flask(template_path=template_path, family="instruction", protocol_id="flask-instruction",
                      **options)
