"""The fake server's check of a chat-completions request body, before anything reads it: a body a real
API refuses gets HTTP 400 naming the parameter, as OpenAI's does (``invalid_request_error``), never a
dropped connection.  Checked: JSON within a nesting limit, then the type and range of every field the
fake server reads (``model``, ``messages``, ``temperature``, the token limits, ``stop``, ``seed``,
``logprobs``, ``top_logprobs``, ``response_format`` and vLLM's ``guided_choice`` / ``guided_regex``).
Fields it does not read are not checked."""

from __future__ import annotations

import json
from typing import Any

from ..core.guards import GuardError, loads_json

__all__ = ["MAX_DEPTH", "RequestProblem", "check_chat_body", "parse_chat_request", "parse_json_object"]

#: nesting deeper than this is refused (a real chat request nests a handful of levels)
MAX_DEPTH = 64


class RequestProblem(ValueError):
    """A request body the API refuses: the message and the parameter it is about (None: the body)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _integer(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise RequestProblem("'messages' must be a non-empty array of message objects", "messages")
    for k, m in enumerate(messages):
        where = f"messages[{k}]"
        if not isinstance(m, dict):
            raise RequestProblem(f"'{where}' must be an object with 'role' and 'content'", where)
        if not isinstance(m.get("role"), str):
            raise RequestProblem(f"'{where}.role' must be a string", f"{where}.role")
        content = m.get("content")
        if content is None or isinstance(content, str):
            continue
        if not isinstance(content, list) or not all(
                isinstance(p, dict) and isinstance(p.get("text", ""), str) for p in content):
            raise RequestProblem(f"'{where}.content' must be a string or an array of content parts",
                                 f"{where}.content")


def _check_schema(rf: Any) -> None:
    if not isinstance(rf, dict) or not isinstance(rf.get("type"), str):
        raise RequestProblem("'response_format' must be an object with a 'type'", "response_format")
    if rf["type"] not in ("text", "json_object", "json_schema"):
        raise RequestProblem(f"'response_format.type' must be text, json_object or json_schema, got "
                             f"{rf['type'][:40]!r}", "response_format.type")
    if rf["type"] != "json_schema":
        return
    spec = rf.get("json_schema")
    if not isinstance(spec, dict) or not isinstance(spec.get("schema", {}), dict):
        raise RequestProblem("'response_format.json_schema' must be an object whose 'schema' is an object",
                             "response_format.json_schema")
    props = spec.get("schema", {}).get("properties", {})
    if not isinstance(props, dict) or not all(isinstance(p, dict) for p in props.values()):
        raise RequestProblem("'response_format.json_schema.schema.properties' must be an object of schemas",
                             "response_format.json_schema.schema.properties")
    for key, p in props.items():
        enum = p.get("enum")
        if enum is not None and not isinstance(enum, list):
            raise RequestProblem(f"the 'enum' of property {key[:40]!r} must be an array",
                                 "response_format.json_schema.schema.properties")


def _check_options(body: dict[str, Any]) -> None:
    temp = body.get("temperature")
    if temp is not None and not (_number(temp) and 0 <= temp <= 2):
        raise RequestProblem("'temperature' must be a number in [0, 2]", "temperature")
    for name in ("max_tokens", "max_completion_tokens"):
        v = body.get(name)
        if v is not None and not (_integer(v) and v >= 1):
            raise RequestProblem(f"'{name}' must be an integer >= 1", name)
    stop = body.get("stop")
    if stop is not None and not isinstance(stop, str) and not (
            isinstance(stop, list) and len(stop) <= 4 and all(isinstance(s, str) for s in stop)):
        raise RequestProblem("'stop' must be a string or an array of at most 4 strings", "stop")
    if body.get("seed") is not None and not _integer(body["seed"]):
        raise RequestProblem("'seed' must be an integer", "seed")
    if body.get("logprobs") is not None and not isinstance(body["logprobs"], bool):
        raise RequestProblem("'logprobs' must be a boolean", "logprobs")
    top = body.get("top_logprobs")
    if top is not None and not (_integer(top) and 0 <= top <= 20):
        raise RequestProblem("'top_logprobs' must be an integer in [0, 20]", "top_logprobs")
    if body.get("response_format") is not None:
        _check_schema(body["response_format"])
    choice = body.get("guided_choice")
    if choice is not None and not (isinstance(choice, list) and all(isinstance(c, str) for c in choice)):
        raise RequestProblem("'guided_choice' must be an array of strings", "guided_choice")
    if body.get("guided_regex") is not None and not isinstance(body["guided_regex"], str):
        raise RequestProblem("'guided_regex' must be a string", "guided_regex")


def parse_json_object(raw: bytes, *, what: str = "the request body") -> dict[str, Any]:
    """``raw`` as a JSON object within :data:`MAX_DEPTH`; :class:`RequestProblem` otherwise."""
    try:
        body = loads_json(raw, max_depth=MAX_DEPTH)
    except json.JSONDecodeError as exc:
        raise RequestProblem(f"{what} is not valid JSON ({exc.msg}, column {exc.colno})") from None
    except GuardError as exc:
        raise RequestProblem(f"{what} is refused: {str(exc).split(' (raise')[0]}") from None
    if not isinstance(body, dict):
        raise RequestProblem(f"{what} must be a JSON object")
    return body


def check_chat_body(body: Any) -> dict[str, Any]:
    """``body`` (parsed) checked as a chat-completions request; :class:`RequestProblem` otherwise."""
    if not isinstance(body, dict):
        raise RequestProblem("the request body must be a JSON object with 'model' and 'messages'")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise RequestProblem("'model' must be a non-empty string", "model")
    _check_messages(body.get("messages"))
    _check_options(body)
    return body


def parse_chat_request(raw: bytes) -> dict[str, Any]:
    """The request body as a checked object; :class:`RequestProblem` for a body a real API refuses."""
    return check_chat_body(parse_json_object(raw))
