"""Independent jobs of one large command shared by two CPUs: a forked copy of this process takes jobs
from the front of the list while the caller does its own work, then the caller takes what is left from the
back (:meth:`SecondLane.help`), so the two finish together whatever each job costs.

The process is a one-worker :class:`concurrent.futures.ProcessPoolExecutor` with a ``fork`` context: the
fork shares the loaded frames copy-on-write, so nothing is pickled on the way in (a job goes out as its
name); each result comes back pickled through the executor's queue.  Which process runs a job changes where
it runs, never what it computes: a job that raises there, or a lane that dies (killed, out of memory: the
executor's ``BrokenProcessPool``), is run again here, so its result or its exception is exactly the one a
single process gives.  Warnings a job raises there are raised again here.

Two parts stay written here, because the executor has no way to say them:

* who takes which job: the executor queues what is submitted (one job running, one more queued ahead of it
  that can no longer be cancelled), so a feeding thread here submits the lane's next job only when its last
  one is done, and :meth:`SecondLane.help` takes from the back what has not been submitted -- the caller
  and the lane never both wait for the same job;
* how the forked process ends with its caller: the executor's worker survives a SIGKILL of its parent
  (seen: reparented to init, blocked reading its call queue ten minutes later) and turns a Ctrl-C inside a job into that job's exception; the worker's
  initializer restores the default SIGINT / SIGTERM and asks Linux to kill it when the caller dies
  (``PR_SET_PDEATHSIG``), and leaving the context kills it (``ProcessPoolExecutor.shutdown`` would wait
  for the running job).

The loaded objects are frozen out of the garbage collector's reach (:func:`gc.freeze`) just before the
fork, so the lane's collections never write to the pages it shares with this process.  Against the
hand-written fork and pipe it replaced (``bench/scale_bench.py --baseline-src``, 540k judgments, one run,
load 8): ``report --format json`` 20.1 s of CPU against 21.7 s, peak PSS of both processes 0.84 against
0.89 GB.

Used when the machine has a second CPU, ``os.fork`` exists and the work is large enough to pay for the
fork (:func:`lanes_for`); ``VERDICTLAB_WORKERS=1`` keeps everything in one process, ``=2`` always splits.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

__all__ = ["ENV_WORKERS", "MIN_ROWS", "SecondLane", "lanes_for"]

#: the environment variable that sets how many processes a report uses (1 or 2)
ENV_WORKERS = "VERDICTLAB_WORKERS"
#: below this many judgments a report stays in one process (the fork and the pickling cost more than
#: they save)
MIN_ROWS = 200_000


def lanes_for(n_rows: int, *, min_rows: int | None = None) -> int:
    """How many processes work over ``n_rows`` judgments uses (1 or 2).

    ``VERDICTLAB_WORKERS=1``: one; ``=2``: two whatever the size (when ``os.fork`` exists); unset: two when
    there are at least ``min_rows`` (default :data:`MIN_ROWS`) and the machine has a second CPU.
    :class:`verdictlab.core.guards.GuardError` (a ``ValueError``) naming the variable when it is set to anything
    else."""
    raw = os.environ.get(ENV_WORKERS, "").strip()
    if raw and raw not in ("1", "2"):
        from ..core.guards import GuardError

        raise GuardError(f"environment variable {ENV_WORKERS}={raw!r}: must be 1 or 2 (the processes a report uses)")
    if raw == "1" or not hasattr(os, "fork"):
        return 1
    if raw == "2":
        return 2
    large = n_rows >= (MIN_ROWS if min_rows is None else min_rows)
    return 2 if large and (os.cpu_count() or 1) >= 2 else 1


class SecondLane:
    """Jobs (name -> function of no arguments) shared with a forked process when ``use`` is true: it takes
    them from the front of the list (never one named in ``here_only``: scikit-learn's OpenMP fits must not
    run in a process forked from one that used OpenMP); :meth:`help` runs here the ones it has not taken,
    from the back;
    :meth:`result` gives a job's value (computed here when nobody took it yet).  Without the lane every job
    runs here when its result is asked for.  Use as a context manager: leaving it ends the forked process
    whatever happened."""

    def __init__(self, jobs: Mapping[str, Callable[[], Any]], *, use: bool, here_only: Collection[str] = ()) -> None:
        self._jobs = dict(jobs)
        self._lock = threading.Lock()
        self._free = [n for n in self._jobs if n not in frozenset(here_only)]   # the lane's, front first
        self._unclaimed = set(self._jobs)                 # neither side has taken these
        self._there: dict[str, Future[Any]] = {}          # submitted to the lane
        self._here: dict[str, tuple[bool, Any]] = {}      # computed by help(): (raised, value or exception)
        self._broken = threading.Event()                  # the lane died or was ended: the rest runs here
        self._pool: ProcessPoolExecutor | None = None
        if use and self._free:
            import multiprocessing

            sys.stdout.flush()
            sys.stderr.flush()
            self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"),
                                             initializer=_start_lane, initargs=(self._jobs,))
            gc.freeze()                                  # the lane's collections leave the shared pages alone
            # the executor's threads and the feeder are started with Ctrl-C and SIGTERM blocked, so the
            # kernel hands those signals to this thread (without the mask a Ctrl-C of the caller was never
            # raised here in one run of two of tests/test_lanes.py's sigint test; with it 4 of 4 ended);
            # the worker unblocks them
            old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
            try:
                with warnings.catch_warnings():
                    # Python 3.12+ warns on fork in a process with threads (pyarrow's and BLAS's pools here):
                    # the lane runs only the given jobs, taking no lock those threads hold
                    warnings.simplefilter("ignore", DeprecationWarning)
                    first = self._submit_next()           # forks the worker
                self._feeder = threading.Thread(target=self._feed, args=(first,), name="verdictlab-second-lane",
                                                daemon=True)
                self._feeder.start()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
                gc.unfreeze()

    def _claim(self, name: str) -> bool:
        """Take job ``name`` when nobody has: True when taken now."""
        with self._lock:
            if name not in self._unclaimed:
                return False
            self._unclaimed.discard(name)
            return True

    def _submit_next(self) -> Future[Any] | None:
        """Give the lane the first job nobody has taken (None when there is none, or the lane is gone)."""
        with self._lock:
            pool = self._pool
            name = next((n for n in self._free if n in self._unclaimed), None)
            if name is None or pool is None or self._broken.is_set():
                return None
            self._unclaimed.discard(name)
            try:
                fut = pool.submit(_run_there, name)
            except RuntimeError:                         # broken or shut down: this side runs it
                self._unclaimed.add(name)
                self._broken.set()
                return None
            self._there[name] = fut
            return fut

    def _feed(self, fut: Future[Any] | None) -> None:
        """One job at a time: the next is submitted when the last is done (so the rest stays claimable here)."""
        while fut is not None:
            with contextlib.suppress(BaseException):
                fut.exception()                          # waits; a broken pool shows as its exception
            if _lane_failed(fut):
                self._broken.set()
                return
            fut = self._submit_next()

    def taken_by_lane(self, name: str) -> bool:
        """Whether the forked process took job ``name`` (false without a lane)."""
        return name in self._there

    def help(self) -> None:
        """Run here, last first, every job the lane has not taken (nothing without a lane: each job then
        runs when its result is asked for, in the caller's order)."""
        if self._pool is None:
            return
        for name in reversed(self._jobs):
            if self._claim(name):
                try:
                    self._here[name] = (False, self._jobs[name]())
                except Exception as e:                # noqa: BLE001 - raised where the result is asked for
                    self._here[name] = (True, e)

    def result(self, name: str) -> Any:
        """The value of job ``name`` (its exception raised here when it raised)."""
        if name in self._here:
            raised, value = self._here.pop(name)
            if raised:
                raise value
            return value
        fut = self._there.get(name)
        if fut is None and self._claim(name):
            return self._jobs[name]()
        fut = self._there[name] if fut is None else fut
        while not fut.done():                            # short waits: a signal's handler runs in between
            with contextlib.suppress(TimeoutError):
                fut.exception(timeout=0.05)
        if _lane_failed(fut) or fut.exception() is not None:
            return self._jobs[name]()
        outcome = fut.result()
        if outcome is _FAILED_MARK:
            return self._jobs[name]()
        value, caught = outcome
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return value

    def _end(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is None:
            return
        self._broken.set()
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            with contextlib.suppress(ProcessLookupError, OSError):
                proc.kill()                              # the running job is not waited for
        pool.shutdown(wait=True, cancel_futures=True)
        self._feeder.join()

    def __enter__(self) -> SecondLane:
        return self

    def __exit__(self, *exc: object) -> None:
        self._end()


def _lane_failed(fut: Future[Any]) -> bool:
    """The future ended without a result from a job: the lane died, or it was cancelled."""
    if fut.cancelled():
        return True
    from concurrent.futures.process import BrokenProcessPool

    return isinstance(fut.exception(), BrokenProcessPool)


class _FailedMark:
    """Pickled in place of the value of a job that raised in the second lane (it runs again here)."""

    def __reduce__(self) -> str:
        return "_FAILED_MARK"


_FAILED_MARK = _FailedMark()

#: the signals that stop a command (blocked in the lane's helper threads, see ``SecondLane.__init__``)
_STOPS = {signal.SIGINT, signal.SIGTERM}

#: the jobs, in the forked process (set by its initializer from the caller's copy: nothing pickled)
_LANE_JOBS: Mapping[str, Callable[[], Any]] = {}


def _run_there(name: str) -> tuple[Any, list[warnings.WarningMessage]] | _FailedMark:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = _LANE_JOBS[name]()
        except Exception:                             # noqa: BLE001 - run again on the caller's side
            return _FAILED_MARK
    return value, [_plain(w) for w in caught]


def _plain(w: warnings.WarningMessage) -> warnings.WarningMessage:
    """A warning that pickles (its message as an instance of its category, its source dropped)."""
    msg = w.message if isinstance(w.message, Warning) else w.category(str(w.message))
    try:
        pickle.dumps(msg)
    except Exception:                                 # noqa: BLE001 - an odd warning class: keep the text
        msg = UserWarning(str(w.message))
    return warnings.WarningMessage(msg, type(msg), w.filename, w.lineno)


def _start_lane(jobs: Mapping[str, Callable[[], Any]]) -> None:
    """The forked process's initializer: keep the jobs; end on the first Ctrl-C or SIGTERM and when the
    caller dies (Linux); never run the caller's signal handlers or write to its signal wake-up socket."""
    global _LANE_JOBS
    _LANE_JOBS = jobs
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    with contextlib.suppress(ValueError):
        signal.set_wakeup_fd(-1)
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)                 # PR_SET_PDEATHSIG
        if os.getppid() == 1:                         # the caller already died
            os._exit(1)
