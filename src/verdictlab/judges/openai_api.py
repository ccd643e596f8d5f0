"""OpenAI and OpenAI-compatible chat judges (official ``openai`` SDK, ``AsyncOpenAI``).

Judge ids
---------
``openai:MODEL``                        api.openai.com; key from ``OPENAI_API_KEY`` (or
                                        ``VERDICTLAB_API_KEY`` when that is unset).
``openai-compatible:MODEL@BASE_URL``    any server speaking the chat-completions API (vLLM, llama.cpp
                                        server, Ollama, hosted gateways).  Key from the variable
                                        named by a ``#key_env=NAME`` suffix on the URL (the fragment is
                                        never sent), else ``VERDICTLAB_API_KEY``, else none.  The
                                        ``OPENAI_API_KEY`` is deliberately *not* sent to other hosts.

Calls to an ``http://`` server (a local vLLM, llama.cpp, Ollama) are posted straight on an aiohttp
session (:mod:`.aiohttp_chat`: the same body and auth, the SDK's typed errors, a third of the SDK's
client CPU per call).  Other calls go through the SDK client's documented raw ``client.post`` (same
body, auth, timeouts and typed errors as ``chat.completions.create``, a third less client CPU) on the
SDK's own HTTP client: its aiohttp-backed client when ``aiohttp`` is installed (half the CPU of httpx
again), else its default httpx client (:func:`choose_transport`).

Keys are read from the environment when the client is built, are never stored on the judge,
never appear in :meth:`describe`, and are scrubbed from every error message.

The SDK runs with ``max_retries=0``: the engine owns retries.  SDK exceptions map to typed
:class:`RetryDecision` s by exception class and status code (never by message text):
``RateLimitError`` -> rate_limit (with ``Retry-After``), ``InternalServerError`` / 408 / 409 /
``APIConnectionError`` / ``APITimeoutError`` / an unreadable body -> transient, other 4xx -> fatal.

Constrained decoding (``request.decoding == "constrained"`` with ``request.output_format``; the
mechanism is recorded per call in the notes and by :meth:`OpenAIJudge.constraint_mechanism`):

* JSON protocols: ``response_format = {"type": "json_schema", "json_schema": {"name": "verdict",
  "strict": true, "schema": ...}}`` -- the format's fields in their order, the verdict an ``enum``
  of the allowed labels, no other properties (OpenAI structured outputs; vLLM, llama.cpp server and
  SGLang accept the same field);
* label-only and XML protocols: only on a server that advertises guided decoding, declared in the
  judge id (``openai-compatible:MODEL@URL#guided=vllm``): vLLM ``guided_choice`` (the labels) and
  ``guided_regex`` (:meth:`~verdictlab.protocols.output_format.OutputFormat.regex`) sent in ``extra_body``;
* anything else is *not constrainable* for this judge: :meth:`constraint_mechanism` returns
  ``None`` so the engine records it and never runs those trials free; a constrained request that
  reaches :meth:`generate` anyway fails (fatal), it is never sent unconstrained.  A server that
  rejects ``response_format`` fails the call the same way (the parameter is never dropped).

Parameters the model rejects (HTTP 400 naming ``param`` = ``temperature``, ``seed``, ``stop``,
``logprobs``...; e.g. reasoning models and temperature) are dropped, the call is retried once per
parameter, and the response carries a note saying so.  The judge remembers the rejection so later
calls do not pay a failed request.  Known reasoning families (o1, o3, o4, gpt-5) are sent without
temperature from the start.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import math
import os
import re
import time
from collections.abc import Iterable, Mapping
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from ..core.redact import redact_text
from ..core.versions import installed_version
from ..protocols.output_format import OutputFormat
from .aiohttp_chat import AiohttpChatPoster
from .base import (
    JudgeAPI,
    JudgeCallError,
    JudgeConfigError,
    JudgeRequest,
    JudgeResponse,
    RetryDecision,
    building_offline,
)
from .prices import PriceTable, default_price_table

if TYPE_CHECKING:
    from .openai_batch import OpenAIBatches

OPENAI_KEY_ENV = "OPENAI_API_KEY"
GENERIC_KEY_ENV = "VERDICTLAB_API_KEY"
NO_KEY = "no-key"   # what the SDK is given for servers that need none (it insists on a string)

# model families that reject a temperature (reasoning models)
REASONING_MODEL = re.compile(r"^(o1|o3|o4|gpt-5)(?![\w.]*-chat)", re.IGNORECASE)
# parameters a server may reject one by one; "logprobs" drops "top_logprobs" with it
DROPPABLE_PARAMS = ("temperature", "top_p", "seed", "stop", "logprobs", "top_logprobs",
                    "presence_penalty", "frequency_penalty", "max_tokens")
DEFAULT_TOP_LOGPROBS = 5
GUIDED_KINDS: tuple[str | None, ...] = (None, "vllm")
MECHANISM_JSON_SCHEMA = "response_format json_schema (strict; verdict an enum of the allowed labels)"
MECHANISM_GUIDED_CHOICE = "vLLM guided_choice over the allowed labels (extra_body)"
MECHANISM_GUIDED_REGEX = "vLLM guided_regex of the whole format (extra_body)"
# reasoning models spend hidden reasoning tokens from the same limit: a 2-token limit meant for a
# one-letter verdict would leave them no room to answer at all
REASONING_MIN_TOKENS = 1024


# -- shared helpers (also used by the anthropic and vllm backends) --------------------------------
def redact(text: object, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every secret value and anything shaped like an API key masked (the one scrubber,
    :func:`verdictlab.core.redact.redact_text`)."""
    return redact_text(text, secrets)


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date), if present."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            v = float(ms) / 1000.0
            if math.isfinite(v) and v >= 0:
                return v
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if ra:
        try:
            v = float(ra)
            if math.isfinite(v) and v >= 0:
                return v
        except ValueError:
            try:
                when = parsedate_to_datetime(ra)
                return max(0.0, when.timestamp() - time.time())
            except (TypeError, ValueError, IndexError, OverflowError):
                return None
    return None


def choice_probs_from_top_logprobs(top: Mapping[str, float] | None,
                                   choices: Iterable[str]) -> tuple[dict[str, float] | None, list[str]]:
    """Probabilities of the verdict ``choices`` from the first generated token's top log-probs.

    Token variants that differ only by surrounding whitespace (``"A"``, ``" A"``) are pooled.
    The result is normalised over the choices present, so it sums to 1.  A choice missing from
    the top-k gets probability 0 and a note says so (its true probability is below the k-th
    token's); when no choice is present the result is ``None``.
    """
    choices = tuple(choices)
    notes: list[str] = []
    if not top or not choices:
        return None, notes
    mass = dict.fromkeys(choices, 0.0)
    seen: set[str] = set()
    for token, logprob in top.items():
        t = token.strip()
        if t in mass and logprob is not None and math.isfinite(logprob):
            mass[t] += math.exp(logprob)
            seen.add(t)
    if not seen:
        notes.append(f"none of the verdict choices {list(choices)} is among the first token's "
                     f"top-{len(top)} log-probabilities; no choice probabilities")
        return None, notes
    missing = [c for c in choices if c not in seen]
    if missing:
        notes.append(f"verdict choice(s) {missing} not in the first token's top-{len(top)} "
                     f"log-probabilities; their probability was taken as 0")
    total = sum(mass.values())
    return {c: mass[c] / total for c in choices}, notes


_SIGNATURES: dict[Any, frozenset[str] | None] = {}


def sdk_kwargs(method: Any, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with every key the SDK method does not declare moved into ``extra_body``, so a
    parameter an SDK version dropped from its signature (or never had) still reaches the API."""
    func = getattr(method, "__func__", method)
    names = _SIGNATURES.get(func, ...)
    if names is ...:
        try:
            sig = inspect.signature(method)
            names = None if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()) \
                else frozenset(sig.parameters)
        except (TypeError, ValueError):
            names = None
        _SIGNATURES[func] = names
    if names is None:
        return params
    out = {k: v for k, v in params.items() if k in names}
    extra = {k: v for k, v in params.items() if k not in names}
    if extra:
        out["extra_body"] = {**extra, **(params.get("extra_body") or {})}
    return out


TRANSPORT_ENV = "VERDICTLAB_HTTP_TRANSPORT"
DIRECT = "aiohttp-direct"
TRANSPORTS = (DIRECT, "aiohttp", "httpx")


def choose_transport(sdk: Any, base_url: str | None = None, *, direct: bool = False) -> str:
    """Which HTTP client a judge uses, decided before any call (so the run meta
    written at the start names the client the calls then go through).

    ``aiohttp-direct`` -- for an ``http://`` base URL (a local server, where the client's CPU bounds
    the calls per second): the body posted straight on an aiohttp session (:mod:`.aiohttp_chat`),
    errors still the SDK's typed exceptions; only for a judge that can post so (``direct``: the
    chat-completions judges; for others the setting means the SDK's aiohttp client).  ``aiohttp`` --
    the SDK's ``DefaultAioHttpClient`` (httpx's interface over aiohttp: about half the
    client CPU per call of the default, which shows at hundreds of calls per second against a local
    server) -- when the SDK has it and ``aiohttp`` is installed; else ``httpx``, the SDK's default
    client.  Both are well-kept HTTP/1.1 clients tested against many servers: interim 1xx responses,
    bodies ended by the server closing, gzip, chunk extensions and trailers, and 307/308 redirects
    all work (``tests/test_http_conformance.py``).  ``VERDICTLAB_HTTP_TRANSPORT=aiohttp-direct|aiohttp|httpx``
    forces one.  ``sdk`` is the SDK module (``openai`` or ``anthropic``), None when not installed."""
    choice = os.environ.get(TRANSPORT_ENV, "auto").strip().lower() or "auto"
    if choice not in ("auto", *TRANSPORTS):
        raise JudgeConfigError(f"{TRANSPORT_ENV} must be auto, aiohttp-direct, aiohttp or httpx, got {choice!r}")
    has_aiohttp = importlib.util.find_spec("aiohttp") is not None
    if choice == DIRECT and not has_aiohttp:
        raise JudgeConfigError(f"{TRANSPORT_ENV}={DIRECT} needs aiohttp; `pip install aiohttp`")
    local = has_aiohttp and (base_url or "").startswith("http://")
    if direct and (choice == DIRECT or (choice == "auto" and local)):
        return DIRECT
    if choice == DIRECT:
        choice = "aiohttp"
    usable = getattr(sdk, "DefaultAioHttpClient", None) is not None and has_aiohttp
    if choice == "aiohttp" and sdk is not None and not usable:
        raise JudgeConfigError(f"{TRANSPORT_ENV}=aiohttp but this SDK has no usable aiohttp client; "
                               "`pip install aiohttp` (and a recent SDK)")
    if choice == "httpx" or not usable:
        return "httpx"
    return "aiohttp"


def sdk_http_client(sdk: Any, transport: str) -> tuple[Any, str]:
    """The ``http_client`` to give the SDK for ``transport`` (None: the SDK's default httpx client)
    and the transport it really is: an SDK whose aiohttp extra turns out broken when the client is
    built falls back to httpx, and says so."""
    if transport != "aiohttp":
        return None, "httpx"
    try:
        return sdk.DefaultAioHttpClient(), "aiohttp"
    except RuntimeError:      # the SDK says its aiohttp extra is missing
        return None, "httpx"


def import_sdk(name: str) -> Any:
    """The SDK module, or None when it is not installed (the judge's first call says how to install it)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


_JSON_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def raw_post_plan(client: Any) -> tuple[str, type | None, bool]:
    """How :meth:`OpenAIJudge._post` calls ``client.post``: (url, raw response class or ``None``,
    send pre-encoded bytes).  The raw response class is the ``Response`` of the HTTP library the
    SDK is built on (``httpx2`` from openai 3, ``httpx`` before), which the SDK documents as the
    ``cast_to`` that returns the response untouched; ``None`` (parse JSON through the SDK) when
    it cannot be told.  Bytes go through the documented ``content=`` argument when ``post`` has
    it.  The URL is the client's base URL joined with the path, computed once."""
    path = "/chat/completions"
    base = str(getattr(client, "base_url", "") or "")
    url = base.rstrip("/") + path if base.startswith(("http://", "https://")) and "?" not in base else path
    response_cls: type | None = None
    try:
        import openai

        http_base = next(c for c in openai.DefaultAsyncHttpxClient.__mro__ if c.__name__ == "AsyncClient")
        lib = importlib.import_module(http_base.__module__.split(".")[0])
        if isinstance(getattr(lib, "Response", None), type):
            response_cls = lib.Response
    except (ImportError, AttributeError, StopIteration):
        response_cls = None
    try:
        send_bytes = "content" in inspect.signature(client.post).parameters
    except (TypeError, ValueError):
        send_bytes = False
    return url, response_cls, send_bytes


AUTH_STATUSES = (401, 403)


def auth_hint(status: object, used: str | None, tried: Iterable[str | None], *, elsewhere: str = "") -> str:
    """For an authentication failure (HTTP 401/403): which environment variable the key was read from --
    or, when none was set, which ones were tried -- so a refused key names its variable (never its value).
    ``""`` for any other status."""
    if status not in AUTH_STATUSES:
        return ""
    if used is not None:
        return f" (the key was read from {used}; check its value)"
    names = " or ".join(n for n in tried if n)
    return f" (no key was sent: set {names}{elsewhere})"


def missing_sdk(package: str, extra: str) -> JudgeConfigError:
    return JudgeConfigError(f"the '{package}' package is needed for this judge; install it with "
                            f"`pip install '{package}'` (or `pip install 'verdictlab[{extra}]'`)")


# -- the judge ----------------------------------------------------------------------------------
class OpenAIJudge(JudgeAPI):
    """Chat-completions judge over ``AsyncOpenAI``; ``batch: true`` runs it through the OpenAI Batch API
    (:class:`~verdictlab.judges.openai_batch.OpenAIBatches`)."""

    supports_logprobs = True
    sdk = "openai"

    def __init__(self, judge_id: str, model: str, *, provider: str = "openai", base_url: str | None = None,
                 key_env: str | None = OPENAI_KEY_ENV, key_env_fallbacks: tuple[str, ...] = (),
                 require_key: bool = True, timeout_s: float = 120.0,
                 prices: PriceTable | None = None, http_client: Any = None, guided: str | None = None) -> None:
        super().__init__(judge_id, model)
        if guided not in GUIDED_KINDS:
            raise JudgeConfigError(f"judge {judge_id!r}: guided must be one of "
                                   f"{', '.join(str(g) for g in GUIDED_KINDS if g)}, got {guided!r}")
        self.guided = guided
        self.provider = provider
        self.base_url = base_url
        self.key_env = key_env
        self.key_env_fallbacks = key_env_fallbacks
        self.require_key = require_key
        self.timeout_s = float(timeout_s)
        self.prices = prices
        self._http_client = http_client
        self._client: Any = None
        self._plan: tuple[str, type | None, bool] | None = None
        self._key_env_used: str | None = None
        offline = building_offline()    # a plan: no key, no SDK import
        self.transport = ("custom" if http_client is not None else "none (a plan)" if offline
                          else choose_transport(import_sdk("openai"), base_url, direct=True))
        self._direct: AiohttpChatPoster | None = None
        self._dropped: set[str] = set()    # params this model rejected (remembered across calls)
        self._use_max_completion_tokens = provider == "openai"
        self.reasoning = bool(REASONING_MODEL.match(model)) and provider == "openai"
        if self.reasoning:
            self._dropped.add("temperature")
        if offline:
            return
        if require_key and self._find_key()[0] is None:
            names = " or ".join(n for n in (key_env, *key_env_fallbacks) if n)
            raise JudgeConfigError(f"judge {judge_id!r}: no API key; set the environment variable {names}")
        prewarm_openai()
        if prices is None:
            default_price_table()   # read the price file now, not during the first call

    # -- key and client ---------------------------------------------------------------------
    def _find_key(self) -> tuple[str | None, str | None]:
        for name in (self.key_env, *self.key_env_fallbacks):
            if name and os.environ.get(name):
                return os.environ[name], name
        return None, None

    def _secret(self) -> str | None:
        return self._find_key()[0]

    def client(self) -> Any:
        """The SDK client (``AsyncOpenAI``), built on first use with the key from the environment; the
        batch executor calls the Batch API through it."""
        if self._client is None:
            try:
                import openai
            except ImportError:
                raise missing_sdk("openai", "openai") from None
            key, used = self._find_key()
            if key is None and self.require_key:
                raise JudgeCallError(f"judge {self.judge_id!r}: API key environment variable is not set",
                                     RetryDecision.fatal())
            self._key_env_used = used
            kwargs: dict[str, Any] = {"api_key": key or NO_KEY, "max_retries": 0, "timeout": self.timeout_s}
            if self.base_url:
                kwargs["base_url"] = self.base_url
            http_client = self._http_client
            if http_client is None and self.transport != DIRECT:    # direct: the SDK client serves batches only
                http_client, self.transport = sdk_http_client(openai, self.transport)
            if http_client is not None:
                kwargs["http_client"] = http_client
            self._client = openai.AsyncOpenAI(**kwargs)
        return self._client

    def batch_adapter(self) -> OpenAIBatches:
        """The OpenAI Batch API through this judge's client (``batch: true``; ``batch export`` files)."""
        from .openai_batch import OpenAIBatches

        return OpenAIBatches(self)

    def describe(self) -> dict[str, Any]:
        key, used = self._find_key()
        return {
            "judge": self.judge_id, "provider": self.provider, "model": self.model,
            "base_url": self.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1",
            "key_env": used,                       # the variable's NAME, never its value
            "timeout_s": self.timeout_s,
            "transport": self.transport,
            "dropped_params": sorted(self._dropped),
            "guided_decoding": self.guided,
            "constrained_mechanisms": {kind: self.constraint_mechanism(OutputFormat(kind=kind)) or "not constrainable"
                                       for kind in ("label", "json", "xml")},
        }

    # -- constrained decoding ---------------------------------------------------------------------
    def constraint_mechanism(self, fmt: OutputFormat | None) -> str | None:
        """The exact mechanism that constrains ``fmt`` on this server, or ``None`` (not constrainable)."""
        if fmt is None:
            return None
        if fmt.kind == "json":
            return MECHANISM_JSON_SCHEMA
        if self.guided == "vllm":
            return MECHANISM_GUIDED_CHOICE if fmt.kind == "label" else MECHANISM_GUIDED_REGEX
        return None

    def _constrain(self, request: JudgeRequest, p: dict[str, Any], extra: dict[str, Any]) -> str:
        """Add the constraint of ``request.output_format`` to the body; return the mechanism."""
        fmt = request.output_format
        mechanism = self.constraint_mechanism(fmt)
        if fmt is None or mechanism is None:
            raise JudgeCallError(f"{self.judge_id}: protocol format {fmt.kind if fmt else 'none'!r} is not "
                                 f"constrainable on this server (json_schema covers JSON protocols; label/XML "
                                 f"need guided decoding, '#guided=vllm'); not sent unconstrained",
                                 RetryDecision.fatal())
        if mechanism == MECHANISM_JSON_SCHEMA:
            p["response_format"] = {"type": "json_schema",
                                    "json_schema": {"name": "verdict", "strict": True, "schema": fmt.json_schema()}}
        elif mechanism == MECHANISM_GUIDED_CHOICE:
            extra["guided_choice"] = list(fmt.choices)
        else:
            extra["guided_regex"] = fmt.regex()
        return mechanism

    async def aclose(self) -> None:
        if self._direct is not None:
            await self._direct.aclose()
        if self._client is not None:
            await self._client.close()
            self._client = None
            self._plan = None

    # -- request ----------------------------------------------------------------------------
    def build_params(self, request: JudgeRequest) -> tuple[dict[str, Any], list[str]]:
        """SDK keyword arguments for ``request`` (minus the parameters this model rejects), and
        notes on what was left out."""
        notes: list[str] = []
        p: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in request.messages]}
        p["temperature"] = float(request.temperature)
        max_tokens = int(request.max_tokens)
        if self.reasoning and max_tokens < REASONING_MIN_TOKENS:
            notes.append(f"token limit raised from {max_tokens} to {REASONING_MIN_TOKENS}: {self.model} "
                         f"counts its hidden reasoning against it")
            max_tokens = REASONING_MIN_TOKENS
        if self._use_max_completion_tokens:
            p["max_completion_tokens"] = max_tokens
        else:
            p["max_tokens"] = max_tokens
        if request.seed is not None:
            p["seed"] = int(request.seed)
        if request.stop:
            p["stop"] = list(request.stop)[:4]
        p.update(_logprob_params(request))
        if request.params.get("timeout_s"):
            p["timeout"] = float(request.params["timeout_s"])
        extra = {k: v for k, v in request.params.items()
                 if k not in ("logprobs", "top_logprobs", "timeout_s", "max_tokens", "seed")}
        if request.decoding == "constrained":
            notes.append(f"constrained: {self._constrain(request, p, extra)}")
        if extra:
            p["extra_body"] = extra
        for name in sorted(self._dropped):
            if name == "max_tokens":
                continue
            if name in p:
                del p[name]
                if name == "logprobs":
                    p.pop("top_logprobs", None)
                notes.append(_drop_note(name, self.model, request))
        return p, notes

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        client = self.client()
        params, notes = self.build_params(request)
        t0 = time.perf_counter()
        for _ in range(len(DROPPABLE_PARAMS) + 1):
            try:
                resp = await self._post(client, params)
                break
            except Exception as exc:  # noqa: BLE001 - mapped to a typed decision below
                dropped = self._param_to_drop(exc, params)
                if dropped is None:
                    raise self._call_error(exc) from None
                self._dropped.add(dropped)
                if dropped == "max_tokens":
                    params["max_completion_tokens"] = params.pop("max_tokens")
                    self._use_max_completion_tokens = True
                    notes.append("server rejected max_tokens; sent max_completion_tokens instead")
                else:
                    params.pop(dropped, None)
                    if dropped == "logprobs":
                        params.pop("top_logprobs", None)
                    notes.append(_drop_note(dropped, self.model, request, rejected=True))
        else:  # pragma: no cover - bounded by the number of droppable params
            raise JudgeCallError(f"{self.judge_id}: too many rejected parameters", RetryDecision.fatal())
        latency = time.perf_counter() - t0
        return self.read_answer(resp, request, params, notes, latency)

    async def _post(self, client: Any, params: dict[str, Any]) -> Any:
        """POST the chat-completions body: on the ``aiohttp-direct`` transport straight on an aiohttp
        session (:mod:`.aiohttp_chat`), otherwise through the SDK's own client (auth, timeouts, typed
        errors) via its documented ``client.post`` for raw requests, answered as plain JSON.  This
        skips the SDK's per-call walk of the typed parameter definitions and the construction of
        pydantic response models -- about a third of the client CPU per call, which caps
        throughput at high concurrency -- and sends the same request body.

        When the SDK allows (see :func:`raw_post_plan`), the body goes as JSON bytes encoded here
        (``content=``), the URL is absolute (no per-call merge with the base URL) and the answer
        comes back as the SDK's documented raw ``httpx`` response (``cast_to=Response``), decoded
        here: another fifth less client CPU.  A body that is not JSON reads as ``None`` (an
        unreadable answer, retried as transient)."""
        body = {k: v for k, v in params.items() if k not in ("timeout", "extra_body")}
        body.update(params.get("extra_body") or {})
        if self.transport == DIRECT:
            return await self._direct_poster(client).post(body, float(params.get("timeout") or self.timeout_s))
        options: dict[str, Any] = {}
        if params.get("timeout"):
            options["timeout"] = params["timeout"]
        plan = self._plan
        if plan is None:
            plan = self._plan = raw_post_plan(client)
        url, response_cls, send_bytes = plan
        if response_cls is None:
            return await client.post(url, body=body, cast_to=object, options=options)
        if send_bytes:
            resp = await client.post(url, content=_JSON_ENCODE(body).encode(), cast_to=response_cls,
                                     options=options)
        else:
            resp = await client.post(url, body=body, cast_to=response_cls, options=options)
        try:
            return json.loads(resp.content)
        except ValueError:      # includes JSONDecodeError and UnicodeDecodeError
            return None

    def _direct_poster(self, client: Any) -> AiohttpChatPoster:
        if self._direct is None:
            import openai

            self._direct = AiohttpChatPoster(str(client.base_url), self._find_key()[0], openai,
                                             user_agent=f"verdictlab/{installed_version('verdictlab')} "
                                                        f"openai/{openai.__version__}")
        return self._direct

    def _param_to_drop(self, exc: Exception, params: dict[str, Any]) -> str | None:
        import openai

        if not isinstance(exc, openai.BadRequestError):
            return None
        param = (exc.param or "").strip()
        if param == "max_tokens" and "max_tokens" in params:
            return "max_tokens"
        if param in DROPPABLE_PARAMS and param in params and param not in self._dropped:
            return param
        return None

    def _call_error(self, exc: Exception) -> JudgeCallError:
        decision = openai_decision(exc)
        status = getattr(exc, "status_code", None)
        what = type(exc).__name__ + (f" (HTTP {status})" if status else "")
        what += auth_hint(status, self._key_env_used, (self.key_env, *self.key_env_fallbacks),
                          elsewhere="" if self.provider == "openai" or self.require_key else
                          ", or name another variable with #key_env=NAME at the end of the judge id")
        msg = getattr(exc, "message", None) or str(exc)
        refused = _connection_refused(exc)
        if refused:
            # the SDK's aiohttp path reports a refused connection as a timeout: name what happened
            url = self.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
            what, msg = "connection refused", f"cannot connect to {url} ({refused})"
        return JudgeCallError(redact(f"{self.provider} {self.model}: {what}: {msg}"[:500],
                                     [self._secret()]), decision)

    def read_answer(self, resp: Any, request: JudgeRequest, params: dict[str, Any], notes: list[str],
                    latency: float | None = None) -> JudgeResponse:
        """Read a chat-completion JSON answer (a dict) to ``request`` sent with ``params`` -- from a live
        call, a batch output or a results file alike; anything else is an unreadable answer
        (:class:`JudgeCallError`, transient)."""
        try:
            choice = resp["choices"][0]
            msg = choice.get("message") or {}
            text = msg.get("content") or ""
            if not isinstance(text, str):
                raise TypeError("content is not text")
        except (TypeError, KeyError, IndexError, AttributeError):
            raise JudgeCallError(f"{self.provider} {self.model}: unreadable response (no choices[0].message)",
                                 RetryDecision.transient()) from None
        refusal = msg.get("refusal")
        if refusal:
            notes.append("model refused: " + redact(refusal)[:200])
        if not text and choice.get("finish_reason") == "length":
            notes.append(f"empty output: the token limit ({request.max_tokens}) was used up "
                         f"(reasoning models spend it on hidden reasoning)")
        usage = resp.get("usage") if isinstance(resp.get("usage"), dict) else None
        tin = _int_or_none(usage.get("prompt_tokens")) if usage else None
        tout = _int_or_none(usage.get("completion_tokens")) if usage else None
        prices = self.prices or default_price_table()
        cost = prices.cost(self.provider, self.model, tin, tout) if usage else None
        top_list: list[dict[str, float]] | None = None
        choice_probs = None
        lp = choice.get("logprobs")
        content = lp.get("content") if isinstance(lp, dict) else None
        if content:
            try:
                top_list = []
                for pos in content:
                    d = {t["token"]: float(t["logprob"]) for t in (pos.get("top_logprobs") or [])}
                    if not d:
                        d = {pos["token"]: float(pos["logprob"])}
                    top_list.append(d)
            except (TypeError, KeyError, ValueError, AttributeError):
                top_list = None
                notes.append("the server's log-probabilities were malformed; ignored")
            if request.verdict_choices and top_list:
                choice_probs, cp_notes = choice_probs_from_top_logprobs(top_list[0], request.verdict_choices)
                notes.extend(cp_notes)
        elif params.get("logprobs"):
            notes.append("log-probabilities were requested but the server returned none")
        return JudgeResponse(text=text, tokens_in=tin, tokens_out=tout, cost_usd=cost, latency_s=latency,
                             choice_probs=choice_probs, top_logprobs=top_list, notes=notes)


def _logprob_params(request: JudgeRequest) -> dict[str, Any]:
    """``logprobs`` / ``top_logprobs`` for ``request`` (asked for label-only protocols unless the
    judge's params say ``logprobs: false``)."""
    want = request.logprobs or (bool(request.verdict_choices) and request.params.get("logprobs", True) is not False)
    if not want:
        return {}
    out: dict[str, Any] = {"logprobs": True}
    k = request.top_logprobs or (DEFAULT_TOP_LOGPROBS if request.verdict_choices else 0)
    if k:
        out["top_logprobs"] = min(int(k), 20)
    return out


def _connection_refused(exc: BaseException) -> str | None:
    """The refused-connection error in ``exc``'s cause chain, as text, or ``None``."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, ConnectionRefusedError):
            return str(e)
        e = e.__cause__ or e.__context__
    return None


def _int_or_none(v: Any) -> int | None:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def prewarm_openai() -> None:
    """Import the SDK and the modules its first request loads lazily (~1 s), so that cost falls
    when the judge is built, not inside the engine's first per-call timeout."""
    try:
        import openai
        import openai.resources.chat.completions.completions  # noqa: F401
        import openai.types.chat  # noqa: F401
    except ImportError:
        return   # reported with an install hint on first use
    import contextlib
    import importlib

    # transport internals differ between SDK versions; best effort
    for name in ("anyio._backends._asyncio", "httpcore2", "h11", "jiter", "truststore",
                 "openai.lib.streaming.chat", "aiohttp", "openai._vendor.httpx_aiohttp"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def _drop_note(name: str, model: str, request: JudgeRequest, *, rejected: bool = False) -> str:
    why = "rejected by the server" if rejected else "not accepted by this model"
    if name == "temperature":
        return (f"temperature {request.temperature:g} {why} ({model}); sent without it, the model "
                f"samples at its own default")
    return f"parameter '{name}' {why} ({model}); sent without it"


def sdk_decision(exc: BaseException, sdk: Any) -> RetryDecision:
    """Typed retry decision for an exception of an official provider SDK (``openai`` or
    ``anthropic``: both have the same exception classes), by class and status, never by text."""
    import json

    if isinstance(exc, sdk.RateLimitError):
        return RetryDecision.rate_limit(retry_after_seconds(exc.response.headers))
    if isinstance(exc, sdk.APIConnectionError):   # includes APITimeoutError
        return RetryDecision.transient()
    if isinstance(exc, sdk.APIResponseValidationError):
        return RetryDecision.transient()
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        if status >= 500 or status in (408, 409):    # anthropic's 529 = overloaded
            return RetryDecision.transient(retry_after_seconds(exc.response.headers))
        return RetryDecision.fatal()
    if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
        return RetryDecision.transient()   # a body that is not JSON (proxy error page, cut stream)
    return RetryDecision.fatal()


def openai_decision(exc: BaseException) -> RetryDecision:
    """Typed retry decision for an ``openai`` SDK exception (by class and status, not by text)."""
    import openai

    return sdk_decision(exc, openai)


# -- factories ----------------------------------------------------------------------------------
_COMPAT_SPEC = re.compile(r"^(?P<model>.+?)@(?P<url>https?://\S+)$")


def make_openai_judge(judge_id: str, spec: str) -> OpenAIJudge:
    model = spec.strip()
    if not model:
        raise JudgeConfigError(f"judge id {judge_id!r}: expected openai:MODEL (e.g. openai:gpt-4o-mini)")
    return OpenAIJudge(judge_id, model, provider="openai", key_env=OPENAI_KEY_ENV,
                       key_env_fallbacks=(GENERIC_KEY_ENV,))


def make_openai_compatible_judge(judge_id: str, spec: str) -> OpenAIJudge:
    m = _COMPAT_SPEC.match(spec.strip())
    if not m:
        raise JudgeConfigError(f"judge id {judge_id!r}: expected openai-compatible:MODEL@BASE_URL "
                               f"(e.g. openai-compatible:qwen2.5-7b@http://127.0.0.1:8000/v1, optionally "
                               f"ending in #key_env=MY_KEY_VARIABLE)")
    model, url = m.group("model"), m.group("url")
    key_env: str | None = None
    guided: str | None = None
    if "#" in url:
        url, frag = url.split("#", 1)
        for part in frag.split("&"):
            k, _, v = part.partition("=")
            if k == "key_env" and v:
                key_env = v
            elif k == "guided" and v:
                guided = v
            else:
                raise JudgeConfigError(f"judge id {judge_id!r}: unknown URL fragment option {k!r} "
                                       f"(key_env=NAME, guided=vllm)")
    if key_env is not None:
        return OpenAIJudge(judge_id, model, provider="openai-compatible", base_url=url, key_env=key_env,
                           require_key=True, guided=guided)
    return OpenAIJudge(judge_id, model, provider="openai-compatible", base_url=url,
                       key_env=GENERIC_KEY_ENV, require_key=False, guided=guided)


__all__ = ["OpenAIJudge", "choice_probs_from_top_logprobs", "choose_transport", "import_sdk", "sdk_http_client", "make_openai_compatible_judge",
           "make_openai_judge", "openai_decision", "redact", "retry_after_seconds", "sdk_decision"]
