"""Profile of ``verdictlab report RUN --json`` and ``--html`` on an existing run: where the time and the
memory go.

Prints (CPU seconds: the profile's clock is the process's CPU time, so a loaded machine distorts it
less than wall time would):

1. the top functions by cumulative CPU time (cProfile over build_report + report_json + render_html),
   with their share of the whole;
2. each registered analysis and cell-column analysis alone, on the same input, with the growth of the
   resident set size while it runs (psutil, sampled);
3. the resident set size after loading the run, and the peak.

It runs the report in one process (``VERDICTLAB_WORKERS=1``; a large report otherwise forks a second that
the profile would not see) and reads the figure columns through the column cache, as ``verdictlab report``
does.

    python bench/report_profile.py RUN_DIR [--top 15] [--bootstrap 1000]

Use it on the runs ``bench/scale_bench.py --root DIR`` leaves (``DIR/540k/run``).
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import os
import pstats
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


class PeakRss:
    """Peak resident set size of this process while the block runs (sampled every 20 ms)."""

    def __init__(self) -> None:
        import psutil

        self.proc = psutil.Process()
        self.start = self.peak = self.proc.memory_info().rss
        self._stop = threading.Event()

    def __enter__(self) -> PeakRss:
        self.start = self.peak = self.proc.memory_info().rss
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self.proc.memory_info().rss)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)


def _cpu(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    with PeakRss() as mem:
        c0 = time.process_time()
        out = fn()
        cpu = time.process_time() - c0
    return out, cpu, (mem.peak - mem.start) / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--bootstrap", type=int, default=1000)
    args = ap.parse_args()

    from verdictlab import analyses
    from verdictlab.core.policy import FigurePolicy
    from verdictlab.report import build_report, render_html, report_json
    from verdictlab.report.build import _load
    from verdictlab.report.lanes import ENV_WORKERS
    from verdictlab.store import open_store
    from verdictlab.store.column_cache import cache_root

    os.environ[ENV_WORKERS] = "1"       # one process: the profile sees every job (a report forks a second)
    cache = cache_root("columns")       # the figure columns as a report reads them (built on first use)
    with PeakRss() as whole:
        prof = cProfile.Profile(time.process_time)
        c0 = time.process_time()
        prof.enable()
        rep = build_report(args.run_dir, policy=FigurePolicy(n_bootstrap=args.bootstrap), cache=cache)
        report_json(rep)
        with tempfile.TemporaryDirectory() as tmp:
            render_html(rep, Path(tmp) / "r.html")
        prof.disable()
        total = time.process_time() - c0
    stats = pstats.Stats(prof, stream=io.StringIO())
    print(f"report --json + --html: {total:.1f} s CPU in all; peak RSS {whole.peak / 1e9:.2f} GB\n")
    print(f"top {args.top} by cumulative CPU (cumtime; share of the total):")
    rows = []
    for (file, line, fn), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        if "verdictlab" in file or fn in ("read_sql_query", "dumps"):
            rows.append((ct, f"{Path(file).parent.name}/{Path(file).name}:{line} {fn}"))
    for ct, name in sorted(rows, reverse=True)[: args.top]:
        print(f"  {ct:8.2f} s  {100 * ct / total:5.1f}%  {name}")
    print(f"\ntop {args.top} by own CPU (tottime, any library):")
    own = sorted(((tt, f"{Path(file).parent.name}/{Path(file).name}:{line} {fn}")
                  for (file, line, fn), (_cc, _nc, tt, _ct, _callers) in stats.stats.items()),  # type: ignore[attr-defined]
                 reverse=True)
    for tt, name in own[: args.top]:
        print(f"  {tt:8.2f} s  {100 * tt / total:5.1f}%  {name}")

    with open_store(args.run_dir) as store:
        (judgments, _att, items_frame, items, _meta), load_cpu, load_gb = _cpu(lambda: _load(store, cache))
    print(f"\nloading the run (store.judgments, attempts, items): {load_cpu:.1f} s CPU, +{load_gb:.2f} GB; "
          f"the judgments frame holds {judgments.memory_usage(deep=True).sum() / 1e9:.2f} GB "
          f"({len(judgments):,} rows)")
    inp = analyses.AnalysisInput(judgments, items=items, items_frame=items_frame,
                                 policy=FigurePolicy(n_bootstrap=args.bootstrap))
    timed = []
    for a in analyses.registered():
        _t, cpu, gb = _cpu(functools.partial(_safe, a, inp))
        timed.append((cpu, gb, f"analysis {a.name}"))
    for cc in analyses.registered_cell_columns():
        _t, cpu, gb = _cpu(functools.partial(_safe, cc.fn, inp))
        timed.append((cpu, gb, f"cell columns {cc.name}"))
    print("\nregistered analyses alone (CPU s, RSS growth GB), slowest first:")
    for cpu, gb, name in sorted(timed, reverse=True):
        print(f"  {cpu:8.2f} s  +{gb:5.2f} GB  {name}")


def _safe(fn: Callable[[Any], Any], inp: Any) -> Any:
    try:
        return fn(inp)
    except Exception as exc:  # noqa: BLE001 - a profile goes on past an analysis that fails
        return exc


if __name__ == "__main__":
    main()
