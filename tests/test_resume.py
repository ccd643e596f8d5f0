"""Crash safety: a real ``verdictlab run`` subprocess killed at random moments, then resumed.

After every SIGKILL the store must hold only whole rows, never a duplicate; after the final resume
it must hold exactly one row per trial of the grid.  Ctrl-C (SIGINT) must stop cleanly with a hint
to rerun.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from verdictlab.engine import prepare_run
from verdictlab.engine.config import load_config

pytestmark = pytest.mark.slow

N_ITEMS = 40


def _setup(tmp_path: Path) -> Path:
    with (tmp_path / "pairs.jsonl").open("w") as fh:
        for i in range(N_ITEMS):
            fh.write(json.dumps({"item_id": f"p{i}", "question": f"Which is better for task {i}?",
                                 "response_a": f"answer one {i}", "response_b": f"answer two {i}",
                                 "label": "AB"[i % 3 % 2]}) + "\n")
    cfg = tmp_path / "slow.yaml"
    # 40 items x 2 protocols x 2 orders x 3 reps = 480 trials; 20 ms each, 4 at a time: ~2.4 s of work
    cfg.write_text(
        "name: slow\n"
        "datasets: [{name: jsonl, path: pairs.jsonl}]\n"
        "judges: [{id: 'sim:skill=0.7,position_lock=0.2,noise=0.1,seed=5,latency=0.02', concurrency: 4}]\n"
        "protocols: [direct, vf-json]\n"
        "repetitions: 3\n", encoding="utf-8")
    return cfg


def _cmd(cfg: Path, run_dir: Path) -> list[str]:
    return [sys.executable, "-m", "verdictlab.cli.main", "run", str(cfg), "--run-dir", str(run_dir),
            "--no-progress"]


def _count(run_dir: Path) -> int:
    db = run_dir / "run.sqlite"
    if not db.exists():
        return 0
    con = sqlite3.connect(db, timeout=30)
    try:
        return int(con.execute("SELECT COUNT(*) FROM judgments").fetchone()[0])
    except sqlite3.OperationalError:   # tables not created yet
        return 0
    finally:
        con.close()


def _start(cfg: Path, run_dir: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(_cmd(cfg, run_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def _wait_for_rows(proc: subprocess.Popen[str], run_dir: Path, more_than: int, timeout: float = 60) -> bool:
    """Wait until the store has more than ``more_than`` rows; False if the process ended first."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if _count(run_dir) > more_than:
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.02)
    raise AssertionError("run made no progress")


def test_sigkill_then_resume_gives_one_row_per_trial(tmp_path: Path) -> None:
    cfg_path = _setup(tmp_path)
    run_dir = tmp_path / "run"
    expected = {t.trial_id for t in prepare_run(load_config(cfg_path)).trials}
    assert len(expected) == N_ITEMS * 2 * 2 * 3

    rng = random.Random()
    seed = rng.randrange(10**6)
    rng.seed(seed)
    kills, counts = 0, [0]
    while kills < 4:
        proc = _start(cfg_path, run_dir)
        if not _wait_for_rows(proc, run_dir, counts[-1]):
            break                                  # finished before we could kill it
        time.sleep(rng.uniform(0.0, 0.4))          # a random moment in the middle of judging
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
        kills += 1
        counts.append(_count(run_dir))
        # progress was kept and nothing was lost: rows only ever grow
        assert counts[-1] >= counts[-2], f"rows went down after a kill (seed {seed}): {counts}"
    assert kills >= 3, f"the run finished too fast to be killed 3 times (seed {seed}); counts {counts}"
    assert counts[-1] < len(expected), f"killed runs already finished everything (seed {seed})"

    done = subprocess.run(_cmd(cfg_path, run_dir), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "already done (skipped)" in done.stderr and "verdictlab report" in done.stderr   # messages on stderr

    con = sqlite3.connect(run_dir / "run.sqlite")
    try:
        ids = [r[0] for r in con.execute("SELECT trial_id FROM judgments")]
        keys = con.execute('SELECT COUNT(*), COUNT(DISTINCT judge || dataset || item_id || protocol || "order" '
                           "|| temperature || rep || step) FROM judgments").fetchone()
        statuses = {r[0] for r in con.execute("SELECT DISTINCT parse_status FROM judgments")}
        ok_attempts = con.execute("SELECT COUNT(*) FROM attempts WHERE outcome = 'ok'").fetchone()[0]
    finally:
        con.close()
    # exactly one row per trial key, no duplicates, nothing missing, nothing extra
    assert len(ids) == len(set(ids)) == len(expected), f"seed {seed}"
    assert set(ids) == expected
    assert keys[0] == keys[1] == len(expected)
    assert statuses == {"ok"}
    # every trial was answered at least once; calls lost in flight by a kill are redone
    assert ok_attempts >= len(expected)


def test_ctrl_c_and_sigterm_stop_cleanly_and_resume(tmp_path: Path) -> None:
    cfg_path = _setup(tmp_path)
    run_dir = tmp_path / "run"
    total = N_ITEMS * 12
    partial = 0
    for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        proc = _start(cfg_path, run_dir)
        assert _wait_for_rows(proc, run_dir, partial)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == code, (out, err)
        # the summary is a message: stderr (data alone goes to stdout)
        assert ("interrupted" if sig == signal.SIGINT else "terminated") in err and out == ""
        assert "Rerun the same command to resume" in err
        assert "Traceback" not in err
        # what was finished before the signal is in the store
        assert partial < _count(run_dir) < total
        partial = _count(run_dir)
    done = subprocess.run(_cmd(cfg_path, run_dir), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _count(run_dir) == total
