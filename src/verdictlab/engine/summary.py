"""What a run reports: :class:`RunSummary` (one session), :class:`Plan` (what a run would do) and
:class:`EngineError` (the run cannot start)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError


class EngineError(InputError, RuntimeError):
    """The run cannot start (bad dataset, unknown protocol or judge, ...)."""


# -- results -------------------------------------------------------------------------------------
@dataclass
class JudgePlan:
    judge: str
    n_trials: int
    n_done: int
    n_remaining: int
    est_tokens_in: int
    est_tokens_out_max: int
    est_cost_usd: float | None
    est_cost_batch_usd: float | None = None    # the same at batch prices (price table batch_rate)
    est_duration_s: float | None = None        # engine/plan_duration.py (None: not estimated)
    duration_bound: str = "unknown"            # latency | requests_per_minute | tokens_per_minute | batch
    latency_s: float | None = None             # the latency per call assumed
    concurrency: int = 1
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None


@dataclass
class Plan:
    """What a run would do: trial counts and a rough token / cost estimate (prompt chars / 4 for
    input; the max_tokens ceiling for output, so cost is an upper-bound estimate)."""

    n_trials: int
    n_done: int
    n_remaining: int
    judges: list[JudgePlan] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # more plan lines (the adaptive design: engine/plan_cost.py)

    @property
    def est_tokens_in(self) -> int:
        return sum(j.est_tokens_in for j in self.judges)

    @property
    def est_tokens_out_max(self) -> int:
        return sum(j.est_tokens_out_max for j in self.judges)

    @property
    def est_cost_usd(self) -> float | None:
        costs = [j.est_cost_usd for j in self.judges if j.n_remaining]
        return None if any(c is None for c in costs) else float(sum(costs))  # type: ignore[arg-type]

    @property
    def est_duration_s(self) -> float | None:
        """The slowest judge's time (judges run side by side) among those with an estimate (not batch
        jobs, not a provider without an assumed latency); None when no judge has one."""
        times = [j.est_duration_s for j in self.judges if j.n_remaining and j.est_duration_s is not None]
        return max(times) if times else (0.0 if not any(j.n_remaining for j in self.judges) else None)

    def lines(self) -> list[str]:
        from .plan_duration import BATCH_WINDOW, format_duration

        out = [f"trials: {self.n_trials}  done: {self.n_done}  remaining: {self.n_remaining}"]
        for j in self.judges:
            cost = "unknown (no price for this model)" if j.est_cost_usd is None else f"${j.est_cost_usd:.4f}"
            out.append(f"  {j.judge}: {j.n_remaining} of {j.n_trials} remaining ({j.n_remaining} calls), "
                       f"~{j.est_tokens_in:,} prompt tokens, <= {j.est_tokens_out_max:,} output tokens, "
                       f"cost <= {cost}, time {_judge_time(j, BATCH_WINDOW, format_duration)}")
        total = self.est_cost_usd
        out.append(f"estimated tokens: ~{self.est_tokens_in:,} in, <= {self.est_tokens_out_max:,} out; "
                   f"estimated cost: {'unknown' if total is None else f'<= ${total:.4f}'}")
        unknown = [j.judge for j in self.judges if j.n_remaining and j.est_duration_s is None]
        total_time = self.est_duration_s
        out.append(f"estimated duration: {'unknown' if total_time is None else '~' + format_duration(total_time)} "
                   "(judges run side by side: the slowest one; retries not counted"
                   + (f"; not included: {', '.join(unknown)}" if unknown else "") + ")")
        batch = [j.est_cost_batch_usd for j in self.judges if j.n_remaining]
        if batch and total:
            out.append("at batch prices (batch: true on OpenAI / Anthropic judges): "
                       + ("unknown (no batch rate for a judge's provider)" if any(c is None for c in batch)
                          else f"<= ${sum(c or 0.0 for c in batch):.4f}"))
        return out + self._assumptions() + self.notes

    def _assumptions(self) -> list[str]:
        lat = sorted({(j.judge.partition(":")[0], j.latency_s) for j in self.judges if j.n_remaining})
        per_call = [f"{j.judge}: ~{j.est_tokens_in // j.n_remaining:,} + <= {j.est_tokens_out_max // j.n_remaining:,}"
                    for j in self.judges if j.n_remaining]
        return [("assumed: latency per call " + ", ".join(
                    f"{p} {'unknown' if s is None else f'{s:g} s'}" for p, s in lat)
                 + "; tokens per call in + out (prompt characters / 4; the max_tokens ceiling): "
                 + "; ".join(per_call))] if lat else []


def _judge_time(j: JudgePlan, batch_window: str, fmt: Any) -> str:
    """One judge's time and the limit that sets it."""
    if j.duration_bound == "batch":
        return batch_window
    if j.est_duration_s is None:
        return "unknown (no latency assumed for this provider)"
    if j.duration_bound == "requests_per_minute":
        bound = f"requests_per_minute {j.requests_per_minute:g}"
    elif j.duration_bound == "tokens_per_minute":
        bound = f"tokens_per_minute {j.tokens_per_minute:g}"
    elif j.duration_bound == "latency" and j.latency_s is not None:
        bound = f"concurrency {j.concurrency} x {j.latency_s:g} s per call"
    else:
        return "unknown"
    return f"~{fmt(j.est_duration_s)} (set by {bound})"


@dataclass
class RunSummary:
    """What one ``run`` session did."""

    run_dir: Path
    n_trials: int = 0          # trials in the grid
    n_skipped: int = 0         # already in the store when the session started
    n_written: int = 0         # rows written by this session
    n_failed: int = 0          # of which: calls failed for good (verdict NULL, error set)
    n_parse_failed: int = 0    # of which: answered but unparseable (verdict NULL)
    n_cache_hits: int = 0      # of which: served from the response cache
    calls: int = 0             # judge calls made (attempts, retries included)
    retries: int = 0           # of which: calls that repeated a failed call of the same trial
    rate_limited: int = 0      # failed calls the server answered with a rate limit (HTTP 429), retried or not
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    elapsed_s: float = 0.0
    stopped: str | None = None  # why the session stopped early (budget, interrupted, failing judge)
    n_retried_failed: int = 0  # failed rows removed at the start to be judged again (--retry-failed)
    n_not_needed: int = 0      # trials an adaptive design chose not to run (precision reached without them)
    n_failed_stored: int = 0   # trials in the store whose calls failed for good, earlier sessions included
    notes: list[str] = field(default_factory=list)   # what the session decided that the user should know
    plan: Plan | None = None

    def calls_text(self) -> str:
        """The calls made, and what more of them than trials means: ``107 (96 first calls + 11 retries;
        9 answered 429: rate limited)``; just the count when there was no retry and no rate limit."""
        if not (self.retries or self.rate_limited):
            return f"{self.calls}"
        limited = f"; {self.rate_limited} answered 429 (rate limited)" if self.rate_limited else ""
        return f"{self.calls} ({self.calls - self.retries} first calls + {self.retries} retries{limited})"

    @property
    def n_remaining(self) -> int:
        return max(0, self.n_trials - self.n_skipped - self.n_written - self.n_not_needed)

    @property
    def complete(self) -> bool:
        return self.n_remaining == 0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["run_dir"] = str(self.run_dir)
        d["n_remaining"] = self.n_remaining
        d.pop("plan", None)
        return d
