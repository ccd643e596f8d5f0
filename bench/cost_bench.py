"""Cost per precision: calls of the adaptive design and of the log-probability design against the fixed
R-repetition design, at the same half-width on T, with the coverage of the true values.

Simulated judges follow the sim judge's model (``verdictlab.judges.sim``): per pair, position-locked
with probability B (picks the first-shown response), else prefers the label with probability S (else a
fixed random side); per call, a fair coin with probability N.  So each (pair, order) unit has a known
verdict distribution, and the *true* figures of the benchmark are the closed-form expectations over all
its pairs (:func:`verdictlab.stats.expected.expected_reliability`).

Per setting and target half-width h on T (confidence 0.95), over ``--replicates`` replicates:

(a) adaptive: pilot of 100 pairs at full R, then :func:`plan_adaptive` picks n pairs and a C fraction;
    modes stop early, C on the C pairs; calls against the source paper's fixed design on the whole
    benchmark (pairs x 2 orders x R);
(b) against the fixed R design with the fewest pairs that reaches h (from the same pilot variances);
(c) with log-probabilities: one call per (pair, order), expected figures (pilot of 100 pairs, then the
    pairs the pilot's bootstrap half-width asks for);
and the share of replicates whose interval covers the true T (aim >= 0.93 at 95% nominal).

Usage: python bench/cost_bench.py [--pairs 1000] [--reps 10] [--replicates 100] [--quick]
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np
import pandas as pd

from verdictlab.core.policy import FigurePolicy
from verdictlab.stats.adaptive import adaptive_reliability, plan_adaptive, unit_done
from verdictlab.stats.expected import expected_reliability

SETTINGS = {
    "consistent-fair (S .85, B .05, N .05)": (0.85, 0.05, 0.05),
    "middling (S .75, B .20, N .20)": (0.75, 0.20, 0.20),
    "noisy-biased (S .65, B .45, N .50)": (0.65, 0.45, 0.50),
}
PILOT = 100


def benchmark(n_pairs: int, skill: float, lock: float, noise: float, rng: np.random.Generator) -> pd.DataFrame:
    """Per unit (pair, order): label and P(canonical A) under the sim judge's model."""
    label_a = rng.random(n_pairs) < 0.5
    locked = rng.random(n_pairs) < lock
    prefers_label = rng.random(n_pairs) < skill
    random_side_a = rng.random(n_pairs) < 0.5
    pref_a = np.where(prefers_label, label_a, random_side_a)
    rows = []
    for o, order in enumerate(("AB", "BA")):
        shown_first_a = o == 0
        pref = np.where(locked, shown_first_a, pref_a)
        p_a = np.where(pref, 1 - noise / 2, noise / 2)
        rows.append(pd.DataFrame({"item_id": [f"p{i:05d}" for i in range(n_pairs)], "order": order,
                                  "label": np.where(label_a, "A", "B"), "p_a": p_a}))
    units = pd.concat(rows, ignore_index=True)
    units["judge"], units["protocol"], units["dataset"], units["temperature"] = "sim", "direct", "bench", 1.0
    units["pair"] = np.tile(np.arange(n_pairs), 2)
    return units


def truncate(x: np.ndarray, reps: int, consistency: np.ndarray) -> np.ndarray:
    """Calls the stopping rule makes per unit (rows of 0/1 verdicts, 1 = A; no unparsed)."""
    k = np.arange(1, reps + 1)
    ca = np.cumsum(x, axis=1)
    cb = k - ca
    mode_done = np.abs(ca - cb) > (reps - k)
    disagree = (ca > 0) & (cb > 0)
    done = mode_done & (~consistency[:, None] | disagree)
    done[:, -1] = True
    return done.argmax(axis=1) + 1


def frame(units: pd.DataFrame, x: np.ndarray, calls: np.ndarray) -> pd.DataFrame:
    reps = x.shape[1]
    keep = np.arange(reps)[None, :] < calls[:, None]
    ui, r = np.nonzero(keep)
    out = units.iloc[ui][["judge", "protocol", "dataset", "temperature", "item_id", "order", "label"]].copy()
    out["rep"] = r
    out["verdict"] = np.where(x[ui, r] == 1, "A", "B")
    return out.reset_index(drop=True)


def truth(units: pd.DataFrame, reps: int) -> dict[str, float]:
    t = expected_reliability(units.assign(rep=0), repetitions=reps, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    return {k: float(t[f"{k}_expected"]) for k in ("C", "phi", "A", "T")}


def one_replicate(setting: tuple[float, float, float], h: float, n_pairs: int, reps: int,
                  rng: np.random.Generator, n_boot: int) -> dict[str, float]:
    units = benchmark(n_pairs, *setting, rng)
    true = truth(units, reps)
    order = rng.permutation(n_pairs)               # the seeded pair order
    c_draw = rng.random(n_pairs)                   # fixed C-membership draws
    x = (rng.random((len(units), reps)) < units["p_a"].to_numpy()[:, None]).astype(np.int64)
    pair_of_unit = units["pair"].to_numpy()

    # (a) adaptive: pilot at full R, plan, then the planned pairs with early stopping
    pilot_pairs = order[:PILOT]
    in_pilot = np.isin(pair_of_unit, pilot_pairs)
    pilot = frame(units[in_pilot], x[in_pilot], np.full(in_pilot.sum(), reps))
    plan = plan_adaptive(pilot, targets={"T": h}, reps=reps, pool_pairs=n_pairs)
    chosen = order[:plan.n_pairs]
    c_pair = np.zeros(n_pairs, dtype=bool)
    c_pair[chosen] = c_draw[chosen] < plan.c_fraction
    c_pair[pilot_pairs] = True
    sel = np.isin(pair_of_unit, chosen)
    calls = np.where(in_pilot[sel], reps, truncate(x[sel], reps, c_pair[pair_of_unit[sel]]))
    data = frame(units[sel], x[sel], calls)
    c_set = {("bench", f"p{i:05d}") for i in np.flatnonzero(c_pair)}
    est = adaptive_reliability(data, c_pairs=c_set,
                               policy=FigurePolicy(n_bootstrap=n_boot, seed=int(rng.integers(1 << 31)))).iloc[0]
    out = {"adaptive_calls": float(calls.sum()), "adaptive_pairs": float(plan.n_pairs),
           "c_fraction": plan.c_fraction, "fixed_min_calls": float(plan.fixed_calls),
           "adaptive_hw": float(est["T_hi"] - est["T_lo"]) / 2,
           "adaptive_cover": float(est["T_lo"] <= true["T"] <= est["T_hi"])}

    # (c) log-probabilities: one call per unit; pilot's half-width decides the pairs
    pilot_units = units[in_pilot].assign(rep=0)
    pe = expected_reliability(pilot_units, repetitions=reps, policy=FigurePolicy(n_bootstrap=n_boot)).iloc[0]
    hw0 = float(pe["T_expected_hi"] - pe["T_expected_lo"]) / 2
    n_lp = min(n_pairs, max(PILOT, math.ceil(PILOT * (hw0 / h) ** 2 * 1.1)))
    lp_units = units[np.isin(pair_of_unit, order[:n_lp])].assign(rep=0)
    le = expected_reliability(lp_units, repetitions=reps,
                              policy=FigurePolicy(n_bootstrap=n_boot, seed=int(rng.integers(1 << 31)))).iloc[0]
    out.update(logprob_calls=float(len(lp_units)), logprob_hw=float(le["T_expected_hi"] - le["T_expected_lo"]) / 2,
               logprob_cover=float(le["T_expected_lo"] <= true["T"] <= le["T_expected_hi"]))
    return out


def check_rule(reps: int) -> None:
    """The vectorised stopping rule equals :func:`unit_done` on random sequences."""
    rng = np.random.default_rng(0)
    x = (rng.random((300, reps)) < 0.6).astype(np.int64)
    cons = rng.random(300) < 0.5
    fast = truncate(x, reps, cons)
    for i in range(300):
        seq = ["A" if v else "B" for v in x[i]]
        k = next(k for k in range(1, reps + 1) if unit_done(seq[:k], reps, consistency=bool(cons[i])))
        assert k == fast[i], (i, k, fast[i])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--replicates", type=int, default=100)
    ap.add_argument("--bootstrap", type=int, default=400)
    ap.add_argument("--targets", type=float, nargs="+", default=[0.05, 0.03])
    ap.add_argument("--quick", action="store_true", help="10 replicates, 200 resamples")
    args = ap.parse_args()
    if args.quick:
        args.replicates, args.bootstrap = 10, 200
    check_rule(args.reps)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    full_fixed = args.pairs * 2 * args.reps
    print(f"# cost per precision: {args.pairs} pairs, R = {args.reps}, {args.replicates} replicates, "
          f"load {load:.1f}; the paper's fixed design = {full_fixed:,} calls")
    print("| setting | h(T) | adaptive calls | × fewer than whole fixed | fixed (fewest pairs) calls | "
          "× fewer than it | C fraction | adaptive coverage | logprob calls | × fewer than fixed (fewest) | "
          "logprob coverage |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(20261201)
    t0 = time.perf_counter()
    for name, setting in SETTINGS.items():
        for h in args.targets:
            res = pd.DataFrame([one_replicate(setting, h, args.pairs, args.reps, rng, args.bootstrap)
                                for _ in range(args.replicates)])
            m = res.mean()
            print(f"| {name} | {h:.2f} | {m.adaptive_calls:,.0f} | {full_fixed / m.adaptive_calls:.1f}× | "
                  f"{m.fixed_min_calls:,.0f} | {m.fixed_min_calls / m.adaptive_calls:.2f}× | {m.c_fraction:.2f} | "
                  f"{m.adaptive_cover:.2f} | {m.logprob_calls:,.0f} | {m.fixed_min_calls / m.logprob_calls:.1f}× | "
                  f"{m.logprob_cover:.2f} |", flush=True)
    print(f"# {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
