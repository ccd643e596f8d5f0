"""How long a ``verdictlab`` command takes to start: the CLI with every command registered
(``verdictlab --version``, which loads all command modules) against, in the same run and under the same
load, a bare Python start and an import of the whole library (``import verdictlab.engine``: what every
command paid before the public names were loaded on first use).  Median wall and CPU time over
``--rounds`` child processes each; prints times, ratios and the machine load; does not assert.

    .venv/bin/python bench/cli_start_bench.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "verdictlab --version": [sys.executable, "-m", "verdictlab.cli.main", "--version"],
    "verdictlab report --help": [sys.executable, "-m", "verdictlab.cli.main", "report", "--help"],
    "import verdictlab.engine": [sys.executable, "-c", "import verdictlab.engine"],
}


def _one(cmd: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    print(f"load before: {os.getloadavg()[0]:.2f}")
    res: dict[str, tuple[float, float]] = {}
    samples: dict[str, list[tuple[float, float]]] = {k: [] for k in CASES}
    for _ in range(args.rounds):            # interleaved, so every case sees the same load
        for name, cmd in CASES.items():
            samples[name].append(_one(cmd))
    for name, xs in samples.items():
        res[name] = (statistics.median(w for w, _ in xs), statistics.median(c for _, c in xs))
    base_w, base_c = res["verdictlab --version"]
    for name, (w, c) in res.items():
        print(f"{name:26s} wall {w:6.3f} s  cpu {c:6.3f} s  ({w / base_w:5.2f}x / {c / base_c:5.2f}x the CLI start)")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
