"""The debate protocol: the wording and parser of one debate turn.

A debate (run by :mod:`verdictlab.engine.debate`) puts one pair to two judges for several rounds.
Round 1: each judge answers independently, reasoning first, then the winner (JSON).  Rounds 2..N
(rebuttals): each judge also sees the other judge's latest argument and verdict, and its own
previous verdict, and answers again.  Verdicts are in *shown* terms like every protocol's.

The rounds depend on each other's answers, so this protocol cannot run on the trial grid
(``verdictlab run``): :meth:`DebateProtocol.messages` refuses unless asked for a turn.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import InputError
from .base import ParseResult, Protocol
from .parsing import parse_json

PROTOCOL_ID = "debate"

_SYSTEM = ("You are one of two judges comparing two answers to the same question. Decide which answer is "
           "better: correct, doing exactly what was asked, and clear. Length is not a merit, and the order "
           "of the answers must not matter.")
_FORMAT = ('Reply with a JSON object only, reasoning first (at most 40 words): '
           '{"rationale": "your reasoning", "winner": "A or B"}')
_NO_ARGUMENT = "(no readable argument)"
_ARGUMENT_CHARS = 600


class DebateProtocol(Protocol):
    """One debate turn: the pair, and from round 2 the opponent's argument and the judge's own
    previous verdict; the reply is ``{"rationale": ..., "winner": "A" | "B"}``."""

    id = PROTOCOL_ID
    label_only = False
    allows_tie = False
    verdict_choices = ("A", "B")

    def messages(self, item: Any, order: str, *, step: str = "", opponent: tuple[str, str] | None = None,
                 own: tuple[str, str] | None = None, turn: bool = False) -> list[dict[str, str]]:
        """The messages of one turn.  ``opponent`` and ``own`` are ``(argument, shown verdict)`` of the
        other judge and of this judge in the previous round (None in round 1)."""
        if not turn:
            raise InputError("the debate protocol needs its own runner: use `verdictlab debate CONFIG`, "
                             "not `verdictlab run` (rounds depend on each other's answers)")
        first, second = item.shown(order)
        user = f"Question:\n{item.question}\n\nResponse A:\n{first}\n\nResponse B:\n{second}\n\n"
        if opponent is not None:
            if own is not None:
                user += f"Your previous verdict was {own[1]}, because: {own[0]}\n\n"
            user += (f"The other judge chose {opponent[1]}, arguing: {opponent[0]}\n\n"
                     "Weigh that argument. Keep your verdict if it still holds, change it if the argument "
                     "convinced you. ")
        return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user + _FORMAT}]

    def max_tokens(self) -> int:
        return 96

    def stop(self) -> tuple[str, ...]:
        return ("}",)

    def parse(self, text: str) -> ParseResult:
        return parse_json(text, fields=("rationale", "winner"), stop=("}",), allows_tie=False)

    def argument(self, text: str | None) -> str:
        """The reasoning of a reply, as the opponent sees it next round (at most 600 characters): the
        ``rationale`` field when the reply is a JSON object (the stop sequence may have cut its closing
        brace), else the reply's text."""
        if not text:
            return _NO_ARGUMENT
        try:
            obj = json.loads(text if text.rstrip().endswith("}") else text + "}")
            if isinstance(obj, dict) and isinstance(obj.get("rationale"), str):
                return obj["rationale"][:_ARGUMENT_CHARS]
        except ValueError:
            pass
        return text.strip()[:_ARGUMENT_CHARS]


def make_debate(*, template_path: str | Path | None = None, **options: Any) -> DebateProtocol:
    """Registry factory (the debate has no template or options)."""
    return DebateProtocol()


__all__ = ["PROTOCOL_ID", "DebateProtocol", "make_debate"]
