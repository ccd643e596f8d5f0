"""`verdictlab view RUN`: serves until Ctrl-C (exit 130), one-line errors with the documented exit codes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("uvicorn")
from typer.testing import CliRunner  # noqa: E402

from _view_runs import write_known_run  # noqa: E402
from verdictlab.cli.main import app  # noqa: E402

runner = CliRunner()
EXE = [sys.executable, "-m", "verdictlab.cli.main"]


def _env(cache: Path) -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[1] / "src")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
            "VERDICTLAB_CACHE_DIR": str(cache)}


def _serve(run: Path, cache: Path) -> tuple[subprocess.Popen[str], str, str]:
    """Start `verdictlab view RUN --port 0`; returns the process, its first line and its address."""
    proc = subprocess.Popen([*EXE, "view", str(run), "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(cache))
    assert proc.stdout is not None
    first = proc.stdout.readline()
    serving = proc.stdout.readline()
    assert serving.startswith("serving http://127.0.0.1:") and "Ctrl-C" in serving, (first, serving)
    return proc, first, serving.split()[1]


def test_serves_the_run_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    run = write_known_run(tmp_path / "run")
    proc, first, url = _serve(run, tmp_path / "cache")
    try:
        assert first.startswith("verdictlab view: 96 judgments, 8 pairs in ") and "index built in" in first, first
        page = httpx.get(url, params={"outcome": "flipped"}, timeout=30)
        assert page.status_code == 200 and 'data-item="p2"' in page.text
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "viewer stopped"
    # the second start reads the index the first one left in the cache (VERDICTLAB_CACHE_DIR)
    proc, first, url = _serve(run, tmp_path / "cache")
    try:
        assert "index read from the cache in" in first, first
        assert 'data-item="p2"' in httpx.get(url, params={"outcome": "flipped"}, timeout=30).text
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    assert proc.returncode == 130


def test_a_port_in_use_is_a_usage_error(tmp_path: Path) -> None:
    run = write_known_run(tmp_path / "run")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        start = time.perf_counter()
        res = runner.invoke(app, ["view", str(run), "--port", str(port)])
    assert res.exit_code == 2
    assert f"127.0.0.1:{port}: in use; choose another --port (0 picks a free one)" in res.output
    assert time.perf_counter() - start < 30


def test_no_run_store_is_exit_5(tmp_path: Path) -> None:
    res = runner.invoke(app, ["view", str(tmp_path / "nowhere"), "--port", "0"])
    assert res.exit_code == 5
    assert "no run store here" in res.output


def test_a_bad_host_is_a_usage_error(tmp_path: Path) -> None:
    run = write_known_run(tmp_path / "run")
    res = runner.invoke(app, ["view", str(run), "--host", "no-such-host.invalid", "--port", "0"])
    assert res.exit_code == 2
    assert "--host no-such-host.invalid: not an address of this machine" in res.output


def test_help_names_the_options() -> None:
    res = runner.invoke(app, ["view", "--help"])
    assert res.exit_code == 0
    for option in ("--port", "--host", "--unparsed"):
        assert option in res.output
