"""The verdict rules of the remedies (derived protocols computed from stored judgments) and what a
remedy changes in a cell's figures.

Each rule maps the verdicts of the calls a derived verdict consumes to that verdict, element-wise
over aligned arrays (one element per pair key; canonical verdicts ``A`` / ``B`` / ``tie``, None =
unparsed):

* :func:`both_orders_verdicts` -- ``both-orders``: the verdict both orders agree on, else ``tie`` (the
  order decided it); unparsed in either order -> unparsed.
* :func:`order_average_verdicts` -- ``order-average``: P(A) averaged over both orders; ``A`` above
  1/2, ``B`` below, ``tie`` at exactly 1/2.
* :func:`both_orders_vote_verdicts` -- ``both-orders-vote`` (JudgeBench): each order votes for its
  verdict, a ``tie`` or an unparsed order abstains, the side with more votes wins, else ``tie``.
* ``majority@k``: the jury vote of :func:`verdictlab.stats.juries.vote_counts`.

:func:`worst_parse_status` is the parse status a combined verdict inherits; :func:`calls_per_verdict`
the calls of the base protocol one derived verdict consumes; :func:`remedy_effects` the change of A,
phi, T and the tie rate against the cell without a remedy.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..core.vocab import PARSE_STATUSES, Verdict
from ._frame import UNPARSED, VERDICT_CODES

__all__ = ["EFFECT_FIGURES", "both_orders_codes", "both_orders_verdicts", "both_orders_vote_codes",
           "both_orders_vote_verdicts", "calls_per_verdict", "order_average_codes", "order_average_verdicts",
           "remedy_effects", "worst_parse_status"]

_MAJORITY = re.compile(r"^majority@(\d+)$")
_RANK = {status: i for i, status in enumerate(PARSE_STATUSES)}   # ok < repaired < fallback < failed
_STATUS = np.array(PARSE_STATUSES, dtype=object)
_TIE_CODE, _UNPARSED_CODE = VERDICT_CODES["tie"], UNPARSED
#: the figures :func:`remedy_effects` compares
EFFECT_FIGURES: tuple[str, ...] = ("A", "phi", "T", "tie_rate")


def worst_parse_status(a: Any, b: Any) -> np.ndarray:
    """Element-wise the worse of two parse statuses (ok < repaired < fallback < failed; a missing
    status is ``failed``)."""
    return _STATUS[np.maximum(_ranks(a), _ranks(b))]


def _ranks(statuses: Any) -> np.ndarray:
    """The rank of each parse status (missing or unknown: ``failed``), looked up once per distinct value."""
    codes, uniques = pd.factorize(np.asarray(statuses, dtype=object), use_na_sentinel=True)
    table = np.array([_RANK.get(u, _RANK["failed"]) for u in uniques] + [_RANK["failed"]], dtype=np.int64)
    return table[codes]      # code -1 (missing) takes the last entry


def both_orders_verdicts(va: Any, vb: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(verdict, parsed, agree)``: the ``both-orders`` verdict of each pair from its AB and BA
    verdicts, and whether both orders were parsed and agreed."""
    a, b = np.asarray(va, dtype=object), np.asarray(vb, dtype=object)
    parsed = pd.notna(a) & pd.notna(b)
    agree = parsed & (a == b)
    verdict = np.full(len(a), None, dtype=object)
    verdict[parsed] = Verdict.TIE.value
    verdict[agree] = a[agree]
    return verdict, parsed, agree


def order_average_verdicts(pa_ab: Any, pa_ba: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(p, verdict)``: P(A) averaged over the two orders (canonical) and the ``order-average``
    verdict it gives."""
    p = (np.asarray(pa_ab, dtype=float) + np.asarray(pa_ba, dtype=float)) / 2.0
    verdict = np.where(p > 0.5, Verdict.A.value, np.where(p < 0.5, Verdict.B.value, Verdict.TIE.value))
    return p, verdict.astype(object)


def both_orders_vote_verdicts(va: Any, vb: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(verdict, n_unparsed)``: the ``both-orders-vote`` verdict of each pair (A + A -> A, A + tie ->
    A, A + unparsed -> A, A + B -> tie, tie + tie -> tie, tie + unparsed -> tie) and how many of its two
    orders were unparsed.  Two unparsed orders give no verdict (None): nothing was read, and a tie there
    made figures (C 1, tie rate 1) for a cell whose every reply was unreadable."""
    a, b = np.asarray(va, dtype=object), np.asarray(vb, dtype=object)
    n_a = (a == "A").astype(int) + (b == "A").astype(int)
    n_b = (a == "B").astype(int) + (b == "B").astype(int)
    n_unparsed = pd.isna(a).astype(int) + pd.isna(b).astype(int)
    verdict = np.where(n_a > n_b, "A", np.where(n_b > n_a, "B", "tie")).astype(object)
    verdict[n_unparsed == 2] = None
    return verdict, n_unparsed


def both_orders_codes(ca: np.ndarray, cb: np.ndarray) -> np.ndarray:
    """:func:`both_orders_verdicts` on verdict codes (0 A, 1 B, 2 tie, 3 unparsed): the agreed code,
    ``2`` (tie) when both orders were parsed and disagree, ``3`` when either is unparsed."""
    a, b = np.asarray(ca, dtype=np.int64), np.asarray(cb, dtype=np.int64)
    parsed = (a < _UNPARSED_CODE) & (b < _UNPARSED_CODE)
    return np.where(parsed & (a == b), a, np.where(parsed, _TIE_CODE, _UNPARSED_CODE))


def both_orders_vote_codes(ca: np.ndarray, cb: np.ndarray) -> np.ndarray:
    """:func:`both_orders_vote_verdicts` on verdict codes: the side (0 A, 1 B) with more votes, else
    ``2`` (tie); ``3`` (unparsed) when neither order was parsed."""
    a, b = np.asarray(ca, dtype=np.int64), np.asarray(cb, dtype=np.int64)
    n_a = (a == 0).astype(int) + (b == 0).astype(int)
    n_b = (a == 1).astype(int) + (b == 1).astype(int)
    voted = np.where(n_a > n_b, 0, np.where(n_b > n_a, 1, _TIE_CODE))
    return np.where((a >= _UNPARSED_CODE) & (b >= _UNPARSED_CODE), _UNPARSED_CODE, voted)


def order_average_codes(pa_ab: Any, pa_ba: Any) -> tuple[np.ndarray, np.ndarray]:
    """:func:`order_average_verdicts` with the verdict as a code (0 A, 1 B, 2 tie)."""
    p = (np.asarray(pa_ab, dtype=float) + np.asarray(pa_ba, dtype=float)) / 2.0
    return p, np.where(p > 0.5, 0, np.where(p < 0.5, 1, _TIE_CODE))


def calls_per_verdict(remedy: str) -> int:
    """Calls of the base protocol one derived verdict consumes: 2 per order-combining remedy,
    k for ``majority@k``, multiplied along a ``+`` chain (``majority@3+both-orders`` -> 6)."""
    n = 1
    for part in remedy.split("+"):
        m = _MAJORITY.match(part)
        n *= int(m.group(1)) if m else 2
    return n


def remedy_effects(cells: pd.DataFrame, base: pd.DataFrame, *, keys: Sequence[str]) -> pd.DataFrame:
    """``cells`` (figures of derived protocols, one row per cell and remedy) with ``d<figure>`` =
    figure - the same cell's figure in ``base`` (the cells without a remedy) for each of
    :data:`EFFECT_FIGURES`, joined on ``keys``; NaN where the base cell lacks the figure."""
    ref = base[[*keys, *EFFECT_FIGURES]].rename(columns={c: f"_{c}_base" for c in EFFECT_FIGURES})
    out = cells.merge(ref, on=list(keys), how="left")
    for c in EFFECT_FIGURES:
        out[f"d{c}"] = pd.to_numeric(out[c], errors="coerce") - pd.to_numeric(out[f"_{c}_base"], errors="coerce")
    return out.drop(columns=[f"_{c}_base" for c in EFFECT_FIGURES])
