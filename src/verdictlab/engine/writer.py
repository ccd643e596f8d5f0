"""The store writer of a run: judgment, attempt and cache rows committed together in small
transactions, so a killed run loses only what was in flight."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..core.judgment import Judgment
from ..store import RunStore


class Writer:
    """Buffers judgment, attempt and cache rows and commits them together in small transactions
    (every ``flush_rows`` judgments or ``flush_s`` seconds, whichever comes first).  It is the
    :class:`~verdictlab.engine.caller.CallLog` of the callers of a run."""

    def __init__(self, store: RunStore, *, flush_rows: int = 32, flush_s: float = 0.2) -> None:
        self.store = store
        self.flush_rows = flush_rows
        self.flush_s = flush_s
        self.rows: list[Judgment] = []
        self.attempts: list[dict[str, Any]] = []
        self.cache: list[tuple[str, str, str, float]] = []
        self.written = 0

    def add_attempt(self, row: dict[str, Any]) -> None:
        self.attempts.append(row)

    def add_cache_entry(self, key: str, judge: str, response_json: str) -> None:
        self.cache.append((key, judge, response_json, time.time()))

    def add_row(self, row: Judgment) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.flush_rows:
            self.flush()

    def flush(self) -> int:
        attempts, self.attempts = self.attempts, []
        cache, self.cache = self.cache, []
        rows, self.rows = self.rows, []
        n = self.store.write_batch(judgments=rows, attempts=attempts, cache=cache)
        self.written += n
        return n

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.flush_s)
            self.flush()


__all__ = ["Writer"]
