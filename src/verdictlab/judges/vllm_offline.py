"""Offline batch judge on a GPU with vLLM (``vllm:MODEL_PATH``).

vLLM is imported only when this judge is built; without it the factory fails with an install
hint (vLLM needs a CUDA GPU; tests never need it).  The engine calls :meth:`generate` once per
trial, concurrently; the judge gathers the requests that arrive within ``batch_window_s`` (up to
``batch_size``) and runs them as one ``LLM.chat`` batch on a worker thread, so a high engine
concurrency (>= ``batch_size``) keeps the GPU busy.  Log-probabilities of the first generated
token give ``choice_probs`` for label-only protocols, as with the API judges.

Options may follow the path after ``|``: ``vllm:/models/qwen2.5-7b|tensor_parallel_size=2,
max_model_len=8192,batch_size=128`` (values are parsed as int, float or text).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.design import Trial
from ..core.registry import MissingExtraError
from .base import (
    JudgeAPI,
    JudgeCallError,
    JudgeConfigError,
    JudgeRequest,
    JudgeResponse,
    RetryDecision,
    building_offline,
)
from .openai_api import DEFAULT_TOP_LOGPROBS, choice_probs_from_top_logprobs

INSTALL_HINT = ("the vllm judge needs the 'vllm' package and a CUDA GPU; install it with "
                "`pip install vllm` on a GPU machine (use llamacpp:... or an openai-compatible server "
                "elsewhere)")


@dataclass
class _Pending:
    request: JudgeRequest
    future: asyncio.Future[JudgeResponse]


class VLLMJudge(JudgeAPI):
    provider = "vllm"
    supports_logprobs = True
    free = True                  # runs on the user's GPUs
    assumed_latency_s = None     # batch throughput depends on the GPU: not estimated
    sdk = "vllm"

    def __init__(self, judge_id: str, model_path: str, *, llm: Any = None, sampling_params_cls: Any = None,
                 batch_size: int = 64, batch_window_s: float = 0.02, **engine_kwargs: Any) -> None:
        super().__init__(judge_id, model_path)
        if batch_size < 1:
            raise JudgeConfigError(f"judge {judge_id!r}: batch_size must be >= 1")
        self.batch_size = int(batch_size)
        self.batch_window_s = float(batch_window_s)
        self.engine_kwargs = engine_kwargs
        self._llm = llm
        self._sp_cls = sampling_params_cls
        self._queue: asyncio.Queue[_Pending] | None = None
        self._worker: asyncio.Task[None] | None = None
        self.batches_run = 0

    def ray_data_stage(self) -> Callable[[], Callable[[Any], Any]]:
        """Under ``executor: ray`` the judge's requests flow through Ray Data's LLM stage with a vLLM engine
        on GPU workers (:func:`vllm_stage`), not call by call."""
        return functools.partial(vllm_stage, self.model)

    def describe(self) -> dict[str, Any]:
        return {"judge": self.judge_id, "provider": self.provider, "model": self.model,
                "batch_size": self.batch_size, "engine_kwargs": dict(self.engine_kwargs)}

    # -- model ------------------------------------------------------------------------------
    def _load(self) -> tuple[Any, Any]:
        if self._llm is None or self._sp_cls is None:
            try:
                import vllm
            except ImportError:
                raise JudgeConfigError(INSTALL_HINT) from None
            if self._sp_cls is None:
                self._sp_cls = vllm.SamplingParams
            if self._llm is None:
                self._llm = vllm.LLM(model=self.model, **self.engine_kwargs)
        return self._llm, self._sp_cls

    def _sampling(self, sp_cls: Any, r: JudgeRequest) -> Any:
        kw: dict[str, Any] = {"temperature": float(r.temperature), "max_tokens": int(r.max_tokens)}
        if r.seed is not None:
            kw["seed"] = int(r.seed)
        if r.stop:
            kw["stop"] = list(r.stop)
        k = r.top_logprobs or (DEFAULT_TOP_LOGPROBS if (r.logprobs or r.verdict_choices) else 0)
        if k:
            kw["logprobs"] = int(k)
        for name in ("top_p", "top_k", "min_p", "repetition_penalty"):
            if name in r.params:
                kw[name] = r.params[name]
        return sp_cls(**kw)

    def _run_batch(self, batch: list[JudgeRequest]) -> list[JudgeResponse]:
        llm, sp_cls = self._load()
        t0 = time.perf_counter()
        outs = llm.chat([list(r.messages) for r in batch], [self._sampling(sp_cls, r) for r in batch],
                        use_tqdm=False)
        latency = time.perf_counter() - t0
        responses = []
        for r, out in zip(batch, outs, strict=True):
            comp = out.outputs[0]
            notes = [f"generated in a batch of {len(batch)}; latency_s is the batch's wall time"]
            top_list = None
            choice_probs = None
            if getattr(comp, "logprobs", None):
                top_list = []
                for pos in comp.logprobs:
                    top_list.append({(lp.decoded_token if getattr(lp, "decoded_token", None) is not None
                                      else str(tid)): lp.logprob for tid, lp in pos.items()})
                if r.verdict_choices and top_list:
                    choice_probs, cp = choice_probs_from_top_logprobs(top_list[0], r.verdict_choices)
                    notes.extend(cp)
            responses.append(JudgeResponse(
                text=comp.text, tokens_in=len(out.prompt_token_ids or []) or None,
                tokens_out=len(comp.token_ids or []), cost_usd=0.0, latency_s=latency,
                choice_probs=choice_probs, top_logprobs=top_list, notes=notes))
        return responses

    # -- batching ---------------------------------------------------------------------------
    async def _batcher(self) -> None:
        assert self._queue is not None
        while True:
            batch = await self._collect_batch(self._queue)
            live = [p for p in batch if not p.future.done()]
            if live:
                await self._run_live(live)

    async def _collect_batch(self, queue: asyncio.Queue[_Pending]) -> list[_Pending]:
        """Wait for one request, then gather more for up to ``batch_window_s`` or ``batch_size``."""
        batch = [await queue.get()]
        deadline = asyncio.get_running_loop().time() + self.batch_window_s
        while len(batch) < self.batch_size:
            timeout = deadline - asyncio.get_running_loop().time()
            if timeout <= 0:
                break
            try:
                batch.append(await asyncio.wait_for(queue.get(), timeout))
            except TimeoutError:
                break
        return batch

    async def _run_live(self, live: list[_Pending]) -> None:
        """Run one batch and settle each caller's future: a result, or the batch's error for all."""
        try:
            results = await asyncio.to_thread(self._run_batch, [p.request for p in live])
            self.batches_run += 1
            for p, res in zip(live, results, strict=True):
                if not p.future.done():
                    p.future.set_result(res)
        except JudgeConfigError as exc:
            config_detail = str(exc)
            _fail_all(live, lambda: JudgeCallError(config_detail, RetryDecision.fatal()))
        except Exception as exc:  # noqa: BLE001 - a failed batch fails its calls, retryably
            detail = f"vllm batch failed: {type(exc).__name__}: {str(exc)[:300]}"
            _fail_all(live, lambda: JudgeCallError(detail, RetryDecision.transient()))

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        if self._queue is None:
            self._queue = asyncio.Queue()
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._batcher())
        fut: asyncio.Future[JudgeResponse] = asyncio.get_running_loop().create_future()
        await self._queue.put(_Pending(request, fut))
        return await fut

    async def aclose(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._worker
            self._worker = None
        self._queue = None


def _fail_all(live: list[_Pending], error: Callable[[], JudgeCallError]) -> None:
    """Fail every still-waiting call with its own copy of the batch's error."""
    for p in live:
        if not p.future.done():
            p.future.set_exception(error())


def _parse_value(v: str) -> Any:
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(v.lower(), v)


def make_vllm_judge(judge_id: str, spec: str) -> VLLMJudge:
    path, _, opts = spec.partition("|")
    path = path.strip()
    if not path:
        raise JudgeConfigError(f"judge id {judge_id!r}: expected vllm:MODEL_PATH")
    if not building_offline() and importlib.util.find_spec("vllm") is None:     # a plan needs no vllm
        raise JudgeConfigError(f"judge {judge_id!r}: {INSTALL_HINT}")
    kwargs: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in opts.split(","))):
        k, eq, v = part.partition("=")
        if not eq:
            raise JudgeConfigError(f"judge id {judge_id!r}: option {part!r} must look like name=value")
        kwargs[k.strip()] = _parse_value(v.strip())
    return VLLMJudge(judge_id, path, **kwargs)


def vllm_stage(model: str, **engine_kwargs: Any) -> Callable[[Any], Any]:  # pragma: no cover - needs GPUs
    """The Ray Data LLM processor with a vLLM engine for ``model`` (import-guarded: needs vLLM, GPUs)."""
    try:
        from ray.data.llm import build_processor, vLLMEngineProcessorConfig
    except ImportError as exc:
        raise MissingExtraError("vllm: judges on Ray need Ray Data's LLM API and vLLM on GPU workers: "
                           "pip install 'ray[data,llm]' vllm") from exc
    config = vLLMEngineProcessorConfig(model_source=model, engine_kwargs=engine_kwargs or {"max_model_len": 4096},
                                       batch_size=32, concurrency=1)

    def post(row: dict[str, Any]) -> dict[str, Any]:
        return {"trial_id": row["trial"]["trial_id"] if "trial_id" in row["trial"] else Trial(**row["trial"]).trial_id,
                "generated_text": row.get("generated_text"), "tokens_in": row.get("num_input_tokens"),
                "tokens_out": row.get("num_generated_tokens"), "choice_probs": None, "error": None,
                "error_kind": None, "latency_s": None}

    return build_processor(config, preprocess=lambda row: {**row}, postprocess=post)


__all__ = ["INSTALL_HINT", "VLLMJudge", "make_vllm_judge", "vllm_stage"]
