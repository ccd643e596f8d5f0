"""The run engine: turns a :class:`~verdictlab.config.RunConfig` into judgment rows in a run store.

Rooms
-----
``caller``    :class:`JudgeCaller` -- one judge call with everything around it (cache, concurrency and
              rate limits, typed retries with backoff, timeout, budget, attempt accounting, secret
              scrubbing).  Every judge call of verdictlab goes through it (the grid runner, the debate).
``trials``    a trial -> its :class:`~verdictlab.judges.base.JudgeRequest`; an answer -> its
              :class:`~verdictlab.judgment.Judgment` (parsed, in canonical terms).
``executor``  how trials are scheduled (:class:`LocalExecutor`: asyncio workers per judge); later
              executors (adaptive, batch API, Ray) implement :class:`Executor`.
``runner``    :func:`run_trials`: resume, callers, executor, store writer.
``prepare``   load datasets, build protocols, expand the grid, plan (counts, cost estimate).
``run``       :func:`run_config`: a whole run into a run dir (lock, meta, budget across sessions).

All SQL lives in :mod:`verdictlab.store`.
"""

from __future__ import annotations

from .._redact import redact_text
from .caller import CallResult, JudgeCaller, RunControl, estimate_tokens
from .executor import Executor, Lane, LocalExecutor
from .prepare import PreparedRun, build_trials, load_items, make_plan, prepare_run
from .run import RunLock, library_versions, run_config
from .runner import Writer, run_trials
from .summary import EngineError, JudgePlan, Plan, RunSummary
from .trials import RequestBuilder, canonical_p_a, derived_seed, judgment_for, safe_parse


def redact(text: str, *, limit: int = 500) -> str:
    """Scrub credentials from an error text and shorten it (:func:`verdictlab._redact.redact_text`)."""
    return redact_text(text, limit=limit)


__all__ = [
    "CallResult",
    "EngineError",
    "Executor",
    "JudgeCaller",
    "JudgePlan",
    "Lane",
    "LocalExecutor",
    "Plan",
    "PreparedRun",
    "RequestBuilder",
    "RunControl",
    "RunLock",
    "RunSummary",
    "Writer",
    "build_trials",
    "canonical_p_a",
    "derived_seed",
    "estimate_tokens",
    "judgment_for",
    "library_versions",
    "load_items",
    "make_plan",
    "prepare_run",
    "redact",
    "run_config",
    "run_trials",
    "safe_parse",
]
