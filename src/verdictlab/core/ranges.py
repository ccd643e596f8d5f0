"""The ranges of numbers that arrive from outside: imported rows, run configs, command-line flags.

A number whose meaning has a range is checked against it where it enters, with one rule per
meaning, so an import, a config and a flag can never disagree about what a temperature may be.
``docs/errors.md`` lists every range below (a test holds the two together).

A range check refuses NaN and infinities first ("must be a finite number"), then booleans (``true``
is not a count), then values outside the range -- never "should be less than 1" for a NaN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import InputError


class RangeError(InputError):
    """A number outside its range; the message says the range and the value, not where it came
    from (the caller names the file, row and field, or the setting)."""


def _fmt(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class Range:
    """The values a number may take: ``low``/``high`` bounds (None = unbounded), each closed unless
    ``*_open``; ``integer`` for counts and indices.  ``why`` says where the bounds come from."""

    name: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False
    why: str = ""

    def describe(self) -> str:
        """``'in [0, 2]'``, ``'>= 0'``, ``'an integer >= 1'``, ``'in (0, 1)'``."""
        kind = "an integer " if self.integer else ""
        if self.low is not None and self.high is not None:
            lo, hi = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"{kind}in {lo}{_fmt(self.low)}, {_fmt(self.high)}{hi}"
        if self.low is not None:
            return f"{kind}{'>' if self.low_open else '>='} {_fmt(self.low)}"
        if self.high is not None:
            return f"{kind}{'<' if self.high_open else '<='} {_fmt(self.high)}"
        return kind.strip() or "a finite number"

    def contains(self, x: float) -> bool:
        """``x`` within the bounds; NaN never is (every comparison with NaN is false)."""
        above = self.low is None or (x > self.low if self.low_open else x >= self.low)
        below = self.high is None or (x < self.high if self.high_open else x <= self.high)
        return above and below and x == x

    def check(self, value: Any) -> Any:
        """``value`` if it is a number in range (an ``int`` for an integer range; a whole float such
        as ``2.0`` is accepted as 2), else :class:`RangeError`.  Text is not parsed here: readers
        turn a CSV cell into a number first."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RangeError(f"{self.name} must be a number, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise RangeError(f"{self.name} must be a finite number, got {value!r}")
        if self.integer and isinstance(value, float):
            if not value.is_integer():
                raise RangeError(f"{self.name} must be an integer, got {value!r}")
            value = int(value)
        if not self.contains(value):
            raise RangeError(f"{self.name} must be {self.describe()}, got {value!r}")
        return value


#: a sampling temperature: the widest range a provider accepts (OpenAI's API: [0, 2]); a
#: negative or astronomically large temperature is a unit or column mistake, not a setting
TEMPERATURE = Range("temperature", 0.0, 2.0, why="OpenAI's API accepts [0, 2]; other providers less")
#: token counts of a call
TOKENS = Range("tokens", 0, integer=True, why="a count")
#: the dollar cost of a call
COST_USD = Range("cost_usd", 0.0, why="a price times a count")
#: wall time of a call, in seconds
LATENCY_S = Range("latency_s", 0.0, why="a duration")
#: a probability (P(A) from log-probabilities, a share)
PROBABILITY = Range("probability", 0.0, 1.0, why="a probability")
#: how often each (pair, order) is judged
REPETITIONS = Range("repetitions", 1, integer=True, why="at least one call")
#: the index of one repetition (0-based)
REP = Range("rep", 0, integer=True, why="0-based index")
#: a target half-width of an interval, or a confidence level
HALF_WIDTH = Range("half-width", 0.0, 1.0, low_open=True, high_open=True, why="figures are shares in [0, 1]")
CONFIDENCE = Range("confidence", 0.0, 1.0, low_open=True, high_open=True, why="a coverage probability")
#: a random seed (numpy's generators take non-negative integers)
SEED = Range("seed", 0, integer=True, why="numpy.random.default_rng takes non-negative integers")

#: every range above, for the documentation test
RANGES: tuple[Range, ...] = (TEMPERATURE, TOKENS, COST_USD, LATENCY_S, PROBABILITY, REPETITIONS, REP,
                             HALF_WIDTH, CONFIDENCE, SEED)

__all__ = ["COST_USD", "CONFIDENCE", "HALF_WIDTH", "LATENCY_S", "PROBABILITY", "RANGES", "REP", "REPETITIONS",
           "SEED", "TEMPERATURE", "TOKENS", "Range", "RangeError"]
