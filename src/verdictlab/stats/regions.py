"""Failure regions of a cell on (C, phi) and their documented thresholds, and the thresholds of the
consistency-bias paradox."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["DEFAULT_C_HIGH", "DEFAULT_PHI_LOW", "PARADOX_BIAS", "PARADOX_RETEST", "REGIONS", "cell_regions",
           "cell_regions_possible", "failure_region", "region_thresholds", "regions_reached"]

#: the four regions of the (C, phi) plane, plus "undefined" for NaN input
REGIONS = ("trustworthy", "noisy-but-fair", "chaos", "confidently-biased")

#: defaults: C >= 0.90 is "reproducible" (most Table-1 cells of the source paper sit at 0.8-1.0);
#: phi <= 0.20 is "fair" -- a flip rate of 0.20 with every flip toward one position is a position
#: bias of 0.10, the threshold of the consistency-bias paradox.
DEFAULT_C_HIGH = 0.90
DEFAULT_PHI_LOW = 0.20

#: consistency-bias paradox: test-retest above PARADOX_RETEST with position bias above PARADOX_BIAS
PARADOX_RETEST = 0.95
PARADOX_BIAS = 0.10


def region_thresholds() -> dict[str, float]:
    """The documented defaults of :func:`failure_region` as ``{"c_high", "phi_low"}``."""
    return {"c_high": DEFAULT_C_HIGH, "phi_low": DEFAULT_PHI_LOW}


def failure_region(C: Any, phi: Any, *, c_high: float = DEFAULT_C_HIGH,
                   phi_low: float = DEFAULT_PHI_LOW) -> Any:
    """Region of a cell on the (C, phi) plane:

    * ``trustworthy``         C >= c_high and phi <= phi_low (reproducible and order-invariant)
    * ``noisy-but-fair``      C <  c_high and phi <= phi_low (random, but not position-driven)
    * ``chaos``               C <  c_high and phi >  phi_low
    * ``confidently-biased``  C >= c_high and phi >  phi_low (reproducibly order-driven)

    NaN in either gives ``undefined``.  Scalars give a str, arrays an array of str."""
    c = np.asarray(C, dtype=float)
    p = np.asarray(phi, dtype=float)
    high = c >= c_high
    fair = p <= phi_low
    out = np.where(high & fair, REGIONS[0], np.where(~high & fair, REGIONS[1],
                   np.where(~high & ~fair, REGIONS[2], REGIONS[3]))).astype(object)
    out = np.where(np.isnan(c) | np.isnan(p), "undefined", out)
    return str(out) if out.ndim == 0 else out


def cell_regions(cells: pd.DataFrame, *, c_high: float = DEFAULT_C_HIGH,
                 phi_low: float = DEFAULT_PHI_LOW) -> np.ndarray:
    """The failure region of each row of a cell-figures frame (:func:`verdictlab.stats.reliability`):
    :func:`failure_region` of its C and phi, ``undefined`` where either is not measured -- phi needs
    pairs judged in both orders (it is NaN otherwise) and C needs at least two repetitions (with one,
    every verdict agrees with itself: C = 1 by construction, so it says nothing of reproducibility)."""
    if not len(cells):
        return np.zeros(0, dtype=object)
    C = pd.to_numeric(cells["C"], errors="coerce").to_numpy(dtype=float)
    reps = pd.to_numeric(cells["repetitions"], errors="coerce").to_numpy(dtype=float) \
        if "repetitions" in cells.columns else np.full(len(C), np.nan)
    measured = np.where(reps >= 2, C, np.nan)
    phi = pd.to_numeric(cells["phi"], errors="coerce").to_numpy(dtype=float)
    return np.asarray(failure_region(measured, phi, c_high=c_high, phi_low=phi_low), dtype=object).reshape(-1)


def regions_reached(C_lo: float, C_hi: float, phi_lo: float, phi_hi: float, *, c_high: float = DEFAULT_C_HIGH,
                    phi_low: float = DEFAULT_PHI_LOW) -> tuple[str, ...]:
    """The failure regions the box [C_lo, C_hi] x [phi_lo, phi_hi] reaches, in :data:`REGIONS` order.

    C reaches the high side when C_hi >= c_high and the low side when C_lo < c_high; phi reaches the
    fair side when phi_lo <= phi_low and the other when phi_hi > phi_low (the edges of
    :func:`failure_region`).  A region is reached when both of its sides are.  A NaN bound gives
    ``()`` (the box is not known)."""
    bounds = np.array([C_lo, C_hi, phi_lo, phi_hi], dtype=float)
    if np.isnan(bounds).any():
        return ()
    c_sides = {"high": C_hi >= c_high, "low": C_lo < c_high}
    p_sides = {"fair": phi_lo <= phi_low, "unfair": phi_hi > phi_low}
    reached = {"trustworthy": c_sides["high"] and p_sides["fair"], "noisy-but-fair": c_sides["low"] and p_sides["fair"],
               "chaos": c_sides["low"] and p_sides["unfair"],
               "confidently-biased": c_sides["high"] and p_sides["unfair"]}
    return tuple(r for r in REGIONS if reached[r])


def cell_regions_possible(cells: pd.DataFrame, *, c_high: float = DEFAULT_C_HIGH,
                          phi_low: float = DEFAULT_PHI_LOW) -> list[tuple[str, ...]]:
    """Per row of a cell-figures frame (:func:`verdictlab.stats.reliability`): the regions the
    intervals of C and phi reach (``C_lo``/``C_hi``, ``phi_lo``/``phi_hi``; a missing bound is the
    point figure), the cell's own region (:func:`cell_regions`) first and the others in
    :data:`REGIONS` order; ``()`` where the region is undefined (C not measured, or no phi)."""
    if not len(cells):
        return []
    point = cell_regions(cells, c_high=c_high, phi_low=phi_low)

    def column(name: str, fallback: str) -> np.ndarray:
        base = pd.to_numeric(cells[fallback], errors="coerce").to_numpy(dtype=float)
        if name not in cells.columns:
            return base
        got = pd.to_numeric(cells[name], errors="coerce").to_numpy(dtype=float)
        return np.where(np.isnan(got), base, got)

    c_lo, c_hi = column("C_lo", "C"), column("C_hi", "C")
    p_lo, p_hi = column("phi_lo", "phi"), column("phi_hi", "phi")
    out: list[tuple[str, ...]] = []
    for k, own in enumerate(point):
        if own == "undefined":
            out.append(())
            continue
        reached = regions_reached(c_lo[k], c_hi[k], p_lo[k], p_hi[k], c_high=c_high, phi_low=phi_low)
        out.append((str(own), *(r for r in reached if r != own)))
    return out
