"""Shared test fixtures."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _mirror import BenchmarkMirror, MirrorServer, build_mirror

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The public benchmark files, unmodified upstream copies (``../shared/data`` beside the checkout where
    this project is developed; override with ``VERDICTLAB_SHARED_DATA``).  The only place that knows this
    folder: a user's clone has none, and every test that needs it skips with the reason."""
    env = os.environ.get("VERDICTLAB_SHARED_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session", autouse=True)
def _own_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Caches the library keeps beside a store (a bulk import's figure columns, the viewer's index) go
    to a folder of this session, never the user's cache (``VERDICTLAB_CACHE_DIR`` given wins)."""
    if not os.environ.get("VERDICTLAB_CACHE_DIR"):
        os.environ["VERDICTLAB_CACHE_DIR"] = str(tmp_path_factory.mktemp("verdictlab-cache"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    d = shared_data_dir()
    if not d.is_dir():
        pytest.skip(f"shared benchmark data not found at {d} (set VERDICTLAB_SHARED_DATA)")
    return d


@pytest.fixture(scope="session")
def benchmark_mirror(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BenchmarkMirror]:
    """A local HTTP mirror of every pinned dataset the shared data holds (none without the shared data)."""
    shared = shared_data_dir()
    if not shared.is_dir():
        yield BenchmarkMirror(None, frozenset(), shared)
        return
    root = tmp_path_factory.mktemp("benchmark-mirror")
    names = build_mirror(shared, root)
    with MirrorServer(root) as server:
        yield BenchmarkMirror(server.url, frozenset(names), shared)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The docs runner's count of run and skipped blocks (tests/_doc_blocks.py), when it ran."""
    import sys

    doc_blocks = sys.modules.get("_doc_blocks")
    line = doc_blocks.summary_line() if doc_blocks is not None else None
    if line:
        terminalreporter.write_line(line)


class CallerSpy:
    """Counts, by trial id, every call reservation and every recorded result as the judge caller saw them
    (``JudgeCaller.reserve`` / ``JudgeCaller.record`` wrapped on the class), and the cache key each result
    was recorded with: an executor that bypassed the caller leaves them empty."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from verdictlab.engine.caller import JudgeCaller

        self.reserved: Counter[str] = Counter()
        self.recorded: Counter[str] = Counter()
        self.cache_keys: dict[str, str | None] = {}
        reserve, record = JudgeCaller.reserve, JudgeCaller.record

        def spy_reserve(caller: Any, trial_id: str) -> int | None:
            n = reserve(caller, trial_id)
            if n is not None:
                self.reserved[trial_id] += 1
            return n

        def spy_record(caller: Any, trial_id: str, **kw: Any) -> Any:
            self.recorded[trial_id] += 1
            self.cache_keys[trial_id] = kw.get("cache_key")
            return record(caller, trial_id, **kw)

        monkeypatch.setattr(JudgeCaller, "reserve", spy_reserve)
        monkeypatch.setattr(JudgeCaller, "record", spy_record)


@pytest.fixture
def caller_spy(monkeypatch: pytest.MonkeyPatch) -> CallerSpy:
    return CallerSpy(monkeypatch)


@pytest.fixture(scope="module")
def browser() -> Any:
    """Headless Debian chromium through Playwright (tests/_browser.py), started once per test module.

    Not once per session: Playwright's sync API keeps an asyncio loop running in the main thread while it
    is open, so every later test that calls ``asyncio.run`` (the engine, the HTTP conformance suite) would
    fail with "cannot be called from a running event loop"."""
    from _browser import chromium

    with chromium() as b:
        yield b
