"""Protocol interface: how a pair is put to a judge and how its answer is read back.

A protocol builds chat messages for an item shown in a given order and parses the raw output
into a :class:`ParseResult`.  Parse results are in *shown* terms ("A" = the response shown
first); the engine maps them to canonical terms with :func:`verdictlab.items.to_canonical`.

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


@dataclass(frozen=True)
class ParseResult:
    verdict: str | None          # "A" | "B" | "tie" | None, in SHOWN terms
    status: str                  # ok | repaired | fallback | failed
    detail: str = ""
    scores: dict[str, Any] = field(default_factory=dict)   # e.g. {"score_a": 4, "score_b": 2}
    fallback_rule: str | None = None

    def __post_init__(self) -> None:
        if self.status not in ("ok", "repaired", "fallback", "failed"):
            raise ValueError(f"bad parse status {self.status!r}")
        if self.status == "failed" and self.verdict is not None:
            raise ValueError("a failed parse carries no verdict")
        if self.status != "failed" and self.verdict is None:
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
    """Base class.  ``id`` is the protocol id used in configs, columns and reports."""

    id: str = "base"
    allows_tie: bool = False
    label_only: bool = False          # True when the answer is a single verdict token (direct)
    verdict_choices: tuple[str, ...] = ("A", "B")

    def steps(self, item: Any) -> tuple[str, ...]:
        """Step names for multi-call protocols; ``("",)`` for single-call ones."""
        return ("",)

    def messages(self, item: Any, order: str, *, step: str = "") -> list[dict[str, str]]:
        raise NotImplementedError

    def parse(self, text: str) -> ParseResult:
        raise NotImplementedError

    def render(self, verdict: str, *, rationale: str = "", scores: dict[str, Any] | None = None) -> str:
        """Produce a well-formed output carrying ``verdict`` (shown terms); used by the
        simulated judge so it speaks every protocol's format."""
        raise NotImplementedError

    def max_tokens(self) -> int:
        return 256

    def stop(self) -> tuple[str, ...]:
        return ()
