"""Effective number of independent jurors K / (1 + (K - 1) rho)."""

from __future__ import annotations

import math

import pytest

from verdictlab.stats.juries import effective_jurors


def test_effective_jurors_hand_worked():
    # K = 5, rho = 0.25: 5 / (1 + 4 * .25) = 5 / 2 = 2.5
    assert effective_jurors(5, 0.25) == pytest.approx(2.5)
    # K = 3, rho = 0.5: 3 / (1 + 2 * .5) = 1.5;  rho = 0 -> K;  rho = 1 -> 1
    assert effective_jurors(3, 0.5) == pytest.approx(1.5)
    assert effective_jurors(7, 0.0) == 7 and effective_jurors(7, 1.0) == pytest.approx(1.0)
    # anti-correlated: K = 3, rho = -0.25: 3 / (1 - .5) = 6
    assert effective_jurors(3, -0.25) == pytest.approx(6.0)


def test_effective_jurors_undefined():
    assert math.isnan(effective_jurors(3, float("nan")))
    assert math.isnan(effective_jurors(3, -0.5))     # 1 + 2 * (-.5) = 0: no such model
    assert math.isnan(effective_jurors(0, 0.1))
