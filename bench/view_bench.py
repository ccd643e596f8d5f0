"""Benchmark of the viewer (``verdictlab view``): start-up and first byte per page on a 1,000,000-judgment store.

Builds two synthetic runs with the report's synthetic writer (``verdictlab.testing.synthetic_run``: 5 judges x
5 protocols x 2 datasets x 2 temperatures x 2 orders x 5 repetitions; 1,000 pairs per dataset for the big
store, 10 for the baseline -- 1,000,000 and 10,000 judgments), or reuses them when they exist.  Starts the
real command, ``verdictlab view RUN --port 0``, in a child process for each, and times:

* start-up: from launch to the "serving" line, cold (``--no-cache``: the index is built -- outcome columns
  read, pair outcomes from ``stats.modal_verdicts``, items, failed attempts) and from the index cache (a
  first start wrote it to a fresh ``VERDICTLAB_CACHE_DIR``), with the child's resident memory then;
* per page, first byte (the status line, after the server rendered the page) and the whole page, the median
  and the worst of ``--repeat`` requests, for: the list, a filtered list (judge + outcome), a deep page (the
  last page of the unfiltered list), a text search, and a pair page (every judgment of one pair: 500 at 1M).

Prints each figure, the ratio big/baseline in the same run, and the machine load (``uptime``).  Asserts
nothing; the aim is a first byte under 300 ms per page on the big store.

    .venv/bin/python bench/view_bench.py [--dir /tmp/verdictlab-view-bench] [--pairs 1000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

JUDGES = ("sim:steady", "sim:biased", "sim:j3", "sim:j4", "sim:j5")
PROTOCOLS = ("direct", "vf-json", "vf-xml", "cot-json", "cot-xml")


def build(run_dir: Path, n_pairs: int) -> tuple[int, float]:
    """The synthetic run (reused when its store exists); returns (judgments, seconds spent building)."""
    from verdictlab.store import open_store
    from verdictlab.testing.synthetic_run import write_synthetic_run

    if (run_dir / "run.sqlite").is_file():
        with open_store(run_dir) as st:
            return st.count(), 0.0
    start = time.perf_counter()
    st = write_synthetic_run(run_dir, datasets=("llmbar", "pandalm"), judges=JUDGES, protocols=PROTOCOLS,
                             temperatures=(0.0, 0.7), n_items=n_pairs, repetitions=5, seed=3)
    n = st.count()
    st.close()
    return n, time.perf_counter() - start


def rss_mb(pid: int) -> float:
    try:
        import psutil

        return psutil.Process(pid).memory_info().rss / 1e6
    except Exception:  # psutil missing or the process gone: report nothing rather than a guess
        return float("nan")


def start(run_dir: Path, cache: Path | None) -> tuple[subprocess.Popen[str], str, float]:
    begin = time.perf_counter()
    argv = [sys.executable, "-m", "verdictlab.cli.main", "view", str(run_dir), "--port", "0"]
    env = {**os.environ, "VERDICTLAB_CACHE_DIR": str(cache)} if cache is not None else os.environ.copy()
    proc = subprocess.Popen(argv + (["--no-cache"] if cache is None else []), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("serving "):
            return proc, line.split()[1].removesuffix("/pairs"), time.perf_counter() - begin
    raise RuntimeError(f"the viewer did not start: {proc.stderr.read() if proc.stderr else ''}")


def timed_get(base: str, path: str) -> tuple[float, float, int]:
    """(seconds to the status line, seconds to the last byte, bytes) of one GET."""
    url = urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=120)
    t0 = time.perf_counter()
    conn.request("GET", path)
    resp = conn.getresponse()
    first = time.perf_counter() - t0
    body = resp.read()
    total = time.perf_counter() - t0
    conn.close()
    if resp.status != 200:
        raise RuntimeError(f"GET {path}: {resp.status}")
    return first, total, len(body)


def pages(n_pairs: int) -> dict[str, str]:
    rows = len(JUDGES) * len(PROTOCOLS) * 2 * 2 * n_pairs          # pair x cell rows
    last = -(-rows // 50)
    return {"list": "/pairs", "filtered": "/pairs?judge=sim%3Abiased&outcome=flipped",
            "deep": f"/pairs?page={last}", "text": f"/pairs?q=question+{n_pairs // 2}+of",
            "pair": "/pairs/llmbar-3?dataset=llmbar"}


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.wait(30)


def measure(run_dir: Path, n_pairs: int, repeat: int) -> dict[str, tuple[float, ...]]:
    import shutil
    import tempfile

    proc, _, cold = start(run_dir, None)
    cold_rss = rss_mb(proc.pid)
    stop(proc)
    cache = Path(tempfile.mkdtemp(prefix="view-bench-cache-"))
    stop(start(run_dir, cache)[0])                                  # writes the index cache
    proc, base, cached = start(run_dir, cache)
    try:
        out: dict[str, tuple[float, ...]] = {"startup": (cold, cold_rss, cached, rss_mb(proc.pid))}
        for name, path in pages(n_pairs).items():
            timed_get(base, path)                                   # warm: the first request of a kind
            runs = [timed_get(base, path) for _ in range(repeat)]
            firsts, totals = [r[0] for r in runs], [r[1] for r in runs]
            out[name] = (statistics.median(firsts), max(firsts), statistics.median(totals), runs[0][2])
        return out
    finally:
        stop(proc)
        shutil.rmtree(cache, ignore_errors=True)


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/verdictlab-view-bench"))
    ap.add_argument("--pairs", type=int, default=1000, help="pairs per dataset of the big store (1000: 1M judgments)")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    print(f"load before: {load()}")
    sizes = {"baseline": 10, "big": args.pairs}
    results = {}
    for name, n_pairs in sizes.items():
        n, built = build(args.dir / f"run-{n_pairs}", n_pairs)
        print(f"{name}: {n:,} judgments in {args.dir / f'run-{n_pairs}'}"
              + (f" (built in {built:.0f} s)" if built else " (reused)"))
        results[name] = measure(args.dir / f"run-{n_pairs}", n_pairs, args.repeat)
    base, big = results["baseline"], results["big"]
    for k, what in ((0, "index built (--no-cache)"), (2, "index read from the cache")):
        print(f"start-up, launch to 'serving', {what}: baseline {base['startup'][k]:.1f} s, big "
              f"{big['startup'][k]:.1f} s (x{big['startup'][k] / base['startup'][k]:.1f}); resident memory then: "
              f"{base['startup'][k + 1]:.0f} MB / {big['startup'][k + 1]:.0f} MB")
    print(f"\n{'page':<10}{'first byte median (worst), big':>34}{'whole page':>12}{'size':>10}"
          f"{'baseline first byte':>22}{'big/baseline':>14}")
    for page in pages(args.pairs):
        f_med, f_max, t_med, size = big[page]
        b_med = base[page][0]
        print(f"{page:<10}{f'{f_med * 1000:.0f} ms ({f_max * 1000:.0f} ms)':>34}{f'{t_med * 1000:.0f} ms':>12}"
              f"{f'{size / 1000:.0f} kB':>10}{f'{b_med * 1000:.0f} ms':>22}{f_med / b_med:>13.1f}x")
    worst = max(big[p][1] for p in pages(args.pairs))
    print(f"\nworst first byte on the big store: {worst * 1000:.0f} ms (aim: under 300 ms)")
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
