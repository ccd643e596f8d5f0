"""Independent jobs of one large command shared by two CPUs: a forked copy of this process takes jobs
from the front of the list while the caller does its own work, then the caller takes what is left from the
back (:meth:`SecondLane.help`), so the two finish together whatever each job costs.

The fork shares the loaded frames copy-on-write, so nothing is pickled on the way in; each result comes
back pickled through a pipe.  Which process runs a job changes where it runs, never what it computes: a
job that raises there, or a lane that dies (killed, out of memory), is run again here, so its result or
its exception is exactly the one a single process gives.  Warnings a job raises there are raised again
here.

Used when the machine has a second CPU, ``os.fork`` exists and the work is large enough to pay for the
fork (:func:`lanes_for`); ``VERDICTLAB_WORKERS=1`` keeps everything in one process, ``=2`` always splits.

Why this is written here and not a one-worker ``concurrent.futures.ProcessPoolExecutor`` with a fork
context: that version was built and measured behind the same tests (``bench/scale_bench.py
--baseline-src``, 540k judgments, load 8): 20.1 s of CPU against 21.7 s and a peak PSS of 0.84 GB against
0.89 GB -- within the noise of a loaded machine -- but a Ctrl-C of the caller could leave it waiting on its
worker (``tests/test_lanes.py``'s interrupt test hung in about one run in two under load), and the
executor cannot hand the caller the rest of the list from the back nor end its worker with a parent
killed while blocked on its queue.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Collection, Mapping
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


_FREE, _THERE, _HERE = 0, 1, 2
#: the signals that end a report: held while the lane is forked
_STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


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
        self._here_only = frozenset(here_only)         # never taken by the lane (e.g. fits that use OpenMP)
        self._index = {name: i for i, name in enumerate(self._jobs)}
        self._got: dict[str, Any] = {}
        self._caught: dict[str, list[warnings.WarningMessage]] = {}
        self._failed: set[str] = set()
        self._here: dict[str, tuple[bool, Any]] = {}       # computed by help(): (raised, value or exception)
        self._ready = threading.Condition()
        self._done = True                                  # no lane: every job runs here
        self._pid: int | None = None
        if use and self._jobs:
            import multiprocessing

            ctx = multiprocessing.get_context("fork")
            self._state: Any = ctx.RawArray("b", len(self._jobs))   # _FREE / _THERE / _HERE, shared
            self._lock: Any = ctx.Lock()
            self._done = False
            try:
                self._start()
            except BaseException:
                # a Ctrl-C while the lane starts (it reached the caller in Thread.start() under load): the
                # with block never runs, so nobody else ends the lane -- and at exit the interpreter waited
                # on the pipe's reader, held by the drain thread until the lane's job ended
                self._end()
                raise

    def _claim(self, name: str, who: int) -> bool:
        """Take job ``name`` for ``who`` when nobody has: True when taken now."""
        locked = False
        while not (locked := self._lock.acquire(timeout=0.2)):
            if who == _HERE and self._done:                 # the lane died holding the lock: nobody competes
                break
        try:
            i = self._index[name]
            if self._state[i] != _FREE:
                return False
            self._state[i] = who
            return True
        finally:
            if locked:
                self._lock.release()

    def taken_by_lane(self, name: str) -> bool:
        """Whether the forked process took job ``name`` (false without a lane)."""
        return self._pid is not None and self._state[self._index[name]] == _THERE

    # -- the forked side -------------------------------------------------------------------------------

    def _start(self) -> None:
        read_fd, write_fd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        # a Ctrl-C or SIGTERM is held while forking: raised inside the interpreter's at-fork hooks (logging's
        # lock release) it was printed as "Exception ignored" and lost, and the caller waited on its lane
        # (the interrupt test hung under load); held, it is raised just after, where the caller ends the lane
        held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            with warnings.catch_warnings():
                # Python 3.12+ warns on fork in a process with threads (pyarrow's and BLAS's pools here): the
                # lane runs only the given jobs and writes only to its pipe, taking no lock those threads hold
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
        except BaseException:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            raise
        if pid == 0:                                  # the second lane: take jobs from the front, never return
            code = 0
            try:
                os.close(read_fd)
                _as_lane()
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
                with os.fdopen(write_fd, "wb") as out:
                    for name, fn in self._jobs.items():
                        if name not in self._here_only and self._claim(name, _THERE):
                            pickle.dump(_run_caught(name, fn), out, protocol=pickle.HIGHEST_PROTOCOL)
                            out.flush()
            except BaseException:                     # noqa: BLE001 - the lane ends; the caller redoes the rest
                code = 1
            finally:
                os._exit(code)
        self._pid = pid
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        os.close(write_fd)
        self._reader = os.fdopen(read_fd, "rb")
        # drained as the results come, so the lane never waits on a full pipe for this side to ask
        self._drain = threading.Thread(target=self._read_all, name="verdictlab-second-lane", daemon=True)
        self._drain.start()

    def _read_all(self) -> None:
        reader = self._reader
        while True:
            try:
                name, value, caught = pickle.load(reader)
            except Exception:                         # noqa: BLE001 - ended (or died): the rest runs here
                break
            with self._ready:
                if value is _FAILED_MARK:
                    self._failed.add(name)
                else:
                    self._got[name] = value
                    self._caught[name] = caught
                self._ready.notify_all()
        with self._ready:
            self._done = True
            self._ready.notify_all()

    # -- this side ---------------------------------------------------------------------------------------

    def help(self) -> None:
        """Run here, last first, every job the lane has not taken (nothing without a lane: each job then
        runs when its result is asked for, in the caller's order)."""
        if self._pid is None:
            return
        for name in reversed(self._jobs):
            if self._claim(name, _HERE):
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
        if self._pid is None or self._claim(name, _HERE):
            return self._jobs[name]()
        with self._ready:                              # the lane took it: wait for it
            while name not in self._got and name not in self._failed and not self._done:
                self._ready.wait(0.05)                # short waits: a signal's handler runs in between
            if name in self._got:
                caught = self._caught.pop(name, [])
                value = self._got.pop(name)
            else:
                caught, value = [], _FAILED_MARK
        if value is _FAILED_MARK:
            return self._jobs[name]()
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return value

    def _end(self) -> None:
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(self._pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._pid, 0)
            self._pid = None
        drain = getattr(self, "_drain", None)
        if drain is not None and drain.is_alive():
            drain.join(timeout=5.0)                   # the pipe's writer is gone: the reader ends
        reader = getattr(self, "_reader", None)
        if reader is not None and not (drain is not None and drain.is_alive()):
            with contextlib.suppress(OSError):
                reader.close()

    def __enter__(self) -> SecondLane:
        return self

    def __exit__(self, *exc: object) -> None:
        self._end()


class _FailedMark:
    """Pickled in place of the value of a job that raised in the second lane (it runs again here)."""

    def __reduce__(self) -> str:
        return "_FAILED_MARK"


_FAILED_MARK = _FailedMark()


def _run_caught(name: str, fn: Callable[[], Any]) -> tuple[str, Any, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn()
        except Exception:                             # noqa: BLE001 - run again on the caller's side
            return name, _FAILED_MARK, []
    return name, value, [_plain(w) for w in caught]


def _plain(w: warnings.WarningMessage) -> warnings.WarningMessage:
    """A warning that pickles (its message as an instance of its category, its source dropped)."""
    msg = w.message if isinstance(w.message, Warning) else w.category(str(w.message))
    try:
        pickle.dumps(msg)
    except Exception:                                 # noqa: BLE001 - an odd warning class: keep the text
        msg = UserWarning(str(w.message))
    return warnings.WarningMessage(msg, type(msg), w.filename, w.lineno)


def _as_lane() -> None:
    """The forked process ends on the first Ctrl-C or SIGTERM and when this process dies (Linux), and
    never runs this process's signal handlers or writes to its signal wake-up socket."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    with contextlib.suppress(ValueError):
        signal.set_wakeup_fd(-1)
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)                 # PR_SET_PDEATHSIG
        if os.getppid() == 1:                         # this process already died
            os._exit(1)

