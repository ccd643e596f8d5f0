"""A run, an import and the selftest stop within a second of SIGTERM or Ctrl-C whatever the judge, exit
143 / 130 as docs/errors.md says, and resume with nothing lost.  Each test sends the signal to a real
``python -m verdictlab`` subprocess and measures the time from the signal to the process's exit.

Before: with the simulated judge (it answers without awaiting) SIGTERM at ~1,000 stored rows was
ignored, all 18,000 trials were judged and the run exited 0; Ctrl-C acted only after the last trial;
a Ctrl-C while the command modules loaded printed a traceback; SIGTERM killed an import with no exit
code of its own; Ctrl-C in the selftest was an "internal error".

The bound asserted is 2 s, not 1 s, so a loaded CI machine does not make the tests flaky; the stop
itself takes 0.03-0.4 s on two shared cores at load 10 (the figures are in the helper's report), and a
stop held up by native code is forced 0.8 s after the signal (the last test).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

BOUND_S = 2.0
N_ITEMS = 500          # x 3 protocols x 2 orders x 6 repetitions = 18,000 trials, as in the report
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "verdictlab", *args]


def _config(tmp_path: Path, *, judge: str = "sim:skill=0.8,position_lock=0.2,noise=0.05,seed=1",
            n_items: int = N_ITEMS, protocols: tuple[str, ...] = ("direct", "vf-json", "cot-json"),
            repetitions: int = 6) -> Path:
    with (tmp_path / "pairs.jsonl").open("w") as f:
        for i in range(n_items):
            f.write(json.dumps({"item_id": f"x{i}", "question": f"q{i}", "response_a": f"a{i}",
                                "response_b": f"b{i}", "label": "A" if i % 2 else "B"}) + "\n")
    cfg = tmp_path / "audit.yaml"
    cfg.write_text(yaml.safe_dump({"name": "signals", "datasets": [{"name": "jsonl", "path": "pairs.jsonl"}],
                                   "judges": [judge], "protocols": list(protocols), "repetitions": repetitions}))
    return cfg


def _rows(run_dir: Path) -> int:
    db = run_dir / "run.sqlite"
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return int(con.execute("SELECT COUNT(*) FROM judgments").fetchone()[0])
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


def _signal_and_time(proc: subprocess.Popen[str], sig: int) -> tuple[float, str, str]:
    t0 = time.monotonic()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    return time.monotonic() - t0, out, err


def _wait_rows(proc: subprocess.Popen[str], run_dir: Path, at_least: int, timeout: float = 300) -> None:
    t0 = time.monotonic()
    while _rows(run_dir) < at_least:
        assert proc.poll() is None, f"the run ended before {at_least} rows: {proc.communicate()}"
        assert time.monotonic() - t0 < timeout, "the run did not reach the rows in time"
        time.sleep(0.05)


@pytest.mark.parametrize(("sig", "code", "word"), [(signal.SIGTERM, 143, "terminated"),
                                                  (signal.SIGINT, 130, "interrupted")])
def test_sim_judge_run_stops_within_a_second_and_resumes(tmp_path, sig, code, word):
    cfg = _config(tmp_path)
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(_cmd("run", str(cfg), "--run-dir", str(run_dir), "--no-progress"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    _wait_rows(proc, run_dir, 1000)
    elapsed, out, err = _signal_and_time(proc, sig)
    assert proc.returncode == code, (out, err)
    assert elapsed < BOUND_S, f"stopped {elapsed:.2f} s after {word}"
    assert f"stopped early: {word}" in err and "Traceback" not in err      # the summary is a message
    stopped_at = _rows(run_dir)
    assert 1000 <= stopped_at < 18_000
    done = subprocess.run(_cmd("run", str(cfg), "--run-dir", str(run_dir), "--no-progress"),
                          capture_output=True, text=True, env=ENV, timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"{stopped_at} already done (skipped)" in done.stderr
    con = sqlite3.connect(run_dir / "run.sqlite")
    n, distinct = con.execute("SELECT COUNT(*), COUNT(DISTINCT trial_id) FROM judgments").fetchone()
    con.close()
    assert n == distinct == 18_000                 # nothing lost, nothing judged twice


def test_a_judge_that_blocks_the_process_is_stopped_too(tmp_path):
    """A judge whose call blocks in native code (here time.sleep in the event loop's thread) holds
    every Python-level handler off; the watcher ends the process 0.8 s after SIGTERM, exit 143, and
    what was committed is kept."""
    script = tmp_path / "blocking.py"
    script.write_text(textwrap.dedent("""
        import sys, time
        from verdictlab.judges import register_judge
        from verdictlab.judges.base import JudgeAPI, JudgeResponse

        class Blocking(JudgeAPI):
            provider = "blocking"
            calls = 0
            async def generate(self, request):
                Blocking.calls += 1
                if Blocking.calls > 40:
                    time.sleep(60)                      # never awaits: the loop and its handlers wait
                return JudgeResponse(text="[[A]]", tokens_in=1, tokens_out=1, cost_usd=0.0, latency_s=0.0)

        register_judge("blocking", lambda judge_id, spec: Blocking(judge_id, spec))
        from verdictlab.cli import entry_point
        sys.argv = ["verdictlab", *sys.argv[1:]]
        entry_point()
    """))
    cfg = _config(tmp_path, judge="blocking:x", n_items=50, protocols=("direct",), repetitions=1)
    run_dir = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, str(script), "run", str(cfg), "--run-dir", str(run_dir), "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    _wait_rows(proc, run_dir, 32)          # the writer commits every 32 rows; call 41 blocks
    time.sleep(0.5)
    elapsed, out, err = _signal_and_time(proc, signal.SIGTERM)
    assert proc.returncode == 143, (out, err)
    assert elapsed < BOUND_S, f"forced exit {elapsed:.2f} s after SIGTERM"
    assert "error: terminated (not stopped 0.8 s after the signal)" in err and "rerun to resume" in err
    assert _rows(run_dir) >= 32


def test_import_stops_on_sigterm_with_all_rows_or_none(tmp_path):
    src = tmp_path / "big.csv"
    with src.open("w") as f:
        f.write("item_id,judge,protocol,dataset,order,rep,temperature,verdict\n")
        for i in range(100_000):
            f.write(f"x{i // 2},j,p,d,{'AB' if i % 2 else 'BA'},0,0,A\n")
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(_cmd("import", "csv", str(src), "--run-dir", str(run_dir)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    time.sleep(3.0)                          # past start-up: in the imports or reading the file
    assert proc.poll() is None, proc.communicate()
    elapsed, out, err = _signal_and_time(proc, signal.SIGTERM)
    assert proc.returncode == 143, (out, err)
    assert elapsed < BOUND_S
    assert err.startswith("error: terminated") and "Traceback" not in err
    assert _rows(run_dir) in (0, 100_000)     # one transaction: all rows or none
    again = subprocess.run(_cmd("import", "csv", str(src), "--run-dir", str(run_dir)), capture_output=True,
                           text=True, env=ENV, timeout=600)
    assert again.returncode == 0, again.stderr
    assert _rows(run_dir) == 100_000


def test_ctrl_c_while_the_command_modules_load_is_one_line(tmp_path):
    proc = subprocess.Popen(_cmd("report", str(tmp_path / "nowhere")), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV)
    time.sleep(0.5)                          # the entry point is in place; the command modules are loading
    elapsed, out, err = _signal_and_time(proc, signal.SIGINT)
    assert proc.returncode in (130, 5), (out, err)     # 5: it finished loading first and found no store
    assert "Traceback" not in err and err.startswith("error: ")


def test_selftest_ctrl_c_exits_130_not_internal_error(tmp_path):
    proc = subprocess.Popen(_cmd("selftest", "--pairs", "400", "--questions", "300"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV)
    time.sleep(8.0)
    assert proc.poll() is None, proc.communicate()
    elapsed, out, err = _signal_and_time(proc, signal.SIGINT)
    assert proc.returncode == 130, (out, err)
    assert elapsed < BOUND_S
    assert "internal error" not in err and "Traceback" not in err and "interrupted" in err + out


@pytest.mark.ray
def test_sigterm_while_ray_starts_is_the_runs_stop(tmp_path):
    """ray.init installs its own SIGTERM handler (``sys.exit(15)``: exit code 15, no summary) and leaves
    it in place; the run's handling is put back, and a SIGTERM during the init is the run's stop."""
    pytest.importorskip("ray")
    cfg = _config(tmp_path, n_items=40, protocols=("direct",), repetitions=2)
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(_cmd("run", str(cfg), "--run-dir", str(run_dir), "--executor", "ray", "--no-progress"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    t0 = time.monotonic()
    while not (run_dir / "run.sqlite").exists():         # the store exists just before the executor starts
        assert proc.poll() is None and time.monotonic() - t0 < 300, proc.communicate()
        time.sleep(0.05)
    time.sleep(1.0)                                        # inside ray.init (seconds on a loaded machine)
    elapsed, out, err = _signal_and_time(proc, signal.SIGTERM)
    assert proc.returncode == 143, (out, err[-2000:])
    assert "stopped early: terminated" in err or "error: terminated" in err
    assert elapsed < 35                                    # a Ray run's stop may take RAY_STOP_S


def test_viewer_sigterm_exits_143(tmp_path):
    """uvicorn catches the signal, shuts down and raises it again: the viewer still ends with the
    signal's own code (SIGTERM 143, not Ctrl-C's 130) and its one line."""
    pytest.importorskip("uvicorn")
    from _view_runs import write_known_run

    run = write_known_run(tmp_path / "run")
    env = {**ENV, "VERDICTLAB_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen(_cmd("view", str(run), "--port", "0"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    assert proc.stdout is not None
    proc.stdout.readline()
    assert proc.stdout.readline().startswith("serving http://127.0.0.1:")
    elapsed, out, err = _signal_and_time(proc, signal.SIGTERM)
    assert proc.returncode == 143, err
    assert elapsed < BOUND_S and err.strip().splitlines()[-1] == "viewer stopped"
