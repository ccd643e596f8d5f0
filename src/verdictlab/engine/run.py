"""``run_config``: run (or resume) a :class:`~verdictlab.engine.config.RunConfig` into a run directory --
one process per run dir (:class:`RunLock`), items checked against what the store already judged,
the budget continued from earlier sessions, SIGTERM and Ctrl-C stopping cleanly."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import platform
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core.stopping import StopOnSignals, stop_reason
from ..core.versions import installed_version
from ..core.vocab import Decoding
from ..errors import StoreError
from ..judges.base import JudgeAPI
from ..store import STORE_FILENAME, RunStore
from .adaptive import AdaptiveDesign, AdaptiveExecutor
from .config import RunConfig
from .limits import Budget, PriceTable, default_price_table
from .prepare import Item, PreparedRun, make_plan, prepare_run
from .summary import EngineError, RunSummary
from .trial_runner import run_trials


def library_versions(sdks: Iterable[str | None] = ()) -> dict[str, str | None]:
    """The versions of Python, the platform, verdictlab, its core libraries and ``sdks`` (the SDKs the run's
    judges declare, :attr:`~verdictlab.judges.base.JudgeAPI.sdk`), where installed."""
    out: dict[str, str | None] = {"verdictlab": None, "python": platform.python_version(),
                                  "platform": platform.platform()}
    # the installed distribution's version (pyproject's), read here rather than imported from the
    # package __init__, which imports the engine (an import cycle)
    for dist in dict.fromkeys(("verdictlab", "numpy", "pandas", "pydantic", *(s for s in sdks if s))):
        version = installed_version(dist)
        if version is not None:
            out[dist] = version
    return out


def run_config(config: RunConfig, run_dir: str | Path, *, progress: bool = True,
               plan_only: bool = False, retry_failed: bool = False, pilot: bool = False,
               pilot_only: bool = False, stop: threading.Event | None = None) -> RunSummary:
    """Run (or resume) ``config`` into ``run_dir``.  With ``plan_only`` nothing is called: the
    returned summary carries a :class:`Plan` (counts, token and cost estimate; for a ``precision:``
    config the adaptive design's expected calls, engine/plan_cost.py) -- unless ``pilot`` is also set:
    then only the adaptive design's pilot trials are judged first (``pilot_only``), and the plan uses
    them.  ``retry_failed`` judges again the trials whose calls failed for good in an earlier session.
    ``stop``: set from another thread, it stops the run as Ctrl-C does (signals reach only the main thread).

    Called inside a running event loop -- a notebook's cell -- where ``asyncio.run`` cannot start, the run
    goes to a thread of its own and this call waits for it; a ``KeyboardInterrupt`` meanwhile (the
    kernel's interrupt) stops it through ``stop``, and what was judged stays stored."""
    from ..judges import make_judge

    if stop is None and _loop_running():
        return _in_own_thread(run_config, config, run_dir, progress=progress, plan_only=plan_only,
                              retry_failed=retry_failed, pilot=pilot, pilot_only=pilot_only)
    if plan_only and pilot and config.precision is not None:
        run_config(config, run_dir, progress=progress, pilot_only=True)

    run_dir = Path(run_dir)
    prepared = prepare_run(config, offline=plan_only)   # all datasets loaded and validated first
    if pilot_only:
        from .plan_cost import pilot_trials

        prepared.trials = pilot_trials(prepared)
    # a plan builds its judges offline: no key, no SDK, no model -- nothing is called
    judges = {spec.id: make_judge(spec.id, offline=plan_only) for spec in config.judges}
    mechanisms = _keep_constrainable(prepared, judges)
    prices = default_price_table()
    if config.budget.max_usd is not None and not plan_only:
        unpriced = [jid for jid, j in judges.items() if j.cost(prices, 1, 1) is None]
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
        summary.plan.notes = _adaptive_plan(prepared, run_dir, judges, prices)
        asyncio.run(_close_judges(judges))
        return summary

    run_dir.mkdir(parents=True, exist_ok=True)
    lock = RunLock(run_dir)
    store = RunStore(run_dir)
    try:
        _check_items_unchanged(store, prepared.items)
        store.write_items(prepared.items.values())
        _write_meta(store, config, prepared, judges)
        if mechanisms is not None:
            store.set_meta("decoding_mechanisms", mechanisms)
        calls, tok, usd = store.prior_spend()
        b = config.budget
        budget = Budget(b.max_calls, b.max_tokens, b.max_usd, calls=calls, tokens=tok, usd=usd)
        done = store.done_trial_ids()
        summary.n_skipped = sum(1 for t in prepared.trials if t.trial_id in done)
        started = time.time()
        try:
            summary = asyncio.run(_run_main(prepared, store, judges, budget, prices, summary, progress,
                                            retry_failed, adaptive_ok=not pilot_only, stop=stop))
        except KeyboardInterrupt as exc:     # a signal before the run's own handler was in place
            summary.stopped = getattr(exc, "reason", "interrupted")
        summary.n_failed_stored = store.count_failed()
        sessions = store.get_meta("sessions", []) or []
        sessions.append({"started_at": started, "finished_at": time.time(), **summary.as_dict()})
        store.set_meta("sessions", sessions)
    finally:
        store.close()
        lock.release()
    return summary


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _in_own_thread(fn: Callable[..., RunSummary], *args: Any, **kwargs: Any) -> RunSummary:
    """``fn(*args, stop=event, **kwargs)`` in a thread of its own, waited for; a ``KeyboardInterrupt`` while
    waiting sets the event and waits for ``fn`` to stop (within a second, as on Ctrl-C)."""
    from concurrent.futures import ThreadPoolExecutor

    stop = threading.Event()
    with ThreadPoolExecutor(1, thread_name_prefix="verdictlab-run") as pool:
        future = pool.submit(fn, *args, stop=stop, **kwargs)
        try:
            return future.result()
        except KeyboardInterrupt:
            stop.set()
            return future.result()


def _keep_constrainable(prepared: PreparedRun, judges: Mapping[str, JudgeAPI]) -> dict[str, dict[str, str]] | None:
    """With constrained decoding in the config: drop the constrained trials of (judge, protocol) pairs
    that cannot be constrained (never run them silently free) and return the mechanism table for the
    run's meta (``decoding_mechanisms``); None when the config runs free decoding only."""
    if Decoding.CONSTRAINED not in prepared.config.decoding:
        return None
    from ..protocols.output_format import constrainable, constraint_table

    mechs = constraint_table(dict(judges), dict(prepared.protocols))
    prepared.trials = [t for t in prepared.trials
                       if t.decoding == Decoding.FREE or constrainable(mechs, t.judge, t.protocol)]
    prepared.trials_by_judge = dict(collections.Counter(t.judge for t in prepared.trials))
    return mechs


def _check_items_unchanged(store: RunStore, items: dict[tuple[str, str], Item]) -> None:
    """Refuse to resume when an item already in the store now has different content: its stored
    judgments would describe other text than the new ones.  Compared as items, not as JSON text: an
    item stored by an earlier verdictlab (``model_a`` for ``system_a``, no ``votes``) is the same item.
    A generated case a person curated in the store (accepted, rejected, edited: core/curation.py) is
    kept as curated when the dataset gives it as it was generated (``items`` is updated in place)."""
    from ..core.curation import keep_curated

    changed = []
    for ds, iid, data in store.stored_item_data():
        new = items.get((ds, iid))
        if new is None or new.model_dump_json() == data:
            continue
        kept = keep_curated(new, type(new).model_validate_json(data))
        if kept is None:
            changed.append(f"{ds}/{iid}")
        elif kept is not new:
            items[(ds, iid)] = kept
    if changed:
        raise EngineError(f"{store.run_dir}: {len(changed)} item(s) changed since they were judged in this run "
                          f"(first: {changed[0]}); judge the new data in another run dir, or start over "
                          "with --fresh --force")


def remove_run_store(run_dir: str | Path) -> None:
    """Delete the run store of ``run_dir`` (``run.sqlite`` and its ``-wal`` / ``-shm`` files) to start
    over, under the run lock: a store another run is writing is never deleted (a
    :class:`~verdictlab.errors.StoreError`: the store cannot be written)."""
    run_dir = Path(run_dir)
    try:
        lock = RunLock(run_dir)
    except EngineError as exc:
        raise StoreError(str(exc)) from exc
    with lock:
        for suffix in ("", "-wal", "-shm"):
            path = run_dir / (STORE_FILENAME + suffix)
            if path.exists():
                path.unlink()


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
                    retry_failed: bool = False, adaptive_ok: bool = True,
                    stop: threading.Event | None = None) -> RunSummary:
    cfg = prepared.config
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    stopped_by: list[str] = []

    def _on_stop(signum: int) -> None:
        stopped_by.append(stop_reason(signum))
        if main is not None:       # threadsafe: it also wakes a loop that sleeps in select()
            loop.call_soon_threadsafe(main.cancel)

    watcher = asyncio.create_task(_watch(stop, _on_stop)) if stop is not None else None

    adaptive = _adaptive_executor(prepared, store) if adaptive_ok else None
    executor = adaptive if adaptive is not None else _ray_executor(cfg)
    executor = _batch_executor(cfg, judges, executor)
    try:
        with StopOnSignals(_on_stop):
            await run_trials(prepared.trials, store=store, items=prepared.items, judges=judges,
                             protocols=prepared.protocols, judge_specs={j.id: j for j in cfg.judges},
                             cache=cfg.cache, seed=cfg.seed, budget=budget, prices=prices, progress=progress,
                             summary=summary, retry_failed=retry_failed, executor=executor)
    except asyncio.CancelledError:
        # Ctrl-C or SIGTERM (engine stopping: the main task is cancelled): run_trials has flushed
        # what was finished; calls in flight are simply redone on resume.
        summary.stopped = stopped_by[0] if stopped_by else "interrupted"
    finally:
        if watcher is not None:
            watcher.cancel()
        await _close_judges(judges)
        if adaptive is not None:
            summary.n_not_needed = adaptive.n_not_needed
            note = adaptive.replan_note()
            if note is not None:
                summary.notes.append(note)
    return summary


async def _watch(stop: threading.Event, on_stop: Callable[[int], None]) -> None:
    """Stop the run (as SIGINT does) once ``stop`` is set; looked at every 0.1 s."""
    while not stop.is_set():
        await asyncio.sleep(0.1)
    on_stop(signal.SIGINT)


def _ray_executor(cfg: RunConfig) -> Any:
    """The Ray executor when the config asks for it, else None (the local executor)."""
    if cfg.executor != "ray":
        return None
    from .ray_executor import RayExecutor

    return RayExecutor(address=cfg.ray.address, workers=cfg.ray.workers, chunk_size=cfg.ray.chunk_size,
                       seed=cfg.seed, cache=cfg.cache)


def _adaptive_plan(prepared: PreparedRun, run_dir: Path, judges: Mapping[str, JudgeAPI],
                   prices: PriceTable) -> list[str]:
    """The adaptive design's plan lines (engine/plan_cost.py), from the pilot stored in ``run_dir``."""
    if prepared.config.precision is None:
        return []
    from .plan_cost import adaptive_notes

    stored = None
    if (run_dir / "run.sqlite").exists():
        with RunStore(run_dir) as st:
            stored = st.judgments()
    return adaptive_notes(prepared, stored, judges, prices)


def _batch_executor(cfg: RunConfig, judges: Mapping[str, JudgeAPI], inner: Any) -> Any:
    """The batch executor when a judge says ``batch: true`` (engine/batch.py): it runs those
    judges' trials as provider batch jobs and hands the other judges to ``inner``."""
    batch = [j.id for j in cfg.judges if j.batch]
    if not batch:
        return inner
    from .batch import BatchExecutor, check_batch_judges

    check_batch_judges(judges, batch)
    return BatchExecutor(inner=inner, poll_s=cfg.batch_poll_s, cache=cfg.cache)


def _adaptive_executor(prepared: PreparedRun, store: RunStore) -> AdaptiveExecutor | None:
    """The adaptive executor when the config asks for a precision, else None."""
    cfg = prepared.config
    if cfg.precision is None:
        return None
    design = AdaptiveDesign(targets=cfg.precision.targets(), reps=cfg.repetitions,
                            confidence=cfg.precision.confidence, pilot_pairs=cfg.precision.pilot_pairs,
                            seed=cfg.seed)
    return AdaptiveExecutor(design, store=store, items=prepared.items, all_trials=prepared.trials)


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
    store.set_meta("versions", library_versions(j.sdk for j in judges.values()))
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
