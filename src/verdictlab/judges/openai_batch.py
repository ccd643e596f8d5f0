"""The OpenAI Batch API for OpenAI and OpenAI-compatible judges (:class:`OpenAIBatches`, the adapter
:meth:`~verdictlab.judges.openai_api.OpenAIJudge.batch_adapter` returns), and the OpenAI batch-line
format that ``verdictlab batch export`` / ``batch import`` write and read."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.redact import ERROR_LIMIT, redact_text
from .base import JudgeRequest, JudgeResponse, RetryDecision
from .batch import Outcome

_OPENAI_DONE = frozenset({"completed", "failed", "expired", "cancelled"})


def openai_body(judge: Any, request: JudgeRequest) -> tuple[dict[str, Any], list[str]]:
    """The chat-completions body the judge would POST for ``request`` (its ``build_params``, with the
    ``extra_body`` merged in and the client-side ``timeout`` left out), and the notes."""
    params, notes = judge.build_params(request)
    body = {k: v for k, v in params.items() if k not in ("timeout", "extra_body")}
    body.update(params.get("extra_body") or {})
    return body, notes


def openai_line_outcome(line: Mapping[str, Any]) -> Outcome:
    """One line of an OpenAI batch output or error file (also vLLM ``run-batch`` output)."""
    err = line.get("error")
    resp = line.get("response") if isinstance(line.get("response"), Mapping) else None
    if err:
        msg = err.get("message") if isinstance(err, Mapping) else str(err)
        return Outcome(error=f"batch request error: {redact_text(msg, limit=ERROR_LIMIT)}")
    if resp is None:
        return Outcome(error="batch result line without a response")
    status = resp.get("status_code")
    body = resp.get("body")
    if status != 200:
        msg = body.get("error", {}).get("message") if isinstance(body, Mapping) and \
            isinstance(body.get("error"), Mapping) else str(body)[:200]
        return Outcome(error=f"batch request failed (HTTP {status}): {redact_text(msg, limit=ERROR_LIMIT)}",
                       decision=status_decision(status))
    return Outcome(answer=body)


def status_decision(status: Any) -> RetryDecision:
    """The retry decision for a batch line's HTTP status: 429 a rate limit; 408, 409, 5xx and a
    missing status transient; any other status fatal."""
    if status == 429:
        return RetryDecision.rate_limit()
    if not isinstance(status, int) or status in (408, 409) or status >= 500:
        return RetryDecision.transient()
    return RetryDecision.fatal()


class OpenAIBatches:
    """OpenAI Batch API through ``AsyncOpenAI`` (the judge's own client: key, base URL, transport).  Its
    bodies are OpenAI batch lines, which ``verdictlab batch export`` also writes to a file."""

    max_requests = 50_000
    offline_file = True

    def __init__(self, judge: Any) -> None:
        self.judge = judge

    def body(self, request: JudgeRequest) -> tuple[dict[str, Any], list[str]]:
        return openai_body(self.judge, request)

    async def submit(self, bodies: Sequence[tuple[str, dict[str, Any]]], key: str) -> str:
        client = self.judge.client()
        lines = [json.dumps({"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": body})
                 for cid, body in bodies]
        f = await client.files.create(file=("verdictlab-batch.jsonl", ("\n".join(lines) + "\n").encode()),
                                      purpose="batch")
        b = await client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                                        completion_window="24h", metadata={"verdictlab_key": key})
        return str(b.id)

    async def find(self, key: str) -> str | None:
        """The id of the batch submitted with ``key`` (its metadata), if the provider has it."""
        async for b in self.judge.client().batches.list(limit=100):
            if (getattr(b, "metadata", None) or {}).get("verdictlab_key") == key:
                return str(b.id)
        return None

    async def status(self, batch_id: str) -> tuple[bool, str]:
        b = await self.judge.client().batches.retrieve(batch_id)
        counts = getattr(b, "request_counts", None)
        done = f" {counts.completed + counts.failed}/{counts.total}" if counts is not None else ""
        return b.status in _OPENAI_DONE, f"{b.status}{done}"

    async def results(self, batch_id: str) -> dict[str, Outcome]:
        client = self.judge.client()
        b = await client.batches.retrieve(batch_id)
        out: dict[str, Outcome] = {}
        for fid in (b.output_file_id, b.error_file_id):
            if not fid:
                continue
            text = (await client.files.content(fid)).text
            for raw in text.splitlines():
                if raw.strip():
                    line = json.loads(raw)
                    out[str(line.get("custom_id"))] = openai_line_outcome(line)
        return out

    def response(self, answer: Any, request: JudgeRequest, body: dict[str, Any], notes: list[str]) -> JudgeResponse:
        return self.judge.read_answer(answer, request, body, notes)

    def line_outcome(self, line: Any) -> Outcome:
        return openai_line_outcome(line)


__all__ = ["OpenAIBatches", "openai_body", "openai_line_outcome", "status_decision"]
