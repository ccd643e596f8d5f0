"""Benchmark of the statistics library on a paper-sized synthetic judgment frame.

~541,000 judgments: 20 judges x 3 benchmarks (~900 pairs each) x 2 orders x 5 repetitions, one
protocol, temperature 0, generated like the ``sim:`` judge (skill, position bias, noise, parse
failures).  Times the full figure set -- :func:`verdictlab.stats.reliability` with 1,000 pair
bootstrap resamples per cell for T, plus :func:`verdictlab.stats.agreement_by_cell` (kappa, alpha,
deflation, position and verbosity bias, test-retest) -- against a straightforward pandas-groupby
implementation of the same figures written below (per-cell groupby with Python aggregations,
sklearn / krippendorff for kappa and alpha, bootstrap by resampling the per-pair table with
``DataFrame.sample``).  The naive bootstrap runs fewer resamples and is extrapolated linearly (said
in the output).  Prints times and the ratio; does not assert.

    .venv/bin/python bench/stats_bench.py [--naive-resamples 20] [--check]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from verdictlab.core.policy import FigurePolicy
from verdictlab.stats import agreement_by_cell, reliability

CELL = ["judge", "protocol", "dataset", "temperature"]


def make_frame(*, n_judges: int = 20, pairs: tuple[int, ...] = (900, 902, 903), reps: int = 5,
               seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Judgments and items, sim-like: P(judge prefers the better response) from skill and item
    difficulty, a per-(judge, item, order) lean toward the first-shown response, per-rep noise."""
    rng = np.random.default_rng(seed)
    frames, items = [], []
    for d, n in enumerate(pairs):
        ds = f"bench{d}"
        label = rng.choice(np.array(["A", "B"]), n)
        hard = rng.beta(2, 5, n)
        len_a = rng.integers(50, 2000, n)
        len_b = rng.integers(50, 2000, n)
        items.append(pd.DataFrame({"dataset": ds, "item_id": [f"{ds}-{i}" for i in range(n)],
                                   "response_a": ["a" * k for k in len_a],
                                   "response_b": ["b" * k for k in len_b]}))
        J, n_i, n_o, R = n_judges, n, 2, reps
        skill = rng.uniform(0.55, 0.9, J)
        pos = rng.uniform(0.0, 0.3, J)
        noise = rng.uniform(0.0, 0.15, J)
        fail = rng.uniform(0.0, 0.02, J)
        j, i, o, r = (a.ravel() for a in np.meshgrid(np.arange(J), np.arange(n_i), np.arange(n_o), np.arange(R),
                                                    indexing="ij"))
        # the judge's settled answer for (j, i, o): right with prob skill*(1-hard), else wrong;
        # with prob pos it picks the first-shown response instead; with prob noise a rep flips
        u_settle = rng.random((J, n_i, n_o))
        u_pos = rng.random((J, n_i, n_o))
        right = u_settle < (skill[:, None, None] * (1 - hard[None, :, None]) + 0.5 * hard[None, :, None])
        lab_is_a = label == "A"
        settled_a = np.where(right, lab_is_a[None, :, None], ~lab_is_a[None, :, None])
        first_is_a = np.array([True, False])[None, None, :]
        settled_a = np.where(u_pos < pos[:, None, None], first_is_a, settled_a)
        flip = rng.random(j.shape) < noise[j]
        a_won = settled_a[j, i, o] ^ flip
        verdict = np.where(a_won, "A", "B").astype(object)
        tie = rng.random(j.shape) < 0.01
        verdict[tie] = "tie"
        unparsed = rng.random(j.shape) < fail[j]
        verdict[unparsed] = None
        frames.append(pd.DataFrame({
            "judge": np.array([f"sim:j{k:02d}" for k in range(J)])[j], "dataset": ds,
            "item_id": np.array([f"{ds}-{k}" for k in range(n_i)])[i], "protocol": "direct",
            "order": np.array(["AB", "BA"])[o], "temperature": 0.0, "rep": r, "step": "",
            "label": label[i], "verdict": verdict,
            "parse_status": np.where(unparsed, "failed", "ok")}))
    return pd.concat(frames, ignore_index=True), pd.concat(items, ignore_index=True)


# ---- the straightforward implementation ------------------------------------------------------------

def naive_figures(df: pd.DataFrame, items: pd.DataFrame, *, n_boot: int,
                  seed: int = 0) -> tuple[pd.DataFrame, float]:
    """The same figures the straightforward way: a loop over cells, pandas groupby per cell,
    sklearn / krippendorff for kappa and alpha, bootstrap by resampling the per-pair table.
    Returns the figures and the seconds spent in the bootstrap loop."""
    import krippendorff
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(seed)
    lens = items.set_index(["dataset", "item_id"])
    lens = (lens["response_a"].str.len() - lens["response_b"].str.len()).rename("len_diff")
    codes = {"A": 0, "B": 1, "tie": 2, "split": 3}
    out, t_boot = [], 0.0
    for key, cell in df.groupby(CELL):
        parsed = cell.dropna(subset=["verdict"])
        counts = parsed.groupby(["item_id", "order", "verdict"]).size().unstack("verdict", fill_value=0)
        top = counts.max(axis=1)
        n_top = counts.eq(top, axis=0).sum(axis=1)
        units = pd.DataFrame({"mode": counts.idxmax(axis=1).where(n_top == 1, "split"),
                              "N": (top == counts.sum(axis=1)).astype(float),
                              "share": top / counts.sum(axis=1)})
        units["label"] = parsed.groupby(["item_id", "order"])["label"].first()
        units["correct"] = (units["mode"] == units["label"]).astype(float)
        wide = units["mode"].unstack("order")
        both = wide.dropna(how="any")
        P = ((both["AB"] == both["BA"]) & (both["AB"] != "split")).astype(float).rename("P")
        pairs = units.groupby(level="item_id").agg(sN=("N", "sum"), n=("N", "size"), c=("correct", "sum"))
        pairs["l"] = units.groupby(level="item_id")["label"].first().isin(["A", "B"]) * pairs["n"]
        pairs = pairs.join(P, how="left")
        pairs["f"] = pairs["P"].notna().astype(float)
        pairs["flip"] = (1 - pairs["P"]).fillna(0.0)

        def T_of(p: pd.DataFrame) -> float:
            C = p["sN"].sum() / p["n"].sum()
            phi = p["flip"].sum() / p["f"].sum()
            A = p["c"].sum() / p["l"].sum()
            return C * (A - phi / 2)

        T = T_of(pairs)
        t0 = time.perf_counter()
        boots = [T_of(pairs.sample(len(pairs), replace=True, random_state=rng.integers(2**31)))
                 for _ in range(n_boot)]
        t_boot += time.perf_counter() - t0
        lab_units = units[units["label"].isin(["A", "B"])]
        kappa = cohen_kappa_score(lab_units["label"], lab_units["mode"])
        alpha = krippendorff.alpha(reliability_data=np.array(
            [lab_units["label"].map(codes), lab_units["mode"].map(codes)], dtype=float),
            level_of_measurement="nominal")
        rep_mat = cell.assign(v=cell["verdict"].map(codes)).pivot_table(
            index="rep", columns=["item_id", "order"], values="v", aggfunc="first").to_numpy(dtype=float)
        retest = krippendorff.alpha(reliability_data=rep_mat, level_of_measurement="nominal")
        dec = parsed[parsed["verdict"].isin(["A", "B"])]
        first = ((dec["order"] == "AB") & (dec["verdict"] == "A")) | ((dec["order"] == "BA") & (dec["verdict"] == "B"))
        x = dec.join(lens, on=["dataset", "item_id"])["len_diff"]
        out.append(dict(zip(CELL, key, strict=True)) | {
            "C": units["N"].mean(), "phi": 1 - P.mean(), "A": lab_units["correct"].mean(), "T": T,
            "T_lo": np.quantile(boots, 0.025) if boots else np.nan,
            "T_hi": np.quantile(boots, 0.975) if boots else np.nan, "kappa": kappa,
            "alpha": alpha, "test_retest": retest, "position_bias": abs(first.mean() - 0.5),
            "verbosity_bias": np.corrcoef(x, (dec["verdict"] == "A").astype(float))[0, 1]})
    return pd.DataFrame(out), t_boot


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples per cell (ours)")
    ap.add_argument("--naive-resamples", type=int, default=20,
                    help="bootstrap resamples per cell for the naive run (extrapolated to --resamples)")
    ap.add_argument("--check", action="store_true", help="also compare the point figures of both")
    args = ap.parse_args()

    t0 = time.perf_counter()
    df, items = make_frame()
    t_gen = time.perf_counter() - t0
    print(f"synthetic frame: {len(df):,} judgments, {df.groupby(CELL).ngroups} cells, "
          f"{df.groupby(['dataset', 'item_id']).ngroups:,} pairs (generated in {t_gen:.1f} s)")

    t0 = time.perf_counter()
    rel = reliability(df, policy=FigurePolicy(n_bootstrap=args.resamples, seed=0))
    t_rel = time.perf_counter() - t0
    t0 = time.perf_counter()
    agr = agreement_by_cell(df, items=items)
    t_agr = time.perf_counter() - t0
    ours = t_rel + t_agr
    t0 = time.perf_counter()
    reliability(df, policy=FigurePolicy(n_bootstrap=0))
    t_rel0 = time.perf_counter() - t0
    print(f"verdictlab.stats: reliability ({args.resamples} resamples/cell) {t_rel:.2f} s + "
          f"agreement_by_cell {t_agr:.2f} s = {ours:.2f} s  (without bootstrap: {t_rel0 + t_agr:.2f} s)")

    # naive: figures once with k bootstrap resamples per cell; the bootstrap loop is timed on its
    # own and extrapolated linearly to --resamples
    t0 = time.perf_counter()
    naive0, t_boot = naive_figures(df, items, n_boot=args.naive_resamples)
    t_k = time.perf_counter() - t0
    t_base = t_k - t_boot
    naive_total = t_base + t_boot / max(args.naive_resamples, 1) * args.resamples
    print(f"naive pandas groupby: {t_base:.1f} s for the figures + {t_boot:.1f} s for "
          f"{args.naive_resamples} resamples/cell -> extrapolated to {args.resamples} resamples/cell: "
          f"{naive_total:.0f} s (the naive bootstrap was NOT run at {args.resamples})")
    print(f"speed-up: {naive_total / ours:.1f}x  (target >= 10x; ours < 10 s: {'yes' if ours < 10 else 'NO'}); "
          f"figures without bootstrap: {t_base / (t_rel0 + t_agr):.1f}x")
    print("note: the naive bootstrap resamples a per-pair table it computed once; a naive version that "
          "recomputed the figures from the judgments per resample would be far slower still.")

    if args.check:
        merged = rel.merge(agr, on=CELL).merge(naive0, on=CELL, suffixes=("", "_naive"))
        # the cells have judge ties, so our q is measured; give the naive T the same q
        merged["T_naive"] = merged["C_naive"] * (merged["A_naive"] - merged["phi_naive"] * merged["q"])
        for c in ("C", "phi", "A", "T", "kappa", "alpha", "test_retest", "position_bias", "verbosity_bias"):
            diff = float(np.nanmax(np.abs(merged[c] - merged[f"{c}_naive"])))
            print(f"  max |ours - naive| {c:15s} {diff:.2e}")


if __name__ == "__main__":
    main()
