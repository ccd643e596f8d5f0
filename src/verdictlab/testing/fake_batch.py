"""Batch endpoints of the fake server: the OpenAI Batch API and Anthropic Message Batches.

Routes (all answered from the same chat-completion logic as ``POST /v1/chat/completions``):

``POST /v1/files``                         upload a batch input file (multipart, ``purpose=batch``)
``GET  /v1/files/{id}/content``            a file's bytes (input, output or error JSONL)
``POST /v1/batches``                       create a batch from an uploaded file
``GET  /v1/batches``                       the batches created (newest first, with their ``metadata``)
``GET  /v1/batches/{id}``                  its status; ``completed`` with ``output_file_id`` /
                                           ``error_file_id`` after ``batch_polls`` retrievals
``POST /v1/messages/batches``              an Anthropic Message Batch (key in ``x-api-key``)
``GET  /v1/messages/batches/{id}``         its status; ``ended`` with a ``results_url`` after ``batch_polls``
``GET  /v1/messages/batches/{id}/results`` the results JSONL

Fault knobs (:class:`~verdictlab.testing.fake_openai.FakeConfig`): ``batch_polls`` (how many status
requests a batch stays in progress), ``batch_fail_ids`` (fnmatch patterns of ``custom_id`` whose
request fails inside the batch -- a 500 line in OpenAI's error file, an ``errored`` Anthropic result --
the first ``batch_fail_times`` times it is submitted; later submissions succeed).
"""

from __future__ import annotations

import email.parser
import email.policy
import fnmatch
import json
import re
import time
from collections import Counter
from typing import Any

from .fake_request import RequestProblem, check_chat_body, parse_json_object

Answer = tuple[int, dict[str, str], bytes]
_BATCH = re.compile(r"^/v1/batches/(?P<id>[\w-]+)$")
_FILE = re.compile(r"^/v1/files/(?P<id>[\w-]+)/content$")
_MSG_BATCH = re.compile(r"^/v1/messages/batches/(?P<id>[\w-]+)(?P<results>/results)?$")


def _json(status: int, data: Any) -> Answer:
    return status, {}, json.dumps(data).encode()


def _err(status: int, message: str) -> Answer:
    return _json(status, {"error": {"message": message, "type": "invalid_request_error", "param": None,
                                    "code": None}})


def _multipart_file(content_type: str, raw: bytes) -> bytes | None:
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    for part in msg.iter_parts() if msg.is_multipart() else ():
        if part.get_param("name", header="content-disposition") == "file":
            payload = part.get_payload(decode=True)
            return payload if isinstance(payload, bytes) else None
    return None


class FakeBatches:
    """Batch state of one fake server; ``complete(body) -> chat.completion dict`` answers one request."""

    def __init__(self, handler: Any) -> None:
        self.h = handler
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.submitted: Counter[str] = Counter()     # custom_id -> times submitted in a batch
        self.n = 0

    def _id(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n:06d}"

    # -- routing -----------------------------------------------------------------------------------
    def handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Answer | None:
        """The answer to a batch route, or None when ``path`` is not one."""
        if path.startswith("/v1/messages/batches"):
            key = self.h.config.api_key
            if headers.get("x-api-key") != key and headers.get("authorization") != f"Bearer {key}":
                return _json(401, {"type": "error", "error": {"type": "authentication_error",
                                                               "message": "invalid x-api-key"}})
            return self._anthropic(method, path, headers, raw)
        if not (path.startswith("/v1/files") or path.startswith("/v1/batches")):
            return None
        if headers.get("authorization", "") != f"Bearer {self.h.config.api_key}":
            return _err(401, "Incorrect API key provided.")
        return self._openai(method, path, headers, raw)

    def _openai(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Answer:
        self.h.stats["batch_requests"] += 1
        if path == "/v1/files" and method == "POST":
            data = _multipart_file(headers.get("content-type", ""), raw)
            if data is None:
                return _err(400, "multipart upload without a 'file' part")
            fid = self._id("file-")
            self.files[fid] = data
            return _json(200, {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                               "filename": "input.jsonl", "purpose": "batch", "status": "processed"})
        if path == "/v1/batches" and method == "POST":
            try:
                body = parse_json_object(raw or b"{}")
                if not isinstance(body.get("input_file_id"), str):
                    raise RequestProblem("'input_file_id' must be a string", "input_file_id")
            except RequestProblem as exc:
                return _err(400, str(exc))
            if body.get("input_file_id") not in self.files:
                return _err(404, f"no file {body.get('input_file_id')!r}")
            bid = self._id("batch_")
            self.batches[bid] = {"kind": "openai", "input": body["input_file_id"], "polls": 0, "done": None,
                                 "endpoint": body.get("endpoint"), "window": body.get("completion_window"),
                                 "metadata": body.get("metadata")}
            self.h.stats["batches_created"] += 1
            return _json(200, self._openai_batch(bid))
        if path == "/v1/batches" and method == "GET":
            listed = [self._openai_batch(b, poll=False) for b in reversed(self.batches)
                      if self.batches[b]["kind"] == "openai"]
            return _json(200, {"object": "list", "data": listed, "has_more": False,
                               "first_id": listed[0]["id"] if listed else None,
                               "last_id": listed[-1]["id"] if listed else None})
        m = _BATCH.match(path)
        if m and method == "GET" and m["id"] in self.batches:
            self.batches[m["id"]]["polls"] += 1
            return _json(200, self._openai_batch(m["id"]))
        m = _FILE.match(path)
        if m and method == "GET" and m["id"] in self.files:
            return 200, {}, self.files[m["id"]]
        return _err(404, f"no route {method} {path}")

    def _openai_batch(self, bid: str, *, poll: bool = True) -> dict[str, Any]:
        b = self.batches[bid]
        out: dict[str, Any] = {"id": bid, "object": "batch", "endpoint": b["endpoint"], "input_file_id": b["input"],
                               "completion_window": b["window"], "created_at": int(time.time()),
                               "status": "in_progress", "output_file_id": None, "error_file_id": None,
                               "metadata": b.get("metadata")}
        if not poll or b["polls"] < int(self.h.config.batch_polls):
            return out
        if b["done"] is None:
            b["done"] = self._run_openai(self.files[b["input"]])
        ok, bad = b["done"]
        out.update(status="completed", request_counts={"total": ok[0] + bad[0], "completed": ok[0],
                                                       "failed": bad[0]},
                   output_file_id=ok[1], error_file_id=bad[1])
        return out

    def _run_openai(self, data: bytes) -> tuple[tuple[int, str | None], tuple[int, str | None]]:
        ok: list[str] = []
        bad: list[str] = []
        for line in data.decode().splitlines():
            if not line.strip():
                continue
            try:
                req = parse_json_object(line.encode(), what="a line of the input file")
                cid = req.get("custom_id")
                if not isinstance(cid, str):
                    raise RequestProblem("'custom_id' must be a string", "custom_id")
                check_chat_body(req.get("body"))
            except RequestProblem as exc:      # OpenAI: the line fails, in the error file, with a 400
                bad.append(json.dumps({"id": self._id("batch_req_"), "custom_id": None, "error": None, "response": {
                    "status_code": 400, "request_id": "req-fake", "body": {"error": {
                        "message": str(exc), "type": "invalid_request_error", "param": exc.param}}}}))
                continue
            if self._fails(cid):
                bad.append(json.dumps({"id": self._id("batch_req_"), "custom_id": cid, "error": None, "response": {
                    "status_code": 500, "request_id": "req-fake", "body": {"error": {
                        "message": "The server had an error processing this request (fake).",
                        "type": "server_error"}}}}))
                continue
            ok.append(json.dumps({"id": self._id("batch_req_"), "custom_id": cid, "error": None, "response": {
                "status_code": 200, "request_id": "req-fake", "body": self.complete(req["body"])}}))

        def store(lines: list[str]) -> tuple[int, str | None]:
            if not lines:
                return 0, None
            fid = self._id("file-")
            self.files[fid] = ("\n".join(lines) + "\n").encode()
            return len(lines), fid

        return store(ok), store(bad)

    def _fails(self, cid: str) -> bool:
        cfg = self.h.config
        self.submitted[cid] += 1
        self.h.stats["batch_lines"] += 1
        if any(fnmatch.fnmatchcase(cid, p) for p in cfg.batch_fail_ids) and \
                self.submitted[cid] <= int(cfg.batch_fail_times):
            self.h.stats["batch_line_failed"] += 1
            return True
        return False

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        return dict(self.h._completion(body, str(body["model"]), prompt, None))

    # -- Anthropic -----------------------------------------------------------------------------------
    def _anthropic(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Answer:
        self.h.stats["batch_requests"] += 1
        if path == "/v1/messages/batches" and method == "POST":
            try:
                body = parse_json_object(raw or b"{}")
                _check_anthropic_requests(body.get("requests"))
            except RequestProblem as exc:
                return _json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": str(exc)}})
            bid = self._id("msgbatch_")
            self.batches[bid] = {"kind": "anthropic", "requests": body.get("requests") or [], "polls": 0,
                                 "done": None}
            self.h.stats["batches_created"] += 1
            return _json(200, self._anthropic_batch(bid, headers))
        m = _MSG_BATCH.match(path)
        if m is None or method != "GET" or m["id"] not in self.batches:
            return _json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
        b = self.batches[m["id"]]
        if m["results"]:
            if b["done"] is None:
                return _json(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                               "message": "batch not ended"}})
            return 200, {}, b["done"]
        b["polls"] += 1
        return _json(200, self._anthropic_batch(m["id"], headers))

    def _anthropic_batch(self, bid: str, headers: dict[str, str]) -> dict[str, Any]:
        b = self.batches[bid]
        stamp = "2025-11-01T00:00:00Z"
        out: dict[str, Any] = {"id": bid, "type": "message_batch", "processing_status": "in_progress",
                               "request_counts": {"processing": len(b["requests"]), "succeeded": 0, "errored": 0,
                                                  "canceled": 0, "expired": 0},
                               "created_at": stamp, "expires_at": stamp, "ended_at": None, "archived_at": None,
                               "cancel_initiated_at": None, "results_url": None}
        if b["polls"] < int(self.h.config.batch_polls):
            return out
        if b["done"] is None:
            b["done"], b["counts"] = self._run_anthropic(b["requests"])
        out.update(processing_status="ended", ended_at=stamp, request_counts=b["counts"],
                   results_url=f"http://{headers.get('host', '127.0.0.1')}/v1/messages/batches/{bid}/results")
        return out

    def _run_anthropic(self, requests: list[dict[str, Any]]) -> tuple[bytes, dict[str, int]]:
        lines: list[str] = []
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for r in requests:
            cid, p = r["custom_id"], r["params"]
            if self._fails(cid):
                counts["errored"] += 1
                lines.append(json.dumps({"custom_id": cid, "result": {"type": "errored", "error": {
                    "type": "error", "error": {"type": "api_error", "message": "Internal server error (fake)"}}}}))
                continue
            done = self.complete(_anthropic_chat(p))
            choice, usage = done["choices"][0], done["usage"]
            counts["succeeded"] += 1
            lines.append(json.dumps({"custom_id": cid, "result": {"type": "succeeded", "message": {
                "id": self._id("msg_"), "type": "message", "role": "assistant", "model": p["model"],
                "content": [{"type": "text", "text": choice["message"]["content"]}],
                "stop_reason": "max_tokens" if choice["finish_reason"] == "length" else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"]}}}}))
        return ("\n".join(lines) + "\n").encode(), counts


def _anthropic_chat(params: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions body of an Anthropic batch request's ``params``."""
    system = params.get("system")
    msgs = ([{"role": "system", "content": system}] if system else []) + list(params.get("messages") or [])
    return {"model": params.get("model"), "messages": msgs, "temperature": params.get("temperature"),
            "max_tokens": params.get("max_tokens"), "stop": params.get("stop_sequences") or []}


def _check_anthropic_requests(requests: Any) -> None:
    """A message batch's ``requests``, as Anthropic checks them when the batch is created."""
    if not isinstance(requests, list) or not requests:
        raise RequestProblem("'requests' must be a non-empty array", "requests")
    for k, r in enumerate(requests):
        if not isinstance(r, dict) or not isinstance(r.get("custom_id"), str) or not isinstance(r.get("params"), dict):
            raise RequestProblem(f"requests[{k}] must be an object with a string 'custom_id' and 'params'",
                                 f"requests[{k}]")
        system = r["params"].get("system")
        if system is not None and not isinstance(system, str):
            raise RequestProblem(f"requests[{k}].params.system must be a string", f"requests[{k}].params.system")
        check_chat_body(_anthropic_chat(r["params"]))


__all__ = ["FakeBatches"]
