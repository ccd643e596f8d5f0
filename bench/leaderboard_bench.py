"""Leaderboard figures at leaderboard scale: 50 systems x 1,000 prompts x 5 judge configurations x both
orders (pairs of systems drawn per prompt; ~5M judgments by default), with bootstraps.

Prints, per step, the seconds it took, and ratios against baselines measured in the same process:

* Bradley-Terry bootstrap: the batched Newton fit of every resample at once against
  ``choix.ilsr_pairwise_dense`` fitted once per resample (timed on ``--choix-resamples`` resamples and
  scaled to the full count);
* sequential Elo: the numba-compiled pass against the same function run by the interpreter (timed on
  one order over ``--interp-matches`` matches and scaled);
* the pair bootstrap drawn per outcome pattern against drawing the units themselves (timed on
  ``--unit-resamples`` resamples and scaled).

Run: ``python bench/leaderboard_bench.py`` (``--pairs 100`` for a quick look); the machine's load is
printed first and last: compare ratios, not seconds, across machines.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from verdictlab.stats import (
    bradley_terry_ratings,
    fit_bradley_terry,
    pattern_draws,
    ranking_stability,
    separable_pairs,
    sequential_elo,
    tournament,
    tournament_patterns,
    win_matrices,
    win_rates,
)
from verdictlab.stats.elo import elo_pass
from verdictlab.testing.synthetic_tournament import JudgeProfile, tournament_frame


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def timed(label: str, fn, *args, **kw):  # noqa: ANN001, ANN002, ANN003, ANN201 - a bench helper
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    dt = time.perf_counter() - t0
    print(f"  {label:<58} {dt:8.2f} s")
    return out, dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--systems", type=int, default=50)
    ap.add_argument("--prompts", type=int, default=1000)
    ap.add_argument("--pairs", type=int, default=500, help="pairs of systems per prompt")
    ap.add_argument("--configs", type=int, default=5)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--orders", type=int, default=20, help="random match orders of the sequential Elo")
    ap.add_argument("--audit-bootstrap", type=int, default=200)
    ap.add_argument("--choix-resamples", type=int, default=20)
    ap.add_argument("--interp-matches", type=int, default=100_000)
    ap.add_argument("--unit-resamples", type=int, default=20)
    a = ap.parse_args()
    print(load())
    judges = [JudgeProfile(f"sim:j{k}", "direct", skill=1.0 - 0.15 * k, position_bias=0.3 * k, tie_rate=0.05)
              for k in range(a.configs)]
    df, t_gen = timed("simulate the judgments", tournament_frame, n_systems=a.systems, n_prompts=a.prompts,
                      pairs_per_prompt=a.pairs, judges=judges, seed=0)
    print(f"  {len(df):,} judgments, {a.systems} systems, {a.prompts} prompts, {a.configs} configurations")
    systems = tuple(sorted(set(df["system_a"].cat.categories) | set(df["system_b"].cat.categories)))
    total = 0.0
    tours = {}
    for judge, g in df.groupby("judge", observed=True, sort=True):
        print(f"configuration {judge}: {len(g):,} judgments")
        t, dt = timed("code the tournament", tournament, g, systems=systems)
        total += dt
        tours[str(judge)] = (t, g)
        _, dt = timed(f"win rates, {a.bootstrap} pair-bootstrap resamples", win_rates, t, n_bootstrap=a.bootstrap)
        total += dt
        _, dt = timed(f"Bradley-Terry / Elo scale, {a.bootstrap} resamples", bradley_terry_ratings, t,
                      n_bootstrap=a.bootstrap)
        total += dt
        _, dt = timed(f"sequential Elo, {a.orders} match orders", sequential_elo, t, n_orders=a.orders)
        total += dt
        _, dt = timed("separable pairs (sign test, Holm)", separable_pairs, t)
        total += dt
    first_t, first_g = next(iter(tours.values()))
    variants = {"AB": tournament(first_g[first_g["order"] == "AB"], systems=systems),
                "BA": tournament(first_g[first_g["order"] == "BA"], systems=systems),
                **{k: v[0] for k, v in tours.items()}}
    names = list(tours)
    comps = [("AB", "BA")] + [(x, y) for i, x in enumerate(names) for y in names[i + 1:]]
    print(f"audit: {len(comps)} comparisons over {len(variants)} rankings")
    _, dt = timed(f"Kendall tau + top change, {a.audit_bootstrap} prompt resamples", ranking_stability, variants,
                  comps, n_bootstrap=a.audit_bootstrap)
    total += dt
    print(f"all leaderboard figures: {total:.1f} s for {len(df):,} judgments")

    print("baselines (same process):")
    p = tournament_patterns(first_t)
    draws = pattern_draws(p, n_bootstrap=a.bootstrap, rng=np.random.default_rng(0))
    W = win_matrices(p, draws)
    _, t_batched = timed(f"batched Newton, {a.bootstrap} fits", fit_bradley_terry, W)
    import choix

    t0 = time.perf_counter()
    for b in range(a.choix_resamples):
        choix.ilsr_pairwise_dense(W[b])
    t_choix = (time.perf_counter() - t0) * a.bootstrap / a.choix_resamples
    print(f"  choix.ilsr_pairwise_dense, one fit per resample (scaled)  {t_choix:8.2f} s   "
          f"ratio {t_choix / t_batched:.1f}x")
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for _ in range(a.unit_resamples):
        np.bincount(rng.integers(0, first_t.n_units, first_t.n_units), minlength=first_t.n_units)
    t_units = (time.perf_counter() - t0) * a.bootstrap / a.unit_resamples
    _, t_pat = timed(f"pattern draws, {a.bootstrap} resamples ({len(p.units):,} patterns)", pattern_draws, p,
                     n_bootstrap=a.bootstrap, rng=np.random.default_rng(0))
    print(f"  unit draws ({first_t.n_units:,} units, scaled)                      {t_units:8.2f} s   "
          f"ratio {t_units / t_pat:.1f}x (the unit draws still need the per-unit sums after them)")
    n = min(a.interp_matches, first_t.n_matches)
    args = (first_t.first[:n].astype(np.int32), first_t.second[:n].astype(np.int32), (2 - first_t.outcome[:n]) / 2.0)
    from verdictlab.stats.elo import _compiled_pass

    run = _compiled_pass()
    run(*args, np.full(first_t.n_systems, 1000.0), 4.0, 400.0, 10.0)          # compile outside the timing
    t0 = time.perf_counter()
    run(*args, np.full(first_t.n_systems, 1000.0), 4.0, 400.0, 10.0)
    t_nb = time.perf_counter() - t0
    t0 = time.perf_counter()
    elo_pass(*args, np.full(first_t.n_systems, 1000.0), 4.0, 400.0, 10.0)
    t_py = time.perf_counter() - t0
    print(f"  sequential Elo pass over {n:,} matches: compiled {t_nb * 1e3:.1f} ms, interpreter {t_py * 1e3:.1f} ms"
          f"   ratio {t_py / max(t_nb, 1e-9):.0f}x")
    print(load())


if __name__ == "__main__":
    main()
