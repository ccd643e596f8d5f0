"""Anthropic Message Batches for Anthropic judges (:class:`AnthropicBatches`, the adapter
:meth:`~verdictlab.judges.anthropic_api.AnthropicJudge.batch_adapter` returns)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.redact import ERROR_LIMIT, redact_text
from .base import JudgeRequest, JudgeResponse, RetryDecision
from .batch import Outcome


def anthropic_body(judge: Any, request: JudgeRequest) -> tuple[dict[str, Any], list[str]]:
    """The Messages API params the judge would send for ``request`` (``extra_body`` merged)."""
    params, notes = judge.build_params(request)
    body = {k: v for k, v in params.items() if k not in ("timeout", "extra_body")}
    body.update(params.get("extra_body") or {})
    return body, notes


class AnthropicBatches:
    """Anthropic Message Batches through ``AsyncAnthropic`` (the judge's own client)."""

    max_requests = 100_000
    offline_file = False

    def __init__(self, judge: Any) -> None:
        self.judge = judge

    def body(self, request: JudgeRequest) -> tuple[dict[str, Any], list[str]]:
        return anthropic_body(self.judge, request)

    async def find(self, key: str) -> str | None:
        return None                 # Message Batches carry no metadata to find a batch by

    async def submit(self, bodies: Sequence[tuple[str, dict[str, Any]]], key: str) -> str:
        client = self.judge.client()
        b = await client.messages.batches.create(requests=[{"custom_id": cid, "params": body}
                                                           for cid, body in bodies])
        return str(b.id)

    async def status(self, batch_id: str) -> tuple[bool, str]:
        b = await self.judge.client().messages.batches.retrieve(batch_id)
        c = b.request_counts
        n = c.succeeded + c.errored + c.canceled + c.expired
        return b.processing_status == "ended", f"{b.processing_status} {n}/{n + c.processing}"

    async def results(self, batch_id: str) -> dict[str, Outcome]:
        client = self.judge.client()
        out: dict[str, Outcome] = {}
        async for r in await client.messages.batches.results(batch_id):
            res = r.result
            if res.type == "succeeded":
                out[r.custom_id] = Outcome(answer=res.message)
            elif res.type == "errored":
                err = getattr(getattr(res, "error", None), "error", None)
                kind = getattr(err, "type", "error")
                msg = redact_text(getattr(err, "message", ""), limit=ERROR_LIMIT)
                fatal = kind in ("invalid_request_error", "authentication_error", "permission_error",
                                 "not_found_error")
                out[r.custom_id] = Outcome(error=f"batch request errored ({kind}): {msg}",
                                           decision=RetryDecision.fatal() if fatal else RetryDecision.transient())
            else:   # canceled / expired: never processed
                out[r.custom_id] = Outcome(error=f"batch request {res.type}")
        return out

    def response(self, answer: Any, request: JudgeRequest, body: dict[str, Any], notes: list[str]) -> JudgeResponse:
        return self.judge.read_message(answer, request, notes)

    def line_outcome(self, line: Any) -> Outcome:
        raise NotImplementedError("Message Batches results are not written to a file")


__all__ = ["AnthropicBatches", "anthropic_body"]
