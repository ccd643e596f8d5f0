"""Open-weight judges across a cluster's GPUs: Ray Data batch inference.

With ``executor: ray``, trials of judges that declare a Ray Data stage (``vllm:`` judges:
:meth:`~verdictlab.judges.base.JudgeAPI.ray_data_stage`) are not sent call by call: their requests become a
Ray Data dataset that flows through an inference *stage* -- Ray's LLM batch API with a vLLM engine
(``ray.data.llm.build_processor`` + ``vLLMEngineProcessorConfig``) on GPU machines -- and the
generated rows stream back to the driver, which parses them through the normal path
(:func:`~verdictlab.engine.trials.judgment_for`) and writes them with the run's one writer.

A stage only generates; the lane's :class:`~verdictlab.engine.caller.JudgeCaller` on the driver owns
everything around the calls, as for every executor: trials whose answer is cached (or that the protocol
cannot present) are judged on the driver through the caller; every row sent is first reserved
(:meth:`~verdictlab.engine.caller.JudgeCaller.reserve`: the run budget and the call count; a refused
reservation stops the run and the rest is not sent); every row that comes back is recorded
(:meth:`~verdictlab.engine.caller.JudgeCaller.record`: scrubbing, budget charge, attempt row, cache
entry, retry decision), and the rows the caller wants retried flow through the stage again.

The vLLM stage needs GPUs and vLLM, so it is import-guarded
(:func:`verdictlab.judges.vllm_offline.vllm_stage`, the stage a ``vllm:`` judge declares).  The pipeline itself
(dataset of requests -> stage -> parsed judgments) is the same for any stage; tests run it on the CPU
with :class:`LocalJudgeStage`, which answers each row with one call of a verdictlab judge (the simulated
judge or the embedded llama.cpp one; :func:`~verdictlab.engine.caller.attempt_call`), in place of the
vLLM engine.

Label-only protocols ask the engine for log-probabilities of the first answer token (``logprobs``), so
P(A) is read from the verdict tokens as with the other backends.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..core.design import Trial
from ..judges.base import JudgeRequest, JudgeResponse, RetryDecision, RetryKind
from ._ray_common import import_ray, init_ray, item_from, item_payload
from .caller import RetryLater, attempt_call, cache_allows
from .executor import BaseExecutor, JudgeOne, Lane
from .summary import EngineError

STAGE_COLUMNS = ("trial_id", "generated_text", "tokens_in", "tokens_out", "choice_probs", "error", "error_kind",
                 "latency_s")


def request_rows(trials: Iterable[Trial], session: Any, judge_id: str) -> list[dict[str, Any]]:
    """One dataset row per trial: the trial key, its chat messages and sampling parameters."""
    rows = []
    builder = session.builders[judge_id]
    for t in trials:
        item = session.items[(t.dataset, t.item_id)]
        req = builder.build(t, item, session.protocols[t.protocol], t.trial_id)
        rows.append({"trial": dataclasses.asdict(t), "messages": [dict(m) for m in req.messages],
                     "sampling_params": {"temperature": req.temperature, "max_tokens": req.max_tokens,
                                         "seed": req.seed, "stop": list(req.stop),
                                         **({"logprobs": req.top_logprobs} if req.logprobs else {})},
                     "verdict_choices": list(req.verdict_choices)})
    return rows


class LocalJudgeStage:
    """A Ray Data stage that answers request rows with a verdictlab judge on the CPU (the stand-in for
    the vLLM engine in tests).  Built once per actor; one call per row and nothing around it, like the
    vLLM engine: a failed call comes back as its error and typed retry kind, for the driver's caller
    to record and decide on."""

    def __init__(self, judge_id: str, seed: int = 42, timeout_s: float = 120.0) -> None:
        from ..judges import make_judge

        self.judge = make_judge(judge_id)
        self.seed = seed
        self.timeout_s = timeout_s
        self.loop = asyncio.new_event_loop()

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        from ..protocols import get_protocol
        from .config import JudgeSpec
        from .trials import RequestBuilder

        builder = RequestBuilder(self.judge, JudgeSpec(id=self.judge.judge_id), seed=self.seed)
        out: dict[str, list[Any]] = {c: [] for c in STAGE_COLUMNS}

        async def one(trial_d: dict[str, Any], item: Any) -> None:
            trial = Trial(**trial_d)
            req = builder.build(trial, item, get_protocol(trial.protocol), trial.trial_id)
            done = await attempt_call(self.judge, req, timeout_s=self.timeout_s)
            resp = done.response
            out["trial_id"].append(trial.trial_id)
            out["generated_text"].append(resp.text if resp else None)
            out["tokens_in"].append(resp.tokens_in if resp else None)
            out["tokens_out"].append(resp.tokens_out if resp else None)
            out["choice_probs"].append(dict(resp.choice_probs) if resp and resp.choice_probs else None)
            out["error"].append(done.error)
            out["error_kind"].append(done.decision.kind.value if done.decision else None)
            out["latency_s"].append(done.latency_s)

        items = [item_from(dict(d)) for d in _as_list(batch["item"])]

        async def run_all() -> None:
            await asyncio.gather(*(one(dict(t), it) for t, it in zip(_as_list(batch["trial"]), items, strict=True)))

        self.loop.run_until_complete(run_all())
        return out


def _as_list(col: Any) -> list[Any]:
    return list(col.tolist() if hasattr(col, "tolist") else col)


async def answer_on_driver(lane: Lane, session: Any, judge_one: JudgeOne) -> list[Trial]:
    """Judge on the driver, through ``judge_one`` (the caller), the trials of ``lane`` that need no remote
    call: those whose answer is in the response cache and those the protocol cannot present (a failed
    row with the reason).  Returns the others, in order, for the cluster."""
    s, caller = session, lane.caller
    builder = s.builders[caller.judge.judge_id]
    remote: list[Trial] = []
    for t in lane.trials:
        try:
            req = builder.build(t, s.items[(t.dataset, t.item_id)], s.protocols[t.protocol], t.trial_id)
        except Exception:  # noqa: BLE001 - judge_one records why as a failed row
            await judge_one(t, lane)
            continue
        if cache_allows(s.cache, t.temperature) and caller.cached(caller.cache_key(req, t.rep)) is not None:
            await judge_one(t, lane)
            continue
        remote.append(t)
    return remote


class RayDataExecutor(BaseExecutor):
    """Runs the trials of each lane as Ray Data pipelines through ``stage_for(judge_id)`` (default: the
    stage the judge declares, :meth:`~verdictlab.judges.base.JudgeAPI.ray_data_stage` -- the vLLM stage of
    ``vllm:`` judges): one pass, then one more per round of retries the lane's caller
    asks for.  Every row is reserved and recorded through the lane's caller (module docstring); rows are
    written through the runner's session."""

    def __init__(self, *, stage_for: Callable[[str], Any] | None = None, batch_size: int = 16,
                 concurrency: int = 1, seed: int = 42) -> None:
        self.stage_for = stage_for
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.seed = seed
        self.session: Any = None

    def attach(self, session: Any) -> None:
        self.session = session

    def _dataset(self, ray: Any, lane: Lane, trials: list[Trial]) -> Any:
        s = self.session
        rows = request_rows(trials, s, lane.caller.judge.judge_id)
        for row in rows:
            t = row["trial"]
            row["item"] = item_payload(s.items[(t["dataset"], t["item_id"])])
        return ray.data.from_items(rows)

    def _stage(self, ray: Any, lane: Lane, trials: list[Trial]) -> Any:
        ds = self._dataset(ray, lane, trials)
        jid = lane.caller.judge.judge_id
        if self.stage_for is None:  # pragma: no cover - GPU path
            build = lane.caller.judge.ray_data_stage()
            if build is None:
                raise EngineError(f"judge {jid!r} has no Ray Data stage (its calls run on Ray workers)")
            return build()(ds)
        return ds.map_batches(self.stage_for(jid), batch_size=self.batch_size, concurrency=self.concurrency,
                              fn_constructor_kwargs={"judge_id": jid, "seed": self.seed,
                                                     "timeout_s": lane.caller.spec.timeout_s})

    async def execute(self, lanes: Mapping[str, Lane], judge_one: JudgeOne, control: Any) -> None:
        ray = import_ray()
        if not ray.is_initialized():
            init_ray(ray, None)
        for lane in lanes.values():
            pending = await answer_on_driver(lane, self.session, judge_one)
            lane.trials.clear()
            while pending and not control.stopped and not lane.halted:
                pending = self._round(ray, lane, pending)

    def _round(self, ray: Any, lane: Lane, trials: list[Trial]) -> list[Trial]:
        """Reserve, send and record one pass of ``trials``; the trials the caller wants retried."""
        send: list[Trial] = []
        for t in trials:
            if lane.caller.reserve(t.trial_id) is None:
                break                   # budget spent or judge halted: the rest is not sent
            send.append(t)
        if not send:
            return []
        by_id = {t.trial_id: t for t in send}
        retry: list[Trial] = []
        for row in self._stage(ray, lane, send).iter_rows():
            tid = str(row["trial_id"])
            if tid in by_id:            # a second row for a trial is ignored
                t = by_id.pop(tid)
                if self._record(row, t, lane):
                    retry.append(t)
        for t in by_id.values():        # sent, but the stage returned no row for it
            if self._record({"error": "no row for this request in the stage's output"}, t, lane):
                retry.append(t)
        return retry

    def _record(self, row: Mapping[str, Any], trial: Trial, lane: Lane) -> bool:
        """Hand one stage row to the caller and write the trial's row; True when the caller wants it
        retried."""
        from .trials import judgment_for

        s, caller = self.session, lane.caller
        item, protocol = s.items[(trial.dataset, trial.item_id)], s.protocols[trial.protocol]
        req: JudgeRequest = s.builders[trial.judge].build(trial, item, protocol, trial.trial_id)
        text = row.get("generated_text")
        resp = None if text is None else JudgeResponse(
            text=str(text), tokens_in=_int(row.get("tokens_in")), tokens_out=_int(row.get("tokens_out")),
            choice_probs=dict(row["choice_probs"]) if row.get("choice_probs") else None,
            cost_usd=0.0)               # the cluster's own GPUs: no per-call price
        kind, error = row.get("error_kind"), row.get("error")
        result = caller.record(trial.trial_id, response=resp, error=error if isinstance(error, str) else "no answer",
                               decision=RetryDecision(RetryKind(kind)) if isinstance(kind, str) else None,
                               cache_key=caller.cache_key(req, trial.rep) if cache_allows(s.cache, trial.temperature)
                               else None, latency_s=_float(row.get("latency_s")))
        if isinstance(result, RetryLater):
            return True
        s.record(judgment_for(trial, item, protocol, result, tid=trial.trial_id, prompt_hash=caller.prompt_hash(req)),
                 lane)
        return False


def _float(v: Any) -> float | None:
    try:
        return None if v is None else float(v)
    except (TypeError, ValueError):
        return None


def _int(v: Any) -> int | None:
    try:
        return None if v is None else int(v)
    except (TypeError, ValueError):
        return None


__all__ = ["STAGE_COLUMNS", "LocalJudgeStage", "RayDataExecutor", "answer_on_driver", "request_rows"]
