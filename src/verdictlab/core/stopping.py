"""How a command stops on Ctrl-C (SIGINT) or SIGTERM: within a second, with its documented exit code
(130 interrupted, 143 terminated), keeping everything it committed.

:class:`StopOnSignals` is entered around the work of a command (a run's event loop, an import, the
selftest).  On the first signal it asks the work to stop the way the work can stop cleanly:

* a run passes ``on_stop``: the handler cancels the run's main task, the runner flushes what was
  judged and the summary says "terminated" / "interrupted" (calls in flight are redone on resume);
* synchronous work (an import) gets :class:`Stopped` raised where it is, so open transactions roll back.

A Python signal handler runs only when the main thread executes Python code.  Native code that
blocks (``ray.init`` waiting for a cluster, one long SQLite statement, a thread pool joined at exit)
would hold the stop off for as long as it blocks, so the signal is also seen by a watcher thread (the
C-level handler writes its number to a socket, :func:`signal.set_wakeup_fd`).  In the command-line
program (:func:`allow_forced_exit`, called by ``verdictlab``'s entry point) the watcher ends the
process with the signal's exit code when it is still alive ``grace_s`` after the first signal.  What the store committed is kept either way (SQLite rolls back a transaction that
did not finish; a run resumes).  In a library caller (a notebook) the process is never ended.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from types import FrameType, TracebackType
from typing import Any

#: seconds between the signal and a forced exit (the clean stop takes milliseconds)
GRACE_S = 0.8
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_forced_exit_allowed = False
_longer_grace: list[float] = []       # held by work whose clean stop takes longer (a Ray cluster's)


def allow_forced_exit(allowed: bool = True) -> None:
    """Let :class:`StopOnSignals` end the process when a clean stop does not come in time (the CLI's
    entry point calls this; a library caller does not)."""
    global _forced_exit_allowed
    _forced_exit_allowed = allowed


@contextlib.contextmanager
def longer_grace(seconds: float) -> Iterator[None]:
    """While inside, a forced exit waits ``seconds`` after the signal instead of :data:`GRACE_S`: for work
    whose clean stop takes longer and must not be cut (a Ray run stops its workers and the local cluster it
    started; a forced exit would leave them running)."""
    _longer_grace.append(seconds)
    try:
        yield
    finally:
        _longer_grace.remove(seconds)


def exit_code(signum: int) -> int:
    """The shell convention 128 + signal number: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + int(signum)


def stop_reason(signum: int) -> str:
    return "interrupted" if signum == signal.SIGINT else "terminated"


class Stopped(KeyboardInterrupt):
    """The command was asked to stop by a signal; ``signum`` says which (a KeyboardInterrupt, so
    code that already handles Ctrl-C handles SIGTERM the same way)."""

    def __init__(self, signum: int) -> None:
        super().__init__(stop_reason(signum))
        self.signum = int(signum)

    @property
    def exit_code(self) -> int:
        return exit_code(self.signum)

    @property
    def reason(self) -> str:
        return stop_reason(self.signum)


class StopOnSignals:
    """Context manager (see the module docstring).  ``on_stop(signum)`` is called in the main thread on
    the first signal; without it :class:`Stopped` is raised there.  Outside the main thread it does
    nothing (Python delivers signals to the main thread only)."""

    def __init__(self, on_stop: Callable[[int], None] | None = None, *, grace_s: float = GRACE_S) -> None:
        self.on_stop = on_stop
        self.grace_s = grace_s
        self.signum: int | None = None          # the first stop signal received
        self._active = False
        self._old_handlers: dict[int, Any] = {}
        self._old_wakeup = -1
        self._rsock: socket.socket | None = None
        self._wsock: socket.socket | None = None
        self._disarmed = threading.Event()

    # -- the main-thread side ------------------------------------------------------------------------
    def _handler(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:          # a second signal: the stop is under way (the deadline stands)
            if self.on_stop is None:
                raise Stopped(signum)
            return
        self.signum = signum
        if self.on_stop is not None:
            self.on_stop(signum)
        else:
            raise Stopped(signum)

    def __enter__(self) -> StopOnSignals:
        if threading.current_thread() is not threading.main_thread():
            return self
        self._rsock, self._wsock = socket.socketpair()
        self._wsock.setblocking(False)
        for sig in STOP_SIGNALS:
            self._old_handlers[sig] = signal.signal(sig, self._handler)
        self._old_wakeup = signal.set_wakeup_fd(self._wsock.fileno(), warn_on_full_buffer=False)
        threading.Thread(target=self._watch, args=(self._rsock,), name="verdictlab-stop-watcher",
                         daemon=True).start()
        self._active = True
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if not self._active:
            return
        self._active = False
        signal.set_wakeup_fd(self._old_wakeup)
        for sig, old in self._old_handlers.items():
            signal.signal(sig, old)
        if self.signum is None or not _forced_exit_allowed:
            self._disarmed.set()
        # once a signal came, a forced exit stays armed until the process has ended: interpreter
        # shutdown may still join a thread blocked in a judge call
        assert self._wsock is not None
        with contextlib.suppress(OSError):
            self._wsock.send(b"\0")          # ends the watcher thread
        self._wsock.close()

    # -- the watcher thread --------------------------------------------------------------------------
    def _watch(self, rsock: socket.socket) -> None:
        first: int | None = None
        try:
            while True:
                data = rsock.recv(64)
                if not data or 0 in data:
                    return
                # the first stop signal arms the deadline; later ones do not shorten it (a library that
                # caught the signal re-raises it once it has shut down: uvicorn does)
                for signum in (b for b in data if b in STOP_SIGNALS):
                    if first is None:
                        first = signum
                        grace = max([self.grace_s, *_longer_grace])
                        timer = threading.Timer(grace, self._force, args=(signum, "not stopped "
                                                f"{grace:g} s after the signal"))
                        timer.daemon = True
                        timer.start()
        finally:
            rsock.close()

    def _force(self, signum: int, why: str) -> None:
        if self._disarmed.is_set() or not _forced_exit_allowed:
            return
        msg = (f"error: {stop_reason(signum)} ({why}): stopped without waiting for the work in progress; "
               "what was committed is kept -- rerun to resume\n")
        with contextlib.suppress(OSError):
            os.write(2, msg.encode())
        os._exit(exit_code(signum))


__all__ = ["GRACE_S", "STOP_SIGNALS", "StopOnSignals", "Stopped", "allow_forced_exit", "exit_code", "longer_grace",
           "stop_reason"]
