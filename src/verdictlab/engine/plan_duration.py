"""How long a run would take, for ``verdictlab run --plan``: per judge, the slowest of three limits --
the calls in flight (calls x latency / concurrency), ``requests_per_minute`` and ``tokens_per_minute``
(the caller's token buckets, whose burst is one second's worth: negligible over a run).  Judges run side
by side, so a run takes as long as its slowest judge.

The latency per call is an assumption the plan prints (each backend declares its own,
:attr:`~verdictlab.judges.base.JudgeAPI.assumed_latency_s`); the tokens per call
are the plan's own estimate (prompt characters / 4 in, the ``max_tokens`` ceiling out -- what the token
bucket counts too).  Pure functions: no judge is built or called here.
"""

from __future__ import annotations

from dataclasses import dataclass

BATCH_WINDOW = "within the provider's batch window (up to 24 h)"


@dataclass(frozen=True)
class DurationEstimate:
    """``seconds`` (None: not estimated) and the limit that sets it: ``latency`` (calls in flight),
    ``requests_per_minute``, ``tokens_per_minute`` or ``unknown``."""

    seconds: float | None
    bound: str


def estimate_duration(calls: int, tokens: int, *, concurrency: int, latency_s: float | None,
                      requests_per_minute: float | None = None,
                      tokens_per_minute: float | None = None) -> DurationEstimate:
    """The time ``calls`` calls carrying ``tokens`` tokens take under the three limits: the largest of
    ``calls * latency_s / concurrency``, ``60 * calls / requests_per_minute`` and
    ``60 * tokens / tokens_per_minute`` (a limit that is ``None`` does not bind)."""
    if calls <= 0:
        return DurationEstimate(0.0, "latency")
    times: dict[str, float] = {}
    if latency_s is not None:
        times["latency"] = calls * latency_s / max(1, concurrency)
    if requests_per_minute:
        times["requests_per_minute"] = 60.0 * calls / requests_per_minute
    if tokens_per_minute:
        times["tokens_per_minute"] = 60.0 * tokens / tokens_per_minute
    if not times:
        return DurationEstimate(None, "unknown")
    bound = max(times, key=lambda k: times[k])
    return DurationEstimate(times[bound], bound)


def format_duration(seconds: float | None) -> str:
    """``3725`` -> ``"1 h 2 min"``, ``258.4`` -> ``"4 min 18 s"``, ``0.4`` -> ``"< 1 s"``."""
    if seconds is None:
        return "unknown"
    s = int(round(seconds))
    if s < 1:
        return "< 1 s"
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    if h:
        return f"{h} h {m} min"
    return f"{m} min {sec} s" if m else f"{sec} s"


__all__ = ["BATCH_WINDOW", "DurationEstimate", "estimate_duration", "format_duration"]
