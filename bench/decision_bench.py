"""Bench: what the decision panel costs in ``verdictlab report`` on an existing run.

Prints CPU seconds (the process's own clock: a loaded machine distorts it less than wall time) and the
machine load (``uptime``) before and after:

1. in this process, on the run's judgments: :func:`verdictlab.stats.reliability` (the baseline every
   report pays), then what the decision adds -- :func:`verdictlab.stats.versus_best` (the paired tests
   against each dataset's best), :func:`verdictlab.stats.cell_regions_possible` (the regions an interval
   box reaches), the display names and :func:`verdictlab.report.readings.decision` -- each with its ratio
   to the baseline;
2. with ``--before-src DIR`` (e.g. the main branch's ``src``): ``verdictlab report RUN --json`` as a child
   process under that source tree and under this one, alternated ``--rounds`` times, with the ratio of
   the medians of their CPU times (children's user + system time).

    python bench/decision_bench.py RUN_DIR [--bootstrap 1000] [--before-src OLD/src --rounds 3]

A run to try it on: ``python bench/scale_bench.py --sizes 54k --root DIR --steps import`` leaves
``DIR/54k/run`` (54,000 judgments).  Prints, never asserts.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _uptime() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _cpu(fn: Callable[[], Any]) -> tuple[Any, float]:
    c0 = time.process_time()
    out = fn()
    return out, time.process_time() - c0


def in_process(run_dir: Path, bootstrap: int) -> None:
    from verdictlab.core.policy import FigurePolicy
    from verdictlab.report import readings
    from verdictlab.report.build import _load, _name_all, cells_from_frame
    from verdictlab.stats import cell_regions_possible, reliability, versus_best
    from verdictlab.store import open_store

    with open_store(run_dir) as store:
        judgments, _att, _items_frame, _items, meta = _load(store)
    print(f"{len(judgments):,} judgments; {_uptime()}")
    frame, base = _cpu(lambda: reliability(judgments, q="auto", policy=FigurePolicy(n_bootstrap=bootstrap)))
    rows: list[tuple[str, float]] = []
    vs, t = _cpu(lambda: versus_best(judgments, frame, policy=FigurePolicy(n_bootstrap=bootstrap)))
    rows.append(("versus_best (paired sign tests, Holm)", t))
    _, t = _cpu(lambda: cell_regions_possible(frame))
    rows.append(("cell_regions_possible", t))
    frame = frame.assign(vs_best=vs.drop(columns=["best_row"]).to_dict(orient="records"))
    cells = cells_from_frame(frame)
    _, t = _cpu(lambda: _name_all(cells, meta))
    rows.append(("display names", t))
    _, t = _cpu(lambda: readings.decision(cells, alpha=0.05, family_size=int(vs.attrs["family_size"])))
    rows.append(("readings.decision", t))
    print(f"  {'reliability (baseline, bootstrap ' + str(bootstrap) + ')':<44} {base:7.3f} s CPU  1.000")
    for name, t in rows:
        print(f"  {name:<44} {t:7.3f} s CPU  {t / base:.3f}")
    added = sum(t for _, t in rows)
    print(f"  {'the decision in all':<44} {added:7.3f} s CPU  {added / base:.3f}   ({_uptime()})")


def _child_cpu(cmd: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def before_after(run_dir: Path, before_src: Path, bootstrap: int, rounds: int) -> None:
    here = Path(__file__).resolve().parents[1] / "src"
    cmd = [sys.executable, "-m", "verdictlab.cli.main", "report", str(run_dir), "--json", "--bootstrap",
           str(bootstrap)]
    times: dict[str, list[float]] = {"before": [], "after": []}
    print(f"\nreport --json as a child, {rounds} rounds alternated; {_uptime()}")
    for k in range(rounds):
        for which, src in (("before", before_src), ("after", here)):
            env = {**os.environ, "PYTHONPATH": str(src)}
            t = _child_cpu(cmd, env)
            times[which].append(t)
            print(f"  round {k + 1} {which:<6} ({src}): {t:6.2f} s CPU   ({_uptime()})")
    b, a = statistics.median(times["before"]), statistics.median(times["after"])
    print(f"  median CPU: before {b:.2f} s, after {a:.2f} s, ratio after/before {a / b:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--before-src", type=Path, default=None, help="a source tree to compare report --json with")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    in_process(args.run_dir, args.bootstrap)
    if args.before_src is not None:
        before_after(args.run_dir, args.before_src, args.bootstrap, args.rounds)


if __name__ == "__main__":
    main()
