"""The batch executor: the trials of ``batch: true`` judges as provider batch jobs, at batch prices.

A judge mapping in the run config may say ``batch: true``.  Its trials are then not called one by one:
they are submitted as batch jobs through the batch API the judge declares
(:meth:`~verdictlab.judges.base.JudgeAPI.batch_adapter`, a :class:`~verdictlab.judges.batch.BatchAdapter`:
OpenAI's Batch API for OpenAI and OpenAI-compatible judges, ``judges/openai_batch.py``; Anthropic's
Message Batches, ``judges/anthropic_batch.py``) with the trial id as each request's ``custom_id``.  The
executor never looks at a provider's name.  The other judges of the run go to the inner executor
(local, adaptive or Ray).

How one batch judge runs
------------------------
1. **Resume first.**  The run store's meta ``batches`` lists every batch submitted for this run dir
   (id, judge, provider, trial ids, state).  Batches still ``submitted`` are polled and collected
   before anything new is sent; their trials are never submitted again.
2. **Cache.**  Trials whose answer is in the response cache are judged from it (no request).
3. **Submit.**  Each remaining trial's request is built by the session's RequestBuilder (the same
   request, seed included, as the local executor sends), converted to the provider's body by the
   adapter; one call per request is reserved through the judge's caller first
   (:meth:`~verdictlab.engine.caller.JudgeCaller.reserve`: the run budget and the call count; a
   refused reservation stops the run, and those trials are not submitted).  The batch id is written to
   the store meta right after the provider accepts it.
4. **Poll** every ``poll_s`` seconds (the progress bar shows the batch status) until the batch ends.
5. **Collect.**  Each result goes through the normal path: the judge's response reader, then the
   caller (:meth:`~verdictlab.engine.caller.JudgeCaller.record`: its sanitiser, the tokens and the
   *batch* price -- price table ``batch_rate`` -- charged to the budget and the summary, one attempt
   row per request, a cache entry when the run caches), then
   :func:`~verdictlab.engine.trials.judgment_for`.  Rows are flushed, *then* the batch is marked
   ``collected``: a crash in between re-reads the results and skips the trials already stored.
6. **Retry.**  Requests that failed inside the batch (or are missing from its results) carry a typed
   retry decision; the caller decides by its one rule (a retryable decision, within the judge's
   ``max_retries``) which go into a follow-up batch; the others are stored as failed rows (verdict
   NULL, the error) -- counted, never guessed.

The record is written *before* submission (state ``submitting``, with a key).  OpenAI batches carry
that key in their ``metadata`` (``verdictlab_key``), so a crash between the provider accepting a batch
and the meta write of its id is repaired on resume: the batch is found by its key
(``batches.list``) and collected, not submitted again.  Anthropic batches have no metadata: there, in
that instant only, the id is lost and the trials are submitted again on resume (the summary's stop note
says so; the orphaned batch is billed if it completes).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.design import Trial
from ..core.redact import ERROR_LIMIT, redact_text
from ..judges.base import JudgeAPI, JudgeCallError, JudgeRequest, JudgeResponse, RetryDecision
from ..judges.batch import BatchAdapter, Outcome
from .caller import RetryLater, RunControl, cache_allows
from .executor import BaseExecutor, JudgeOne, Lane, LocalExecutor
from .summary import EngineError
from .trials import failed_judgment, judgment_for

META_KEY = "batches"


def batch_adapter(judge: JudgeAPI) -> BatchAdapter:
    """The batch API the judge declares (:meth:`~verdictlab.judges.base.JudgeAPI.batch_adapter`); a judge
    without one cannot run with ``batch: true``."""
    adapter = judge.batch_adapter()
    if adapter is None:
        raise EngineError(f"judge {judge.judge_id!r}: batch: true needs an OpenAI or Anthropic judge, or another "
                          f"backend with a batch API (provider {judge.provider!r} has none)")
    return adapter


# -- the executor ----------------------------------------------------------------------------------
@dataclasses.dataclass
class _Job:
    """What one batch judge's collection needs: its lane, adapter and trials."""

    lane: Lane
    adapter: BatchAdapter
    trials: dict[str, Trial]


class BatchExecutor(BaseExecutor):
    """Runs the lanes of ``batch: true`` judges as batch jobs (module docstring) and hands the other
    lanes to ``inner`` (default: :class:`~verdictlab.engine.executor.LocalExecutor`).

    ``poll_s``: seconds between status requests.  ``max_requests``: requests per batch (default: the
    adapter's, the provider's limit).  ``cache``: the run's cache policy (as the runner's).  Every request is reserved
    and every result recorded through the lane's caller (budget, batch price, attempts, cache, retry
    decision)."""

    def __init__(self, *, inner: Any = None, poll_s: float = 30.0, max_requests: int | None = None,
                 cache: str = "auto") -> None:
        self.inner = inner or LocalExecutor()
        self.poll_s = poll_s
        self.max_requests = max_requests
        self.cache = cache
        self.session: Any = None
        self.n_submitted = 0
        self.batch_ids: list[str] = []

    def attach(self, session: Any) -> None:
        self.session = session
        self.inner.attach(session)

    @staticmethod
    def is_batch(lane: Lane) -> bool:
        return bool(lane.caller.spec.batch)

    async def execute(self, lanes: Mapping[str, Lane], judge_one: JudgeOne, control: RunControl) -> None:
        if self.session is None:
            raise RuntimeError("BatchExecutor needs the runner's session (run_trials attaches it)")
        batch = [ln for ln in lanes.values() if self.is_batch(ln)]
        other = {j: ln for j, ln in lanes.items() if not self.is_batch(ln)}
        work = [self._run_lane(ln, judge_one, control) for ln in batch]
        if other:
            work.append(self.inner.execute(other, judge_one, control))
        await asyncio.gather(*work)

    # -- store meta ------------------------------------------------------------------------------
    def _records(self) -> list[dict[str, Any]]:
        return list(self.session.writer.store.get_meta(META_KEY, []) or [])

    def _save(self, rec: dict[str, Any]) -> None:
        records = [r for r in self._records() if r["key"] != rec["key"]]
        records.append(rec)
        self.session.writer.store.set_meta(META_KEY, records)

    # -- one judge -------------------------------------------------------------------------------
    async def _run_lane(self, lane: Lane, judge_one: JudgeOne, control: RunControl) -> None:
        jid = lane.caller.judge.judge_id
        job = _Job(lane, batch_adapter(lane.caller.judge), {t.trial_id: t for t in lane.trials})
        lane.trials.clear()
        open_recs = [r for r in self._records() if r["judge"] == jid and r["state"] in ("submitting", "submitted")]
        in_flight: set[str] = set()
        for rec in open_recs:
            if rec["state"] == "submitting":        # crashed before the id was stored (docstring)
                await self._adopt(job, rec, control)
            if rec["state"] == "submitted":
                in_flight.update(rec["trial_ids"])
        retry = []
        for rec in open_recs:
            if rec["state"] == "submitted":
                retry += await self._collect(job, rec, control)
        pending = [t for tid, t in job.trials.items() if tid not in in_flight] + retry
        pending = await self._answer_cached(job, pending, judge_one)
        while pending and not control.stopped and not lane.halted:
            recs = await self._submit(job, pending, control)
            pending = []
            for rec in recs:
                pending += await self._collect(job, rec, control)

    async def _adopt(self, job: _Job, rec: dict[str, Any], control: RunControl) -> None:
        """A record left ``submitting`` by a crash: find its batch by key, or give its trials back."""
        found = await job.adapter.find(rec["key"])
        if found is not None:
            rec.update(id=found, state="submitted")
        else:
            control.note(f"judge {rec['judge']!r}: a batch submission of {len(rec['trial_ids'])} request(s) was "
                         "interrupted before its id was stored and the provider cannot find it by key; those "
                         "trials are submitted again")
            rec["state"] = "abandoned"
        self._save(rec)

    def _use_cache(self, trial: Trial) -> bool:
        return cache_allows(self.cache, trial.temperature)

    async def _answer_cached(self, job: _Job, trials: list[Trial], judge_one: JudgeOne) -> list[Trial]:
        caller, rest = job.lane.caller, []
        for t in trials:
            req = self._request(t)
            if req is not None and self._use_cache(t) and caller.cached(caller.cache_key(req, t.rep)) is not None:
                await judge_one(t, job.lane)
                continue
            rest.append(t)
        return rest

    def _request(self, t: Trial) -> JudgeRequest | None:
        s = self.session
        try:
            return s.builders[t.judge].build(t, s.items[(t.dataset, t.item_id)], s.protocols[t.protocol], t.trial_id)
        except Exception:  # noqa: BLE001 - recorded as a failed row by _submit
            return None

    async def _submit(self, job: _Job, trials: list[Trial], control: RunControl) -> list[dict[str, Any]]:
        """Build, reserve and submit ``trials`` in batches of at most ``max_requests``; the records."""
        caller = job.lane.caller
        bodies: list[tuple[str, dict[str, Any]]] = []
        for t in trials:
            req = self._request(t)
            if req is None:
                self._record_failed(job, t, "protocol could not present this item", attempts=0)
                continue
            try:
                body, _notes = job.adapter.body(req)
            except JudgeCallError as exc:
                self._record_failed(job, t, redact_text(exc, limit=ERROR_LIMIT), attempts=0)
                continue
            if caller.reserve(t.trial_id) is None:
                break                               # budget spent: the run stops; the rest is not sent
            bodies.append((t.trial_id, body))
        size = self.max_requests or job.adapter.max_requests
        recs = []
        for i in range(0, len(bodies), size):
            chunk = bodies[i:i + size]
            rec: dict[str, Any] = {"key": f"{caller.judge.judge_id}#{time.time_ns()}", "judge": caller.judge.judge_id,
                   "provider": caller.judge.provider, "id": None, "state": "submitting",
                   "trial_ids": [cid for cid, _ in chunk], "submitted_at": time.time()}
            self._save(rec)
            batch_id = await job.adapter.submit(chunk, rec["key"])
            rec.update(id=batch_id, state="submitted")
            self._save(rec)
            self.n_submitted += len(chunk)
            self.batch_ids.append(batch_id)
            recs.append(rec)
        return recs

    async def _collect(self, job: _Job, rec: dict[str, Any], control: RunControl) -> list[Trial]:
        """Poll ``rec``'s batch to its end, record its results; the trials to retry."""
        bar = self.session.bar
        while True:
            done, status = await job.adapter.status(rec["id"])
            _bar_status(bar, f"batch {rec['id']}: {status}")
            if done:
                break
            await asyncio.sleep(self.poll_s)
        outcomes = await job.adapter.results(rec["id"])
        retry: list[Trial] = []
        done_ids = self.session.writer.store.done_trial_ids()
        for tid in rec["trial_ids"]:
            t = job.trials.get(tid)
            if t is None or tid in done_ids:        # no longer in the grid, or stored before a crash
                continue
            out = outcomes.get(tid) or Outcome(error="no result for this request in the batch output")
            if self._record_outcome(job, t, out):
                retry.append(t)
        self.session.writer.flush()
        rec["state"] = "collected"
        rec["collected_at"] = time.time()
        self._save(rec)
        return retry

    def _record_outcome(self, job: _Job, t: Trial, out: Outcome) -> bool:
        """Hand one result to the caller and write its row; True when the caller decides it goes to
        another batch."""
        s, caller = self.session, job.lane.caller
        req = self._request(t)
        resp: JudgeResponse | None = None
        if req is None:
            out = Outcome(error="protocol could not present this item", decision=RetryDecision.fatal())
        elif out.error is None:
            body, notes = job.adapter.body(req)
            try:
                resp = job.adapter.response(out.answer, req, body, list(notes))
            except JudgeCallError as exc:
                out = Outcome(error=str(exc), decision=exc.decision)
        cache_key = caller.cache_key(req, t.rep) if req is not None and self._use_cache(t) else None
        result = caller.record(t.trial_id, response=resp, error=out.error, decision=out.decision,
                               cache_key=cache_key, batch_price=True)
        if isinstance(result, RetryLater):
            return True
        item = s.items[(t.dataset, t.item_id)]
        if req is None:
            row = failed_judgment(t, item, tid=t.trial_id, error=result.error, attempts=result.attempts)
        else:
            row = judgment_for(t, item, s.protocols[t.protocol], result, tid=t.trial_id,
                               prompt_hash=caller.prompt_hash(req))
        s.record(row, job.lane)
        return False

    def _record_failed(self, job: _Job, t: Trial, error: str | None, *, attempts: int) -> None:
        s = self.session
        row = failed_judgment(t, s.items[(t.dataset, t.item_id)], tid=t.trial_id, attempts=attempts,
                              error=error)
        s.record(row, job.lane)


def _bar_status(bar: Any, text: str) -> None:
    """Show the batch status in the run's progress bar (its rate column), when there is one."""
    p = getattr(bar, "_p", None)
    if p is not None:
        p.update(bar._task, rate=text)


def check_batch_judges(judges: Mapping[str, JudgeAPI], batch_ids: Sequence[str]) -> None:
    """Refuse ``batch: true`` on a judge without a batch API before anything runs."""
    for jid in batch_ids:
        batch_adapter(judges[jid])


__all__ = ["BatchExecutor", "Outcome", "batch_adapter", "check_batch_judges"]
