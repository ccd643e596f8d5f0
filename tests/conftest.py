"""Shared test fixtures."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The public benchmark files (``../shared/data`` beside the checkout; override with
    ``VERDICTLAB_SHARED_DATA``)."""
    env = os.environ.get("VERDICTLAB_SHARED_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    d = shared_data_dir()
    if not d.is_dir():
        pytest.skip(f"shared benchmark data not found at {d} (set VERDICTLAB_SHARED_DATA)")
    return d


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The docs runner's count of run and skipped blocks (tests/_doc_blocks.py), when it ran."""
    import sys

    doc_blocks = sys.modules.get("_doc_blocks")
    line = doc_blocks.summary_line() if doc_blocks is not None else None
    if line:
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def browser() -> Any:
    """Headless Debian chromium through Playwright (tests/_browser.py), started once per session."""
    from _browser import chromium

    with chromium() as b:
        yield b
