"""The trial runner: a list of trials -> executor -> caller -> store writer.

(A whole run of a config into a run directory -- lock, meta, items check, budget across sessions,
signals -- is :mod:`verdictlab.engine.run`; this module judges the trials it is given.)

:func:`run_trials` skips the trials already stored (resume), gives each judge a
:class:`~verdictlab.engine.caller.JudgeCaller` (cache, limits, retries, timeout, budget, accounting,
scrubbing), lets an :class:`~verdictlab.engine.executor.Executor` schedule the trials, turns each
answer into a :class:`~verdictlab.core.judgment.Judgment` and hands it to the :class:`~verdictlab.engine.writer.Writer`, which
commits judgments, attempts and cache entries in small transactions.

Guarantees
----------
- One row per trial: the store is unique on ``trial_id`` and a trial is written once, when it is
  finished (answered, or failed for good after its retries).  A killed run loses only the calls in
  flight; rerunning the same config into the same run dir resumes.
- A trial whose calls all failed is stored with ``verdict`` NULL, ``parse_status`` 'failed' and the
  last (key-free) error, so it is counted, not hidden; ``retry_failed`` removes those rows first so
  they are judged again.
- A judge whose trials fail for good ``max_consecutive_failures`` times in a row (a bad key) is
  halted; the other judges go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import random
import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.design import Trial
from ..core.items import PairItem, PointItem
from ..core.judgment import Judgment
from ..judges.base import JudgeAPI
from ..protocols.base import Protocol
from ..store import RunStore
from .caller import JudgeCaller, RunControl
from .config import JudgeSpec
from .executor import Executor, Lane, LocalExecutor
from .limits import Budget, PriceTable, default_price_table
from .summary import EngineError, RunSummary
from .trials import RequestBuilder, judge_trial
from .writer import Writer

Item = PairItem | PointItem
YIELD_EVERY_S = 0.01     # the longest the trials of a run hold the event loop without a turn


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel that can draw a live bar: rich's own detection of a
    notebook (IPython's ZMQ shell, VS Code's, Databricks') with ipywidgets installed (rich draws its live
    display in an ipywidgets ``Output``; without it rich only warns).  IPython not yet imported means no
    notebook, without importing rich."""
    if "IPython" not in sys.modules:
        return False
    from rich.console import Console

    return Console().is_jupyter and importlib.util.find_spec("ipywidgets") is not None


class Progress:
    """A rich progress bar (items done, rate, ETA, the calls with their retries and rate limits, spend) on a
    terminal, or in the cell of a Jupyter notebook (:func:`in_notebook`); nothing otherwise (a pipe, a log)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.enabled = enabled and total > 0 and (sys.stderr.isatty() or in_notebook())
        self._p: Any = None
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            self._p = RichProgress(TextColumn("[bold]judging"), BarColumn(), MofNCompleteColumn(),
                                   TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA"),
                                   TimeRemainingColumn(), TextColumn("{task.fields[calls]}"),
                                   TextColumn("{task.fields[spend]}"), console=Console(stderr=True), transient=False)
            self._task = self._p.add_task("judging", total=total, rate="", calls="", spend="")
            self._t0 = time.monotonic()
            self._n = 0

    def __enter__(self) -> Progress:
        if self._p is not None:
            self._p.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._p is not None:
            self._p.refresh()     # the final count: rich's stop() draws none in a notebook
            self._p.stop()

    def advance(self, summary: RunSummary) -> None:
        if self._p is None:
            return
        self._n += 1
        dt = max(1e-9, time.monotonic() - self._t0)
        spend = f"${summary.cost_usd:.4f}" if summary.cost_usd else f"{summary.tokens_in + summary.tokens_out:,} tok"
        self._p.update(self._task, advance=1, rate=f"{self._n / dt:.1f}/s", calls=self.calls_field(summary),
                       spend=spend)

    @staticmethod
    def calls_field(summary: RunSummary) -> str:
        """``calls 107 (11 retries, 9 × 429)``: the calls so far, and why there are more than trials."""
        extra = [f"{summary.retries} retries"] if summary.retries else []
        extra += [f"{summary.rate_limited} × 429"] if summary.rate_limited else []
        return f"calls {summary.calls}" + (f" ({', '.join(extra)})" if extra else "")


class _Session:
    """One run_trials session: what judging one trial means (request -> caller -> row -> writer)."""

    def __init__(self, *, items: Mapping[tuple[str, str], Item], protocols: Mapping[str, Protocol],
                 builders: Mapping[str, RequestBuilder], cache: str, writer: Writer, summary: RunSummary,
                 control: RunControl, bar: Progress, max_consecutive_failures: int) -> None:
        self.items = items
        self.protocols = protocols
        self.builders = builders
        self.cache = cache
        self.writer = writer
        self.summary = summary
        self.control = control
        self.bar = bar
        self.max_consecutive_failures = max_consecutive_failures
        self._next_yield = 0.0

    def record(self, row: Judgment, lane: Lane) -> None:
        s = self.summary
        s.n_written += 1
        if row.error is not None:
            s.n_failed += 1
            lane.consecutive_failed += 1
            if lane.consecutive_failed >= self.max_consecutive_failures and lane.halted is None:
                reason = (f"judge {lane.caller.judge.judge_id!r} halted after {lane.consecutive_failed} trials "
                          f"in a row failed (last error: {row.error}); fix the cause, then rerun "
                          "with --retry-failed")
                lane.halt(reason)
                self.control.note(reason)
        else:
            lane.consecutive_failed = 0
            if row.verdict is None:
                s.n_parse_failed += 1
        if row.cache_hit:
            s.n_cache_hits += 1
        self.writer.add_row(row)
        self.bar.advance(s)

    async def judge_one(self, trial: Trial, lane: Lane) -> Judgment | None:
        """Judge one trial; returns the row written (None when the call did not finish: stopped)."""
        row = await judge_trial(trial, self.items[(trial.dataset, trial.item_id)], self.protocols[trial.protocol],
                                self.builders[trial.judge], lane.caller, self.cache)
        if row is not None:
            self.record(row, lane)
        # give the event loop a turn every YIELD_EVERY_S: a judge that answers without awaiting (the sim
        # judge, a cache hit) would otherwise hold the loop for the whole run, and no stop, flush or
        # signal could act (a turn after every trial costs ~10% of a simulated run)
        now = time.monotonic()
        if now >= self._next_yield:
            self._next_yield = now + YIELD_EVERY_S
            await asyncio.sleep(0)
        return row


def _lanes(judges: Mapping[str, JudgeAPI], judge_specs: Mapping[str, JudgeSpec], *, store: RunStore,
           budget: Budget, prices: PriceTable, writer: Writer, control: RunControl, summary: RunSummary,
           seed: int, backoff_base_s: float | None, backoff_cap_s: float | None) -> dict[str, Lane]:
    lanes: dict[str, Lane] = {}
    for jid, judge in judges.items():
        spec = judge_specs.get(jid) or JudgeSpec(id=jid)
        lanes[jid] = Lane(JudgeCaller(judge, spec, budget=budget, prices=prices, log=writer, cache=store,
                                      control=control, spend=summary, rng=random.Random(f"{seed}:{jid}"),
                                      backoff_base_s=backoff_base_s, backoff_cap_s=backoff_cap_s))
    return lanes


async def run_trials(trials: Iterable[Trial], *, store: RunStore, items: Mapping[tuple[str, str], Item],
                     judges: Mapping[str, JudgeAPI], protocols: Mapping[str, Protocol],
                     judge_specs: Mapping[str, JudgeSpec] | None = None, cache: str = "auto",
                     seed: int = 42, budget: Budget | None = None, prices: PriceTable | None = None,
                     progress: bool = False, summary: RunSummary | None = None,
                     flush_rows: int = 32, flush_s: float = 0.2,
                     backoff_base_s: float | None = None, backoff_cap_s: float | None = None,
                     retry_failed: bool = False, max_consecutive_failures: int = 8,
                     executor: Executor | None = None) -> RunSummary:
    """Judge ``trials`` (skipping any already in ``store``) and write one row per trial.

    ``items`` maps ``(dataset, item_id)`` to the item; ``judges`` and ``protocols`` map ids to
    instances; ``judge_specs`` gives per-judge call settings (defaults otherwise).  Returns the
    session summary; ``summary.stopped`` says why it ended early (budget, interrupted, a judge
    halted after ``max_consecutive_failures`` trials in a row failed for good -- e.g. a bad key).
    ``retry_failed`` first removes the rows of these trials whose calls failed for good (error
    set; unparseable answers are kept) so they are judged again; the attempts table keeps them.
    ``executor`` schedules the trials (default: :class:`~verdictlab.engine.executor.LocalExecutor`).
    """
    trials = list(trials)
    summary = summary or RunSummary(run_dir=store.run_dir)
    if not summary.n_trials:
        summary.n_trials = len(trials)
    if retry_failed:
        summary.n_retried_failed = store.delete_failed(t.trial_id for t in trials)
    done = store.done_trial_ids()
    todo = [t for t in trials if t.trial_id not in done]
    summary.n_skipped = len(trials) - len(todo)
    budget = budget or Budget()
    prices = prices or default_price_table()
    judge_specs = judge_specs or {}
    writer = Writer(store, flush_rows=flush_rows, flush_s=flush_s)
    control = RunControl()
    lanes = _lanes(judges, judge_specs, store=store, budget=budget, prices=prices, writer=writer,
                   control=control, summary=summary, seed=seed, backoff_base_s=backoff_base_s,
                   backoff_cap_s=backoff_cap_s)
    for t in todo:
        if t.judge not in lanes:
            raise EngineError(f"trial for unknown judge {t.judge!r}")
        lanes[t.judge].trials.append(t)
    builders = {jid: RequestBuilder(lane.caller.judge, lane.caller.spec, seed=seed) for jid, lane in lanes.items()}

    t_start = time.monotonic()
    flusher = asyncio.create_task(writer.run())
    try:
        with Progress(len(todo), progress) as bar:
            session = _Session(items=items, protocols=protocols, builders=builders, cache=cache, writer=writer,
                               summary=summary, control=control, bar=bar,
                               max_consecutive_failures=max_consecutive_failures)
            executor = executor or LocalExecutor()
            executor.attach(session)   # an executor that judges elsewhere records through the session
            await executor.execute({j: ln for j, ln in lanes.items() if ln.trials}, session.judge_one, control)
    finally:
        flusher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await flusher
        writer.flush()
        summary.elapsed_s += time.monotonic() - t_start
        _note_stops(summary, control)
    return summary


def _note_stops(summary: RunSummary, control: RunControl) -> None:
    for reason in control.reasons:
        summary.stopped = reason if not summary.stopped else f"{summary.stopped}; {reason}"


__all__ = ["Progress", "in_notebook", "run_trials"]
