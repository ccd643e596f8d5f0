"""Executors: how the trials of a run are scheduled.  An executor is handed, per judge, a queue of
trials and the function that judges one trial (build the request, call the judge through its
:class:`~verdictlab.engine.caller.JudgeCaller`, write the row); it decides only *when* each trial
runs.  Later executors (adaptive repetitions, batch APIs, Ray) implement :class:`Executor` without
touching the caller or the store.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..core.design import Trial
from .caller import JudgeCaller, RunControl

JudgeOne = Callable[[Trial, "Lane"], Awaitable[Any]]   # returns the written row (or None)


@dataclass
class Lane:
    """One judge's share of a run: its caller and the trials still to judge."""

    caller: JudgeCaller
    trials: collections.deque[Trial] = field(default_factory=collections.deque)
    consecutive_failed: int = 0

    @property
    def halted(self) -> str | None:
        return self.caller.halted

    def halt(self, reason: str) -> None:
        self.caller.halted = reason
        self.trials.clear()


class Executor(Protocol):
    """Runs ``judge_one`` over every lane's trials until they are done or ``control`` stops.

    ``attach(session)`` is called by the runner before ``execute``: an executor that judges elsewhere
    (a batch API, Ray workers) records its results through the session
    (:class:`~verdictlab.engine.trial_runner._Session`: ``record(row, lane)``, ``builders``, ``items``...)."""

    def attach(self, session: Any) -> None: ...

    async def execute(self, lanes: Mapping[str, Lane], judge_one: JudgeOne, control: RunControl) -> None: ...


class BaseExecutor:
    """Base class of the executors: the optional :meth:`attach` hook declared with its no-op default."""

    def attach(self, session: Any) -> None:
        return None

    async def execute(self, lanes: Mapping[str, Lane], judge_one: JudgeOne, control: RunControl) -> None:
        raise NotImplementedError


class LocalExecutor(BaseExecutor):
    """The asyncio executor: per judge, as many workers as the caller's concurrency, each taking the
    next trial of its lane (repetitions of a trial back to back, so a local judge reuses its prompt
    cache).  Cancelling it cancels every worker."""

    async def execute(self, lanes: Mapping[str, Lane], judge_one: JudgeOne, control: RunControl) -> None:
        tasks: list[asyncio.Task[None]] = []
        for lane in lanes.values():
            n = min(lane.caller.concurrency, len(lane.trials))
            tasks += [asyncio.create_task(self._worker(lane, judge_one, control)) for _ in range(n)]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    @staticmethod
    async def _worker(lane: Lane, judge_one: JudgeOne, control: RunControl) -> None:
        trials = lane.trials
        while trials and not control.stopped and not lane.halted:
            await judge_one(trials.popleft(), lane)


__all__ = ["BaseExecutor", "Executor", "JudgeOne", "Lane", "LocalExecutor"]
