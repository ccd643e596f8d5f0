"""How long after SIGTERM / Ctrl-C a ``verdictlab run`` with the simulated judge (it answers without
awaiting) ends, against the one-second promise of docs/errors.md.  Prints the seconds from the signal
to the process's exit over a few runs, the ratio to the one-second bound, and the machine load.

    python bench/stop_bench.py [--runs 3] [--items 500]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml


def _rows(db: Path) -> int:
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


def one_stop(root: Path, sig: int, at_rows: int) -> tuple[float, int]:
    run_dir = root / f"run-{time.monotonic_ns()}"
    proc = subprocess.Popen([sys.executable, "-m", "verdictlab", "run", str(root / "audit.yaml"), "--run-dir",
                             str(run_dir), "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    while _rows(run_dir / "run.sqlite") < at_rows:
        if proc.poll() is not None:
            raise SystemExit("the run ended before the signal; use more --items")
        time.sleep(0.02)
    t0 = time.monotonic()
    proc.send_signal(sig)
    proc.wait()
    return time.monotonic() - t0, proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--items", type=int, default=500)
    ap.add_argument("--at-rows", type=int, default=1000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with (root / "pairs.jsonl").open("w") as f:
            for i in range(args.items):
                f.write(json.dumps({"item_id": f"x{i}", "question": f"q{i}", "response_a": "a", "response_b": "b",
                                    "label": "A"}) + "\n")
        (root / "audit.yaml").write_text(yaml.safe_dump({
            "name": "stop", "datasets": [{"name": "jsonl", "path": "pairs.jsonl"}],
            "judges": ["sim:skill=0.8,position_lock=0.2,noise=0.05,seed=1"],
            "protocols": ["direct", "vf-json", "cot-json"], "repetitions": 6}))
        print(f"load before: {os.getloadavg()}")
        for name, sig in (("SIGTERM", signal.SIGTERM), ("SIGINT", signal.SIGINT)):
            times, codes = [], []
            for _ in range(args.runs):
                dt, code = one_stop(root, sig, args.at_rows)
                times.append(dt)
                codes.append(code)
            print(f"{name}: signal -> exit {statistics.median(times):.2f} s median (min {min(times):.2f}, "
                  f"max {max(times):.2f}) = {max(times) / 1.0:.2f} x the 1 s bound; exit codes {sorted(set(codes))}")
        print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
