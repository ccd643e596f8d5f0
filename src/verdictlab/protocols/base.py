"""Protocol interface: how a pair is put to a judge and how its answer is read back.

A protocol builds chat messages for an item shown in a given order and parses the raw output
into a :class:`ParseResult`.  Parse results are in *shown* terms ("A" = the response shown
first); the engine maps them to canonical terms with :func:`verdictlab.core.vocab.swap`.

Parse statuses
--------------
``ok``        the output matched the format exactly.
``repaired``  the strict reading failed, a documented repair step recovered an unambiguous verdict.
``fallback``  a configured fallback rule produced the verdict (the rule is named in ``detail``).
``failed``    no verdict; ``verdict`` is ``None``.  Nothing is ever guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.vocab import DECISIVE, PARSE_STATUSES, ParseStatus


@dataclass(frozen=True)
class ParseResult:
    verdict: str | None          # "A" | "B" | "tie" | None, in SHOWN terms
    status: str                  # ok | repaired | fallback | failed
    detail: str = ""
    scores: dict[str, Any] = field(default_factory=dict)   # e.g. {"score_a": 4, "score_b": 2}
    fallback_rule: str | None = None

    def __post_init__(self) -> None:
        if self.status not in PARSE_STATUSES:
            raise ValueError(f"bad parse status {self.status!r}")
        if self.status == ParseStatus.FAILED and self.verdict is not None:
            raise ValueError("a failed parse carries no verdict")
        if self.status != ParseStatus.FAILED and self.verdict is None:
            raise ValueError("a parse without a verdict must have status 'failed'")


@dataclass(frozen=True)
class Template:
    """Package-data (or user file) wording of a protocol."""

    system: str
    user: str            # format string with {question}, {response_first}, {response_second}
    instruction: str     # appended to the user message
    max_tokens: int = 256
    stop: tuple[str, ...] = ()


class Protocol:
    """Base class.  ``id`` is the protocol id used in configs, columns and reports.

    A subclass implements :meth:`messages` and :meth:`parse`.  Every optional hook is declared here
    with the default that means "not used", so callers never probe with ``hasattr``:

    * :attr:`wants_token_logprobs` -- ask backends that have them for top log-probabilities;
    * :meth:`parse_response` -- parse with the whole response (log-probabilities), not only its text;
    * :meth:`output_format` -- the format constrained decoding enforces (None: not constrainable);
    * :meth:`steps`, :meth:`max_tokens`, :meth:`stop`.

    A protocol builds prompts and parses replies, nothing else: how a judge writes a reply is the
    judge's business (the simulated judge's answer styles are in :mod:`verdictlab.judges.sim_answers`).
    """

    id: str = "base"
    allows_tie: bool = False
    label_only: bool = False          # True when the answer is a single verdict token (direct)
    verdict_choices: tuple[str, ...] = DECISIVE
    wants_token_logprobs: bool = False

    def steps(self, item: Any) -> tuple[str, ...]:
        """Step names for multi-call protocols; ``("",)`` for single-call ones."""
        return ("",)

    def messages(self, item: Any, order: str, *, step: str = "") -> list[dict[str, str]]:
        raise NotImplementedError

    def parse(self, text: str) -> ParseResult:
        raise NotImplementedError

    def parse_response(self, response: Any) -> ParseResult:
        """Parse a whole :class:`~verdictlab.judges.base.JudgeResponse`; by default its text."""
        return self.parse(response.text)

    def output_format(self) -> Any:
        """The :class:`~verdictlab.protocols.output_format.OutputFormat` constrained decoding enforces, or None
        when this protocol cannot be constrained."""
        return None

    def max_tokens(self) -> int:
        return 256

    def stop(self) -> tuple[str, ...]:
        return ()
