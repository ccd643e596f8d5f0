"""The run engine: turns a :class:`~verdictlab.config.RunConfig` into judgment rows in a run store.

Flow: load and validate every dataset (nothing is judged before all items are known to be good) ->
build judges and protocols -> expand the trial grid -> skip trials already in the store (resume) ->
run the rest concurrently, per judge, with that judge's concurrency limit, rate limits, retries,
timeouts and the run budget -> parse each answer, map it to canonical terms and write one row per
trial in small transactions.

Guarantees
----------
- One row per trial: the store is unique on ``trial_id`` and a trial is written once, when it is
  finished (answered, or failed for good after its retries).  A killed run loses only the calls in
  flight; rerunning the same config into the same run dir resumes.
- Retries follow the backend's typed :class:`~verdictlab.judges.base.RetryDecision` (rate limit /
  transient / fatal), never error text.  A per-call timeout counts as transient.  Every attempt
  (ok / retry / failed) is recorded in the ``attempts`` table.
- A trial whose calls all failed is stored with ``verdict`` NULL, ``parse_status`` 'failed' and the
  last (key-free) error, so it is counted, not hidden; delete those rows to retry them.
- The response cache is keyed by the full request *including the repetition index*, so a
  repetition is never answered with another repetition's output (see :mod:`verdictlab.config`).
- The budget (calls, tokens, dollars) counts the whole run across resumes and stops cleanly:
  calls in flight finish, nothing new starts, and a rerun with a larger budget continues.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import importlib.metadata
import inspect
import json
import math
import os
import platform
import random
import re
import signal
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .config import JudgeSpec, RunConfig
from .design import Trial, expand_grid
from .items import PairItem, PointItem, to_canonical, to_shown
from .judges.base import JudgeAPI, JudgeCallError, JudgeRequest, JudgeResponse, RetryDecision
from .limits import Budget, PriceTable, TokenBucket, backoff_delay, default_price_table
from .protocols.base import ParseResult, Protocol
from .store import RunStore

Item = PairItem | PointItem

CACHE_DDL = """
CREATE TABLE IF NOT EXISTS cache (
    key TEXT PRIMARY KEY, judge TEXT NOT NULL, response TEXT NOT NULL, created_at REAL NOT NULL
);
"""


class EngineError(RuntimeError):
    """The run cannot start (bad dataset, unknown protocol or judge, ...)."""


# -- results -------------------------------------------------------------------------------------
@dataclass
class JudgePlan:
    judge: str
    n_trials: int
    n_done: int
    n_remaining: int
    est_tokens_in: int
    est_tokens_out_max: int
    est_cost_usd: float | None


@dataclass
class Plan:
    """What a run would do: trial counts and a rough token / cost estimate (prompt chars / 4 for
    input; the max_tokens ceiling for output, so cost is an upper-bound estimate)."""

    n_trials: int
    n_done: int
    n_remaining: int
    judges: list[JudgePlan] = field(default_factory=list)

    @property
    def est_tokens_in(self) -> int:
        return sum(j.est_tokens_in for j in self.judges)

    @property
    def est_tokens_out_max(self) -> int:
        return sum(j.est_tokens_out_max for j in self.judges)

    @property
    def est_cost_usd(self) -> float | None:
        costs = [j.est_cost_usd for j in self.judges if j.n_remaining]
        return None if any(c is None for c in costs) else float(sum(costs))  # type: ignore[arg-type]

    def lines(self) -> list[str]:
        out = [f"trials: {self.n_trials}  done: {self.n_done}  remaining: {self.n_remaining}"]
        for j in self.judges:
            cost = "unknown (no price for this model)" if j.est_cost_usd is None else f"${j.est_cost_usd:.4f}"
            out.append(f"  {j.judge}: {j.n_remaining} of {j.n_trials} remaining, "
                       f"~{j.est_tokens_in:,} prompt tokens, <= {j.est_tokens_out_max:,} output tokens, "
                       f"cost <= {cost}")
        total = self.est_cost_usd
        out.append(f"estimated tokens: ~{self.est_tokens_in:,} in, <= {self.est_tokens_out_max:,} out; "
                   f"estimated cost: {'unknown' if total is None else f'<= ${total:.4f}'}")
        return out


@dataclass
class RunSummary:
    """What one ``run`` session did."""

    run_dir: Path
    n_trials: int = 0          # trials in the grid
    n_skipped: int = 0         # already in the store when the session started
    n_written: int = 0         # rows written by this session
    n_failed: int = 0          # of which: calls failed for good (verdict NULL, error set)
    n_parse_failed: int = 0    # of which: answered but unparseable (verdict NULL)
    n_cache_hits: int = 0      # of which: served from the response cache
    calls: int = 0             # judge calls made (attempts, retries included)
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    elapsed_s: float = 0.0
    stopped: str | None = None  # why the session stopped early (budget, interrupted, failing judge)
    n_retried_failed: int = 0  # failed rows removed at the start to be judged again (--retry-failed)
    plan: Plan | None = None

    @property
    def n_remaining(self) -> int:
        return max(0, self.n_trials - self.n_skipped - self.n_written)

    @property
    def complete(self) -> bool:
        return self.n_remaining == 0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["run_dir"] = str(self.run_dir)
        d["n_remaining"] = self.n_remaining
        d.pop("plan", None)
        return d


# -- helpers -------------------------------------------------------------------------------------
_KEY_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(?:sk|pk|rk|sess)-[A-Za-z0-9_\-]{8,}"), "[redacted]"),
    (re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-]{8,}"), r"\1[redacted]"),
    (re.compile(r"(?i)((?:api[_-]?key|token|secret|authorization)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{6,}"),
     r"\1[redacted]"),
)


def redact(text: str, *, limit: int = 500) -> str:
    """Remove anything that looks like a credential from an error text (environment values of
    variables named *KEY*/*TOKEN*/*SECRET*, ``sk-...`` keys, bearer tokens) and shorten it."""
    for name, value in os.environ.items():
        if value and len(value) >= 8 and any(s in name.upper() for s in ("KEY", "TOKEN", "SECRET")):
            text = text.replace(value, "[redacted]")
    for pat, repl in _KEY_PATTERNS:
        text = pat.sub(repl, text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def derived_seed(run_seed: int, trial_id: str) -> int:
    """A per-trial sampling seed: reproducible across reruns, different for every repetition and
    order (the same seed for all repetitions would make them identical and C meaningless)."""
    h = hashlib.sha1(f"{run_seed}\x1f{trial_id}".encode()).hexdigest()
    return int(h[:8], 16) % (2**31 - 1)


def library_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"verdictlab": __version__, "python": platform.python_version(),
                                  "platform": platform.platform()}
    for dist in ("llama_cpp_python", "numpy", "pandas", "pydantic", "openai", "anthropic", "vllm"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def _response_to_json(resp: JudgeResponse) -> str:
    return json.dumps({"text": resp.text, "tokens_in": resp.tokens_in, "tokens_out": resp.tokens_out,
                       "cost_usd": resp.cost_usd, "latency_s": resp.latency_s,
                       "choice_probs": resp.choice_probs, "top_logprobs": resp.top_logprobs,
                       "notes": list(resp.notes)})


def _response_from_json(s: str) -> JudgeResponse:
    d = json.loads(s)
    return JudgeResponse(text=d["text"], tokens_in=d.get("tokens_in"), tokens_out=d.get("tokens_out"),
                         cost_usd=d.get("cost_usd"), latency_s=d.get("latency_s"),
                         choice_probs=d.get("choice_probs"), top_logprobs=d.get("top_logprobs"),
                         notes=list(d.get("notes") or []))


def canonical_p_a(choice_probs: Mapping[str, float] | None, order: str) -> float | None:
    """P(canonical A wins) from the shown-terms choice probabilities, renormalised over A and B.

    For order AB canonical A is shown first ("A"); for BA it is shown second ("B")."""
    if not choice_probs:
        return None
    shown_a = "A" if order == "AB" else "B"
    pa, pb = choice_probs.get("A"), choice_probs.get("B")
    if pa is None or pb is None:
        return None
    total = float(pa) + float(pb)
    if not math.isfinite(total) or total <= 0:
        return None
    return float(choice_probs[shown_a]) / total


def safe_parse(protocol: Protocol, text: str, response: JudgeResponse | None = None) -> ParseResult:
    """Parse, never raise.  A protocol with ``parse_response`` (e.g. geval: probability-weighted
    scores from token log-probabilities) gets the whole response."""
    try:
        if response is not None and hasattr(protocol, "parse_response"):
            return protocol.parse_response(response)
        return protocol.parse(text)
    except Exception as exc:  # a parser bug must not kill the run; it is recorded instead
        return ParseResult(None, "failed", f"parser raised {type(exc).__name__}: {redact(str(exc), limit=200)}")


def _estimate_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    return max(1, sum(len(m.get("content", "")) for m in messages) // 4)


# -- the writer ----------------------------------------------------------------------------------
class _Writer:
    """Buffers judgment, attempt and cache rows and commits them in small transactions
    (every ``flush_rows`` judgments or ``flush_s`` seconds, whichever comes first)."""

    def __init__(self, store: RunStore, *, flush_rows: int = 32, flush_s: float = 0.2) -> None:
        self.store = store
        self.flush_rows = flush_rows
        self.flush_s = flush_s
        self.rows: list[dict[str, Any]] = []
        self.attempts: list[dict[str, Any]] = []
        self.cache: list[tuple[str, str, str, float]] = []
        self.written = 0

    def add_row(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.flush_rows:
            self.flush()

    def flush(self) -> int:
        attempts, self.attempts = self.attempts, []
        cache, self.cache = self.cache, []
        rows, self.rows = self.rows, []
        if attempts:
            self.store.add_attempts(attempts)
        if cache:
            with self.store.transaction() as conn:
                conn.executemany("INSERT OR REPLACE INTO cache(key, judge, response, created_at) "
                                 "VALUES (?, ?, ?, ?)", cache)
        n = self.store.add_judgments(rows) if rows else 0
        self.written += n
        return n

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.flush_s)
            self.flush()


# -- the executor --------------------------------------------------------------------------------
@dataclass
class _JudgeLane:
    judge: JudgeAPI
    spec: JudgeSpec
    trials: collections.deque[Trial]
    requests: TokenBucket | None
    tokens: TokenBucket | None
    rng: random.Random
    consecutive_failed: int = 0
    halted: str | None = None


class _Progress:
    def __init__(self, total: int, enabled: bool) -> None:
        self.enabled = enabled and total > 0 and sys.stderr.isatty()
        self._p = None
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._p = Progress(TextColumn("[bold]judging"), BarColumn(), MofNCompleteColumn(),
                               TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA"),
                               TimeRemainingColumn(), TextColumn("{task.fields[spend]}"),
                               console=Console(stderr=True), transient=False)
            self._task = self._p.add_task("judging", total=total, rate="", spend="")
            self._t0 = time.monotonic()
            self._n = 0

    def __enter__(self) -> _Progress:
        if self._p is not None:
            self._p.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._p is not None:
            self._p.stop()

    def advance(self, summary: RunSummary) -> None:
        if self._p is None:
            return
        self._n += 1
        dt = max(1e-9, time.monotonic() - self._t0)
        spend = f"${summary.cost_usd:.4f}" if summary.cost_usd else f"{summary.tokens_in + summary.tokens_out:,} tok"
        self._p.update(self._task, advance=1, rate=f"{self._n / dt:.1f}/s", spend=spend)


async def run_trials(trials: Iterable[Trial], *, store: RunStore, items: Mapping[tuple[str, str], Item],
                     judges: Mapping[str, JudgeAPI], protocols: Mapping[str, Protocol],
                     judge_specs: Mapping[str, JudgeSpec] | None = None, cache: str = "auto",
                     seed: int = 42, budget: Budget | None = None, prices: PriceTable | None = None,
                     progress: bool = False, summary: RunSummary | None = None,
                     flush_rows: int = 32, flush_s: float = 0.2,
                     backoff_base_s: float | None = None, backoff_cap_s: float | None = None,
                     retry_failed: bool = False, max_consecutive_failures: int = 8) -> RunSummary:
    """Judge ``trials`` (skipping any already in ``store``) and write one row per trial.

    ``items`` maps ``(dataset, item_id)`` to the item; ``judges`` and ``protocols`` map ids to
    instances; ``judge_specs`` gives per-judge call settings (defaults otherwise).  Returns the
    session summary; ``summary.stopped`` says why it ended early (budget, interrupted, a judge
    halted after ``max_consecutive_failures`` trials in a row failed for good -- e.g. a bad key).
    ``retry_failed`` first removes the rows of these trials whose calls failed for good (error
    set; unparseable answers are kept) so they are judged again; the attempts table keeps them.
    """
    store.conn.executescript(CACHE_DDL)
    trials = list(trials)
    summary = summary or RunSummary(run_dir=store.run_dir)
    if not summary.n_trials:
        summary.n_trials = len(trials)
    if retry_failed:
        wanted = {t.trial_id for t in trials}
        failed = [r[0] for r in store.conn.execute("SELECT trial_id FROM judgments WHERE error IS NOT NULL")
                  if r[0] in wanted]
        if failed:
            with store.transaction() as conn:
                conn.executemany("DELETE FROM judgments WHERE trial_id = ?", [(t,) for t in failed])
        summary.n_retried_failed = len(failed)
    done = store.done_trial_ids()
    todo = [t for t in trials if t.trial_id not in done]
    summary.n_skipped = len(trials) - len(todo)
    budget = budget or Budget()
    prices = prices or default_price_table()
    judge_specs = judge_specs or {}
    writer = _Writer(store, flush_rows=flush_rows, flush_s=flush_s)
    stop = asyncio.Event()

    lanes: dict[str, _JudgeLane] = {}
    for jid, judge in judges.items():
        spec = judge_specs.get(jid) or JudgeSpec(id=jid)
        lanes[jid] = _JudgeLane(
            judge=judge, spec=spec, trials=collections.deque(),
            requests=TokenBucket(spec.requests_per_minute) if spec.requests_per_minute else None,
            tokens=TokenBucket(spec.tokens_per_minute) if spec.tokens_per_minute else None,
            rng=random.Random(f"{seed}:{jid}"))
    for t in todo:
        if t.judge not in lanes:
            raise EngineError(f"trial for unknown judge {t.judge!r}")
        lanes[t.judge].trials.append(t)

    def cache_get(key: str) -> JudgeResponse | None:
        row = store.conn.execute("SELECT response FROM cache WHERE key = ?", (key,)).fetchone()
        return None if row is None else _response_from_json(row[0])

    def build_row(trial: Trial, item: Item, protocol: Protocol, lane: _JudgeLane,
                  resp: JudgeResponse | None, *, prompt_hash: str, attempts: int, error: str | None,
                  cache_hit: bool, latency: float | None, tid: str) -> dict[str, Any]:
        is_pair = isinstance(item, PairItem)
        row: dict[str, Any] = {
            "trial_id": tid, "judge": trial.judge, "dataset": trial.dataset,
            "item_id": trial.item_id, "protocol": trial.protocol, "order": trial.order,
            "temperature": trial.temperature, "rep": trial.rep, "step": trial.step,
            "label": item.label if is_pair else (None if item.label is None else str(item.label)),
            "category": item.category, "prompt_hash": prompt_hash, "attempts": attempts,
            "error": error, "cache_hit": int(cache_hit),
        }
        if resp is None:
            row.update(verdict=None, parse_status="failed", parse_detail="no answer: the call failed",
                       raw_output=None)
            return row
        parsed = safe_parse(protocol, resp.text, resp)
        shown = parsed.verdict
        if is_pair:
            verdict = to_canonical(shown, trial.order)
            sfw = None if shown not in ("A", "B") else int(shown == "A")
            p_a = canonical_p_a(resp.choice_probs, trial.order)
        else:
            verdict, sfw, p_a = shown, None, None
        cost = resp.cost_usd
        if cost is None:
            cost = prices.cost(lane.judge.provider, lane.judge.model, resp.tokens_in, resp.tokens_out)
        detail = parsed.detail
        if resp.notes:
            detail = (detail + " | " if detail else "") + "backend notes: " + "; ".join(resp.notes)
        row.update(raw_output=resp.text, verdict=verdict, shown_first_won=sfw,
                   parse_status=parsed.status, parse_detail=detail, fallback_rule=parsed.fallback_rule,
                   scores=parsed.scores or None, p_a=p_a,
                   latency_s=resp.latency_s if resp.latency_s is not None else latency,
                   tokens_in=resp.tokens_in, tokens_out=resp.tokens_out,
                   cost_usd=0.0 if cache_hit else cost)
        return row

    def note_stop(reason: str) -> None:
        summary.stopped = reason if not summary.stopped else f"{summary.stopped}; {reason}"

    def record(row: dict[str, Any], bar: _Progress, lane: _JudgeLane) -> None:
        summary.n_written += 1
        if row["error"] is not None:
            summary.n_failed += 1
            lane.consecutive_failed += 1
            if lane.consecutive_failed >= max_consecutive_failures and lane.halted is None:
                lane.halted = (f"judge {lane.judge.judge_id!r} halted after {lane.consecutive_failed} trials "
                               f"in a row failed (last error: {row['error']}); fix the cause, then rerun "
                               "with --retry-failed")
                lane.trials.clear()
                note_stop(lane.halted)
        else:
            lane.consecutive_failed = 0
            if row["verdict"] is None:
                summary.n_parse_failed += 1
        if row["cache_hit"]:
            summary.n_cache_hits += 1
        writer.add_row(row)
        bar.advance(summary)

    async def do_trial(trial: Trial, lane: _JudgeLane, bar: _Progress) -> None:
        item = items[(trial.dataset, trial.item_id)]
        protocol = protocols[trial.protocol]
        judge, spec = lane.judge, lane.spec
        tid = trial.trial_id
        try:
            messages = tuple(dict(m) for m in protocol.messages(item, trial.order, step=trial.step))
        except Exception as exc:   # one item the protocol cannot present must not sink the run
            err = f"protocol {trial.protocol!r} could not present this item: {type(exc).__name__}: {exc}"
            record(build_row(trial, item, protocol, lane, None, prompt_hash="", attempts=0,
                             error=redact(err), cache_hit=False, latency=None, tid=tid), bar, lane)
            return
        params = {k: v for k, v in spec.params.items() if k not in ("max_tokens", "seed")}
        use_logprobs = bool((protocol.label_only or getattr(protocol, "wants_token_logprobs", False))
                            and judge.supports_logprobs)
        label_shown = to_shown(item.label, trial.order) if isinstance(item, PairItem) else item.label
        request = JudgeRequest(
            messages=messages, temperature=trial.temperature,
            max_tokens=int(spec.params.get("max_tokens") or protocol.max_tokens()),
            seed=spec.params["seed"] if spec.params.get("seed") is not None else derived_seed(seed, tid),
            stop=tuple(protocol.stop()), logprobs=use_logprobs,
            top_logprobs=max(5, len(protocol.verdict_choices)) if use_logprobs else 0,
            verdict_choices=tuple(protocol.verdict_choices) if protocol.label_only else (), params=params,
            metadata={**trial.key(), "trial_id": tid, "label_shown": label_shown},
        )
        prompt_hash = request.request_hash(provider=judge.provider, model=judge.model)
        use_cache = cache == "on" or (cache == "auto" and trial.temperature == 0.0)
        cache_key = request.request_hash(provider=judge.provider, model=judge.model, rep=trial.rep) \
            if use_cache else ""
        if use_cache:
            cached = cache_get(cache_key)
            if cached is not None:
                record(build_row(trial, item, protocol, lane, cached, prompt_hash=prompt_hash, attempts=0,
                                 error=None, cache_hit=True, latency=None, tid=tid), bar, lane)
                return
        est_tokens = _estimate_tokens(messages) + request.max_tokens
        attempt = 0
        while True:
            if stop.is_set() or lane.halted:
                return
            if not budget.try_reserve():
                if not stop.is_set():
                    note_stop(f"budget: {budget.exhausted_reason}")
                stop.set()
                return
            attempt += 1
            summary.calls += 1
            if lane.requests is not None:
                await lane.requests.acquire(1)
            if lane.tokens is not None:
                await lane.tokens.acquire(est_tokens)
            t0 = time.monotonic()
            try:
                # a timeout scope, not wait_for: wait_for wraps every call in a task of its own
                async with asyncio.timeout(spec.timeout_s):
                    resp = await judge.generate(request)
            except JudgeCallError as exc:
                decision, err = exc.decision, f"{type(exc).__name__}: {redact(str(exc))}"
            except TimeoutError:
                decision, err = RetryDecision.transient(), f"timeout after {spec.timeout_s:g}s"
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a backend bug is not retried, but recorded
                decision, err = RetryDecision.fatal(), f"{type(exc).__name__}: {redact(str(exc))}"
            else:
                latency = time.monotonic() - t0
                tokens = (resp.tokens_in or 0) + (resp.tokens_out or 0)
                cost = resp.cost_usd if resp.cost_usd is not None else prices.cost(
                    judge.provider, judge.model, resp.tokens_in, resp.tokens_out)
                budget.charge(tokens, cost)
                summary.tokens_in += resp.tokens_in or 0
                summary.tokens_out += resp.tokens_out or 0
                summary.cost_usd += cost or 0.0
                writer.attempts.append({"trial_id": tid, "judge": trial.judge, "attempt": attempt,
                                        "outcome": "ok", "latency_s": latency})
                if use_cache:
                    writer.cache.append((cache_key, trial.judge, _response_to_json(resp), time.time()))
                record(build_row(trial, item, protocol, lane, resp, prompt_hash=prompt_hash, attempts=attempt,
                                 error=None, cache_hit=False, latency=latency, tid=tid), bar, lane)
                return
            latency = time.monotonic() - t0
            retry = decision.retry and attempt <= spec.max_retries
            writer.attempts.append({"trial_id": tid, "judge": trial.judge, "attempt": attempt,
                                    "outcome": "retry" if retry else "failed",
                                    "error_kind": decision.kind.value, "error": err, "latency_s": latency})
            if not retry:
                record(build_row(trial, item, protocol, lane, None, prompt_hash=prompt_hash, attempts=attempt,
                                 error=err, cache_hit=False, latency=latency, tid=tid), bar, lane)
                return
            await asyncio.sleep(backoff_delay(
                decision, attempt, rng=lane.rng,
                base_s=spec.backoff_base_s if backoff_base_s is None else backoff_base_s,
                cap_s=spec.backoff_cap_s if backoff_cap_s is None else backoff_cap_s))

    async def worker(lane: _JudgeLane, bar: _Progress) -> None:
        while lane.trials and not stop.is_set() and not lane.halted:
            await do_trial(lane.trials.popleft(), lane, bar)

    t_start = time.monotonic()
    flusher = asyncio.create_task(writer.run())
    try:
        with _Progress(len(todo), progress) as bar:
            tasks = []
            for lane in lanes.values():
                if not lane.trials:
                    continue
                n = min(lane.spec.concurrency, lane.judge.max_concurrency or lane.spec.concurrency,
                        len(lane.trials))
                tasks += [asyncio.create_task(worker(lane, bar)) for _ in range(n)]
            try:
                await asyncio.gather(*tasks)
            except BaseException:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
    finally:
        flusher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await flusher
        writer.flush()
        summary.elapsed_s += time.monotonic() - t_start
    return summary


# -- preparing a run -----------------------------------------------------------------------------
@dataclass
class PreparedRun:
    config: RunConfig
    items: dict[tuple[str, str], Item]
    loads: list[Any]                       # DatasetLoad per dataset
    protocols: dict[str, Protocol]
    trials: list[Trial]
    trials_by_judge: dict[str, int]


def load_items(config: RunConfig) -> tuple[dict[tuple[str, str], Item], list[Any]]:
    """Load and validate every dataset of ``config`` (all of them, before anything is judged)."""
    from .datasets import get_loader, load_dataset

    items: dict[tuple[str, str], Item] = {}
    loads = []
    seen: dict[str, str] = {}
    for i, spec in enumerate(config.datasets):
        opts = dict(spec.options)
        try:
            loader = get_loader(spec.name)
        except KeyError as exc:
            raise EngineError(f"{config.source or '<config>'}: field 'datasets.{i}.name': {exc.args[0]}") from None
        if "seed" not in opts:
            try:
                params = inspect.signature(loader).parameters
                if "seed" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
                    opts["seed"] = config.seed
            except (TypeError, ValueError):
                pass
        load = load_dataset(spec.name, path=config.resolved_path(spec), **opts)
        if load.name in seen:
            raise EngineError(f"{config.source or '<config>'}: field 'datasets.{i}': dataset name "
                              f"{load.name!r} is also produced by datasets entry {seen[load.name]}; "
                              "give one a different name")
        seen[load.name] = str(i)
        if not load.items:
            raise EngineError(f"dataset {load.name!r} ({load.source}) has no items")
        for it in load.items:
            if it.dataset != load.name:
                it = it.model_copy(update={"dataset": load.name})
            items[(load.name, it.item_id)] = it
        loads.append(load)
    return items, loads


def build_trials(config: RunConfig, items: Mapping[tuple[str, str], Item],
                 protocols: Mapping[str, Protocol]) -> list[Trial]:
    """Expand the grid (repetitions back to back).  Multi-step protocols get one trial per step;
    datasets of pointwise items are shown in one order only (order is meaningless for them)."""
    by_dataset: dict[str, list[Item]] = collections.defaultdict(list)
    for (ds, _), it in items.items():
        by_dataset[ds].append(it)
    trials: list[Trial] = []
    for judge in config.judge_ids():
        for ds, ds_items in by_dataset.items():
            pointwise = all(isinstance(it, PointItem) for it in ds_items)
            orders = list(config.orders[:1]) if pointwise else list(config.orders)
            for pid in config.protocols:
                proto = protocols[pid]
                groups: dict[tuple[str, ...], list[str]] = collections.defaultdict(list)
                for it in ds_items:
                    groups[tuple(proto.steps(it)) or ("",)].append(it.item_id)
                for steps, ids in groups.items():
                    trials.extend(expand_grid(judges=[judge], items_by_dataset={ds: ids}, protocols=[pid],
                                              orders=orders, temperatures=config.temperatures,
                                              repetitions=config.repetitions,
                                              steps_by_protocol={pid: steps}))
    return trials


def prepare_run(config: RunConfig) -> PreparedRun:
    from .protocols import get_protocol  # type: ignore[attr-defined]

    items, loads = load_items(config)
    protocols: dict[str, Protocol] = {}
    for i, pid in enumerate(config.protocols):
        try:
            protocols[pid] = get_protocol(pid)
        except (KeyError, ValueError) as exc:
            raise EngineError(f"{config.source or '<config>'}: field 'protocols.{i}': "
                              f"{exc.args[0] if exc.args else exc}") from None
    # fail early if a protocol cannot render a dataset's items
    firsts: dict[str, Item] = {}
    for (ds, _), it in items.items():
        firsts.setdefault(ds, it)
    for pid, proto in protocols.items():
        for ds, it in firsts.items():
            try:
                for step in proto.steps(it) or ("",):
                    proto.messages(it, config.orders[0], step=step)
            except Exception as exc:
                raise EngineError(f"protocol {pid!r} cannot present items of dataset {ds!r} "
                                  f"({type(exc).__name__}: {exc})") from None
    trials = build_trials(config, items, protocols)
    counts = collections.Counter(t.judge for t in trials)
    return PreparedRun(config, items, loads, protocols, trials, dict(counts))


def make_plan(prepared: PreparedRun, done: set[str], judges: Mapping[str, JudgeAPI],
              prices: PriceTable | None = None) -> Plan:
    prices = prices or default_price_table()
    cfg = prepared.config
    specs = {j.id: j for j in cfg.judges}
    per: dict[str, dict[str, int]] = {j: {"n": 0, "done": 0, "tin": 0, "tout": 0} for j in cfg.judge_ids()}
    chars_cache: dict[tuple[str, str, str, str, str], int] = {}
    for t in prepared.trials:
        acc = per[t.judge]
        acc["n"] += 1
        if t.trial_id in done:
            acc["done"] += 1
            continue
        key = (t.dataset, t.item_id, t.protocol, t.order, t.step)
        if key not in chars_cache:
            msgs = prepared.protocols[t.protocol].messages(prepared.items[(t.dataset, t.item_id)], t.order,
                                                           step=t.step)
            chars_cache[key] = _estimate_tokens(msgs)
        acc["tin"] += chars_cache[key]
        acc["tout"] += int(specs[t.judge].params.get("max_tokens") or prepared.protocols[t.protocol].max_tokens())
    plans = []
    for jid, acc in per.items():
        judge = judges[jid]
        cost = prices.cost(judge.provider, judge.model, acc["tin"], acc["tout"])
        plans.append(JudgePlan(jid, acc["n"], acc["done"], acc["n"] - acc["done"], acc["tin"], acc["tout"], cost))
    n = len(prepared.trials)
    n_done = sum(p.n_done for p in plans)
    return Plan(n_trials=n, n_done=n_done, n_remaining=n - n_done, judges=plans)


def _prior_spend(store: RunStore) -> tuple[int, int, float]:
    calls = int(store.conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0])
    tok, usd = store.conn.execute(
        "SELECT COALESCE(SUM(COALESCE(tokens_in, 0) + COALESCE(tokens_out, 0)), 0), "
        "COALESCE(SUM(cost_usd), 0) FROM judgments WHERE COALESCE(cache_hit, 0) = 0").fetchone()
    return calls, int(tok), float(usd)


def run_config(config: RunConfig, run_dir: str | Path, *, progress: bool = True,
               plan_only: bool = False, retry_failed: bool = False) -> RunSummary:
    """Run (or resume) ``config`` into ``run_dir``.  With ``plan_only`` nothing is called: the
    returned summary carries a :class:`Plan` (counts, token and cost estimate).  ``retry_failed``
    judges again the trials whose calls failed for good in an earlier session."""
    from .judges import make_judge

    run_dir = Path(run_dir)
    prepared = prepare_run(config)          # all datasets loaded and validated first
    judges = {spec.id: make_judge(spec.id) for spec in config.judges}
    prices = default_price_table()
    if config.budget.max_usd is not None and not plan_only:
        unpriced = [jid for jid, j in judges.items() if prices.cost(j.provider, j.model, 1, 1) is None]
        if unpriced:
            raise EngineError(f"budget.max_usd is set but no price is known for {', '.join(unpriced)}, so the "
                              "dollar budget could not be enforced; add the model to a price file "
                              "(VERDICTLAB_PRICES) or use max_calls / max_tokens instead")
    summary = RunSummary(run_dir=run_dir, n_trials=len(prepared.trials))

    if plan_only:
        store_path = run_dir / "run.sqlite"
        done: set[str] = set()
        if store_path.exists():
            with RunStore(run_dir) as st:
                done = st.done_trial_ids()
        summary.plan = make_plan(prepared, done, judges, prices)
        summary.n_skipped = summary.plan.n_done
        asyncio.run(_close_judges(judges))
        return summary

    run_dir.mkdir(parents=True, exist_ok=True)
    lock = RunLock(run_dir)
    store = RunStore(run_dir)
    try:
        _check_items_unchanged(store, prepared.items)
        store.write_items(prepared.items.values())
        _write_meta(store, config, prepared, judges)
        calls, tok, usd = _prior_spend(store)
        b = config.budget
        budget = Budget(b.max_calls, b.max_tokens, b.max_usd, calls=calls, tokens=tok, usd=usd)
        done = store.done_trial_ids()
        summary.n_skipped = sum(1 for t in prepared.trials if t.trial_id in done)
        started = time.time()
        try:
            summary = asyncio.run(_run_main(prepared, store, judges, budget, prices, summary, progress,
                                            retry_failed))
        except KeyboardInterrupt:
            summary.stopped = "interrupted"
        sessions = store.get_meta("sessions", []) or []
        sessions.append({"started_at": started, "finished_at": time.time(), **summary.as_dict()})
        store.set_meta("sessions", sessions)
    finally:
        store.close()
        lock.release()
    return summary


def _check_items_unchanged(store: RunStore, items: Mapping[tuple[str, str], Item]) -> None:
    """Refuse to resume when an item already in the store now has different content: its stored
    judgments would describe other text than the new ones."""
    changed = []
    for ds, iid, data in store.conn.execute("SELECT dataset, item_id, data FROM items"):
        new = items.get((ds, iid))
        if new is not None and new.model_dump_json() != data:
            changed.append(f"{ds}/{iid}")
    if changed:
        raise EngineError(f"{store.run_dir}: {len(changed)} item(s) changed since they were judged in this run "
                          f"(first: {changed[0]}); judge the new data in another run dir, or start over "
                          "with --fresh --force")


class RunLock:
    """An exclusive lock on a run directory for one ``run`` session, so two processes never judge
    the same trials at once.  ``flock`` locks die with their process, so a killed run leaves no
    stale lock behind."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / "run.lock"
        self._fh = self.path.open("a+")
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no advisory lock
            return
        try:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._fh.close()
            raise EngineError(f"{run_dir} is in use by another 'verdictlab run' (lock {self.path}); "
                              "wait for it to finish or stop it first") from None

    def release(self) -> None:
        self._fh.close()   # closing the file drops the lock

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


async def _run_main(prepared: PreparedRun, store: RunStore, judges: Mapping[str, JudgeAPI], budget: Budget,
                    prices: PriceTable, summary: RunSummary, progress: bool,
                    retry_failed: bool = False) -> RunSummary:
    cfg = prepared.config
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    stopped_by: list[str] = []

    def _on_term() -> None:
        stopped_by.append("terminated")
        if main is not None:
            main.cancel()

    _no_signals = (NotImplementedError, RuntimeError, ValueError)   # not main thread / Windows
    with contextlib.suppress(*_no_signals):
        loop.add_signal_handler(signal.SIGTERM, _on_term)
    try:
        await run_trials(prepared.trials, store=store, items=prepared.items, judges=judges,
                         protocols=prepared.protocols, judge_specs={j.id: j for j in cfg.judges},
                         cache=cfg.cache, seed=cfg.seed, budget=budget, prices=prices, progress=progress,
                         summary=summary, retry_failed=retry_failed)
    except asyncio.CancelledError:
        # Ctrl-C (asyncio.run cancels the main task) or SIGTERM: run_trials has flushed what
        # was finished; calls in flight are simply redone on resume.
        summary.stopped = stopped_by[0] if stopped_by else "interrupted"
    finally:
        with contextlib.suppress(*_no_signals):
            loop.remove_signal_handler(signal.SIGTERM)
        await _close_judges(judges)
    return summary


async def _close_judges(judges: Mapping[str, JudgeAPI]) -> None:
    for j in judges.values():
        with contextlib.suppress(Exception):   # closing is best effort
            await j.aclose()


def _write_meta(store: RunStore, config: RunConfig, prepared: PreparedRun, judges: Mapping[str, JudgeAPI]) -> None:
    previous = store.get_meta("config")
    current = config.public_dict()
    if previous is not None and previous != current:
        history = store.get_meta("config_history", []) or []
        history.append(previous)
        store.set_meta("config_history", history)
    store.set_meta("config", current)
    store.set_meta("run_name", config.name)
    store.set_meta("versions", library_versions())
    store.set_meta("judges", {jid: j.describe() for jid, j in judges.items()})
    store.set_meta("generation", {
        j.id: {"concurrency": j.concurrency, "requests_per_minute": j.requests_per_minute,
               "tokens_per_minute": j.tokens_per_minute, "timeout_s": j.timeout_s,
               "max_retries": j.max_retries, "backoff_base_s": j.backoff_base_s,
               "backoff_cap_s": j.backoff_cap_s, "params": j.params,
               "seed": j.params.get("seed", f"derived per trial from run seed {config.seed}")}
        for j in config.judges})
    store.set_meta("protocols", {pid: {"class": type(p).__name__, "label_only": p.label_only,
                                       "verdict_choices": list(p.verdict_choices),
                                       "max_tokens": p.max_tokens(), "stop": list(p.stop())}
                                 for pid, p in prepared.protocols.items()})
    store.set_meta("datasets", [ld.summary() for ld in prepared.loads])
    store.set_meta("n_trials", len(prepared.trials))
    if store.get_meta("created_at") is None:
        store.set_meta("created_at", time.time())
