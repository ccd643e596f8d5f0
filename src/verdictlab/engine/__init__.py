"""The run engine: turns a :class:`~verdictlab.engine.config.RunConfig` into judgment rows in a run store.

Every judge call goes through the caller's public API, whichever executor schedules it.

Modules
-------
One judgment
  ``caller``        :class:`JudgeCaller` -- one judge call with everything around it (cache, concurrency
                    and rate limits, typed retries with backoff, timeout, budget, attempt accounting,
                    secret scrubbing).  Every judge call of verdictlab goes through it.
  ``trials``        a trial -> its :class:`~verdictlab.judges.base.JudgeRequest` (:class:`RequestBuilder`);
                    an answer -> its :class:`~verdictlab.core.judgment.Judgment` (parsed, canonical terms).
A run
  ``prepare``       load and validate the datasets, build the protocols, expand the trial grid, and plan
                    (counts, tokens, dollars: :func:`make_plan`).
  ``run``           :func:`run_config`: a whole run of a config into a run directory (:class:`RunLock`,
                    meta, the items check on resume, the budget across sessions, SIGTERM / Ctrl-C).
  ``trial_runner``  :func:`run_trials`: the trials it is given -> resume filter -> callers -> executor
                    -> writer (one session).
  ``writer``        :class:`Writer`: judgment, attempt and cache rows committed in small transactions.
  ``summary``       :class:`RunSummary`, :class:`Plan`, :class:`EngineError`.
Executors (when each trial runs)
  ``executor``      :class:`Executor` and the default :class:`LocalExecutor` (asyncio workers per judge).
  ``adaptive``      :class:`~verdictlab.engine.adaptive.AdaptiveExecutor`: repetitions only where a figure
                    can still change (``precision:`` in the config).
  ``plan_cost``     the adaptive design's expected calls, tokens and dollars for ``run --plan``.
  ``plan_duration`` how long a run would take under its concurrency and rate limits (``run --plan``).
  ``batch``         provider batch jobs (OpenAI Batch API, Anthropic Message Batches) at batch prices.
  ``batch_files``   offline batch files: pending requests out as OpenAI batch JSONL, results back in.
  ``ray_executor``  the same run on a Ray cluster (``executor: ray``).
  ``ray_data``      open-weight judges through Ray Data batch inference on a cluster's GPUs.
  ``_ray_common``   helpers the two Ray modules share (items as payloads).
Other call paths on the caller
  ``debate``        two judges debate a pair over rounds (``verdictlab debate``); the debate protocol is
                    :mod:`verdictlab.protocols.debate`, its figures :mod:`verdictlab.analyses.debate`.
  ``writing``       texts a named judge writes outside the grid (:func:`write_with_judge`): the paraphrase
                    probe's questions, ``verdictlab perturb``'s test cases and their validations.
  ``paraphrase``    questions reworded by a named judge for the ``paraphrase`` probe (on ``writing``).

All SQL lives in :mod:`verdictlab.store`.
"""

from __future__ import annotations

from ..core.redact import redact_text
from .caller import CallResult, JudgeCaller, RunControl, estimate_tokens
from .executor import Executor, Lane, LocalExecutor
from .prepare import PreparedRun, build_trials, load_items, make_plan, prepare_run
from .run import RunLock, library_versions, run_config
from .summary import EngineError, JudgePlan, Plan, RunSummary
from .trial_runner import run_trials
from .trials import RequestBuilder, canonical_p_a, derived_seed, judgment_for, safe_parse
from .writer import Writer


def redact(text: str, *, limit: int = 500) -> str:
    """Scrub credentials from an error text and shorten it (:func:`verdictlab.core.redact.redact_text`)."""
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
