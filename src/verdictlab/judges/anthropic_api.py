"""Anthropic judges (official ``anthropic`` SDK, ``AsyncAnthropic``).

Judge id: ``anthropic:MODEL`` (or ``anthropic:MODEL@BASE_URL`` for a proxy).  Key from
``ANTHROPIC_API_KEY`` only, read when the client is built, never stored, logged or described.

Mapping: system messages become the ``system`` parameter; ``max_tokens``, ``temperature``
(the API accepts [0, 1]: a higher value is clipped to 1 with a note), ``stop`` ->
``stop_sequences``.  The Messages API has no ``seed`` and no log-probabilities: a request for
them is answered without, and a note says so.  Other ``params`` (``top_p``, ``top_k``,
``thinking``...) pass through unchanged.

Errors map by class and status like the OpenAI backend: ``RateLimitError`` -> rate_limit with
``Retry-After``; 5xx (including 529 overloaded), 408, 409, connection errors and timeouts ->
transient; other 4xx -> fatal.  ``max_retries=0``: the engine owns retries.

Constrained decoding (``request.decoding == "constrained"``): a forced tool call.  The request
carries one tool, ``record_verdict``, whose ``input_schema`` is the protocol format's fields in order
(:meth:`~verdictlab.protocols.output_format.OutputFormat.json_schema`: the verdict an ``enum`` of the allowed
labels, the rationale a string), and ``tool_choice = {"type": "tool", "name": "record_verdict"}`` so
the model must answer through it; stop sequences are left out (they would cut the tool input).  The
tool input is written back into the protocol's own format (JSON object, XML block or bare label)
*unvalidated* (:meth:`~verdictlab.protocols.output_format.OutputFormat.render_values`), so the protocol's
parser judges it and a value outside the labels fails to parse instead of being coerced.  Every
protocol with an output format is constrainable this way; the mechanism is in each call's notes.
"""

from __future__ import annotations

import os
import re
import time
from typing import TYPE_CHECKING, Any

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
from .openai_api import (
    auth_hint,
    choose_transport,
    import_sdk,
    missing_sdk,
    redact,
    sdk_decision,
    sdk_http_client,
    sdk_kwargs,
)
from .prices import PriceTable, default_price_table

if TYPE_CHECKING:
    from .anthropic_batch import AnthropicBatches

ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"
TOOL_NAME = "record_verdict"
MECHANISM_TOOL = (f"forced tool use: tool_choice {{type: tool, name: {TOOL_NAME}}} with input_schema = the "
                  "format's fields (verdict an enum of the allowed labels); tool input rendered into the format")
MAX_TEMPERATURE = 1.0


class AnthropicJudge(JudgeAPI):
    provider = "anthropic"
    supports_logprobs = False
    sdk = "anthropic"

    def __init__(self, judge_id: str, model: str, *, base_url: str | None = None,
                 key_env: str = ANTHROPIC_KEY_ENV, timeout_s: float = 120.0,
                 prices: PriceTable | None = None, http_client: Any = None) -> None:
        super().__init__(judge_id, model)
        self.base_url = base_url
        self.key_env = key_env
        self.timeout_s = float(timeout_s)
        self.prices = prices
        self._http_client = http_client
        self._client: Any = None
        offline = building_offline()    # a plan: no key, no SDK import
        self.transport = ("custom" if http_client is not None else "none (a plan)" if offline
                          else choose_transport(import_sdk("anthropic")))
        if not os.environ.get(key_env) and not offline:
            raise JudgeConfigError(f"judge {judge_id!r}: no API key; set the environment variable {key_env}")

    def client(self) -> Any:
        """The SDK client (``AsyncAnthropic``), built on first use with the key from the environment;
        the batch executor calls Message Batches through it."""
        if self._client is None:
            try:
                import anthropic
            except ImportError:
                raise missing_sdk("anthropic", "anthropic") from None
            key = os.environ.get(self.key_env)
            if not key:
                raise JudgeCallError(f"judge {self.judge_id!r}: {self.key_env} is not set", RetryDecision.fatal())
            kwargs: dict[str, Any] = {"api_key": key, "max_retries": 0, "timeout": self.timeout_s}
            if self.base_url:
                kwargs["base_url"] = self.base_url
            http_client = self._http_client
            if http_client is None:
                http_client, self.transport = sdk_http_client(anthropic, self.transport)
            if http_client is not None:
                kwargs["http_client"] = http_client
            self._client = anthropic.AsyncAnthropic(**kwargs)
        return self._client

    def batch_adapter(self) -> AnthropicBatches:
        """Anthropic Message Batches through this judge's client (``batch: true``)."""
        from .anthropic_batch import AnthropicBatches

        return AnthropicBatches(self)

    def describe(self) -> dict[str, Any]:
        return {"judge": self.judge_id, "provider": self.provider, "model": self.model,
                "base_url": self.base_url or "https://api.anthropic.com", "key_env": self.key_env,
                "timeout_s": self.timeout_s, "transport": self.transport,
                "constrained_mechanism": MECHANISM_TOOL}

    def constraint_mechanism(self, fmt: OutputFormat | None) -> str | None:
        return None if fmt is None else f"{MECHANISM_TOOL} ({fmt.kind})"

    @staticmethod
    def _constrain(fmt: OutputFormat, p: dict[str, Any]) -> None:
        p["tools"] = [{"name": TOOL_NAME, "description": "Record the verdict on the two responses.",
                       "input_schema": fmt.json_schema()}]
        p["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        p.pop("stop_sequences", None)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    def build_params(self, request: JudgeRequest) -> tuple[dict[str, Any], list[str]]:
        notes: list[str] = []
        system = "\n\n".join(m["content"] for m in request.messages if m.get("role") == "system")
        msgs = [{"role": m["role"], "content": m["content"]} for m in request.messages
                if m.get("role") != "system"]
        p: dict[str, Any] = {"model": self.model, "messages": msgs, "max_tokens": int(request.max_tokens)}
        if system:
            p["system"] = system
        t = float(request.temperature)
        if t > MAX_TEMPERATURE:
            notes.append(f"temperature {t:g} is above Anthropic's maximum {MAX_TEMPERATURE:g}; sent "
                         f"{MAX_TEMPERATURE:g}")
            t = MAX_TEMPERATURE
        p["temperature"] = t
        if request.stop:
            p["stop_sequences"] = [s for s in request.stop if s.strip()]
            if len(p["stop_sequences"]) < len(request.stop):
                notes.append("whitespace-only stop sequences are not accepted by Anthropic; left out")
            if not p["stop_sequences"]:
                del p["stop_sequences"]
        if request.seed is not None:
            notes.append("seed is not supported by the Anthropic API; ignored")
        if request.logprobs:
            notes.append("log-probabilities are not available from the Anthropic API")
        if request.params.get("timeout_s"):
            p["timeout"] = float(request.params["timeout_s"])
        extra = {k: v for k, v in request.params.items()
                 if k not in ("logprobs", "top_logprobs", "timeout_s", "max_tokens", "seed")}
        if extra:
            p["extra_body"] = extra
        if request.decoding == "constrained":
            if request.output_format is None:
                raise JudgeCallError(f"{self.judge_id}: constrained decoding requested for a protocol without an "
                                     "output format; not sent unconstrained", RetryDecision.fatal())
            self._constrain(request.output_format, p)
            notes.append(f"constrained: {MECHANISM_TOOL} ({request.output_format.kind})")
        return p, notes

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        client = self.client()
        params, notes = self.build_params(request)
        params = sdk_kwargs(client.messages.create, params)
        t0 = time.perf_counter()
        try:
            resp = await client.messages.create(**params)
        except Exception as exc:  # noqa: BLE001 - mapped to a typed decision
            status = getattr(exc, "status_code", None)
            what = type(exc).__name__ + (f" (HTTP {status})" if status else "")
            what += auth_hint(status, self.key_env, (self.key_env,))
            msg = getattr(exc, "message", None) or str(exc)
            raise JudgeCallError(redact(f"anthropic {self.model}: {what}: {msg}"[:500],
                                        [os.environ.get(self.key_env)]),
                                 anthropic_decision(exc)) from None
        return self.read_message(resp, request, notes, time.perf_counter() - t0)

    def read_message(self, resp: Any, request: JudgeRequest, notes: list[str],
                     latency: float | None = None) -> JudgeResponse:
        """Read a Messages API answer to ``request`` -- from a live call or a batch result alike."""
        blocks = getattr(resp, "content", None)
        if blocks is None:
            raise JudgeCallError(f"anthropic {self.model}: response without content", RetryDecision.transient())
        text = _text_of(blocks, request.output_format if request.decoding == "constrained" else None, notes)
        if not text and getattr(resp, "stop_reason", None) == "max_tokens":
            notes.append(f"empty output: the token limit ({request.max_tokens}) was used up")
        usage = getattr(resp, "usage", None)
        tin = getattr(usage, "input_tokens", None) if usage is not None else None
        tout = getattr(usage, "output_tokens", None) if usage is not None else None
        prices = self.prices or default_price_table()
        cost = prices.cost(self.provider, self.model, tin, tout) if usage is not None else None
        return JudgeResponse(text=text, tokens_in=tin, tokens_out=tout, cost_usd=cost, latency_s=latency,
                             notes=notes)


def _text_of(blocks: Any, fmt: OutputFormat | None, notes: list[str]) -> str:
    """The answer text: the text blocks, or under constrained decoding the forced tool call's input
    rendered into the format (unvalidated; the protocol's parser judges it)."""
    if fmt is not None:
        for b in blocks:
            if getattr(b, "type", None) == "tool_use" and getattr(b, "name", None) == TOOL_NAME:
                values = getattr(b, "input", None)
                if isinstance(values, dict):
                    return fmt.render_values(values)
        notes.append("constrained call returned no record_verdict tool input")
        return ""
    return "".join(getattr(b, "text", "") for b in blocks if getattr(b, "type", None) == "text")


def anthropic_decision(exc: BaseException) -> RetryDecision:
    """Typed retry decision for an ``anthropic`` SDK exception (class and status, not text)."""
    import anthropic

    return sdk_decision(exc, anthropic)


_SPEC = re.compile(r"^(?P<model>[^@\s]+)(?:@(?P<url>https?://\S+))?$")


def make_anthropic_judge(judge_id: str, spec: str) -> AnthropicJudge:
    m = _SPEC.match(spec.strip())
    if not m:
        raise JudgeConfigError(f"judge id {judge_id!r}: expected anthropic:MODEL (e.g. "
                               f"anthropic:claude-3-5-haiku-latest) or anthropic:MODEL@BASE_URL")
    return AnthropicJudge(judge_id, m.group("model"), base_url=m.group("url"))


__all__ = ["AnthropicJudge", "anthropic_decision", "make_anthropic_judge"]
