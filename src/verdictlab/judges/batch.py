"""What a judge backend with a provider batch API declares: its :class:`BatchAdapter` (returned by
:meth:`~verdictlab.judges.base.JudgeAPI.batch_adapter`), which turns requests into the provider's batch
bodies, submits them, polls the batch and reads its results back as :class:`Outcome` s.

The batch executor (``engine/batch.py``) asks the judge for its adapter and never looks at the
provider's name: a new backend with a batch API writes an adapter beside its module and returns it
from ``batch_adapter``.  Everything around the calls -- reservations, budget, batch price, retries,
cache, the store's record of each batch -- stays the caller's and the executor's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Protocol

from .base import JudgeRequest, JudgeResponse, RetryDecision


@dataclasses.dataclass
class Outcome:
    """One request's result inside a batch: the provider's answer (a chat completion dict or an
    Anthropic message), or the error and its typed retry decision (the caller decides from it
    whether the request goes into another batch)."""

    answer: Any = None
    error: str | None = None
    decision: RetryDecision = dataclasses.field(default_factory=RetryDecision.transient)


class BatchAdapter(Protocol):
    """A provider's batch API for one judge.

    ``max_requests``: requests per batch (the provider's limit).  ``offline_file``: the bodies are
    OpenAI batch lines that ``verdictlab batch export`` may write to a file for another machine
    (``vllm run-batch``) and ``batch import`` read back through :meth:`line_outcome`."""

    max_requests: int
    offline_file: bool

    def body(self, request: JudgeRequest) -> tuple[dict[str, Any], list[str]]:
        """The provider's request body for ``request``, and notes (parameters dropped, ...)."""

    async def submit(self, bodies: Sequence[tuple[str, dict[str, Any]]], key: str) -> str:
        """Submit ``(custom_id, body)`` pairs as one batch labelled ``key``; the batch id."""

    async def find(self, key: str) -> str | None:
        """The id of the batch submitted with ``key``, if the provider can find it (else None)."""

    async def status(self, batch_id: str) -> tuple[bool, str]:
        """``(ended, status text for the progress bar)``."""

    async def results(self, batch_id: str) -> dict[str, Outcome]:
        """Every request's outcome by custom id, once the batch ended."""

    def response(self, answer: Any, request: JudgeRequest, body: dict[str, Any], notes: list[str]) -> JudgeResponse:
        """The judge's response read from one answer (raises ``JudgeCallError`` when unreadable)."""

    def line_outcome(self, line: Any) -> Outcome:
        """One line of a results file (``offline_file`` adapters only)."""


__all__ = ["BatchAdapter", "Outcome"]
