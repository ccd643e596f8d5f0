"""How the generated test cases of a run stand with the people curating them, counted.

A case is one perturbed item (``meta["perturbation"]``): written by a rule (``deterministic``: counts
in the figures as written) or by a model (counts once a person accepted it).  Per group (default
dataset, kind, class and origin), :func:`curation_counts` gives:

* ``n_cases``: every case the run holds;
* ``n_accepted`` / ``n_rejected``: cases whose last decision accepted / rejected them;
* ``n_edited``: cases a person edited at least once (an edited case is also accepted, rejected or
  pending, by its last decision);
* ``n_pending``: model-written cases no decision counts yet (status ``generated`` or ``edited``);
* ``n_counted``: cases that enter the figures (deterministic ones, and accepted ones).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ..core.vocab import CurationStatus

__all__ = ["CURATION_COUNT_COLUMNS", "curation_counts"]

CURATION_COUNT_COLUMNS: tuple[str, ...] = ("n_cases", "n_accepted", "n_rejected", "n_edited", "n_pending", "n_counted")


def curation_counts(cases: pd.DataFrame, *, by: Sequence[str] = ("dataset", "kind", "class", "origin")) -> pd.DataFrame:
    """Counts per group of a frame with one row per case: the ``by`` columns, ``origin``, ``status``
    (a :class:`~verdictlab.core.vocab.CurationStatus` value) and ``edited`` (bool); columns ``by`` then
    :data:`CURATION_COUNT_COLUMNS`, groups in sorted order.  An empty frame gives no rows."""
    keys = list(by)
    if cases.empty:
        return pd.DataFrame(columns=[*keys, *CURATION_COUNT_COLUMNS])
    model = cases["origin"] == "model"
    flags = pd.DataFrame({
        **{k: cases[k] for k in keys},
        "n_cases": 1,
        "n_accepted": (model & (cases["status"] == CurationStatus.ACCEPTED)).astype(int),
        "n_rejected": (model & (cases["status"] == CurationStatus.REJECTED)).astype(int),
        "n_edited": cases["edited"].astype(bool).astype(int),
        "n_pending": (model & cases["status"].isin([CurationStatus.GENERATED, CurationStatus.EDITED])).astype(int),
        "n_counted": (~model | (cases["status"] == CurationStatus.ACCEPTED)).astype(int),
    })
    out = flags.groupby(keys, sort=True, dropna=False)[list(CURATION_COUNT_COLUMNS)].sum().reset_index()
    return out[[*keys, *CURATION_COUNT_COLUMNS]]
