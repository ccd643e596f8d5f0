"""Human-label-corrected estimates of a mean: prediction-powered inference (PPI / PPI++) and label budgets.

Notation (Angelopoulos, Duchi, Zrnic 2023, "PPI++: Efficient Prediction-Powered Inference"):
``y`` are human outcomes on the n labelled items, ``yhat`` the judge's predictions on those same items
and ``yhat_unlabelled`` its predictions on N items without a human label.  For a mean,

    theta(lam) = lam * mean(yhat_unlabelled) + mean(y - lam * yhat)
    se(lam)^2  = lam^2 * var(yhat_unlabelled) / N + var(y - lam * yhat) / n        (variances ddof=0)

``lam = 1`` is classic PPI; PPI++ picks the ``lam`` that minimises the variance,

    lam* = cov(y, yhat) / ((1 + n/N) * var(yhat pooled over labelled and unlabelled, ddof=1)),

clipped to [0, 1] (so the interval is never wider than the human-only one, up to sampling noise).
These are exactly the formulas of the reference package ``ppi_py`` (``ppi_mean_ci`` with ``lam=None``);
the tests cross-check to 1e-6.  The interval is the normal one, theta +- z * se.

``ess`` (effective sample size) is how many human labels alone would give the same interval width:
``var(y) / se^2`` (the human-only standard error with n labels is sqrt(var(y)/n)).

Undefined figures are ``None`` with a ``reason`` -- never a number that looks valid:
fewer than :data:`MIN_LABELLED` labelled items, human labels all one class (a normal interval would have
zero width), constant judge predictions (nothing to learn lam from), no unlabelled items.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats as _st

__all__ = [
    "MIN_LABELLED",
    "MIN_PER_STRATUM",
    "LabelBudget",
    "MeanEstimate",
    "classical_mean",
    "judge_mean",
    "label_budget",
    "ppi_mean",
    "smallest_halfwidth",
    "worst_case_labels",
]

#: fewest labelled items for any interval here (the normal approximation needs some items)
MIN_LABELLED = 10
#: fewest pilot items per judge-confidence stratum for the Neyman allocation
MIN_PER_STRATUM = 5


@dataclass(frozen=True)
class MeanEstimate:
    """A mean with its two-sided interval and the numbers it stands on.

    ``method`` is ``"ppi++"``, ``"ppi"`` (lam = 1), ``"human"`` (labels only) or ``"judge"`` (judge
    predictions taken as truth: the over-confident estimate, shown for contrast).  When the figure is
    undefined ``value``, ``lo``, ``hi`` (and ``lam``, ``ess``) are None and ``reason`` says why."""

    value: float | None
    lo: float | None
    hi: float | None
    n_labelled: int
    n_unlabelled: int
    lam: float | None
    ess: float | None
    confidence: float
    method: str
    reason: str | None = None

    @property
    def halfwidth(self) -> float | None:
        if self.lo is None or self.hi is None:
            return None
        return (self.hi - self.lo) / 2.0


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(_st.norm.ppf(0.5 + confidence / 2.0))


def _vector(x: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} holds NaN or infinite values; drop those items first")
    return a


def _undefined(method: str, n: int, big_n: int, confidence: float, reason: str) -> MeanEstimate:
    return MeanEstimate(None, None, None, n, big_n, None, None, confidence, method, reason)


def _constant(a: np.ndarray) -> bool:
    return a.size > 0 and bool(np.all(a == a[0]))


def _label_reason(y: np.ndarray) -> str | None:
    n = y.size
    if n < MIN_LABELLED:
        return f"too few labelled items: {n} (need at least {MIN_LABELLED})"
    if _constant(y):
        return (f"human outcomes are all {y[0]:g} on {n} items: a normal interval would have zero width; "
                "label items of the other class too")
    return None


def classical_mean(y: Sequence[float] | np.ndarray, *, confidence: float = 0.95) -> MeanEstimate:
    """Human-only estimate: mean(y) +- z * sd(y, ddof=0) / sqrt(n) (as ``ppi_py.classical_mean_ci``)."""
    z = _z(confidence)
    yv = _vector(y, "y")
    n = int(yv.size)
    reason = _label_reason(yv)
    if reason is not None:
        return _undefined("human", n, 0, confidence, reason)
    m = float(yv.mean())
    se = float(yv.std()) / math.sqrt(n)
    return MeanEstimate(m, m - z * se, m + z * se, n, 0, 0.0, float(n), confidence, "human")


def judge_mean(yhat: Sequence[float] | np.ndarray, *, confidence: float = 0.95) -> MeanEstimate:
    """Judge-only estimate: the judge's predictions on all items taken as truth (normal interval).

    This is the figure a judge-only pipeline reports; its interval ignores the judge's error and is
    shown only beside the human-only and PPI++ estimates."""
    z = _z(confidence)
    v = _vector(yhat, "yhat")
    big_n = int(v.size)
    if big_n < MIN_LABELLED:
        return _undefined("judge", 0, big_n, confidence, reason=f"too few judged items: {big_n} "
                                                                f"(need at least {MIN_LABELLED})")
    m = float(v.mean())
    se = float(v.std()) / math.sqrt(big_n)
    return MeanEstimate(m, m - z * se, m + z * se, 0, big_n, None, None, confidence, "judge")


def _optimal_lam(y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray) -> float:
    """PPI++ lam for a mean: cov(y, yhat) (ddof=0) / ((1 + n/N) var(pooled yhat, ddof=1)), in [0, 1]."""
    n, big_n = y.size, yhat_u.size
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    pooled = np.concatenate([yhat, yhat_u])
    var_f = float(pooled.var(ddof=1))
    return float(np.clip(cov / ((1.0 + n / big_n) * var_f), 0.0, 1.0))


def ppi_mean(y: Sequence[float] | np.ndarray, yhat: Sequence[float] | np.ndarray,
             yhat_unlabelled: Sequence[float] | np.ndarray, *, confidence: float = 0.95,
             power_tuning: bool = True) -> MeanEstimate:
    """Prediction-powered estimate of the mean of the human outcome (module docstring for formulas).

    ``y``: human outcomes on labelled items (0/1 or any number); ``yhat``: the judge's predictions on the
    same items (a verdict as 0/1, or P(A)); ``yhat_unlabelled``: its predictions on unlabelled items.
    ``power_tuning=False`` is classic PPI (lam = 1)."""
    z = _z(confidence)
    yv, fv, fu = _vector(y, "y"), _vector(yhat, "yhat"), _vector(yhat_unlabelled, "yhat_unlabelled")
    if yv.size != fv.size:
        raise ValueError(f"y and yhat must have the same length, got {yv.size} and {fv.size}")
    n, big_n = int(yv.size), int(fu.size)
    method = "ppi++" if power_tuning else "ppi"
    reason = _label_reason(yv)
    if reason is None and big_n < 2:
        reason = (f"{big_n} unlabelled item(s): PPI needs judge predictions on items without a human "
                   "label (at least 2)")
    if reason is None and _constant(np.concatenate([fv, fu])):
        reason = (f"the judge's predictions are all {fv[0]:g}: they carry no information, "
                   "use the human-only estimate")
    if reason is not None:
        return _undefined(method, n, big_n, confidence, reason)
    lam = _optimal_lam(yv, fv, fu) if power_tuning else 1.0
    value = float(lam * fu.mean() + (yv - lam * fv).mean())
    var = float((lam * fu).var()) / big_n + float((yv - lam * fv).var()) / n
    se = math.sqrt(var)
    ess = float(yv.var()) / var if var > 0 else None
    return MeanEstimate(value, value - z * se, value + z * se, n, big_n, lam, ess, confidence, method)


# ---- label budget ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelBudget:
    """How many human labels give an interval half-width of ``halfwidth``.

    ``human_only``: labels alone (n = z^2 var(y) / h^2).  ``ppi``: PPI++ with the ``n_unlabelled`` judged
    items, lam re-optimised for each n.  ``ppi_stratified``: PPI++ within judge-confidence strata with the
    labels split across strata by Neyman allocation (``allocation``, one count per stratum between
    ``strata_edges``).  Each is None when undefined, with the reason in ``reasons``."""

    halfwidth: float
    confidence: float
    n_pilot: int
    n_unlabelled: int
    human_only: int | None
    ppi: int | None
    ppi_stratified: int | None
    allocation: tuple[int, ...] | None
    strata_edges: tuple[float, ...] | None
    reasons: tuple[str, ...] = ()


def _ppi_var_per_n(n: np.ndarray, var_y: float, cov: float, var_f: float, big_n: int) -> np.ndarray:
    """Variance of the PPI++ mean with n labels and N unlabelled items, lam optimal (clipped) for each n."""
    lam = np.clip(cov / ((1.0 + n / big_n) * var_f), 0.0, 1.0)
    return np.asarray(lam**2 * var_f / big_n + (var_y - 2.0 * lam * cov + lam**2 * var_f) / n, dtype=float)


def _ppi_budget(y: np.ndarray, f: np.ndarray, fu: np.ndarray, target_var: float,
                n_human: int) -> int | None:
    var_y = float(y.var())
    cov = float(np.mean((y - y.mean()) * (f - f.mean())))
    var_f = float(np.concatenate([f, fu]).var())
    if var_f == 0.0:
        return None
    grid = np.arange(1, n_human + 1, dtype=float)
    ok = np.flatnonzero(_ppi_var_per_n(grid, var_y, cov, var_f, fu.size) <= target_var)
    return int(grid[ok[0]]) if ok.size else n_human


def _strata(f: np.ndarray, fu: np.ndarray, n_strata: int) -> np.ndarray | None:
    """Interior edges (quantiles of the pooled predictions) giving >= MIN_PER_STRATUM pilot items each."""
    pooled = np.concatenate([f, fu])
    for k in range(n_strata, 1, -1):
        edges = np.unique(np.quantile(pooled, np.linspace(0, 1, k + 1)[1:-1]))
        counts = np.bincount(np.searchsorted(edges, f, side="right"), minlength=edges.size + 1)
        if edges.size and counts.min() >= MIN_PER_STRATUM:
            return edges
    return None


def _stratum_vars(y: np.ndarray, f: np.ndarray) -> tuple[float, float]:
    """(residual variance var(y) - cov(y, f)^2 / var(f), its unlabelled part cov^2 / var(f)) of PPI++ with
    lam = cov / var(f) in one stratum (ddof 0).

    A stratum whose pilot labels are all one class gets the variance of half a success in n + 1 trials
    (p = 0.5 / (n + 1)), so it still receives labels instead of none."""
    var_y = float(y.var())
    if var_y == 0.0:
        p = 0.5 / (y.size + 1)
        return p * (1.0 - p), 0.0
    var_f = float(f.var())
    if var_f == 0.0:
        return var_y, 0.0
    cov = float(np.mean((y - y.mean()) * (f - f.mean())))
    explained = max(cov, 0.0) ** 2 / var_f
    return max(var_y - explained, 0.0), explained


def _neyman(weights: np.ndarray, s: np.ndarray, v_u: float,
            target_var: float) -> tuple[int, tuple[int, ...]] | None:
    total = float(np.sum(weights * s))
    if total == 0.0 or v_u >= target_var:
        return None
    n = max(math.ceil(total**2 / (target_var - v_u)), 2 * s.size)
    alloc = tuple(int(math.ceil(n * w * sj / total)) for w, sj in zip(weights, s, strict=True))
    return int(sum(alloc)), alloc


def _stratified_budget(y: np.ndarray, f: np.ndarray, fu: np.ndarray, edges: np.ndarray,
                       target_var: float) -> tuple[int, tuple[int, ...]] | None:
    """Neyman allocation n_k = n W_k s_k / sum_j W_j s_j, so Var = (sum_k W_k s_k)^2 / n + V_u.

    W_k: stratum share of the pool, s_k^2: residual variance in the stratum, V_u = sum_k W_k^2 e_k / N_k
    the variance of the judge's part on the N_k pool items of each stratum (e_k = cov_k^2 / var_k(f)).
    On a small pool V_u can outweigh the gain, so the plan without the judge's part inside the strata
    (s_k^2 = var_k(y), V_u = 0: stratified sampling on the judge's confidence) is computed too and the
    smaller of the two is returned.  None when neither reaches the target."""
    s_pilot = np.searchsorted(edges, f, side="right")
    s_pool = np.searchsorted(edges, fu, side="right")
    k = edges.size + 1
    n_pool = np.bincount(s_pool, minlength=k)
    weights = n_pool / fu.size
    parts = np.array([_stratum_vars(y[s_pilot == j], f[s_pilot == j]) for j in range(k)])
    v_u = float(np.sum(weights**2 * parts[:, 1] / np.maximum(n_pool, 1)))
    plans = [p for p in (_neyman(weights, np.sqrt(parts[:, 0]), v_u, target_var),
                         _neyman(weights, np.sqrt(parts[:, 0] + parts[:, 1]), 0.0, target_var))
             if p is not None]
    return min(plans) if plans else None


def _budget_reasons(have_strata: bool, strat: tuple[int, tuple[int, ...]] | None, needs: tuple[int, int | None],
                  pool: int, halfwidth: float) -> list[str]:
    reasons = []
    if not have_strata:
        reasons.append(f"stratified: the pilot cannot fill 2 judge-confidence strata with "
                     f"{MIN_PER_STRATUM} items each")
    elif strat is None:
        reasons.append(f"stratified: the pool of {pool} items is too small for +-{halfwidth:g}")
    for name, need in (("humans only", needs[0]), ("PPI++", needs[1]),
                       ("stratified", None if strat is None else strat[0])):
        if need is not None and need > pool:
            reasons.append(f"{name}: {need} labels is more than the pool's {pool} items; the half-width "
                         "is out of reach on this pool (the count holds for a larger pool like it)")
    return reasons


def _pool(yhat_unlabelled: Sequence[float] | np.ndarray | int, fv: np.ndarray) -> tuple[np.ndarray, bool]:
    """The pool's predictions, and whether they were assumed from the pilot (only N was given)."""
    if isinstance(yhat_unlabelled, int | np.integer):
        n_pool = int(yhat_unlabelled)
        if n_pool < 0:
            raise ValueError(f"the number of unlabelled items must be >= 0, got {n_pool}")
        return (np.resize(fv, n_pool) if fv.size else np.empty(0)), True
    return _vector(yhat_unlabelled, "yhat_unlabelled"), False


def label_budget(y: Sequence[float] | np.ndarray, yhat: Sequence[float] | np.ndarray,
                 yhat_unlabelled: Sequence[float] | np.ndarray | int, *, halfwidth: float,
                 confidence: float = 0.95, n_strata: int = 4) -> LabelBudget:
    """Human labels needed for an interval of half-width ``halfwidth`` on the mean human outcome.

    From a pilot (``y`` human outcomes with the judge's predictions ``yhat``) and the judge's predictions
    on the unlabelled pool ``yhat_unlabelled``: variances are estimated on the pilot (ddof=0), the
    pool's size N and strata shares from ``yhat_unlabelled``.  Human-only: n = ceil(z^2 var(y) / h^2).
    PPI++: the smallest n with z^2 Var_ppi(n) <= h^2 (lam optimal for each n, N fixed).  Stratified:
    :func:`_stratified_budget` on up to ``n_strata`` quantile strata of the judge's predictions.

    ``yhat_unlabelled`` may be just the number N of unlabelled items: the pool is then assumed to look like
    the pilot (its predictions repeated to length N), and a reason says so."""
    z = _z(confidence)
    if not halfwidth > 0:
        raise ValueError(f"halfwidth must be > 0, got {halfwidth!r}")
    yv, fv = _vector(y, "y"), _vector(yhat, "yhat")
    if yv.size != fv.size:
        raise ValueError(f"y and yhat must have the same length, got {yv.size} and {fv.size}")
    fu, assumed = _pool(yhat_unlabelled, fv)
    empty = LabelBudget(float(halfwidth), confidence, int(yv.size), int(fu.size), human_only=None, ppi=None,
                        ppi_stratified=None, allocation=None, strata_edges=None)
    reason = _label_reason(yv)
    if reason is None and fu.size < 2:
        reason = f"{fu.size} unlabelled item(s): nothing for the judge to add"
    if reason is not None:
        return replace(empty, reasons=(f"pilot: {reason}",))
    target_var = (halfwidth / z) ** 2
    n_human = max(math.ceil(float(yv.var()) / target_var), 1)
    reasons: list[str] = (["pool: only its size was given; its judge predictions are assumed to look like the "
                           "pilot's"] if assumed else [])
    n_ppi = _ppi_budget(yv, fv, fu, target_var, n_human)
    if n_ppi is None:
        reasons.append("ppi: the judge's predictions are constant; they cannot reduce the labels needed")
    edges = _strata(fv, fu, n_strata)
    strat = None if edges is None else _stratified_budget(yv, fv, fu, edges, target_var)
    reasons += _budget_reasons(edges is not None, strat, (n_human, n_ppi), fu.size, halfwidth)
    if edges is None or strat is None:
        return replace(empty, human_only=n_human, ppi=n_ppi, reasons=tuple(reasons))
    return replace(empty, human_only=n_human, ppi=n_ppi, ppi_stratified=strat[0], allocation=strat[1],
                   strata_edges=tuple(float(e) for e in edges), reasons=tuple(reasons))


def worst_case_labels(halfwidth: float, *, confidence: float = 0.95) -> float:
    """Human labels a normal interval of half-width ``halfwidth`` needs at worst (a share of 1/2, the
    largest variance): n = z^2 / (4 h^2), z the normal quantile of ``confidence``.  E.g. h = 0.05 at 95%:
    1.95996^2 / 0.01 = 384.1 labels."""
    return _z(confidence) ** 2 / (4.0 * halfwidth * halfwidth)


def smallest_halfwidth(n_labels: int, *, confidence: float = 0.95, decimals: int | None = None) -> float:
    """The narrowest half-width ``n_labels`` human labels reach at worst: h = z / (2 sqrt(n)), the inverse
    of :func:`worst_case_labels`; rounded up to ``decimals`` places when given (a half-width at least
    that wide needs at most ``n_labels``).  E.g. 384 labels at 95%: 1.95996 / 39.19 = 0.05001."""
    h = _z(confidence) / (2.0 * math.sqrt(n_labels))
    if decimals is None:
        return h
    scale = 10.0 ** decimals
    return math.ceil(h * scale) / scale
