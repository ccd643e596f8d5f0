"""Bench: the pair bootstrap's resample weights, the previous form against today's, in one process.

The previous form counted a chunk's draws with one ``np.bincount`` over all of them (each resample's
draws shifted by ``i * n``) and cast the counts to floats; today's counts each resample into a float
matrix (:func:`verdictlab.stats._pair_bootstrap.resampled_sums`).  Both sum the same rows (checked
here), so the ratio is the whole change.  Prints CPU seconds (the process's clock: less distorted by a
loaded machine than wall time) of each, best of ``--repeat``, and their ratio.

    python bench/resample_bench.py [--pairs 100000] [--resamples 1000] [--columns 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Iterator

import numpy as np

from verdictlab.stats._pair_bootstrap import resampled_sums


def _previous_weights(n: int, n_boot: int, rng: np.random.Generator, chunk: int = 4_000_000) -> Iterator[np.ndarray]:
    step = max(1, chunk // max(n, 1))
    for start in range(0, n_boot, step):
        rows = min(step, n_boot - start)
        draws = rng.integers(0, n, size=(rows, n))
        draws += (np.arange(rows) * n)[:, None]
        yield np.bincount(draws.ravel(), minlength=rows * n).reshape(rows, n).astype(float)


def _previous_sums(x: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    return np.concatenate([w @ x for w in _previous_weights(len(x), n_boot, rng)])


def _best_cpu(fn: Callable[[], np.ndarray], repeat: int) -> tuple[float, np.ndarray]:
    best, out = float("inf"), np.zeros(0)
    for _ in range(repeat):
        start = time.process_time()
        out = fn()
        best = min(best, time.process_time() - start)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=100_000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--columns", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    x = np.random.default_rng(0).random((args.pairs, args.columns))
    before, ref = _best_cpu(lambda: _previous_sums(x, args.resamples, np.random.default_rng(1)), args.repeat)
    after, got = _best_cpu(lambda: resampled_sums(x, args.resamples, np.random.default_rng(1)), args.repeat)
    if not np.array_equal(ref, got):
        raise SystemExit("the two forms disagree: the draws or the sums changed")
    print(f"load {os.getloadavg()[0]:.1f}; {args.pairs:,} pairs x {args.resamples:,} resamples x {args.columns} sums "
          f"(same sums): previous {before:.2f} s CPU, today {after:.2f} s CPU, ratio {after / before:.2f}")


if __name__ == "__main__":
    main()
