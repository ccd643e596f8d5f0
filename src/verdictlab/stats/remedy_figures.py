"""The reliability figures of the remedies (derived protocols) straight from the base rows' integer codes.

:mod:`verdictlab.analyses.remedies` derives whole judgment frames (every column, trial ids, texts) so a
remedy's rows can be stored, exported and read like any run's.  A cell's figures need much less: per
derived row its cell, item, order, repetition, verdict and label.  :func:`remedy_reliability` codes the
base rows once (:class:`CodedRows`), derives each remedy's coded rows by the verdict rules of
:mod:`verdictlab.stats.remedies` and :func:`verdictlab.stats.juries.vote_codes`, and gives each the
figures of :func:`verdictlab.stats.reliability.coded_reliability` -- the same numbers as
``reliability(derive(base, remedy))``, row order included: the derived rows come in the order the
derived frame has them (a pair's label is read from its first row).

* order-combining remedies (``both-orders``, ``both-orders-vote``, ``order-average``): per (cell, item,
  rep) key the first AB row and the first BA row, in the order of the AB rows; AB rows first, then the
  BA rows, both carrying the pair's combined verdict.  ``order-average`` pairs only rows with a P(A).
* ``majority@k``: blocks of k consecutive repetitions per (cell, item, order), in the sorted order of
  their keys; a block's label is its first known label (repetitions in ascending order); incomplete
  blocks are dropped.

Remedies chain left to right (``majority@3+both-orders``) as they do for frames.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import CELL_KEY
from ._frame import (
    N_CODES,
    UNPARSED,
    combine,
    label_codes,
    order_codes,
    verdict_codes,
)
from .juries import default_quorum, vote_codes
from .reliability import cell_and_item_codes, coded_reliability
from .remedies import both_orders_codes, both_orders_vote_codes, order_average_codes

__all__ = ["CodedRows", "coded_rows", "coded_order_pairs", "derived_rows", "remedy_reliability"]

_MAJORITY = re.compile(r"^majority@(\d+)$")
#: label code of a row whose label is missing (``majority@k`` takes a block's first known label)
NO_LABEL = -2


@dataclass(frozen=True)
class CodedRows:
    """Judgment rows as integer codes: ``cell`` (row of the cell frame), ``item`` (codes in the items'
    sorted order), ``order`` (0 AB, 1 BA), ``rep`` (the repetition number), ``vcode`` (0 A, 1 B, 2 tie,
    3 unparsed), ``label`` (0 A, 1 B, -1 tie or other, -2 missing) and ``p_a`` (NaN when unknown)."""

    cell: np.ndarray
    item: np.ndarray
    order: np.ndarray
    rep: np.ndarray
    vcode: np.ndarray
    label: np.ndarray
    p_a: np.ndarray

    def take(self, at: np.ndarray) -> CodedRows:
        """The rows at positions (or where the mask is true) ``at``, in that order."""
        return CodedRows(*(getattr(self, f.name)[at] for f in fields(self)))

    def __len__(self) -> int:
        return len(self.cell)


def coded_rows(judgments: pd.DataFrame, *, by: Sequence[str] = CELL_KEY) -> tuple[pd.DataFrame, CodedRows]:
    """``(cells, rows)``: the frame of the cells (cell code g is its row g; the cells of
    :func:`verdictlab.stats.reliability`, sorted by key) and the rows' codes."""
    judgments, cell, cells, item = cell_and_item_codes(judgments, by)
    n = len(judgments)
    label = np.where(judgments["label"].isna().to_numpy(), NO_LABEL, label_codes(judgments["label"]))
    p_a = (pd.to_numeric(judgments["p_a"], errors="coerce").to_numpy(float) if "p_a" in judgments.columns
           else np.full(n, np.nan))
    rows = CodedRows(cell=cell, item=item,
                     order=order_codes(judgments["order"]) if n else np.zeros(0, dtype=np.int64),
                     rep=judgments["rep"].to_numpy(np.int64), vcode=verdict_codes(judgments["verdict"]) if n
                     else np.zeros(0, dtype=np.int64), label=label.astype(np.int64), p_a=p_a)
    return cells, rows


def coded_order_pairs(rows: CodedRows) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the first AB and the first BA row of every (cell, item, rep) judged in both orders,
    aligned pair by pair in the order of the AB rows."""
    if not len(rows):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    key = combine(rows.cell, rows.item, rows.rep - rows.rep.min())
    n_keys = int(key.max()) + 1
    first = []
    for o in (0, 1):
        at = np.flatnonzero(rows.order == o)
        of_key = np.full(n_keys, -1, dtype=np.int64)
        of_key[key[at][::-1]] = at[::-1]                  # the first row of each key in this order
        first.append(of_key)
    ab = np.sort(first[0][first[0] >= 0])
    match = first[1][key[ab]]
    both = match >= 0
    return ab[both], match[both]


def _both_order_rows(rows: CodedRows, ab: np.ndarray, ba: np.ndarray, vcode: np.ndarray,
                     p_a: np.ndarray | None = None) -> CodedRows:
    """The derived rows of an order-combining remedy: the AB rows then the BA rows, each pair's two rows
    carrying its combined verdict (and P(A))."""
    at = np.concatenate([ab, ba])
    n = len(ab)
    return CodedRows(cell=rows.cell[at], item=rows.item[at], order=np.repeat(np.array([0, 1], dtype=np.int64), n),
                     rep=rows.rep[at], vcode=np.concatenate([vcode, vcode]), label=rows.label[at],
                     p_a=np.full(2 * n, np.nan) if p_a is None else np.concatenate([p_a, p_a]))


def _rep_order(rep: np.ndarray) -> np.ndarray:
    """Positions sorted by repetition, ties in row order (a radix sort when the repetitions are small)."""
    small = bool(len(rep)) and int(rep.min()) >= 0 and int(rep.max()) < np.iinfo(np.int16).max
    return np.argsort(rep.astype(np.int16) if small else rep, kind="stable")


def _majority_rows(rows: CodedRows, k: int, quorum: int | None, tie_rule: str) -> CodedRows:
    """The ``majority@k`` rows: one per complete block of k repetitions."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if not len(rows):
        return rows
    block_no = rows.rep // k
    # the block codes do not depend on the row order: sorted as the block keys sort
    block = combine(rows.cell, rows.item, rows.order, block_no - block_no.min())
    n_blocks = int(block.max()) + 1
    counts = np.bincount(block * N_CODES + rows.vcode, minlength=n_blocks * N_CODES).reshape(n_blocks, N_CODES)
    first = np.zeros(n_blocks, dtype=np.int64)
    first[block[::-1]] = np.arange(len(rows))[::-1]                      # a row of each block
    by_rep = _rep_order(rows.rep)
    known = by_rep[rows.label[by_rep] != NO_LABEL]                       # known labels, repetitions ascending
    label = np.full(n_blocks, NO_LABEL, dtype=np.int64)
    label[block[known][::-1]] = rows.label[known][::-1]                  # the first known label
    keep = counts.sum(axis=1) == k                                       # incomplete blocks dropped
    verdict, _ = vote_codes(counts[keep, :UNPARSED], quorum=quorum or default_quorum(k), tie_rule=tie_rule)
    at = first[keep]
    return CodedRows(cell=rows.cell[at], item=rows.item[at], order=rows.order[at], rep=block_no[at],
                     vcode=np.where(verdict < 0, UNPARSED, verdict), label=label[keep],
                     p_a=np.full(len(at), np.nan))


def derived_rows(rows: CodedRows, remedy: str, *, quorum: int | None = None, tie_rule: str = "tie",
                 pairs: tuple[np.ndarray, np.ndarray] | None = None) -> CodedRows:
    """The coded rows of ``remedy`` (``both-orders``, ``both-orders-vote``, ``order-average``,
    ``majority@K`` or a ``+`` chain of them) derived from ``rows``; ``pairs``: the order pairs of
    ``rows`` when known (:func:`coded_order_pairs`)."""
    out = rows
    for i, part in enumerate(remedy.split("+")):
        m = _MAJORITY.match(part)
        if part in ("both-orders", "both-orders-vote"):
            ab, ba = pairs if pairs is not None and i == 0 else coded_order_pairs(out)
            rule = both_orders_codes if part == "both-orders" else both_orders_vote_codes
            out = _both_order_rows(out, ab, ba, rule(out.vcode[ab], out.vcode[ba]))
        elif part == "order-average":
            out = out.take(~np.isnan(out.p_a))
            ab, ba = coded_order_pairs(out)
            p, vcode = order_average_codes(out.p_a[ab], out.p_a[ba])
            out = _both_order_rows(out, ab, ba, vcode, p)
        elif m:
            out = _majority_rows(out, int(m.group(1)), quorum, tie_rule)
        else:
            raise ValueError(f"unknown remedy {part!r}; known: both-orders, both-orders-vote, order-average, "
                             "majority@K")
    return out


def remedy_reliability(judgments: pd.DataFrame, remedies: Sequence[str], *, policy: FigurePolicy = DEFAULT_POLICY,
                       q: float | str = "auto", quorum: int | None = None,
                       tie_rule: str = "tie", by: Sequence[str] = CELL_KEY) -> list[tuple[str, pd.DataFrame]]:
    """``(remedy, figures)`` of the base rows (remedy ``"none"``) and of each remedy: the figure rows of
    :func:`verdictlab.stats.reliability` (no bootstrap) of the cells the remedy has rows in, keyed by
    the base cell (the derived protocol's base protocol).  ``judgments``: base rows of one step each."""
    cells, rows = coded_rows(judgments, by=by)
    # the order pairs of the base rows, found once for the remedies that start by combining them
    pairs = coded_order_pairs(rows) if any(r.split("+")[0] in ("both-orders", "both-orders-vote") for r in remedies) else None
    out = []
    for remedy in ("none", *remedies):
        d = rows if remedy == "none" else derived_rows(rows, remedy, quorum=quorum, tie_rule=tie_rule, pairs=pairs)
        label = np.where(d.label < 0, -1, d.label)
        out.append((remedy, coded_reliability(cells, d.cell, d.item, d.order, d.vcode, label, d.rep,
                                              policy=policy.but(n_bootstrap=0), q=q)))
    return out
