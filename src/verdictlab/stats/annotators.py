"""Human annotators as a source: agreement among them, a judge's agreement with them beside the
agreement of two of them (the ceiling), a judge against a gold label, and judge against judge.

Votes and verdicts are canonical ``A`` / ``B`` / ``tie``.  Every figure comes with the N it stands on
and a percentile interval from a bootstrap over items (the unit: the votes and judgments of one item
are drawn together), seeded; ``n_bootstrap=0`` gives no interval (NaN bounds).

* :func:`fleiss_kappa` -- Fleiss' kappa of an items x categories count matrix with the same number of
  raters per item: P_i = (sum_j n_ij^2 - m) / (m (m - 1)), P = mean P_i, p_j = sum_i n_ij / (N m),
  P_e = sum_j p_j^2, kappa = (P - P_e) / (1 - P_e) (Fleiss 1971); statsmodels' ``fleiss_kappa`` computes
  the same (the tests check it), this one takes a weighted sum over items so that a whole bootstrap is one
  matrix product.
* :func:`annotator_agreement` -- among the annotators of a dataset: Fleiss' kappa (over the items with the
  most common number of votes, at least 2; the others counted), Krippendorff's alpha (nominal; every
  item with 2 or more votes: :func:`verdictlab.stats.agreement.alpha_from_unit_counts`), the mean of the
  pairwise Cohen's kappas of annotators who share at least ``min_shared`` items, and the MT-Bench
  agreement of a random pair of annotators (below).
* :func:`vote_pair_agreement` -- MT-Bench's agreement (Zheng et al. 2023, FastChat
  ``compute_agreement.py``): over every pair of two different annotators' votes on one item (human-human),
  or every (judgment, vote) pair of one item (judge-human), the share that are equal; "without ties" leaves
  out every pair in which either side is a tie.
* :func:`gold_agreement` -- a judge's verdicts against the items' gold labels over every judgment (both
  orders, every repetition), ties a class of their own: the share equal, and Fleiss' kappa of the two
  "raters" (verdict and label) with both written in *shown* terms (first shown / second shown / tie), as
  the PRD study computes it (its notebook codes each judgment by the system shown first).
* :func:`judge_agreement` -- two judges (or configurations) on the judgments they share
  (dataset, item, order, repetition): the share equal (ties a class) and Cohen's kappa.

Unparsed verdicts follow the unparsed policy: ``exclude`` leaves their judgments out (counted),
``wrong`` keeps them as a verdict of their own that equals no vote or label.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import VERDICTS, swap_array
from ._pair_bootstrap import resample_weights
from .agreement import alpha_from_unit_counts, cohen_kappa

__all__ = ["AgreementFigure", "annotator_agreement", "fleiss_kappa", "gold_agreement", "judge_agreement",
           "judge_agreements",
           "vote_pair_agreement", "ANNOTATOR_COLUMNS"]

#: the codes of the votes and verdicts (the unparsed code is the last: "none", equal to nothing)
_CODES = {v: k for k, v in enumerate(VERDICTS)}
_NONE = len(VERDICTS)
ANNOTATOR_COLUMNS: tuple[str, ...] = ("dataset", "item_id", "annotator", "vote")


@dataclass(frozen=True)
class AgreementFigure:
    """A figure with its percentile interval (NaN bounds without a bootstrap) and the counts behind it:
    ``n`` the pairs / items / judgments it is over, ``n_items`` the items they come from."""

    value: float
    lo: float
    hi: float
    n: int
    n_items: int

    def __float__(self) -> float:
        return self.value


def _bounds(draws: np.ndarray, confidence: float) -> tuple[float, float]:
    ok = draws[np.isfinite(draws)]
    if len(ok) == 0:
        return float("nan"), float("nan")
    tail = (1.0 - confidence) / 2.0 * 100.0
    lo, hi = np.percentile(ok, [tail, 100.0 - tail])
    return float(lo), float(hi)


def _weight_chunks(n_items: int, n_bootstrap: int, seed: int) -> Iterator[np.ndarray]:
    """The item-bootstrap weights (resamples x items, floats) a few resamples at a time
    (:func:`~verdictlab.stats._pair_bootstrap.resample_weights`; the whole matrix of a 5.4M-judgment
    run, 100,000 items x 1,000 resamples, was 1.6 GB per call)."""
    return resample_weights(n_items, n_bootstrap, np.random.default_rng(seed))


def _item_weights(n_items: int, n_bootstrap: int, seed: int) -> np.ndarray:
    """``n_bootstrap`` x ``n_items``: how often each item is drawn in each bootstrap resample (whole;
    the figures stream them with :func:`_weight_chunks`)."""
    chunks = list(_weight_chunks(n_items, n_bootstrap, seed))
    return np.concatenate(chunks).astype(np.int64) if chunks else np.zeros((0, n_items), dtype=np.int64)


def _item_codes(frame: pd.DataFrame) -> np.ndarray:
    """Each row's item as 0, 1, ... in order of first appearance (``dataset`` and ``item_id`` together):
    the same numbers as factorizing the pairs of strings, from the columns' codes (that MultiIndex of
    5.4M string pairs cost 11 s of CPU per call)."""
    if not len(frame):
        return np.zeros(0, dtype=np.int64)
    d, _ = pd.factorize(_as_text(frame["dataset"]))
    i, i_uniques = pd.factorize(_as_text(frame["item_id"]))
    codes, _ = pd.factorize(d.astype(np.int64) * max(len(i_uniques), 1) + i)
    return codes.astype(np.int64)


def _as_text(col: pd.Series) -> pd.Series:
    """``col`` as its text: a categorical keeps its codes (factorized in order of first appearance, as its
    strings would be; its categories are distinct strings), anything else as ``str``."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col
    return col.astype(str)


def _ratio(num: np.ndarray, den: np.ndarray, *, confidence: float, n_bootstrap: int, seed: int) -> AgreementFigure:
    """sum(num) / sum(den) over items, with the item-bootstrap interval."""
    total = float(den.sum())
    value = float(num.sum()) / total if total else float("nan")
    lo = hi = float("nan")
    if n_bootstrap and total:
        n_draws, d_draws = [], []
        for w in _weight_chunks(len(den), n_bootstrap, seed):
            n_draws.append(w @ num)
            d_draws.append(w @ den)
        d, n = np.concatenate(d_draws), np.concatenate(n_draws)
        with np.errstate(invalid="ignore", divide="ignore"):
            lo, hi = _bounds(np.where(d > 0, n / d, np.nan), confidence)
    return AgreementFigure(value, lo, hi, int(total), int((den > 0).sum()))


def _fleiss_from(counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Fleiss' kappa of ``counts`` (items x categories, m raters each) for each row of ``weights``
    (resamples x items: how often each item counts)."""
    m = counts.sum(axis=1)[0]
    p_i = ((counts ** 2).sum(axis=1) - m) / (m * (m - 1.0))
    n = weights.sum(axis=1)
    p_bar = (weights @ p_i) / n
    p_j = (weights @ counts) / (n * m)[:, None]
    p_e = (p_j ** 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(p_e < 1.0, (p_bar - p_e) / (1.0 - p_e), np.nan)


def fleiss_kappa(counts: np.ndarray | Sequence[Sequence[int]], *, confidence: float = 0.95, n_bootstrap: int = 0,
                 seed: int = 0) -> AgreementFigure:
    """Fleiss' kappa of an items x categories count matrix (module docstring); every item must have
    the same number of raters, at least 2 (a ``ValueError`` otherwise).  NaN when every rating is of
    one category (no chance-expected disagreement) or there is no item."""
    c = np.asarray(counts, dtype=float)
    if c.ndim != 2:
        raise ValueError("counts must be a 2-D items x categories matrix")
    if len(c) == 0:
        return AgreementFigure(float("nan"), float("nan"), float("nan"), 0, 0)
    m = c.sum(axis=1)
    if m.min() != m.max() or m[0] < 2:
        raise ValueError(f"every item needs the same number of raters, at least 2; got {sorted(set(m.tolist()))}")
    value = float(_fleiss_from(c, np.ones((1, len(c))))[0])
    lo = hi = float("nan")
    if n_bootstrap:
        lo, hi = _bounds(np.concatenate([_fleiss_from(c, w) for w in _weight_chunks(len(c), n_bootstrap, seed)]),
                         confidence)
    return AgreementFigure(value, lo, hi, len(c), len(c))


def _vote_counts(votes: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(items x {A, B, tie} count matrix, item codes of the rows)."""
    item, _ = pd.factorize(pd.MultiIndex.from_arrays([votes["dataset"].astype(str), votes["item_id"].astype(str)]))
    code = votes["vote"].map(_CODES)
    if code.isna().any():
        raise ValueError(f"a vote must be one of {VERDICTS}, got {votes['vote'][code.isna()].iloc[0]!r}")
    n_items = int(item.max()) + 1 if len(item) else 0
    counts = np.zeros((n_items, len(VERDICTS)))
    np.add.at(counts, (item, code.to_numpy(dtype=np.int64)), 1.0)
    return counts, item


def _pair_counts(counts: np.ndarray, *, ties: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per item: (agreeing pairs of two different votes, all such pairs); without ties the tie votes
    take part in no pair."""
    c = counts if ties else counts[:, :2]
    m = c.sum(axis=1)
    return (c * (c - 1) / 2).sum(axis=1), m * (m - 1) / 2


def vote_pair_agreement(votes: pd.DataFrame, verdicts: pd.DataFrame | None = None, *, ties: bool = True,
                        policy: FigurePolicy = DEFAULT_POLICY) -> AgreementFigure:
    """MT-Bench's agreement (module docstring): human-human over pairs of two different votes of one item
    when ``verdicts`` is None; else judge-human over every (judgment, vote) pair of one item, ``verdicts``
    holding ``dataset, item_id, verdict`` (one row per judgment).  ``ties=False``: pairs with a tie on
    either side left out.  ``n`` counts the pairs, ``n_items`` the items with at least one."""
    confidence, n_bootstrap, seed = policy.confidence, policy.n_bootstrap, policy.seed
    counts, _ = _vote_counts(votes)
    keys = pd.MultiIndex.from_arrays([votes["dataset"].astype(str), votes["item_id"].astype(str)]).unique()
    if verdicts is None:
        num, den = _pair_counts(counts, ties=ties)
        return _ratio(num, den, confidence=confidence, n_bootstrap=n_bootstrap, seed=seed)
    at = keys.get_indexer(pd.MultiIndex.from_arrays([verdicts["dataset"].astype(str), verdicts["item_id"].astype(str)]))
    code = verdicts["verdict"].astype(object).map(_CODES)
    keep = (at >= 0) & code.notna().to_numpy() if policy.drops_unparsed else at >= 0
    at, vcode = at[keep], code.to_numpy(dtype=float)[keep]
    vcode = np.where(np.isnan(vcode), _NONE, vcode).astype(np.int64)
    judged = np.zeros((len(keys), len(VERDICTS) + 1))
    np.add.at(judged, (at, vcode), 1.0)
    human = counts if ties else counts * np.array([1.0, 1.0, 0.0])
    judge = judged[:, :len(VERDICTS)] if ties else judged[:, :2] @ np.eye(2, len(VERDICTS))
    judge_all = judged.sum(axis=1) if ties else judged[:, [0, 1, _NONE]].sum(axis=1)
    num = (human * judge).sum(axis=1)
    den = human.sum(axis=1) * judge_all
    return _ratio(num, den, confidence=confidence, n_bootstrap=n_bootstrap, seed=seed)


def _mean_cohen(votes: pd.DataFrame, min_shared: int) -> tuple[float, int]:
    """The mean Cohen's kappa over pairs of annotators sharing ``min_shared`` items or more, and the
    number of such pairs (each annotator's first vote on an item)."""
    first = votes.drop_duplicates(["dataset", "item_id", "annotator"])
    wide = first.pivot(index=["dataset", "item_id"], columns="annotator", values="vote")
    kappas = []
    for a, b in combinations(wide.columns, 2):
        both = wide[[a, b]].dropna()
        if len(both) >= min_shared:
            k = cohen_kappa(both[a], both[b], labels=list(VERDICTS)).value
            if np.isfinite(k):
                kappas.append(k)
    return (float(np.mean(kappas)) if kappas else float("nan")), len(kappas)


def annotator_agreement(votes: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY,
                        min_shared: int = 10) -> dict[str, float | int]:
    """Agreement among the annotators of one set of votes (``dataset, item_id, annotator, vote``):
    see the module docstring.  Keys: ``n_items``, ``n_votes``, ``n_annotators``, ``fleiss_kappa`` (+
    ``_lo``/``_hi``), ``n_fleiss_items`` and ``raters_per_item``, ``krippendorff_alpha`` (+ bounds),
    ``n_alpha_items``, ``mean_cohen_kappa`` and ``n_annotator_pairs``, ``pair_agreement`` /
    ``pair_agreement_no_ties`` (+ bounds, ``n_pairs`` / ``n_pairs_no_ties``)."""
    confidence, n_bootstrap, seed = policy.confidence, policy.n_bootstrap, policy.seed
    counts, _ = _vote_counts(votes)
    m = counts.sum(axis=1)
    multi = m[m >= 2]
    out: dict[str, float | int] = {"n_items": len(counts), "n_votes": int(m.sum()),
                                   "n_annotators": int(votes["annotator"].nunique())}
    raters = int(pd.Series(multi).mode().max()) if len(multi) else 0
    fk = fleiss_kappa(counts[m == raters], confidence=confidence, n_bootstrap=n_bootstrap, seed=seed) \
        if raters else AgreementFigure(float("nan"), float("nan"), float("nan"), 0, 0)
    out.update(fleiss_kappa=fk.value, fleiss_kappa_lo=fk.lo, fleiss_kappa_hi=fk.hi, n_fleiss_items=fk.n,
               raters_per_item=raters)
    pairable = counts[m >= 2]
    alpha = alpha_from_unit_counts(pairable)[0][0] if len(pairable) else float("nan")
    lo = hi = float("nan")
    if n_bootstrap and len(pairable):
        w = _item_weights(len(pairable), n_bootstrap, seed)
        group = np.repeat(np.arange(n_bootstrap), w.sum(axis=1))
        units = np.concatenate([np.repeat(np.arange(len(pairable)), row) for row in w])
        lo, hi = _bounds(alpha_from_unit_counts(pairable[units], group, n_bootstrap)[0], confidence)
    out.update(krippendorff_alpha=float(alpha), krippendorff_alpha_lo=lo, krippendorff_alpha_hi=hi,
               n_alpha_items=len(pairable))
    mean_k, n_pairs = _mean_cohen(votes, min_shared)
    out.update(mean_cohen_kappa=mean_k, n_annotator_pairs=n_pairs)
    for suffix, ties in (("", True), ("_no_ties", False)):
        f = vote_pair_agreement(votes, ties=ties, policy=policy)
        out.update({f"pair_agreement{suffix}": f.value, f"pair_agreement{suffix}_lo": f.lo,
                    f"pair_agreement{suffix}_hi": f.hi, f"n_pairs{suffix}": f.n})
    return out


def gold_agreement(frame: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY) -> dict[str, float | int]:
    """A judge against the gold label (module docstring): ``frame`` holds ``dataset, item_id, order,
    verdict, label`` (one row per judgment; rows without a label are left out).  Keys: ``accuracy``
    (ties a class; + ``_lo``/``_hi``), ``fleiss_kappa`` (verdict and label as two raters in shown terms;
    + bounds), ``n`` judgments, ``n_items``, ``n_unparsed``."""
    confidence, n_bootstrap, seed = policy.confidence, policy.n_bootstrap, policy.seed
    f = frame[frame["label"].notna()]
    code = f["verdict"].astype(object).map(_CODES)
    n_unparsed = int(code.isna().sum())
    if policy.drops_unparsed:
        f, code = f[code.notna()], code[code.notna()]
    order = f["order"].astype(str).to_numpy(dtype=object)
    shown_v = swap_array(f["verdict"].to_numpy(dtype=object), order)
    shown_l = swap_array(f["label"].astype(str).to_numpy(dtype=object), order)
    v = pd.Series(shown_v).map(_CODES).fillna(_NONE).to_numpy(dtype=np.int64)
    lab = pd.Series(shown_l).map(_CODES).to_numpy(dtype=np.int64)
    item = _item_codes(f)
    n_items = int(item.max()) + 1 if len(item) else 0
    eq = np.bincount(item, weights=(v == lab).astype(float), minlength=n_items)
    den = np.bincount(item, minlength=n_items).astype(float)
    acc = _ratio(eq, den, confidence=confidence, n_bootstrap=n_bootstrap, seed=seed)
    counts = np.zeros((len(v), len(VERDICTS) + 1))
    np.add.at(counts, (np.arange(len(v)), v), 1.0)
    np.add.at(counts, (np.arange(len(v)), lab), 1.0)
    fk = float("nan")
    lo = hi = float("nan")
    if len(v):
        fk = float(_fleiss_from(counts, np.ones((1, len(v))))[0])
        if n_bootstrap:
            # resample items: a judgment counts as often as its item is drawn
            lo, hi = _bounds(np.concatenate([_fleiss_from(counts, w[:, item])
                                             for w in _weight_chunks(n_items, n_bootstrap, seed)]), confidence)
    return {"accuracy": acc.value, "accuracy_lo": acc.lo, "accuracy_hi": acc.hi, "fleiss_kappa": fk,
            "fleiss_kappa_lo": lo, "fleiss_kappa_hi": hi, "n": len(v), "n_items": n_items, "n_unparsed": n_unparsed}


_UNIT = ["dataset", "item_id", "order", "rep"]


def judge_agreement(a: pd.DataFrame, b: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY
                    ) -> dict[str, float | int]:
    """Judge ``a`` against judge ``b`` (module docstring): frames of ``dataset, item_id, order, rep,
    verdict``, matched on the first four.  Keys: ``agreement`` (+ bounds), ``cohen_kappa``, ``n`` matched
    judgments, ``n_items``."""
    return judge_agreements([(a, b)], policy=policy)[0]


def judge_agreements(pairs: Sequence[tuple[pd.DataFrame, pd.DataFrame]], *, policy: FigurePolicy = DEFAULT_POLICY
                     ) -> list[dict[str, float | int]]:
    """:func:`judge_agreement` of each ``(a, b)``, the same figures: the pairs with as many items share
    one pass of the item-bootstrap weights (each call drew the same weights from the same seed; at
    5.4M judgments drawing them was 15 of the 29 s of nine judge pairs)."""
    prepared = []
    for a, b in pairs:
        m = a[[*_UNIT, "verdict"]].merge(b[[*_UNIT, "verdict"]], on=_UNIT, suffixes=("_a", "_b"))
        if policy.drops_unparsed:
            m = m[m["verdict_a"].notna() & m["verdict_b"].notna()]
        va = _verdict_codes(m["verdict_a"], _NONE)
        vb = _verdict_codes(m["verdict_b"], _NONE + 1)  # two unparsed never agree
        item = _item_codes(m)
        n_items = int(item.max()) + 1 if len(item) else 0
        prepared.append((np.bincount(item, weights=(va == vb).astype(float), minlength=n_items),
                         np.bincount(item, minlength=n_items).astype(float),
                         cohen_kappa(va, vb).value if len(m) else float("nan"), len(m)))
    bounds = _ratio_bounds([(num, den) for num, den, _k, _n in prepared], policy=policy)
    return [{"agreement": float(num.sum()) / float(den.sum()) if den.sum() else float("nan"),
             "agreement_lo": lo, "agreement_hi": hi, "cohen_kappa": kappa, "n": n, "n_items": len(den)}
            for (num, den, kappa, n), (lo, hi) in zip(prepared, bounds, strict=True)]


def _verdict_codes(verdicts: pd.Series, other: int) -> np.ndarray:
    """``verdicts.astype(object).map(_CODES).fillna(other)`` as int64: a categorical through its
    categories (one dict lookup per category, not per row: 1.0 of judge_vs_judge's 8-10 s of CPU at
    5.4M judgments went to mapping the nine pairs' ~10M verdicts as objects)."""
    if isinstance(verdicts.dtype, pd.CategoricalDtype):
        table = np.array([_CODES.get(c, other) for c in verdicts.dtype.categories] + [other], dtype=np.int64)
        return table[verdicts.cat.codes.to_numpy()]          # code -1 (missing) reads the last entry
    return verdicts.astype(object).map(_CODES).fillna(other).to_numpy(dtype=np.int64)


def _ratio_bounds(ratios: Sequence[tuple[np.ndarray, np.ndarray]], *, policy: FigurePolicy
                  ) -> list[tuple[float, float]]:
    """The item-bootstrap bounds of each ``sum(num) / sum(den)`` as :func:`_ratio` gives them; the
    ratios over as many items resampled together (the same weights: one seed)."""
    out: list[tuple[float, float]] = [(float("nan"), float("nan"))] * len(ratios)
    if not policy.n_bootstrap:
        return out
    by_size: dict[int, list[int]] = {}
    for k, (_num, den) in enumerate(ratios):
        if den.sum():
            by_size.setdefault(len(den), []).append(k)
    for n_items, ks in by_size.items():
        x = np.column_stack([v for k in ks for v in ratios[k]])          # num, den, num, den, ...
        sums = np.concatenate([w @ x for w in _weight_chunks(n_items, policy.n_bootstrap, policy.seed)])
        for j, k in enumerate(ks):
            n, d = sums[:, 2 * j], sums[:, 2 * j + 1]
            with np.errstate(invalid="ignore", divide="ignore"):
                out[k] = _bounds(np.where(d > 0, n / d, np.nan), policy.confidence)
    return out
