"""A small, fast, fault-injecting OpenAI-compatible chat-completions server for tests and benches.

Pure standard library (``asyncio`` HTTP/1.1 with keep-alive), bound to 127.0.0.1 on a free port.
Run it in-process on a background thread (:class:`FakeOpenAIServer`) or as a separate process
(:class:`FakeOpenAIProcess`, ``python -m verdictlab.testing.fake_openai``) so its CPU time does not
count against the client being measured.

Endpoints
---------
``POST /v1/chat/completions``  the OpenAI chat API (``model, messages, temperature, max_tokens`` or
                               ``max_completion_tokens, stop, seed, logprobs, top_logprobs``).
``GET  /v1/models``            lists ``FakeConfig.models`` (or the one requested).
``GET  /_fake/stats``          request counts by outcome (JSON).
``POST /_fake/config``         update knobs at run time (JSON object of :class:`FakeConfig` fields).
``POST /_fake/reset``          zero the counters.

Answers
-------
The verdict is a deterministic function of ``seed`` and the prompt (and, for temperature > 0, of
how many times that prompt was seen), so a run is reproducible whatever the arrival order.
``winner_policy`` (per model: ``winner_by_model``) picks which *shown* position wins:
``seeded`` (default: "A" with probability ``p_first``), ``first``, ``second``, ``longer`` or
``shorter`` (compares the two shown responses, each read from its "Response X:" header up to
the next blank line).  Models matching ``persuadable_models`` adopt the other judge's verdict when
the prompt reports one ("The other judge chose B", a debate rebuttal).

The reply speaks the format the prompt asks for, read from the LAST template the prompt shows:

* a JSON object template (``{"rationale": ..., "score_A": <1-5>, "score_B": <1-5>, "winner": ...}``,
  ``{"winner": ..., "rationale": ...}``, ``{"rationale": ..., "score": <one of 0, 1, 2>}``) is
  answered with the same keys in the same order: the verdict key (winner / verdict / preferred /
  choice) gets the winning label of the prompt's label set (A/B, 1/2, P/Q), ``score_X`` fields get
  integer scores on the prompt's scale (the winner's the higher; ``p_contradict`` swaps them, so the
  named winner has the LOWER score), ``score`` gets one of the listed grades, any other key a
  short sentence;
* an XML template (``<judgment><rationale>..</rationale><winner>..</winner></judgment>``) likewise,
  tag by tag;  ``<reasoning></reasoning>`` + ``<result></result>: PASS, FAIL or UNKNOWN`` gets
  ``<reasoning>..</reasoning><result>PASS|FAIL</result>``;
* otherwise one letter (or, with ``reply_format`` json/xml, a verdict-first object / block).

Constrained decoding is honoured like a real server: ``response_format`` ``json_schema`` gets a JSON
object with exactly the schema's properties in their order (an ``enum`` property is the verdict and
gets one of its values; other strings a sentence); vLLM's ``guided_choice`` gets one of the choices;
``guided_regex`` gets the prompt's format (the XML / JSON template it shows).  A constrained reply is
never ``truncated`` (the format is forced; counted as ``constrained``), and a model matching
``reject_response_format_models`` answers 400 (``param: response_format``) to a request that sets it.

``stop`` sequences cut the reply the way a real server does.  With ``logprobs`` the first token
carries the verdict distribution (letter replies) and every score digit is its own token whose
``top_logprobs`` put ``logprob_top`` on the digit, 2/3 of the rest on the next digit up and 1/3 on
the next one down (all of it on the one neighbour that exists at the ends of the scale).

Faults (per request, each with its own probability, drawn deterministically from ``seed``):
``rate_limit`` (429 + ``Retry-After``), ``server_error`` (500/502/503), ``hang`` (never answers:
the client times out), ``malformed`` (200 with a non-JSON body), ``truncated`` (200 whose content
is the requested reply cut after ``truncate_at`` of its characters, default half; a one-letter
reply is replaced by a verdict-first JSON object cut likewise).  A wrong ``Authorization`` header gets 401; a model matching
``reject_temperature_models`` answers 400 (``param: temperature``) to any request that sets it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fnmatch
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.vocab import other_side
from .fake_request import RequestProblem, parse_chat_request, parse_json_object

FAULT_KINDS: tuple[str, ...] = ("rate_limit", "server_error", "hang", "malformed", "truncated")
WINNER_POLICIES: tuple[str, ...] = ("seeded", "first", "second", "longer", "shorter")


@dataclass
class FakeConfig:
    """Knobs of the fake server.  All probabilities are per request."""

    api_key: str = "sk-test-fake"
    latency_s: float = 0.0            # fixed latency of every answer
    jitter_s: float = 0.0             # + uniform(0, jitter_s)
    p_rate_limit: float = 0.0
    p_server_error: float = 0.0
    p_hang: float = 0.0
    p_malformed: float = 0.0
    p_truncated: float = 0.0
    retry_after_s: float | None = 0.01   # sent as retry-after-ms (and whole seconds in Retry-After)
    hang_s: float = 3600.0            # how long a hung request sleeps (the client gives up first)
    seed: int = 0
    p_first: float = 0.5              # chance the verdict is "A" (the response shown first)
    reply_format: str = "auto"        # auto | letter | json | xml
    logprob_top: float = 0.8          # probability given to the chosen verdict token
    logprobs_omit_other: bool = False  # leave the other choice out of top_logprobs
    reject_temperature_models: tuple[str, ...] = ("o1*", "o3*", "reasoner*")
    reject_models: tuple[str, ...] = ("bad-*",)   # answer 400 (invalid request) to these models
    echo_key_in_errors: bool = False  # a careless provider: the 401 message repeats the key sent
    models: tuple[str, ...] = ("fake-judge",)
    winner_policy: str = "seeded"     # seeded | first | second | longer | shorter (shown position)
    winner_by_model: dict[str, str] = field(default_factory=dict)   # fnmatch pattern -> policy
    persuadable_models: tuple[str, ...] = ()   # adopt "The other judge chose X" (debate rebuttals)
    p_contradict: float = 0.0         # scored replies: the named winner gets the LOWER score
    truncate_at: float = 0.5          # a truncated reply keeps this fraction of its characters
    reject_response_format_models: tuple[str, ...] = ()   # answer 400 to response_format (no structured outputs)
    batch_polls: int = 1              # batch endpoints (fake_batch.py): status requests a batch stays in progress
    batch_fail_ids: tuple[str, ...] = ()   # custom_id patterns whose request fails inside a batch ...
    batch_fail_times: int = 1         # ... the first this many times it is submitted

    def __post_init__(self) -> None:
        self.update({"winner_policy": self.winner_policy, "winner_by_model": self.winner_by_model})

    def update(self, data: dict[str, Any]) -> None:
        """Set knobs by name; ``ValueError`` for an unknown name or a value of the wrong kind (a number
        for a number, text for text, a list of text for a list, an object of text for a mapping)."""
        if not isinstance(data, dict):
            raise ValueError("the knobs must be a JSON object")
        names = {f.name for f in dataclasses.fields(self)}
        for k, v in data.items():
            if k not in names:
                raise ValueError(f"unknown fake-server knob {k!r}")
            if isinstance(v, list):
                v = tuple(v)
            _check_knob(k, v, getattr(FakeConfig, k, None) if k not in ("winner_by_model",) else {})
            if k == "winner_policy" and v not in WINNER_POLICIES:
                raise ValueError(f"winner_policy must be one of {WINNER_POLICIES}, got {v!r}")
            if k == "winner_by_model" and not set(dict(v).values()) <= set(WINNER_POLICIES):
                raise ValueError(f"winner_by_model policies must be among {WINNER_POLICIES}, got {v!r}")
            setattr(self, k, v)


def _check_knob(name: str, value: Any, default: Any) -> None:
    """``value`` is of the kind of the knob's default (``retry_after_s`` may be None)."""
    if value is None and name == "retry_after_s":
        return
    if isinstance(default, bool) or isinstance(value, bool):
        ok = isinstance(value, bool) and isinstance(default, bool)
    elif isinstance(default, int | float) or default is None:
        ok = isinstance(value, int | float) and math.isfinite(value) and (
            isinstance(value, int) or not isinstance(default, int))
    elif isinstance(default, str):
        ok = isinstance(value, str)
    elif isinstance(default, tuple):
        ok = isinstance(value, tuple) and all(isinstance(x, str) for x in value)
    else:
        ok = isinstance(value, dict) and all(isinstance(k, str) and isinstance(x, str) for k, x in value.items())
    if not ok:
        raise ValueError(f"fake-server knob {name!r} got {type(value).__name__} {str(value)[:40]!r}, which is "
                         f"not the kind of its default {default!r}")


def _unit(*parts: object) -> float:
    """A deterministic number in [0, 1) from the parts."""
    h = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2.0**64


_JSON_KEY = re.compile(r'\{\s*"(winner|verdict|preferred|choice)"')
_XML_TAG = re.compile(r"<(winner|verdict|choice)>")
_VERDICT_KEYS = ("winner", "verdict", "preferred", "choice")
# a flat JSON object template shown in a prompt: {"key": value, ...} with no nested braces
_JSON_TEMPLATE = re.compile(r'\{\s*"[A-Za-z_][\w ]*"\s*:[^{}]*\}')
_TEMPLATE_KEY = re.compile(r'"([A-Za-z_][\w ]*)"\s*:\s*("(?:[^"\\]|\\.)*"|<[^<>]*>|[^,}]*)')
_XML_TEMPLATE = re.compile(r"<judgment>\s*((?:<(\w+)>[^<]*</\2>\s*)+)</judgment>")
_XML_FIELD = re.compile(r"<(\w+)>([^<]*)</\1>")
_RESULT_TEMPLATE = re.compile(r"<result></result>\s*:?\s*([A-Z]+(?:\s*(?:,|or)\s*[A-Z]+)*)")
_SCALE = re.compile(r"<\s*(-?\d+)\s*-\s*(-?\d+)\s*>")
_OPPONENT = re.compile(r"The other judge chose (\S+?)[,.:;]?\s")
_RATIONALE = "It answers the question more directly."


@dataclass(frozen=True)
class _Shape:
    """What a prompt asks for.  ``kind``: letter | json | xml | result; ``fields``: (key, role)
    in reply order, role one of verdict | score0 | score1 | grade | text."""

    kind: str
    fields: tuple[tuple[str, str], ...] = ()
    labels: tuple[str, str] = ("A", "B")
    scale: tuple[int, int] = (1, 5)
    grades: tuple[str, ...] = ()
    results: tuple[str, ...] = ()


def _labels_from(value: str) -> tuple[str, str] | None:
    """``"A or B"`` / ``"1, 2 or tie"`` -> the first two labels named."""
    words = [w for w in re.findall(r"[A-Za-z0-9]+", value) if w.lower() not in ("or", "tie", "and")]
    return (words[0], words[1]) if len(words) >= 2 and all(len(w) <= 2 for w in words[:2]) else None


def _field_role(key: str, value: str, labels: list[str]) -> str:
    k = key.strip().lower()
    if k in _VERDICT_KEYS:
        return "verdict"
    m = re.fullmatch(r"score[\s_\-]*(?:for[\s_\-]*)?(?:response[\s_\-]*)?([a-z0-9]+)", k)
    if m and k != "score":
        labels.append(key.strip()[len(key.strip()) - len(m.group(1)):])
        return f"score{len(labels) - 1}"
    if k == "score" and value.startswith("<"):
        return "grade"
    return "text"


def detect_shape(prompt: str) -> _Shape | None:
    """The reply shape of the last template shown in ``prompt`` (``None``: no template)."""
    best: tuple[int, _Shape] | None = None
    for m in _JSON_TEMPLATE.finditer(prompt):
        pairs = _TEMPLATE_KEY.findall(m.group(0))
        score_labels: list[str] = []
        fields = tuple((k, _field_role(k, v.strip(), score_labels)) for k, v in pairs)
        roles = {r for _, r in fields}
        if not roles & {"verdict", "score0", "grade"}:
            continue
        labels: tuple[str, str] | None = None
        if len(score_labels) >= 2:
            labels = (score_labels[0], score_labels[1])
        verdict_value = next((v for k, v in pairs if k.strip().lower() in _VERDICT_KEYS), "")
        labels = labels or _labels_from(verdict_value) or ("A", "B")
        sm = _SCALE.search(m.group(0))
        scale = (int(sm.group(1)), int(sm.group(2))) if sm else (1, 5)
        grades: tuple[str, ...] = ()
        gv = next((v for k, v in pairs if k.strip().lower() == "score"), "")
        gm = re.match(r"<\s*one of\s+(.*?)\s*>", gv.strip())
        if gm:
            grades = tuple(g.strip() for g in gm.group(1).split(",") if g.strip())
        best = (m.start(), _Shape("json", fields, labels, scale, grades))
    for m in _XML_TEMPLATE.finditer(prompt):
        tags = _XML_FIELD.findall(m.group(1))
        fields = tuple((t, "verdict" if t.lower() in _VERDICT_KEYS else "text") for t, _ in tags)
        if not any(r == "verdict" for _, r in fields):
            continue
        value = next((v for t, v in tags if t.lower() in _VERDICT_KEYS), "")
        if best is None or m.start() > best[0]:
            best = (m.start(), _Shape("xml", fields, _labels_from(value) or ("A", "B")))
    for m in _RESULT_TEMPLATE.finditer(prompt):
        results = tuple(re.findall(r"[A-Z]+", m.group(1)))
        if best is None or m.start() > best[0]:
            best = (m.start(), _Shape("result", results=results))
    return best[1] if best else None


def shown_responses(prompt: str, labels: tuple[str, str] = ("A", "B")) -> tuple[str, str] | None:
    """The two shown responses: each from its ``Response X:`` header to the next blank line."""
    out = []
    pos = 0
    for lab in labels:
        h = f"Response {lab}:\n"
        i = prompt.find(h, pos)
        if i < 0:
            return None
        body = prompt[i + len(h):]
        out.append(body.split("\n\n", 1)[0].strip())
        pos = i + len(h)
    return out[0], out[1]


def constrained_shape(body: dict[str, Any]) -> _Shape | None:
    """The reply shape a constrained request forces (``response_format`` json_schema, vLLM
    ``guided_choice``), or ``None``."""
    rf = body.get("response_format")
    if isinstance(rf, dict) and rf.get("type") == "json_schema":
        schema = (rf.get("json_schema") or {}).get("schema") or {}
        props = schema.get("properties") or {}
        fields = []
        labels: tuple[str, str] = ("A", "B")
        for key, spec in props.items():
            enum = spec.get("enum") if isinstance(spec, dict) else None
            if enum and len(enum) >= 2:
                labels = (str(enum[0]), str(enum[1]))
                fields.append((key, "verdict"))
            else:
                fields.append((key, "text"))
        return _Shape("json", tuple(fields), labels)
    choices = body.get("guided_choice")
    if isinstance(choices, list) and len(choices) >= 2:
        return _Shape("letter", labels=(str(choices[0]), str(choices[1])))
    return None


class _Handler:
    """The request logic (shared by the thread and process runners)."""

    def __init__(self, config: FakeConfig) -> None:
        self.config = config
        self.stats: Counter[str] = Counter()
        self._seen: Counter[str] = Counter()
        self.bodies: deque[dict[str, Any]] = deque(maxlen=256)   # last request bodies, for tests
        from .fake_batch import FakeBatches

        self.batches = FakeBatches(self)                           # the batch endpoints

    # -- answer building --------------------------------------------------------------------
    def _draw(self, body: dict[str, Any], prompt: str) -> float:
        temp = body.get("temperature")
        nth = self._seen[prompt]
        self._seen[prompt] += 1
        return _unit(self.config.seed, "verdict", prompt, nth if temp not in (None, 0, 0.0) else 0)

    def _verdict(self, body: dict[str, Any], prompt: str, model: str = "",
                 labels: tuple[str, str] = ("A", "B")) -> tuple[str, float]:
        """(shown verdict "A"/"B", the seeded draw behind it)."""
        cfg = self.config
        draw = self._draw(body, prompt)
        if any(fnmatch.fnmatchcase(model, pat) for pat in cfg.persuadable_models):
            m = _OPPONENT.search(prompt)
            if m and m.group(1) in labels:
                return ("A" if m.group(1) == labels[0] else "B"), draw
        policy = next((pol for pat, pol in dict(cfg.winner_by_model).items()
                       if fnmatch.fnmatchcase(model, pat)), cfg.winner_policy)
        if policy == "first":
            return "A", draw
        if policy == "second":
            return "B", draw
        if policy in ("longer", "shorter"):
            shown = shown_responses(prompt, labels)
            if shown is not None and len(shown[0]) != len(shown[1]):
                first_longer = len(shown[0]) > len(shown[1])
                return ("A" if first_longer == (policy == "longer") else "B"), draw
        return ("A" if draw < cfg.p_first else "B"), draw

    def _shape(self, prompt: str) -> _Shape:
        fmt = self.config.reply_format
        if fmt == "letter":
            return _Shape("letter")
        shape = detect_shape(prompt)
        if fmt == "auto":
            if shape is not None:
                return shape
            if _JSON_KEY.search(prompt) or "json" in prompt.lower():
                fmt = "json"
            elif _XML_TAG.search(prompt) or "xml" in prompt.lower():
                fmt = "xml"
            else:
                return _Shape("letter")
        if shape is not None and shape.kind == fmt:
            return shape
        # forced format without a template of that kind: verdict first (the key the prompt names)
        if fmt == "json":
            m = _JSON_KEY.search(prompt)
            k = m.group(1) if m else "winner"
            if re.search(r'\{\s*"rationale"', prompt):
                return _Shape("json", (("rationale", "text"), (k, "verdict")))
            return _Shape("json", ((k, "verdict"), ("rationale", "text")))
        m = _XML_TAG.search(prompt)
        t = m.group(1) if m else "winner"
        if re.search(r"<judgment>\s*<rationale>", prompt):
            return _Shape("xml", (("rationale", "text"), (t, "verdict")))
        return _Shape("xml", ((t, "verdict"), ("rationale", "text")))

    def _content(self, shape: _Shape, verdict: str, u: float, contradict: bool) -> str:
        """The reply text of ``shape`` carrying the shown ``verdict``."""
        if shape.kind == "letter":
            return verdict
        if shape.kind == "result":
            results = shape.results or ("PASS", "FAIL")
            pick = results[0] if verdict == "A" else (results[1] if len(results) > 1 else results[0])
            return f"<reasoning>{_RATIONALE}</reasoning><result>{pick}</result>"
        label = shape.labels[0] if verdict == "A" else shape.labels[1]
        lo_s, hi_s = shape.scale
        span = hi_s - lo_s
        hi, lo = lo_s + max(1, round(0.75 * span)), lo_s + round(0.25 * span)
        win_first = verdict == "A"
        if contradict:
            win_first = not win_first
        s0, s1 = (hi, lo) if win_first else (lo, hi)
        values: dict[str, Any] = {}
        for key, role in shape.fields:
            if role == "verdict":
                values[key] = label
            elif role == "score0":
                values[key] = s0
            elif role == "score1":
                values[key] = s1
            elif role == "grade":
                g = shape.grades
                raw = g[min(int(u * len(g)), len(g) - 1)] if g else str(hi)
                values[key] = int(raw) if re.fullmatch(r"-?\d+", raw) else raw
            else:
                values[key] = _RATIONALE
        if shape.kind == "json":
            return json.dumps(values)
        inner = "".join(f"<{k}>{v}</{k}>" for k, v in values.items())
        return f"<judgment>{inner}</judgment>"

    def _logprobs(self, content: str, verdict: str, fmt: str, k: int,
                  scale: tuple[int, int] = (1, 9)) -> dict[str, Any]:
        other = other_side(verdict)
        first = content[:1] if fmt != "letter" else verdict
        top: list[tuple[str, float]]
        p = min(max(self.config.logprob_top, 1e-6), 1 - 1e-6)
        if fmt == "letter":
            top = [(verdict, p)]
            if not self.config.logprobs_omit_other:
                top.append((other, (1 - p) * 0.9))
            top += [(" " + verdict, (1 - p) * 0.05), ("The", (1 - p) * 0.03), ("**", (1 - p) * 0.01)]
        else:
            top = [(first, 0.99), (" " + first, 0.005), ("`", 0.004)]
        top = top[:max(k, 1)]

        def entry(tok: str, prob: float) -> dict[str, Any]:
            return {"token": tok, "logprob": math.log(prob), "bytes": list(tok.encode())}

        first_entry = entry(first, dict(top).get(first, p))
        first_entry["top_logprobs"] = [entry(t, q) for t, q in top] if k > 0 else []
        out = [first_entry]
        rest_at = len(first)
        # every score digit its own token, with neighbouring digits as alternatives
        cuts = [m.start(1) for m in re.finditer(r'"score[^"]*"\s*:\s*(\d)(?!\d)', content)] if fmt == "json" else []
        pieces: list[tuple[str, bool]] = []
        for c in cuts:
            if c >= rest_at:
                if c > rest_at:
                    pieces.append((content[rest_at:c], False))
                pieces.append((content[c], True))
                rest_at = c + 1
        if rest_at < len(content):
            pieces.append((content[rest_at:], False))
        for tok, is_digit in pieces:
            if not is_digit:
                e = entry(tok, 0.99)
                e["top_logprobs"] = [entry(tok, 0.99)] if k > 0 else []
            else:
                d = int(tok)
                up, down = d + 1 if d + 1 <= min(scale[1], 9) else None, d - 1 if d - 1 >= max(scale[0], 1) else None
                alts = [(tok, p)]
                if up is not None and down is not None:
                    alts += [(str(up), (1 - p) * 2 / 3), (str(down), (1 - p) / 3)]
                elif up is not None or down is not None:
                    alts.append((str(up if up is not None else down), 1 - p))
                e = entry(tok, p)
                e["top_logprobs"] = [entry(t, q) for t, q in alts[:max(k, 1)]] if k > 0 else []
            out.append(e)
        return {"content": out, "refusal": None}

    # -- request handling -------------------------------------------------------------------
    async def handle(self, method: str, path: str, headers: dict[str, str],
                     raw: bytes) -> tuple[int, dict[str, str], bytes] | None:
        """Return (status, headers, body), or ``None`` to hang (never answer)."""
        cfg = self.config
        path = path.split("?", 1)[0]
        control = self._control(method, path, raw)
        if control is not None:
            return control
        self.stats["requests"] += 1
        batch = self.batches.handle(method, path, headers, raw)
        if batch is not None:
            return batch
        routed = self._route(method, path, headers)
        if routed is not None:
            return routed
        try:
            body = parse_chat_request(raw)
        except RequestProblem as exc:
            self.stats["bad_request"] += 1
            return _error(400, str(exc), "invalid_request_error", param=exc.param)
        model = body["model"]
        prompt = "\n".join(str(m.get("content", "")) for m in body["messages"])

        self.bodies.append(body)
        rejected = self._reject(body, model)
        if rejected is not None:
            return rejected

        # faults: one draw per request, deterministic in (seed, prompt, how often it was seen)
        attempt_key = f"{model}\x1e{prompt}\x1e{body.get('temperature')}"
        nth = self._seen["attempt:" + attempt_key]
        self._seen["attempt:" + attempt_key] += 1
        fault = self._draw_fault(attempt_key, nth)
        delay = cfg.latency_s + (cfg.jitter_s * _unit(cfg.seed, "jitter", attempt_key, nth)
                                 if cfg.jitter_s else 0.0)
        if fault == "hang":
            self.stats["hang"] += 1
            await asyncio.sleep(cfg.hang_s)
            return None
        if delay > 0:
            await asyncio.sleep(delay)
        if fault in ("rate_limit", "server_error", "malformed"):
            return self._fault_response(fault, attempt_key, nth)
        return 200, {}, json.dumps(self._completion(body, model, prompt, fault)).encode()

    def _control(self, method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes] | None:
        """The test-control routes under /_fake/ (no key needed); None for any other request."""
        if path == "/_fake/stats":
            return 200, {}, json.dumps(dict(self.stats)).encode()
        if path == "/_fake/reset" and method == "POST":
            self.stats.clear()
            self._seen.clear()
            return 200, {}, b"{}"
        if path == "/_fake/config" and method == "POST":
            try:
                self.config.update(parse_json_object(raw or b"{}", what="the knobs"))
            except (ValueError, TypeError) as exc:
                return 400, {}, json.dumps({"error": {"message": str(exc)}}).encode()
            return 200, {}, json.dumps(dataclasses.asdict(self.config), default=list).encode()
        return None

    def _route(self, method: str, path: str,
               headers: dict[str, str]) -> tuple[int, dict[str, str], bytes] | None:
        """401 for a wrong key, the model list, 404 for an unknown route; None for a chat completion."""
        cfg = self.config
        if headers.get("authorization", "") != f"Bearer {cfg.api_key}":
            self.stats["unauthorized"] += 1
            sent = headers.get("authorization", "").removeprefix("Bearer ")
            echo = f": {sent}" if cfg.echo_key_in_errors else ""
            return _error(401, f"Incorrect API key provided{echo}.", "invalid_request_error",
                          code="invalid_api_key")
        if path.rstrip("/") in ("/v1/models", "/models") and method == "GET":
            data = [{"id": m, "object": "model", "owned_by": "verdictlab-fake"} for m in cfg.models]
            return 200, {}, json.dumps({"object": "list", "data": data}).encode()
        if path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions") or method != "POST":
            self.stats["not_found"] += 1
            return _error(404, f"no route {method} {path}", "invalid_request_error")
        return None

    def _reject(self, body: dict[str, Any], model: str) -> tuple[int, dict[str, str], bytes] | None:
        """The 400s a real endpoint gives for a model or parameter it does not take; None if accepted."""
        cfg = self.config
        if any(fnmatch.fnmatchcase(model, p) for p in cfg.reject_models):
            self.stats["bad_request"] += 1
            return _error(400, f"The model '{model}' cannot be used with this request.",
                          "invalid_request_error", param="model", code="invalid_value")
        if "temperature" in body and any(fnmatch.fnmatchcase(model, p) for p in cfg.reject_temperature_models):
            self.stats["rejected_temperature"] += 1
            return _error(400, "Unsupported parameter: 'temperature' is not supported with this model.",
                          "invalid_request_error", param="temperature", code="unsupported_parameter")
        if "response_format" in body and any(fnmatch.fnmatchcase(model, p)
                                             for p in cfg.reject_response_format_models):
            self.stats["rejected_response_format"] += 1
            return _error(400, "Invalid parameter: 'response_format' of type 'json_schema' is not supported with "
                               "this model.", "invalid_request_error", param="response_format",
                          code="invalid_parameter")
        return None

    def _draw_fault(self, attempt_key: str, nth: int) -> str | None:
        u = _unit(self.config.seed, "fault", attempt_key, nth)
        acc = 0.0
        for kind in FAULT_KINDS:
            acc += float(getattr(self.config, f"p_{kind}"))
            if u < acc:
                return kind
        return None

    def _fault_response(self, fault: str, attempt_key: str, nth: int) -> tuple[int, dict[str, str], bytes]:
        """The answer for a rate-limit, server-error or malformed-body fault."""
        cfg = self.config
        self.stats[fault] += 1
        if fault == "rate_limit":
            status, hdrs, payload = _error(429, "Rate limit reached for requests (fake).", "requests",
                                           code="rate_limit_exceeded")
            if cfg.retry_after_s is not None:
                hdrs.update({"retry-after-ms": str(int(cfg.retry_after_s * 1000)),
                             "retry-after": str(max(0, math.ceil(cfg.retry_after_s)))})
            return status, hdrs, payload
        if fault == "server_error":
            status = (500, 502, 503)[int(_unit(cfg.seed, "5xx", attempt_key, nth) * 3)]
            return _error(status, "The server had an error while processing your request (fake).",
                          "server_error")
        return 200, {}, b"<html>upstream proxy error: not json"

    def _completion(self, body: dict[str, Any], model: str, prompt: str, fault: str | None) -> dict[str, Any]:
        """The chat.completion object: the shaped answer, truncated by a fault, stop or max tokens."""
        cfg = self.config
        forced = constrained_shape(body)
        shape = forced or self._shape(prompt)
        if forced is None and body.get("guided_regex"):
            forced = shape
        verdict, u = self._verdict(body, prompt, model, shape.labels)
        contradict = (cfg.p_contradict > 0 and any(r == "score0" for _, r in shape.fields)
                      and _unit(cfg.seed, "contradict", prompt) < cfg.p_contradict)
        content = self._content(shape, verdict, u, contradict)
        fmt = shape.kind
        if forced is not None:
            self.stats["constrained"] += 1
            fault = None if fault == "truncated" else fault
        if fault == "truncated":
            self.stats["truncated"] += 1
            if fmt == "letter":
                content = json.dumps({"winner": verdict, "rationale": _RATIONALE})
                fmt = "json"
            frac = min(max(float(cfg.truncate_at), 0.0), 1.0)
            content = content[: int(len(content) * frac)]
        else:
            self.stats["ok"] += 1
        content, n_out, finish = _stop_and_limit(content, body)
        n_in = max(1, len(prompt) // 4)
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish,
                                  "message": {"role": "assistant", "content": content, "refusal": None},
                                  "logprobs": None}
        if body.get("logprobs"):
            choice["logprobs"] = self._logprobs(content, verdict, fmt, int(body.get("top_logprobs") or 0),
                                                shape.scale)
        return {
            "id": f"chatcmpl-fake{self.stats['requests']}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": f"fp_fake_{cfg.seed}",
            "choices": [choice],
            "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out},
        }


def _stop_and_limit(content: str, body: dict[str, Any]) -> tuple[str, int, str]:
    """Cut ``content`` at the request's stop sequences and its token limit (4 characters a token):
    (content, completion tokens, finish reason)."""
    finish = "stop"
    stops = body.get("stop") or []
    if isinstance(stops, str):
        stops = [stops]
    for s in stops:
        i = content.find(s) if s else -1
        if i >= 0:
            content = content[:i]
    max_toks = body.get("max_completion_tokens") or body.get("max_tokens")
    n_out = max(1, len(content) // 4)
    if isinstance(max_toks, int) and n_out > max_toks:
        content = content[: max_toks * 4]
        n_out = max_toks
        finish = "length"
    return content, n_out, finish


def _error(status: int, message: str, type_: str, *, param: str | None = None,
           code: str | None = None) -> tuple[int, dict[str, str], bytes]:
    return status, {}, json.dumps({"error": {"message": message, "type": type_, "param": param,
                                             "code": code}}).encode()


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 413: "Content Too Large",
            429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
            503: "Service Unavailable"}
#: the largest request body read (a real API refuses larger ones with 413 too)
MAX_BODY_BYTES = 64 * 1024 * 1024


class _Framing(ValueError):
    """A request whose HTTP framing cannot be read (its body length): answered, then the connection closed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    """The request body, chunked or of its Content-Length; :class:`_Framing` for a length that is not a
    number, is negative or passes :data:`MAX_BODY_BYTES`."""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        parts: list[bytes] = []
        total = 0
        while True:
            line = (await reader.readuntil(b"\r\n")).split(b";")[0].strip() or b"0"
            try:
                size = int(line, 16)
            except ValueError:
                raise _Framing(400, f"bad chunk size {line[:20]!r}") from None
            total += size
            if size < 0 or total > MAX_BODY_BYTES:
                raise _Framing(413, f"request body over {MAX_BODY_BYTES} bytes")
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                return b"".join(parts)
            parts.append(chunk[:-2])
    text = headers.get("content-length", "0") or "0"
    if not text.isdigit():
        raise _Framing(400, f"bad Content-Length {text[:20]!r}")
    n = int(text)
    if n > MAX_BODY_BYTES:
        raise _Framing(413, f"request body over {MAX_BODY_BYTES} bytes")
    return await reader.readexactly(n) if n else b""


async def _answer(handler: _Handler, method: str, target: str, headers: dict[str, str],
                  body: bytes) -> tuple[int, dict[str, str], bytes] | None:
    """The handler's answer; a failure inside it is a 500 (with the traceback on stderr, as a server logs
    it), never a dropped connection."""
    try:
        return await handler.handle(method, target, headers, body)
    except Exception:
        import traceback

        traceback.print_exc()
        handler.stats["server_bug"] += 1
        return _error(500, "the fake server failed on this request (its traceback is on its stderr)",
                      "server_error")


async def _serve_connection(handler: _Handler, reader: asyncio.StreamReader,
                            writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            try:
                method, target, _version = lines[0].split(" ", 2)
            except ValueError:
                return
            headers: dict[str, str] = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            try:
                body = await _read_body(reader, headers)
            except _Framing as exc:
                status, extra, payload = _error(exc.status, str(exc), "invalid_request_error")
                writer.write((f"HTTP/1.1 {status} {_REASONS[status]}\r\ncontent-type: application/json\r\n"
                              f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n").encode() + payload)
                await writer.drain()
                return
            result = await _answer(handler, method, target, headers, body)
            if result is None:            # hang: drop the connection without answering
                return
            status, extra, payload = result
            ctype = "text/html" if payload.startswith(b"<html>") else "application/json"
            out = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
                   f"content-type: {ctype}", f"content-length: {len(payload)}",
                   "connection: keep-alive"]
            out += [f"{k}: {v}" for k, v in extra.items()]
            writer.write(("\r\n".join(out) + "\r\n\r\n").encode("latin-1") + payload)
            await writer.drain()
            if headers.get("connection", "").lower() == "close":
                return
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
        # cancelled at shutdown (e.g. a hung request): end quietly
        return
    finally:
        with contextlib.suppress(Exception):
            writer.close()


class FakeOpenAIServer:
    """The fake server on a background thread with its own event loop.

    >>> with FakeOpenAIServer(FakeConfig(api_key="sk-test-x", latency_s=0.01)) as srv:
    ...     srv.base_url        # 'http://127.0.0.1:PORT/v1'
    """

    def __init__(self, config: FakeConfig | None = None, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.config = config or FakeConfig()
        self.handler = _Handler(self.config)
        self.host = host
        self.port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def stats(self) -> dict[str, int]:
        return dict(self.handler.stats)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The last request bodies received (newest last)."""
        return list(self.handler.bodies)

    def reset(self) -> None:
        self.handler.stats.clear()
        self.handler._seen.clear()

    def start(self) -> FakeOpenAIServer:
        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                self._server = loop.run_until_complete(asyncio.start_server(
                    lambda r, w: _serve_connection(self.handler, r, w), self.host, self.port,
                    backlog=1024))
                self.port = self._server.sockets[0].getsockname()[1]
            except BaseException as exc:  # pragma: no cover - bind failure
                self._error = exc
                self._ready.set()
                return
            self._ready.set()
            loop.run_forever()
            # shut down: cancel hung handlers, close the server
            self._server.close()
            for task in asyncio.all_tasks(loop):
                task.cancel()
            with contextlib.suppress(BaseException):
                loop.run_until_complete(asyncio.sleep(0))
            loop.close()

        self._thread = threading.Thread(target=run, name="fake-openai", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise RuntimeError(f"fake server failed to start: {self._error}")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            self._loop = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class FakeOpenAIProcess:
    """The fake server in a child process (its CPU is not the caller's).  Stats and knobs go
    through the ``/_fake/*`` endpoints."""

    def __init__(self, config: FakeConfig | None = None) -> None:
        self.config = config or FakeConfig()
        self.proc: subprocess.Popen[str] | None = None
        self.base_url = ""

    def start(self, timeout_s: float = 20.0) -> FakeOpenAIProcess:
        cfg = json.dumps(dataclasses.asdict(self.config), default=list)
        env = dict(os.environ)
        env["VERDICTLAB_FAKE_CONFIG"] = cfg   # not argv: the test key stays out of `ps`
        self.proc = subprocess.Popen([sys.executable, "-c",
                                      "from verdictlab.testing.fake_openai import main; main()"],
                                     stdout=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            if line.startswith("LISTENING "):
                self.base_url = line.split(" ", 1)[1].strip()
                return self
        self.stop()
        raise RuntimeError("fake server process did not start")

    def _call(self, method: str, path: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
        import urllib.request

        url = self.base_url.rsplit("/v1", 1)[0] + path
        req = urllib.request.Request(url, method=method,
                                     data=json.dumps(data).encode() if data is not None else None)
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    @property
    def stats(self) -> dict[str, int]:
        return self._call("GET", "/_fake/stats")

    def reset(self) -> None:
        self._call("POST", "/_fake/reset", {})

    def configure(self, **knobs: Any) -> None:
        self._call("POST", "/_fake/config", knobs)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:  # pragma: no cover
                self.proc.kill()
                self.proc.wait(5)
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self.proc = None

    def __enter__(self) -> FakeOpenAIProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_forever(config: FakeConfig, *, host: str = "127.0.0.1", port: int = 0,
                  on_ready: Callable[[str], None] | None = None) -> None:
    """Serve ``config`` in the foreground until interrupted; ``on_ready(base_url)`` once listening (the
    ``verdictlab fake-server`` command and :class:`FakeOpenAIProcess`'s child).  ``OSError`` when the
    address cannot be bound (a port in use)."""
    handler = _Handler(config)

    async def serve() -> None:
        server = await asyncio.start_server(lambda r, w: _serve_connection(handler, r, w), host, port,
                                            backlog=1024)
        bound = server.sockets[0].getsockname()[1]
        if on_ready is not None:
            on_ready(f"http://{host}:{bound}/v1")
        async with server:
            await server.serve_forever()

    try:
        import uvloop  # type: ignore[import-not-found, unused-ignore]  # optional: typed when installed

        uvloop.run(serve())
    except ImportError:
        asyncio.run(serve())


def main(argv: list[str] | None = None) -> None:
    """``python -m verdictlab.testing.fake_openai [--port N] [--knob value ...]``.
    Knobs come from ``VERDICTLAB_FAKE_CONFIG`` (JSON) and ``--name value`` pairs."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    args, rest = parser.parse_known_args(argv)
    config = FakeConfig()
    if os.environ.get("VERDICTLAB_FAKE_CONFIG"):
        config.update(json.loads(os.environ["VERDICTLAB_FAKE_CONFIG"]))
    knobs: dict[str, Any] = {}
    for name, value in zip(rest[::2], rest[1::2], strict=False):
        try:
            parsed: Any = json.loads(value)
        except ValueError:
            parsed = value
        knobs[name.lstrip("-").replace("-", "_")] = parsed
    config.update(knobs)
    with contextlib.suppress(KeyboardInterrupt):
        serve_forever(config, port=args.port, on_ready=lambda url: print(f"LISTENING {url}", flush=True))


if __name__ == "__main__":
    main()


__all__ = ["FAULT_KINDS", "WINNER_POLICIES", "FakeConfig", "FakeOpenAIProcess", "FakeOpenAIServer", "detect_shape", "main",
           "serve_forever", "shown_responses"]
