"""The bootstraps stream their resample weights a few resamples at a time (reliability's pair
bootstrap, the definitions', the BCa one and the annotators'); the annotators' item bootstrap streams its weights a few resamples at a time (a 5.4M-judgment run's
whole matrix was 1.6 GB per call) and numbers items from the columns' codes: the same draws, the same
item numbers and the same figures as the whole matrix and the MultiIndex of strings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from verdictlab.core.policy import FigurePolicy
from verdictlab.stats import _pair_bootstrap, annotators
from verdictlab.stats.annotators import fleiss_kappa, gold_agreement, judge_agreement


def _whole(n_items: int, n_bootstrap: int, seed: int) -> np.ndarray:
    # the matrix as it was built before: every resample's draws at once
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_items, size=(n_bootstrap, n_items))
    offsets = (np.arange(n_bootstrap) * n_items)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=n_bootstrap * n_items).reshape(n_bootstrap, n_items)


@pytest.mark.parametrize("chunk", [1, 7, 50, 10_000])
def test_chunks_are_the_whole_matrix(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(_pair_bootstrap, "RESAMPLE_CHUNK", chunk)
    got = np.concatenate(list(annotators._weight_chunks(13, 41, 5)))
    assert got.shape == (41, 13)
    assert (got == _whole(13, 41, 5)).all()
    assert (got.sum(axis=1) == 13).all()        # each resample draws as many items as there are


def _frame(rng: np.random.Generator, n: int, categorical: bool) -> pd.DataFrame:
    f = pd.DataFrame({"dataset": rng.choice(["d2", "d1"], n), "item_id": rng.choice([f"i{k}" for k in range(30)], n),
                      "order": rng.choice(["AB", "BA"], n), "rep": rng.integers(0, 2, n),
                      "verdict": rng.choice(["A", "B", "tie", None], n), "label": rng.choice(["A", "B"], n)})
    if categorical:
        for c in ("dataset", "item_id", "verdict", "label"):
            f[c] = f[c].astype("category")
    return f


@pytest.mark.parametrize("categorical", [False, True])
def test_item_codes_are_the_string_pairs_factorized(categorical: bool) -> None:
    f = _frame(np.random.default_rng(1), 400, categorical)
    want, _ = pd.factorize(pd.MultiIndex.from_arrays([f["dataset"].astype(str), f["item_id"].astype(str)]))
    assert (annotators._item_codes(f) == want).all()


def test_figures_do_not_depend_on_the_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    a, b = _frame(rng, 300, True), _frame(rng, 300, False)
    b[["dataset", "item_id", "order", "rep"]] = a[["dataset", "item_id", "order", "rep"]].astype(object).to_numpy()
    policy = FigurePolicy(n_bootstrap=200, seed=3)
    counts = rng.integers(0, 4, (25, 3))
    counts[:, 2] = 5 - counts[:, :2].sum(axis=1).clip(max=5)
    counts = counts[counts.min(axis=1) >= 0]
    whole = (gold_agreement(a, policy=policy), judge_agreement(a, b, policy=policy),
             fleiss_kappa(counts, n_bootstrap=200, seed=3))
    monkeypatch.setattr(_pair_bootstrap, "RESAMPLE_CHUNK", 37)
    small = (gold_agreement(a, policy=policy), judge_agreement(a, b, policy=policy),
             fleiss_kappa(counts, n_bootstrap=200, seed=3))
    assert whole[:2] == small[:2]              # sums of whole counts: exact in any grouping
    # Fleiss' per-item shares are fractions: a matrix product of another shape rounds in the last digit
    assert whole[2].value == small[2].value
    assert (whole[2].lo, whole[2].hi) == pytest.approx((small[2].lo, small[2].hi), rel=1e-12)
    assert np.isfinite(whole[0]["accuracy_lo"]) and whole[0]["accuracy_lo"] < whole[0]["accuracy_hi"]


@pytest.mark.parametrize("chunk", [1, 9, 10_000_000])
def test_resampled_sums_are_the_whole_product(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    # integer values: sums of whole numbers are exact in any grouping, so equal to the one product
    x = np.random.default_rng(4).integers(0, 9, (57, 3)).astype(float)
    monkeypatch.setattr(_pair_bootstrap, "RESAMPLE_CHUNK", chunk)
    got = _pair_bootstrap.resampled_sums(x, 23, np.random.default_rng(8))
    assert (got == _whole(57, 23, 8) @ x).all()
    assert _pair_bootstrap.resampled_sums(x[:, 0], 23, np.random.default_rng(8)).shape == (23,)


def test_judge_pairs_together_are_each_pair_alone() -> None:
    # three judges on the same units: the pairs share one pass of the weights, and give what each call gives
    rng = np.random.default_rng(5)
    base = _frame(rng, 240, True)
    frames = [base.assign(verdict=pd.Categorical(rng.choice(["A", "B", "tie", None], len(base)))) for _ in range(3)]
    frames.append(base.iloc[:100].copy())       # fewer items: its own pass
    policy = FigurePolicy(n_bootstrap=150, seed=9)
    pairs = [(frames[0], frames[1]), (frames[0], frames[2]), (frames[1], frames[3]), (frames[2], frames[1])]
    assert annotators.judge_agreements(pairs, policy=policy) == [judge_agreement(a, b, policy=policy) for a, b in pairs]


@pytest.mark.parametrize("chunk", [1, 13 * 3, 13 * 7, 10_000])
def test_resampled_sums_reuse_one_matrix_and_are_the_whole_products(monkeypatch: pytest.MonkeyPatch,
                                                                       chunk: int) -> None:
    # resampled_sums counts each chunk into one reused matrix (41 resamples of 13 rows: chunks of 3 and 7
    # resamples leave a shorter last chunk); its sums must be those of the whole matrix times the values
    monkeypatch.setattr(_pair_bootstrap, "RESAMPLE_CHUNK", chunk)
    values = np.random.default_rng(9).random((13, 4))
    got = _pair_bootstrap.resampled_sums(values, 41, np.random.default_rng(5))
    assert got.shape == (41, 4)
    assert np.allclose(got, _whole(13, 41, 5) @ values, rtol=0, atol=1e-12)
    one = _pair_bootstrap.resampled_sums(values[:, 0], 41, np.random.default_rng(5))
    assert np.allclose(one, got[:, 0], rtol=0, atol=1e-12)
