"""AlpacaEval 2's figures for one system against its baseline: the win rate, its standard error and
the length-controlled (LC) win rate, computed as the ``alpaca-eval`` package computes them.

Input per annotation (one instruction): ``preference`` = the system's preference over the baseline in
[0, 1] (1: the system's output is better, 0: the baseline's, 1/2: a draw; a soft judge gives any value
between) -- AlpacaEval's ``preference`` minus 1.  Several judgments of one instruction (both orders,
repetitions) are averaged into one annotation before these functions see them.

Win rate (``alpaca_eval.metrics.get_winrate``, absolute scoring rule): 100 x the mean preference over
the annotations whose preference is in [0, 1] (others dropped); standard error = 100 x the sample
standard error of those preferences (ddof 1); ``discrete_win_rate``: each preference rounded first
(exactly 1/2 is a draw worth 1/2).

LC win rate (``alpaca_eval.metrics.get_length_controlled_winrate``, GLM ``length_controlled_v1``):
a logistic regression of the preference on tanh(standardised length difference) + instruction
difficulty + a "not gamed baseline" indicator, no intercept, fitted by scikit-learn's
``LogisticRegressionCV`` (L1, liblinear, 5-fold grouped CV on the log loss of the soft targets); the
fitted model then predicts each instruction's preference with the length difference set to 0, and
the LC win rate is 100 x the mean prediction (its standard error 100 x their standard error).  The
length difference is len(baseline output) - len(system output) in characters, divided by its
standard deviation.  ``length_controlled_v1`` adds AlpacaEval's annotations of the two "gamed"
baselines (their verbose and concise variants, ``df_gamed.csv`` of the project's data set) with
weight 0.2 / 2 to regularise towards the baseline; ``length_controlled_noreg`` leaves them out.  The
instruction difficulties and the gamed annotations are AlpacaEval's published values: they are
inputs here (:class:`AlpacaReference`), read by the caller.

The GLM is fitted by the package's own public functions (``make_dmatrix_for_model``,
``fit_LogisticRegressionCV``), so the figure is the package's by construction; only its download of
the published values is replaced by the ``reference`` argument.  Needs ``pip install
'verdictlab[alpaca]'``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["AlpacaReference", "AlpacaWinRate", "GLM_NAMES", "alpaca_win_rate", "length_controlled_win_rate"]

GLM_NAMES: tuple[str, ...] = ("length_controlled_v1", "length_controlled_noreg")


@dataclass(frozen=True)
class AlpacaWinRate:
    """AlpacaEval's head-to-head figures (percentages) and counts; ``lc_*`` NaN until computed."""

    win_rate: float
    standard_error: float
    discrete_win_rate: float
    n_wins: int
    n_wins_base: int
    n_draws: int
    n_total: int
    n_left_out: int
    lc_win_rate: float = float("nan")
    lc_standard_error: float = float("nan")


def _sem(x: np.ndarray) -> float:
    return float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")


def alpaca_win_rate(preference: Any) -> AlpacaWinRate:
    """The win rate, standard error and counts of ``alpaca_eval.metrics.get_winrate`` (module
    docstring) from preferences in [0, 1]; missing or out-of-range preferences are left out."""
    p = np.asarray(pd.to_numeric(pd.Series(preference, dtype=object), errors="coerce"), dtype=float)
    ok = np.isfinite(p) & (p >= 0) & (p <= 1)
    x = p[ok]
    n = len(x)
    rounded = np.round(x)
    rounded[x == 0.5] = 0.5              # the package maps an exact draw to a draw before rounding
    return AlpacaWinRate(
        win_rate=float(x.mean() * 100) if n else float("nan"), standard_error=_sem(x) * 100,
        discrete_win_rate=float(rounded.mean() * 100) if n else float("nan"),
        n_wins=int((x > 0.5).sum()), n_wins_base=int((x < 0.5).sum()), n_draws=int((x == 0.5).sum()),
        n_total=n, n_left_out=int((~ok).sum()))


@dataclass(frozen=True)
class AlpacaReference:
    """AlpacaEval's published values the LC win rate needs: ``difficulty`` = the instruction difficulty
    per instruction index (a Series indexed 0..804 for AlpacaEval 2), and ``gamed`` = the gamed
    baselines' annotations (``index``, ``preference``, ``std_delta_len``, ``instruction_difficulty``,
    ``not_gamed_baseline``; used as the package uses them) for ``length_controlled_v1``."""

    difficulty: pd.Series
    gamed: pd.DataFrame | None = None

    @classmethod
    def from_gamed(cls, gamed: pd.DataFrame) -> AlpacaReference:
        """From AlpacaEval's ``df_gamed.csv`` frame: the difficulty as the package reads it (the first
        row of each instruction index, looked up by row label), the frame without its ``model``."""
        g = gamed.drop(columns=["model"], errors="ignore")
        return cls(difficulty=g.drop_duplicates("index")["instruction_difficulty"], gamed=g)


def length_controlled_win_rate(preference: Any, len_system: Any, len_baseline: Any, instruction: Any, *,
                               reference: AlpacaReference, glm: str = "length_controlled_v1") -> AlpacaWinRate:
    """:func:`alpaca_win_rate` plus the LC win rate and its standard error (module docstring).

    ``instruction``: each annotation's instruction index into ``reference.difficulty``; the lengths are
    characters.  ``glm``: ``length_controlled_v1`` (needs ``reference.gamed``) or
    ``length_controlled_noreg``."""
    from alpaca_eval.metrics.glm_winrate import GLM_INFO, fit_LogisticRegressionCV, make_dmatrix_for_model

    if glm not in GLM_NAMES:
        raise ValueError(f"glm must be one of {GLM_NAMES}, got {glm!r}")
    info = GLM_INFO[glm]
    lam = info["regularize_to_baseline_lambda"]
    if lam and reference.gamed is None:
        raise ValueError(f"{glm} needs the gamed baselines' annotations (reference.gamed)")
    base = alpaca_win_rate(preference)
    df = pd.DataFrame({"preference": np.asarray(preference, dtype=float),
                       "index": np.asarray(instruction, dtype=np.int64)})
    delta = pd.Series(np.asarray(len_baseline, dtype=float) - np.asarray(len_system, dtype=float))
    df["std_delta_len"] = delta / delta.std()
    missing = ~df["index"].isin(reference.difficulty.index)
    if missing.any():
        raise ValueError(f"instruction index {int(df['index'][missing].iloc[0])} has no published difficulty")
    df["instruction_difficulty"] = reference.difficulty.loc[df["index"]].to_numpy(float)
    df["not_gamed_baseline"] = True
    test = df[["instruction_difficulty", "not_gamed_baseline"]].copy()
    test["std_delta_len"] = 0
    weight: Any = None
    if lam:
        train = pd.concat([reference.gamed, df], axis=0)
        xy, x_test = make_dmatrix_for_model(train, test, formula=info["formula"])
        ng = train["not_gamed_baseline"].astype(bool)
        weight = ng.astype(float) + (lam * (~ng)).astype(float) / 2
    else:
        xy, x_test = make_dmatrix_for_model(df, test, formula=info["formula"])
    keep = xy["preference"].notna().to_numpy()
    xy = xy[keep]
    if weight is not None:
        weight = weight[keep]
    model = fit_LogisticRegressionCV(xy, "preference", is_ytrue_proba=True, sample_weight=weight, **info["kwargs"])
    predicted = model.predict_proba(x_test)[:, 1]
    return AlpacaWinRate(**{**base.__dict__, "lc_win_rate": float(predicted.mean() * 100),
                            "lc_standard_error": _sem(np.asarray(predicted)) * 100})
