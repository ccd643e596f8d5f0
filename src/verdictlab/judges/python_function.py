"""Judges written as Python functions: a prompt template plus post-processing, a LangChain or DSPy
program, a reward model behind a helper -- whatever the user's code does, audited like an API judge.

Two ids name one:

* ``python:package.module:function`` imports ``function`` from ``package.module`` (the module must be
  importable: installed, or its folder on ``PYTHONPATH``);
* ``python:NAME`` is a function registered in this process with the :func:`judge` decorator
  (``@verdictlab.judge("NAME")``): what a notebook or a script defines and audits at once.

The judge function is called once per judge call with the protocol's rendered chat messages (in the
shown order) and the trial's generation settings::

    def my_judge(messages: list[dict[str, str]], *, temperature: float, max_tokens: int,
                 seed: int | None) -> str | JudgeReply

It may be ``async def``.  A sync function runs in a thread pool of its own; the caller's concurrency
(the judge's ``concurrency``, capped by :func:`judge`'s ``concurrency=``) bounds how many run at once.
It returns the reply text, or a :class:`JudgeReply` with the text and, optionally, the probability of
each label as shown (``label_probs={"A": 0.7, "B": 0.3}``: stored as P(A), so the sampling-free
expected figures work) and its token counts and cost.  The signature is checked when the judge is
built (and when :func:`judge` decorates), with one error that shows the expected signature.

Everything the engine's caller does for an API judge applies: cache, limits, budget, accounting,
resume and timeout (a sync call that times out keeps its thread until it returns; its answer is
dropped).  An exception raised by the function is a failed attempt recorded with its type and its
scrubbed message, never a crash of the run: retried (with backoff, up to the judge's
``max_retries``) when it is an instance of one of the exception types declared in ``retry_on=``,
final otherwise.  A function that needs a rate-limit wait of its own raises
:class:`~verdictlab.judges.base.JudgeCallError` with ``RetryDecision.rate_limit(seconds)``.

Constrained decoding.  A function declared with ``label_probs=True`` promises label probabilities on
every call; constrained trials of it (``decoding: [constrained]``) then force the protocol's format:
the function is called as usual, the verdict slot is filled with a label drawn from its probabilities
over the format's labels (the argmax at temperature 0, an exact tie going to the first label; above
0 sampled with weights p^(1/T) and the request's seed) and the free-text slots are left empty, so the
strict parser reads every constrained reply.  A constrained call without those probabilities fails
with the reason.  Without ``label_probs=True`` the judge has no constraint mechanism and no
constrained trial is run for it (never a silently free one).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import inspect
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..core.registry import Registry, first_doc_line
from .base import JudgeAPI, JudgeConfigError, JudgeRequest, JudgeResponse, RetryDecision

SIGNATURE = ("def my_judge(messages: list[dict[str, str]], *, temperature: float, max_tokens: int, "
             "seed: int | None) -> str | verdictlab.JudgeReply   (or async def)")
MECHANISM = ("label probabilities of the judge function: the verdict drawn from them over the format's labels "
             "(argmax at temperature 0), free-text slots left empty")
#: the most threads a sync judge function's pool may start.  Threads start only when no idle one is
#: left, so the pool holds as many as the caller lets run at once (the judge's concurrency), plus any
#: call that timed out and still runs; this cap only guards against a runaway.
POOL_MAX_THREADS = 1024
#: the attribute :func:`judge` sets on a function it decorates, so ``python:module:function`` finds the
#: declaration (retryable exceptions, concurrency, label probabilities) made beside it
DECLARATION = "__verdictlab_judge__"

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class JudgeReply:
    """What a judge function may return instead of a bare text: the reply ``text``, optionally the
    probability of each label *as shown* (``label_probs``, e.g. ``{"A": 0.7, "B": 0.3}``; non-negative
    finite numbers, not all zero), its token counts and its cost in dollars."""

    text: str
    label_probs: Mapping[str, float] | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None


@dataclass(frozen=True)
class JudgeFunction:
    """A judge function and what its author declared: ``retry_on`` (exception types worth another
    attempt), ``concurrency`` (a cap on calls at once; None: the judge spec's ``concurrency``) and
    ``label_probs`` (it returns label probabilities on every call: constrained decoding possible)."""

    name: str
    fn: Callable[..., Any]
    retry_on: tuple[type[Exception], ...] = ()
    concurrency: int | None = None
    label_probs: bool = False
    is_async: bool = field(init=False)

    def __post_init__(self) -> None:
        check_signature(self.fn, name=self.name)
        object.__setattr__(self, "is_async", _is_async(self.fn))

    def describe(self) -> dict[str, Any]:
        fn = self.fn
        where = f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', type(fn).__name__)}"
        return {"function": where, "async": self.is_async, "retry_on": [t.__name__ for t in self.retry_on],
                "label_probs": self.label_probs}


#: the judge functions registered in this process by name (``python:NAME``)
FUNCTIONS: Registry[JudgeFunction] = Registry("judge function")


def _is_async(fn: Callable[..., Any]) -> bool:
    """An ``async def`` function, or an object whose ``__call__`` is one."""
    call = type(fn).__call__ if not inspect.isroutine(fn) else None
    return inspect.iscoroutinefunction(fn) or (call is not None and inspect.iscoroutinefunction(call))


def check_signature(fn: Any, *, name: str) -> None:
    """Refuse, with one error showing :data:`SIGNATURE`, a judge function that cannot be called as
    ``fn(messages, temperature=..., max_tokens=..., seed=...)``.  A callable whose signature Python
    cannot read (some built-ins) is accepted; a mismatch then fails its calls, each recorded."""
    if not callable(fn):
        raise JudgeConfigError(f"judge function {name!r} is a {type(fn).__name__}, not a function; "
                               f"expected: {SIGNATURE}")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        sig.bind([], temperature=0.0, max_tokens=1, seed=None)
    except TypeError as exc:
        raise JudgeConfigError(f"judge function {name!r} has the signature {sig}, which cannot take the call "
                               f"({exc}); expected: {SIGNATURE}") from None


def _retry_types(retry_on: type[Exception] | Sequence[type[Exception]]) -> tuple[type[Exception], ...]:
    types = (retry_on,) if isinstance(retry_on, type) else tuple(retry_on)
    bad = [t for t in types if not (isinstance(t, type) and issubclass(t, Exception))]
    if bad:
        raise JudgeConfigError(f"retry_on must name exception classes, got {bad!r}")
    return types


def check_name(name: Any) -> str:
    """A registered judge function's name: non-empty, no ``:`` (``python:a:b`` names an import path) and
    no whitespace (it is part of the judge id)."""
    if not isinstance(name, str) or not name or ":" in name or any(c.isspace() for c in name):
        raise JudgeConfigError(f"a judge function's name must be non-empty text without ':' or spaces "
                               f"(the judge id is 'python:NAME'), got {name!r}")
    return name


def judge(name: str | Callable[..., Any] | None = None, *,
          retry_on: type[Exception] | Sequence[type[Exception]] = (), concurrency: int | None = None,
          label_probs: bool = False) -> Any:
    """Register a judge function in this process under ``name`` (default: the function's name); the
    judge id ``python:NAME`` then audits it in any run this process makes (:func:`verdictlab.audit`, a
    config given to :func:`~verdictlab.engine.run_config`); ``python:module:function`` finds this
    declaration from anywhere, the command line included.  ``retry_on``: exception types worth another attempt (with backoff);
    ``concurrency``: at most this many calls at once; ``label_probs``: it returns
    :class:`JudgeReply` with label probabilities on every call (constrained decoding then possible).
    Usable bare (``@judge``) or called (``@judge("name", retry_on=TimeoutError)``); returns the
    function unchanged.  Registering a name again replaces it (a notebook cell run twice)."""
    if concurrency is not None and (not isinstance(concurrency, int) or concurrency < 1):
        raise JudgeConfigError(f"concurrency must be a positive integer, got {concurrency!r}")
    types = _retry_types(retry_on)

    def deco(fn: F) -> F:
        reg = check_name(name if isinstance(name, str) else getattr(fn, "__name__", None))
        declared = JudgeFunction(reg, fn, retry_on=types, concurrency=concurrency, label_probs=bool(label_probs))
        FUNCTIONS.register(reg, declared, description=first_doc_line(fn))
        with contextlib.suppress(AttributeError, TypeError):   # a callable that takes no attributes: by name only
            setattr(fn, DECLARATION, declared)
        return fn

    if callable(name):
        return deco(name)
    return deco


def function_of(obj: Any, *, name: str) -> JudgeFunction:
    """The :class:`JudgeFunction` of ``obj``: its :func:`judge` declaration, or ``obj`` with none."""
    declared = getattr(obj, DECLARATION, None)
    if isinstance(declared, JudgeFunction):
        return declared
    return JudgeFunction(name, obj)


# -- the backend ---------------------------------------------------------------------------------------
def _checked_probs(probs: Any) -> tuple[dict[str, float] | None, list[str]]:
    """Label probabilities as given, or None with a note saying why they were left out."""
    if probs is None:
        return None, []
    if not isinstance(probs, Mapping) or not probs:
        return None, [f"label_probs ignored: not a non-empty mapping of label -> probability ({type(probs).__name__})"]
    out: dict[str, float] = {}
    for k, v in probs.items():
        if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, int | float) \
                or not math.isfinite(v) or v < 0:
            return None, [f"label_probs ignored: {k!r}: {str(v)[:20]} is not a non-negative finite number"]
        out[k] = float(v)
    if sum(out.values()) <= 0:
        return None, ["label_probs ignored: they are all zero"]
    return out, []


def reply_response(value: Any, *, name: str) -> JudgeResponse:
    """What a judge function returned, as the engine's response; anything but a ``str`` or a
    :class:`JudgeReply` with a ``str`` text is a ``TypeError`` (a failed attempt, recorded)."""
    if isinstance(value, str):
        return JudgeResponse(text=value)
    if isinstance(value, JudgeReply) and isinstance(value.text, str):
        probs, notes = _checked_probs(value.label_probs)
        return JudgeResponse(text=value.text, tokens_in=value.tokens_in, tokens_out=value.tokens_out,
                             cost_usd=value.cost_usd, choice_probs=probs, notes=notes)
    what = f"a JudgeReply whose text is {type(value.text).__name__}" if isinstance(value, JudgeReply) \
        else type(value).__name__
    raise TypeError(f"judge function {name!r} returned {what}; expected str or verdictlab.JudgeReply")


def pick_label(probs: Sequence[float], *, temperature: float, seed: int | None) -> tuple[int, str]:
    """The index of the label drawn from ``probs`` (normalised, summing to 1): the argmax at temperature
    0 (the first of equal maxima), else sampled with weights p^(1/T) and ``seed``."""
    if temperature <= 0:
        return max(range(len(probs)), key=lambda i: (probs[i], -i)), "argmax of the label probabilities"
    weights = [p ** (1.0 / temperature) for p in probs]
    total = sum(weights)
    u = random.Random(seed).random() * total
    acc = 0.0
    for i, w in enumerate(weights):
        acc += w
        if u < acc:
            return i, f"sampled from the label probabilities at temperature {temperature:g}"
    return len(probs) - 1, f"sampled from the label probabilities at temperature {temperature:g}"


def constrained_response(resp: JudgeResponse, request: JudgeRequest, *, name: str) -> JudgeResponse:
    """The format of a constrained request filled in from the function's label probabilities
    (module docstring); a ``ValueError`` when they do not cover the format's labels."""
    fmt = request.output_format
    probs = resp.choice_probs or {}
    missing = [c for c in fmt.choices if c not in probs]
    if missing or sum(probs[c] for c in fmt.choices) <= 0:
        given = ", ".join(sorted(probs)) or "none"
        raise ValueError(f"constrained decoding needs the judge function's label probabilities over "
                         f"{', '.join(fmt.choices)}; {name!r} gave {given}")
    total = sum(probs[c] for c in fmt.choices)
    p = [probs[c] / total for c in fmt.choices]
    k, how = pick_label(p, temperature=request.temperature, seed=request.seed)
    return JudgeResponse(text=fmt.render(fmt.choices[k]), tokens_in=resp.tokens_in, tokens_out=resp.tokens_out,
                         cost_usd=resp.cost_usd, choice_probs=dict(zip(fmt.choices, p, strict=True)),
                         notes=[*resp.notes, f"constrained: {MECHANISM} ({fmt.kind}); verdict {how}"])


def _call_sync(fn: Callable[..., Any], messages: list[dict[str, str]], kwargs: dict[str, Any]) -> Any:
    try:
        return fn(messages, **kwargs)
    except SystemExit as exc:     # exit() in a judge function ends its call, never the run
        raise RuntimeError(f"the judge function raised SystemExit({exc.code!r})") from None


class PythonJudge(JudgeAPI):
    """A judge function behind the backend interface (module docstring)."""

    provider = "python"
    supports_logprobs = False

    def __init__(self, judge_id: str, function: JudgeFunction, *, model: str) -> None:
        super().__init__(judge_id, model=model)
        self.function = function
        self.max_concurrency = function.concurrency
        self._pool: ThreadPoolExecutor | None = None

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        t0 = time.perf_counter()
        value = await self._call(request)
        resp = reply_response(value, name=self.function.name)
        if request.decoding == "constrained" and request.output_format is not None:
            resp = constrained_response(resp, request, name=self.function.name)
        resp.latency_s = time.perf_counter() - t0
        return resp

    async def _call(self, request: JudgeRequest) -> Any:
        messages = [dict(m) for m in request.messages]   # the function's own copy
        kwargs = {"temperature": request.temperature, "max_tokens": request.max_tokens, "seed": request.seed}
        fn = self.function.fn
        if self.function.is_async:
            try:
                return await fn(messages, **kwargs)
            except SystemExit as exc:
                raise RuntimeError(f"the judge function raised SystemExit({exc.code!r})") from None
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=POOL_MAX_THREADS,
                                            thread_name_prefix=f"verdictlab-judge-{self.function.name}")
        call = functools.partial(_call_sync, fn, messages, kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    def error_decision(self, exc: Exception) -> RetryDecision:
        """Transient (retried with backoff) for the exception types declared in ``retry_on``."""
        return RetryDecision.transient() if isinstance(exc, self.function.retry_on) else RetryDecision.fatal()

    def constraint_mechanism(self, fmt: Any) -> str | None:
        return MECHANISM if fmt is not None and self.function.label_probs else None

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **self.function.describe()}

    async def aclose(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def _imported(ref: str, judge_id: str) -> JudgeFunction:
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise JudgeConfigError(f"judge id {judge_id!r}: expected 'python:package.module:function'")
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        top = module_name.split(".")[0]
        here = " (it is in the working directory, which the command line does not import from: PYTHONPATH=.)" \
            if (Path.cwd() / f"{top}.py").is_file() or (Path.cwd() / top / "__init__.py").is_file() else ""
        raise JudgeConfigError(f"judge id {judge_id!r}: cannot import {module_name!r} ({exc}); install it or put "
                               f"its folder on PYTHONPATH{here}") from None
    except Exception as exc:  # noqa: BLE001 - the user's module failed while importing: say so, with its error
        raise JudgeConfigError(f"judge id {judge_id!r}: importing {module_name!r} raised "
                               f"{type(exc).__name__}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise JudgeConfigError(f"judge id {judge_id!r}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return function_of(obj, name=ref)


def _registered(name: str, judge_id: str) -> JudgeFunction:
    if name not in FUNCTIONS:
        known = ", ".join(FUNCTIONS.names()) or "none"
        raise JudgeConfigError(f"judge id {judge_id!r}: no judge function {name!r} is registered in this process "
                               f"(registered: {known}); decorate it with @verdictlab.judge({name!r}) before the "
                               "run, or name it by its import path, 'python:package.module:function'")
    return FUNCTIONS.get(name)


def make_python_judge(judge_id: str, spec: str) -> PythonJudge:
    """``python:package.module:function`` or ``python:NAME`` (a function registered with :func:`judge`)."""
    ref = spec.strip()
    if not ref:
        raise JudgeConfigError(f"judge id {judge_id!r}: name the function, 'python:package.module:function', "
                               "or one registered with @verdictlab.judge('NAME'), 'python:NAME'")
    function = _imported(ref, judge_id) if ":" in ref else _registered(ref, judge_id)
    return PythonJudge(judge_id, function, model=ref)


__all__ = ["DECLARATION", "FUNCTIONS", "MECHANISM", "SIGNATURE", "JudgeFunction", "JudgeReply", "PythonJudge",
           "check_signature", "constrained_response", "function_of", "judge", "make_python_judge", "pick_label",
           "reply_response"]
