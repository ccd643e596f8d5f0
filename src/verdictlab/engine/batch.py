"""The batch executor: the trials of ``batch: true`` judges as provider batch jobs, at batch prices.

A judge mapping in the run config may say ``batch: true``.  Its trials are then not called one by one:
they are submitted as batch jobs through the official SDKs -- OpenAI's Batch API (``files.create``
with ``purpose="batch"``, ``batches.create`` on ``/v1/chat/completions`` with a 24 h window) or
Anthropic's Message Batches (``messages.batches.create``) -- with the trial id as each request's
``custom_id``.  The other judges of the run go to the inner executor (local, adaptive or Ray).

How one batch judge runs
------------------------
1. **Resume first.**  The run store's meta ``batches`` lists every batch submitted for this run dir
   (id, judge, provider, trial ids, state).  Batches still ``submitted`` are polled and collected
   before anything new is sent; their trials are never submitted again.
2. **Cache.**  Trials whose answer is in the response cache are judged from it (no request).
3. **Submit.**  Each remaining trial's request is built by the session's RequestBuilder (the same
   request, seed included, as the local executor sends), converted to the provider's body by the
   judge's own ``build_params``; one call per request is reserved through the judge's caller first
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
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.design import Trial
from ..core.redact import redact_text
from ..judges.base import JudgeAPI, JudgeCallError, JudgeRequest, JudgeResponse, RetryDecision
from .caller import ERROR_LIMIT, RetryLater, RunControl, cache_allows
from .executor import BaseExecutor, JudgeOne, Lane, LocalExecutor
from .summary import EngineError
from .trials import failed_judgment, judgment_for

BATCH_PROVIDERS = ("openai", "openai-compatible", "anthropic")
META_KEY = "batches"
MAX_REQUESTS = {"openai": 50_000, "openai-compatible": 50_000, "anthropic": 100_000}
_OPENAI_DONE = frozenset({"completed", "failed", "expired", "cancelled"})


@dataclasses.dataclass
class Outcome:
    """One request's result inside a batch: the provider's answer (a chat completion dict or an
    Anthropic message), or the error and its typed retry decision (the caller decides from it
    whether the request goes into another batch)."""

    answer: Any = None
    error: str | None = None
    decision: RetryDecision = dataclasses.field(default_factory=RetryDecision.transient)


# -- provider adapters -----------------------------------------------------------------------------
def openai_body(judge: Any, request: JudgeRequest) -> tuple[dict[str, Any], list[str]]:
    """The chat-completions body the judge would POST for ``request`` (its ``build_params``, with the
    ``extra_body`` merged in and the client-side ``timeout`` left out), and the notes."""
    params, notes = judge.build_params(request)
    body = {k: v for k, v in params.items() if k not in ("timeout", "extra_body")}
    body.update(params.get("extra_body") or {})
    return body, notes


def anthropic_body(judge: Any, request: JudgeRequest) -> tuple[dict[str, Any], list[str]]:
    """The Messages API params the judge would send for ``request`` (``extra_body`` merged)."""
    params, notes = judge.build_params(request)
    body = {k: v for k, v in params.items() if k not in ("timeout", "extra_body")}
    body.update(params.get("extra_body") or {})
    return body, notes


def openai_line_outcome(line: Mapping[str, Any]) -> Outcome:
    """One line of an OpenAI batch output or error file (also vLLM ``run-batch`` output)."""
    err = line.get("error")
    resp = line.get("response") if isinstance(line.get("response"), Mapping) else None
    if err:
        msg = err.get("message") if isinstance(err, Mapping) else str(err)
        return Outcome(error=f"batch request error: {redact_text(msg, limit=ERROR_LIMIT)}")
    if resp is None:
        return Outcome(error="batch result line without a response")
    status = resp.get("status_code")
    body = resp.get("body")
    if status != 200:
        msg = body.get("error", {}).get("message") if isinstance(body, Mapping) and \
            isinstance(body.get("error"), Mapping) else str(body)[:200]
        return Outcome(error=f"batch request failed (HTTP {status}): {redact_text(msg, limit=ERROR_LIMIT)}",
                       decision=status_decision(status))
    return Outcome(answer=body)


def status_decision(status: Any) -> RetryDecision:
    """The retry decision for a batch line's HTTP status: 429 a rate limit; 408, 409, 5xx and a
    missing status transient; any other status fatal."""
    if status == 429:
        return RetryDecision.rate_limit()
    if not isinstance(status, int) or status in (408, 409) or status >= 500:
        return RetryDecision.transient()
    return RetryDecision.fatal()


class OpenAIBatches:
    """OpenAI Batch API through ``AsyncOpenAI`` (the judge's own client: key, base URL, transport)."""

    def __init__(self, judge: Any) -> None:
        self.judge = judge

    def body(self, request: JudgeRequest) -> tuple[dict[str, Any], list[str]]:
        return openai_body(self.judge, request)

    async def submit(self, bodies: Sequence[tuple[str, dict[str, Any]]], key: str) -> str:
        client = self.judge.client()
        lines = [json.dumps({"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": body})
                 for cid, body in bodies]
        f = await client.files.create(file=("verdictlab-batch.jsonl", ("\n".join(lines) + "\n").encode()),
                                      purpose="batch")
        b = await client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                                        completion_window="24h", metadata={"verdictlab_key": key})
        return str(b.id)

    async def find(self, key: str) -> str | None:
        """The id of the batch submitted with ``key`` (its metadata), if the provider has it."""
        async for b in self.judge.client().batches.list(limit=100):
            if (getattr(b, "metadata", None) or {}).get("verdictlab_key") == key:
                return str(b.id)
        return None

    async def status(self, batch_id: str) -> tuple[bool, str]:
        b = await self.judge.client().batches.retrieve(batch_id)
        counts = getattr(b, "request_counts", None)
        done = f" {counts.completed + counts.failed}/{counts.total}" if counts is not None else ""
        return b.status in _OPENAI_DONE, f"{b.status}{done}"

    async def results(self, batch_id: str) -> dict[str, Outcome]:
        client = self.judge.client()
        b = await client.batches.retrieve(batch_id)
        out: dict[str, Outcome] = {}
        for fid in (b.output_file_id, b.error_file_id):
            if not fid:
                continue
            text = (await client.files.content(fid)).text
            for raw in text.splitlines():
                if raw.strip():
                    line = json.loads(raw)
                    out[str(line.get("custom_id"))] = openai_line_outcome(line)
        return out

    def response(self, answer: Any, request: JudgeRequest, body: dict[str, Any], notes: list[str]) -> JudgeResponse:
        return self.judge.read_answer(answer, request, body, notes)


class AnthropicBatches:
    """Anthropic Message Batches through ``AsyncAnthropic`` (the judge's own client)."""

    def __init__(self, judge: Any) -> None:
        self.judge = judge

    def body(self, request: JudgeRequest) -> tuple[dict[str, Any], list[str]]:
        return anthropic_body(self.judge, request)

    async def find(self, key: str) -> str | None:
        return None                 # Message Batches carry no metadata to find a batch by

    async def submit(self, bodies: Sequence[tuple[str, dict[str, Any]]], key: str) -> str:
        client = self.judge.client()
        b = await client.messages.batches.create(requests=[{"custom_id": cid, "params": body}
                                                           for cid, body in bodies])
        return str(b.id)

    async def status(self, batch_id: str) -> tuple[bool, str]:
        b = await self.judge.client().messages.batches.retrieve(batch_id)
        c = b.request_counts
        n = c.succeeded + c.errored + c.canceled + c.expired
        return b.processing_status == "ended", f"{b.processing_status} {n}/{n + c.processing}"

    async def results(self, batch_id: str) -> dict[str, Outcome]:
        client = self.judge.client()
        out: dict[str, Outcome] = {}
        async for r in await client.messages.batches.results(batch_id):
            res = r.result
            if res.type == "succeeded":
                out[r.custom_id] = Outcome(answer=res.message)
            elif res.type == "errored":
                err = getattr(getattr(res, "error", None), "error", None)
                kind = getattr(err, "type", "error")
                msg = redact_text(getattr(err, "message", ""), limit=ERROR_LIMIT)
                fatal = kind in ("invalid_request_error", "authentication_error", "permission_error",
                                 "not_found_error")
                out[r.custom_id] = Outcome(error=f"batch request errored ({kind}): {msg}",
                                           decision=RetryDecision.fatal() if fatal else RetryDecision.transient())
            else:   # canceled / expired: never processed
                out[r.custom_id] = Outcome(error=f"batch request {res.type}")
        return out

    def response(self, answer: Any, request: JudgeRequest, body: dict[str, Any], notes: list[str]) -> JudgeResponse:
        return self.judge.read_message(answer, request, notes)


def batch_adapter(judge: JudgeAPI) -> OpenAIBatches | AnthropicBatches:
    if judge.provider == "anthropic":
        return AnthropicBatches(judge)
    if judge.provider in ("openai", "openai-compatible"):
        return OpenAIBatches(judge)
    raise EngineError(f"judge {judge.judge_id!r}: batch: true needs an OpenAI or Anthropic judge "
                      f"(provider {judge.provider!r} has no batch API)")


# -- the executor ----------------------------------------------------------------------------------
@dataclasses.dataclass
class _Job:
    """What one batch judge's collection needs: its lane, adapter and trials."""

    lane: Lane
    adapter: OpenAIBatches | AnthropicBatches
    trials: dict[str, Trial]


class BatchExecutor(BaseExecutor):
    """Runs the lanes of ``batch: true`` judges as batch jobs (module docstring) and hands the other
    lanes to ``inner`` (default: :class:`~verdictlab.engine.executor.LocalExecutor`).

    ``poll_s``: seconds between status requests.  ``max_requests``: requests per batch (default: the
    provider's limit).  ``cache``: the run's cache policy (as the runner's).  Every request is reserved
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
        size = self.max_requests or MAX_REQUESTS.get(caller.judge.provider, 50_000)
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


__all__ = ["BATCH_PROVIDERS", "AnthropicBatches", "BatchExecutor", "OpenAIBatches", "Outcome", "anthropic_body",
           "batch_adapter", "check_batch_judges", "openai_body", "openai_line_outcome"]
