"""Independent jobs of one large command split over two CPUs: the jobs given to the second lane run in a
forked copy of this process while the caller goes on with its own.

The fork shares the loaded frames copy-on-write, so nothing is pickled on the way in; each result comes
back pickled through a pipe, in the order the jobs were given.  The second lane changes where a job runs,
never what it computes: a job that raises there, or a lane that dies (killed, out of memory), is run again
here, so its result or its exception is exactly the one a single process gives.  Warnings a job raises
there are raised again here.

Used when the machine has a second CPU, ``os.fork`` exists and the work is large enough to pay for the
fork (:func:`lanes_for`); ``VERDICTLAB_WORKERS=1`` keeps everything in one process, ``=2`` always splits.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Mapping
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
    ``ValueError`` naming the variable when it is set to anything else."""
    raw = os.environ.get(ENV_WORKERS, "").strip()
    if raw and raw not in ("1", "2"):
        raise ValueError(f"{ENV_WORKERS} must be 1 or 2 (the processes a report uses), got {raw!r}")
    if raw == "1" or not hasattr(os, "fork"):
        return 1
    if raw == "2":
        return 2
    large = n_rows >= (MIN_ROWS if min_rows is None else min_rows)
    return 2 if large and (os.cpu_count() or 1) >= 2 else 1


class SecondLane:
    """Run ``jobs`` (name -> function of no arguments) in a forked process when ``use`` is true; get each
    result with :meth:`result` (run here when the lane did not give it).  Use as a context manager: leaving
    it ends the forked process whatever happened."""

    def __init__(self, jobs: Mapping[str, Callable[[], Any]], *, use: bool) -> None:
        self._jobs = dict(jobs)
        self._got: dict[str, Any] = {}
        self._caught: dict[str, list[warnings.WarningMessage]] = {}
        self._failed: set[str] = set()
        self._ready = threading.Condition()
        self._done = not (use and self._jobs)       # no lane: every job runs here
        self._pid: int | None = None
        self._reader: Any = None
        if use and self._jobs:
            self._start()

    # -- the forked side -------------------------------------------------------------------------------

    def _start(self) -> None:
        read_fd, write_fd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:                                  # the second lane: run the jobs, never return
            code = 0
            try:
                os.close(read_fd)
                _as_lane()
                with os.fdopen(write_fd, "wb") as out:
                    for name, fn in self._jobs.items():
                        pickle.dump(_run_caught(name, fn), out, protocol=pickle.HIGHEST_PROTOCOL)
                        out.flush()
            except BaseException:                     # noqa: BLE001 - the lane ends; the caller redoes the rest
                code = 1
            finally:
                os._exit(code)
        os.close(write_fd)
        self._pid = pid
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

    def result(self, name: str) -> Any:
        """The value of job ``name``: from the second lane when it gave it, else computed here."""
        with self._ready:
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
            self._drain.join()                        # the pipe's writer is gone: the reader ends
            with contextlib.suppress(OSError):
                self._reader.close()

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

