"""The probes table: how often a verdict moves when a probe (a dataset transform of
:mod:`verdictlab.datasets.probes`) edits the pairs, matched row by row against the unperturbed
dataset.  Figures: :mod:`verdictlab.stats.probes` (``changed``, accuracy on each side, and for padding
and injection the movement toward the changed response); unparsed verdicts follow the report's policy.

One row per probed cell: its ``dataset`` is the probe's dataset (a cell of the run), ``base_dataset``
the unperturbed one it is matched against.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import CELL_KEY
from ..datasets.probes import META_AWARE_PROTOCOLS
from ..stats import with_cell_columns
from ..stats.probes import match_probe_rows, probe_shift
from . import AnalysisInput, register

__all__ = ["PROBE_TABLE_COLUMNS", "probe_datasets", "probe_table", "trial_rows"]

#: the probes that favour one side of the pair (their items carry ``meta["probe_side"]``)
SIDED_PROBES: tuple[str, ...] = ("padding", "injection")
PROBE_TABLE_COLUMNS: tuple[str, ...] = (
    "probe", *CELL_KEY, "base_dataset", "n_matched", "changed", "A_base", "A_probe", "moved_toward", "moved_away",
    "bias", "side_share_base", "side_share_probe", "note",
)
_CELL_WITHOUT_DATASET = [c for c in CELL_KEY if c != "dataset"]


def trial_rows(judgments: pd.DataFrame) -> pd.DataFrame:
    """The judgments with the full cell key and ``step`` filled, ready for
    :func:`verdictlab.stats.probes.match_probe_rows`."""
    return with_cell_columns(judgments).assign(step=judgments["step"].fillna("").astype(str),
                                               item_id=judgments["item_id"].astype(str))


def item_metas(items: Any) -> dict[tuple[str, str], dict[str, Any]]:
    """``{(dataset, item_id): meta}`` of the run's items (objects or ``RunStore.items_frame()``)."""
    if isinstance(items, pd.DataFrame):
        return {(d, str(i)): (m if isinstance(m, dict) else {}) for d, i, m in
                zip(items["dataset"], items["item_id"], items["meta"], strict=True)}
    return {(it.dataset, str(it.item_id)): it.meta for it in items}


def probe_datasets(metas: dict[tuple[str, str], dict[str, Any]],
                   probes: tuple[str, ...] | None = None) -> dict[str, tuple[str, str | None]]:
    """``{probe dataset: (probe, base dataset)}`` of the datasets whose items carry ``meta["probe"]``
    (only ``probes`` when given)."""
    out: dict[str, tuple[str, str | None]] = {}
    for (ds, _), m in metas.items():
        if m.get("probe") and ds not in out and (probes is None or m["probe"] in probes):
            out[ds] = (m["probe"], m.get("base_dataset"))
    return out


def probe_table(judgments: pd.DataFrame, items: list[Any] | pd.DataFrame, *,
                policy: FigurePolicy = DEFAULT_POLICY) -> pd.DataFrame:
    """Each probe's figures beside the unperturbed dataset, one row per probed cell (module docstring).

    ``items`` are the run's items (``RunStore.items()``, or ``RunStore.items_frame()``); only
    datasets whose items carry ``meta["probe"]`` are probes."""
    metas = item_metas(items)
    df = trial_rows(judgments)
    rows = []
    for ds, (probe, base) in sorted(probe_datasets(metas).items()):
        p, b = df[df["dataset"] == ds], df[df["dataset"] == base]
        if p.empty or b.empty:
            continue
        m = match_probe_rows(p, b, policy=policy)
        for key, g in m.groupby(_CELL_WITHOUT_DATASET, sort=True):
            cell = dict(zip(_CELL_WITHOUT_DATASET, key, strict=True))
            side = (np.array([metas.get((ds, str(i)), {}).get("probe_side") for i in g["item_id"]], dtype=object)
                    if probe in SIDED_PROBES else None)
            fig = probe_shift(g["verdict_b"], g["verdict_p"], g["label_p"], side=side)
            note = ""
            if probe in ("labels", "granularity") and not str(cell["protocol"]).startswith(META_AWARE_PROTOCOLS):
                note = f"protocol {cell['protocol']!r} ignores the {probe} probe (its prompt does not change)"
            rows.append({"probe": probe, **cell, "dataset": ds, "base_dataset": base, **asdict(fig), "note": note})
    return pd.DataFrame(rows, columns=list(PROBE_TABLE_COLUMNS))


@register("probes", order=50, title="Probes",
          description="Controlled edits of the pairs and how often the verdict moves with them (matched row "
                      "by row against the unperturbed dataset; unparsed verdicts under the report's policy).")
def probes_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    """:func:`probe_table` over the run's pairwise rows and items."""
    if inp.pairs.empty or inp.items is None:
        return None
    return probe_table(inp.pairs, list(inp.items), policy=inp.policy)
