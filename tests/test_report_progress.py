"""`verdictlab report` names its steps beside a spinner on a terminal (a 5.4M report takes most of a
minute) and prints nothing of them into a pipe or a log."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from verdictlab.testing.synthetic_run import write_synthetic_run

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("progress") / "run"
    write_synthetic_run(d, n_items=6, protocols=("direct",), temperatures=(0.0,)).close()
    return d


def _report(run_dir: Path, out: Path, *, tty: bool) -> tuple[int, str]:
    cmd = [sys.executable, "-m", "verdictlab.cli.main", "report", str(run_dir), "--format", "json", "-o", str(out),
           "--bootstrap", "20"]
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm"}
    if not tty:
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        return res.returncode, res.stderr
    main, sub = os.openpty()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=sub, env=env)
    os.close(sub)
    return _drain(proc, main)


def _drain(proc: subprocess.Popen[bytes], main: int) -> tuple[int, str]:
    seen = b""
    while True:
        ready, _, _ = select.select([main], [], [], 300)
        if not ready:
            proc.kill()
            break
        try:
            chunk = os.read(main, 65536)
        except OSError:              # the terminal closed: the command ended
            break
        if not chunk:
            break
        seen += chunk
    os.close(main)
    return proc.wait(timeout=60), seen.decode(errors="replace")


def test_a_terminal_sees_each_step_of_the_report(run_dir: Path, tmp_path: Path) -> None:
    rc, err = _report(run_dir, tmp_path / "r.json", tty=True)
    assert rc == 0, err
    for step in ("report: reading the run", "report: figures of 144 judgments"):
        assert step in err, err
    # after the spinner, on the line it cleared (not in the middle of a spinner's line)
    assert "\x1b[2KJSON report written to" in err and err.rindex("report written") > err.rindex("report:")
    assert (tmp_path / "r.json").stat().st_size > 0


def test_a_pipe_gets_no_spinner(run_dir: Path, tmp_path: Path) -> None:
    rc, err = _report(run_dir, tmp_path / "r.json", tty=False)
    assert rc == 0, err
    assert "report:" not in err
    assert err.strip().startswith("JSON report written to")


def test_the_html_report_is_drawn_beside_a_spinner(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    cmd_rc, err = _report_html(run_dir, out)
    assert cmd_rc == 0, err
    assert f"report: drawing {out}" in err
    assert "\x1b[2KHTML report written to" in err and err.rindex("report written") > err.rindex("report:")


def _report_html(run_dir: Path, out: Path) -> tuple[int, str]:
    main, sub = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "verdictlab.cli.main", "report", str(run_dir), "--format", "html",
                             "-o", str(out), "--bootstrap", "20"], stdout=subprocess.DEVNULL, stderr=sub,
                            env={**os.environ, "COLUMNS": "400", "TERM": "xterm"})
    os.close(sub)
    return _drain(proc, main)
