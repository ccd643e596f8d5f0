"""Counts over groups of judgment rows.  :func:`vote_groups`: for each group of rows that share a key,
how many parsed verdicts say A, B and tie, how many rows voted, and the totals of the rows' accounting
columns; :func:`distinct_count` / :func:`n_distinct`: how many distinct values (items, criteria) a group
or a column holds -- the N a table's figures stand on.

This is what a vote over rows needs before its rule is applied (:func:`verdictlab.stats.juries.vote_counts`):
the FLASK aggregate votes over a trial's criterion rows, the ``majority@k`` remedy over blocks of k
repetitions.  Groups are the distinct keys, sorted (missing values last), computed on integer codes of the
key (:func:`verdictlab.stats._frame.group_codes`), never by a loop over rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..core.vocab import VERDICTS
from ._frame import group_codes

#: the vote columns of :func:`vote_groups`: parsed verdicts A, B, tie, in :data:`verdictlab.core.vocab.VERDICTS` order
VOTE_COLUMNS: tuple[str, ...] = tuple(f"votes_{v}" for v in VERDICTS)


def vote_groups(frame: pd.DataFrame, keys: Sequence[str], *, sums: Sequence[str] = (),
                firsts: Sequence[str] = (), latest: Sequence[str] = ()) -> pd.DataFrame:
    """One row per group of ``keys`` (sorted, missing values last): the key, ``votes_A``, ``votes_B``,
    ``votes_tie`` (the rows whose ``verdict`` is that word), ``n_parsed`` (their sum), ``n_votes`` (every
    row of the group, parsed or not), the sum of each column of ``sums`` (read as numbers; NaN when no row has one), the first
    non-missing value of each column of ``firsts`` and the largest of each column of ``latest``, in the
    frame's row order (sort the rows first to choose which comes first)."""
    codes, out = group_codes(frame, list(keys))
    n_groups = len(out)
    verdict = pd.Index(list(VERDICTS), dtype=object).get_indexer(pd.Index(frame["verdict"].astype(object)))
    for k, column in enumerate(VOTE_COLUMNS):
        out[column] = np.bincount(codes[verdict == k], minlength=n_groups).astype(np.int64)
    out["n_parsed"] = out[list(VOTE_COLUMNS)].sum(axis=1).astype(np.int64)
    out["n_votes"] = np.bincount(codes, minlength=n_groups).astype(np.int64)
    if not len(frame):
        return out
    grouped = frame.groupby(codes, sort=True)
    spec = {**{c: "first" for c in firsts}, **{c: "max" for c in latest}}
    if spec:
        taken = grouped.agg(spec).reset_index(drop=True)
        out = pd.concat([out, taken], axis=1)
    if sums:
        numbers = frame[list(sums)].apply(pd.to_numeric, errors="coerce")
        summed = numbers.groupby(codes, sort=True).sum(min_count=1).reset_index(drop=True)
        out = pd.concat([out, summed], axis=1)
    return out


def block_of(rep: pd.Series, k: int) -> np.ndarray:
    """The block of k consecutive repetitions each repetition index falls in: ``rep // k`` (reps 0..k-1
    are block 0)."""
    return (rep.astype(int) // k).to_numpy()


def n_distinct(values: Any) -> int:
    """How many distinct values ``values`` holds (missing values not counted)."""
    return int(pd.Series(values).nunique())


def votes_matrix(groups: pd.DataFrame) -> np.ndarray:
    """The ``(groups, 3)`` matrix of parsed votes A, B, tie of :func:`vote_groups`' frame (what
    :func:`verdictlab.stats.juries.vote_counts` takes)."""
    return groups[list(VOTE_COLUMNS)].to_numpy(dtype=np.int64)


def distinct_count(frame: pd.DataFrame, keys: Sequence[str], column: str) -> pd.DataFrame:
    """One row per group of ``keys`` (sorted; rows with a missing key value are left out): the key and
    ``n_distinct``, how many distinct values of ``column`` the group's rows have (missing values not
    counted)."""
    frame = frame[frame[list(keys)].notna().all(axis=1)]
    codes, out = group_codes(frame, list(keys))
    out["n_distinct"] = (frame[column].groupby(codes, sort=True).nunique().reset_index(drop=True) if len(frame)
                         else pd.Series(dtype=np.int64))
    return out


__all__ = ["VOTE_COLUMNS", "block_of", "distinct_count", "n_distinct", "vote_groups", "votes_matrix"]
