"""How verdicts move under a probe (a controlled edit of the pairs: a dataset transform), matched row
by row against the unperturbed dataset.

:func:`match_probe_rows` pairs each probed judgment with the judgment of the same trial on the base
dataset (same judge, protocol, temperature, decoding, item, order, repetition and step).  Unparsed
verdicts follow the cell figures' policy: under unparsed ``exclude`` a matched row with an unparsed side is
dropped; under ``wrong`` an unparsed verdict is a value of its own (it equals another unparsed
verdict, never a label or a side).

:func:`probe_shift` gives, over one probed cell's matched rows: ``changed`` (share of matched verdicts
that differ), accuracy on each side (``A_base`` / ``A_probe``, on A/B-labelled rows), and -- for probes
that favour one side (padding, injection) -- ``moved_toward`` (share not on that side before and on it
after), ``moved_away`` (the reverse), ``bias = moved_toward - moved_away`` and the share of verdicts for
the side before and after.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..core.policy import FigurePolicy
from ..core.vocab import DECISIVE
from ._frame import UNPARSED_VALUE

__all__ = ["MATCH_KEY", "ProbeShift", "match_probe_rows", "probe_shift"]

#: what makes a probed judgment and a base judgment the same trial (the dataset aside)
MATCH_KEY: tuple[str, ...] = ("judge", "protocol", "temperature", "decoding", "item_id", "order", "rep", "step")


def match_probe_rows(probe: pd.DataFrame, base: pd.DataFrame, *, policy: FigurePolicy) -> pd.DataFrame:
    """The probe's rows beside the base dataset's rows of the same trial (:data:`MATCH_KEY`), columns
    suffixed ``_p`` / ``_b``, under the unparsed policy (module docstring).  Both frames need every
    :data:`MATCH_KEY` column (``decoding`` and ``step`` filled)."""
    m = probe.merge(base, on=list(MATCH_KEY), suffixes=("_p", "_b"))
    if policy.drops_unparsed:
        return m[m["verdict_p"].notna() & m["verdict_b"].notna()]
    return m.assign(verdict_p=m["verdict_p"].astype(object).where(m["verdict_p"].notna(), UNPARSED_VALUE),
                    verdict_b=m["verdict_b"].astype(object).where(m["verdict_b"].notna(), UNPARSED_VALUE))


@dataclass(frozen=True)
class ProbeShift:
    """The figures of one probed cell (module docstring); NaN when undefined (no labelled row, or no
    favoured side)."""

    n_matched: int
    changed: float
    A_base: float
    A_probe: float
    moved_toward: float = float("nan")
    moved_away: float = float("nan")
    bias: float = float("nan")
    side_share_base: float = float("nan")
    side_share_probe: float = float("nan")


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else float("nan")


def probe_shift(verdict_base: Any, verdict_probe: Any, labels: Any, *, side: Any = None) -> ProbeShift:
    """:class:`ProbeShift` of aligned base verdicts, probed verdicts and labels; ``side`` (per row, the
    canonical side the probe favours) adds the movement toward it."""
    vb, vp = np.asarray(verdict_base, dtype=object), np.asarray(verdict_probe, dtype=object)
    lab = np.asarray(labels, dtype=object)
    labelled = np.isin(lab, DECISIVE)
    out = ProbeShift(len(vb), _mean(vb != vp), _mean(vb[labelled] == lab[labelled]),
                     _mean(vp[labelled] == lab[labelled]))
    if side is None:
        return out
    s = np.asarray(side, dtype=object)
    toward, away = (vb != s) & (vp == s), (vb == s) & (vp != s)
    return ProbeShift(out.n_matched, out.changed, out.A_base, out.A_probe, moved_toward=_mean(toward),
                      moved_away=_mean(away), bias=_mean(toward) - _mean(away), side_share_base=_mean(vb == s),
                      side_share_probe=_mean(vp == s))
