"""Open-weight judges across a cluster's GPUs: Ray Data batch inference.

With ``executor: ray``, trials of ``vllm:`` judges are not sent call by call: their requests become a
Ray Data dataset that flows through an inference *stage* -- Ray's LLM batch API with a vLLM engine
(``ray.data.llm.build_processor`` + ``vLLMEngineProcessorConfig``) on GPU machines -- and the
generated rows stream back to the driver, which parses them through the normal path
(:func:`~verdictlab.engine.trials.judgment_for`) and writes them with the run's one writer.

The vLLM stage needs GPUs and vLLM, so it is import-guarded (:func:`vllm_stage`).  The pipeline itself
(dataset of requests -> stage -> parsed judgments) is the same for any stage; tests run it on the CPU
with :class:`LocalJudgeStage`, which answers each row with a verdictlab judge (the simulated judge or
the embedded llama.cpp one) through a :class:`~verdictlab.engine.caller.JudgeCaller` (retries,
accounting), in place of the vLLM engine.

Label-only protocols ask the engine for log-probabilities of the first answer token (``logprobs``), so
P(A) is read from the verdict tokens as with the other backends.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..design import Trial
from ..judges.base import JudgeResponse
from ._ray_common import import_ray, item_from, item_payload
from .caller import CallResult, JudgeCaller
from .executor import BaseExecutor, Lane


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
    the vLLM engine in tests).  Built once per actor; each batch is judged through a JudgeCaller."""

    def __init__(self, judge_id: str, seed: int = 42) -> None:
        from ..judges import make_judge

        self.judge = make_judge(judge_id)
        self.caller = JudgeCaller(self.judge)
        self.seed = seed
        self.loop = asyncio.new_event_loop()

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        from ..config import JudgeSpec
        from ..protocols import get_protocol
        from .trials import RequestBuilder

        builder = RequestBuilder(self.judge, JudgeSpec(id=self.judge.judge_id), seed=self.seed)
        out: dict[str, list[Any]] = {"trial_id": [], "generated_text": [], "tokens_in": [], "tokens_out": [],
                                     "choice_probs": [], "error": [], "attempts": []}

        async def one(trial_d: dict[str, Any], item: Any) -> None:
            trial = Trial(**trial_d)
            req = builder.build(trial, item, get_protocol(trial.protocol), trial.trial_id)
            res = await self.caller.call(req, trial_id=trial.trial_id)
            resp = res.response if res is not None else None
            out["trial_id"].append(trial.trial_id)
            out["generated_text"].append(resp.text if resp else None)
            out["tokens_in"].append(resp.tokens_in if resp else None)
            out["tokens_out"].append(resp.tokens_out if resp else None)
            out["choice_probs"].append(dict(resp.choice_probs) if resp and resp.choice_probs else None)
            out["error"].append(res.error if res is not None else "stopped")
            out["attempts"].append(res.attempts if res is not None else 0)

        items = [item_from(dict(d)) for d in _as_list(batch["item"])]

        async def run_all() -> None:
            await asyncio.gather(*(one(dict(t), it) for t, it in zip(_as_list(batch["trial"]), items, strict=True)))

        self.loop.run_until_complete(run_all())
        return out


def _as_list(col: Any) -> list[Any]:
    return list(col.tolist() if hasattr(col, "tolist") else col)


def vllm_stage(model: str, **engine_kwargs: Any) -> Callable[[Any], Any]:  # pragma: no cover - needs GPUs
    """The Ray Data LLM processor with a vLLM engine for ``model`` (import-guarded: needs vLLM, GPUs)."""
    try:
        from ray.data.llm import build_processor, vLLMEngineProcessorConfig
    except ImportError as exc:
        raise RuntimeError("vllm: judges on Ray need Ray Data's LLM API and vLLM on GPU workers: "
                           "pip install 'ray[data,llm]' vllm") from exc
    config = vLLMEngineProcessorConfig(model_source=model, engine_kwargs=engine_kwargs or {"max_model_len": 4096},
                                       batch_size=32, concurrency=1)

    def post(row: dict[str, Any]) -> dict[str, Any]:
        return {"trial_id": row["trial"]["trial_id"] if "trial_id" in row["trial"] else Trial(**row["trial"]).trial_id,
                "generated_text": row.get("generated_text"), "tokens_in": row.get("num_input_tokens"),
                "tokens_out": row.get("num_generated_tokens"), "choice_probs": None, "error": None, "attempts": 1}

    return build_processor(config, preprocess=lambda row: {**row}, postprocess=post)


class RayDataExecutor(BaseExecutor):
    """Runs the trials of each lane as one Ray Data pipeline through ``stage_for(judge_id)``
    (default: the vLLM stage for ``vllm:`` judges).  Records rows through the runner's session."""

    def __init__(self, *, stage_for: Callable[[str], Any] | None = None, batch_size: int = 16,
                 concurrency: int = 1, seed: int = 42) -> None:
        self.stage_for = stage_for
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.seed = seed
        self.session: Any = None

    def attach(self, session: Any) -> None:
        self.session = session

    def _dataset(self, ray: Any, lane: Lane) -> Any:
        s = self.session
        rows = request_rows(lane.trials, s, lane.caller.judge.judge_id)
        for row in rows:
            t = row["trial"]
            row["item"] = item_payload(s.items[(t["dataset"], t["item_id"])])
        return ray.data.from_items(rows)

    async def execute(self, lanes: Mapping[str, Lane], judge_one: Callable[..., Any], control: Any) -> None:
        ray = import_ray()
        if not ray.is_initialized():
            ray.init(include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
        for jid, lane in lanes.items():
            ds = self._dataset(ray, lane)
            if self.stage_for is not None:
                out = ds.map_batches(self.stage_for(jid), fn_constructor_kwargs={"judge_id": jid, "seed": self.seed},
                                     batch_size=self.batch_size, concurrency=self.concurrency)
            else:  # pragma: no cover - GPU path
                out = vllm_stage(lane.caller.judge.model)(ds)
            by_id = {t.trial_id: t for t in lane.trials}
            for row in out.iter_rows():
                self._record(row, by_id, lane)
            lane.trials.clear()

    def _record(self, row: Mapping[str, Any], by_id: Mapping[str, Trial], lane: Lane) -> None:
        from .trials import judgment_for

        s = self.session
        trial = by_id[row["trial_id"]]
        item = s.items[(trial.dataset, trial.item_id)]
        text = row.get("generated_text")
        resp = None if text is None else JudgeResponse(
            text=str(text), tokens_in=_int(row.get("tokens_in")), tokens_out=_int(row.get("tokens_out")),
            choice_probs=dict(row["choice_probs"]) if row.get("choice_probs") else None, cost_usd=0.0)
        result = CallResult(resp, attempts=int(row.get("attempts") or 1),
                            error=None if resp is not None else str(row.get("error") or "no answer"))
        s.summary.calls += result.attempts
        protocol = s.protocols[trial.protocol]
        prompt_hash = lane.caller.prompt_hash(s.builders[trial.judge].build(trial, item, protocol, trial.trial_id))
        s.record(judgment_for(trial, item, protocol, result, tid=trial.trial_id, prompt_hash=prompt_hash), lane)


def _int(v: Any) -> int | None:
    try:
        return None if v is None else int(v)
    except (TypeError, ValueError):
        return None


__all__ = ["LocalJudgeStage", "RayDataExecutor", "request_rows", "vllm_stage"]
