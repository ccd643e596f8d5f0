"""Probe analyses: how often a verdict moves when a probe (a dataset transform of
:mod:`verdictlab.probes`) edits the pairs, matched row by row against the unperturbed dataset.

Each probed (judge, protocol, temperature) cell is matched row by row (item, order, repetition, step)
with the same cell on the base dataset.  For every probe: ``changed`` (share of matched verdicts that
differ) and accuracy on each side (``A_base`` / ``A_probe``).  For padding and injection:
``moved_toward`` = share of matched verdicts that were not the changed response before and are after,
``moved_away`` the reverse, and ``bias = moved_toward - moved_away``.

Unparsed verdicts follow the cell figures' policy: ``unparsed="exclude"`` (default) leaves a matched
row out when either side is unparsed; ``"wrong"`` keeps it, an unparsed verdict being a value of its
own (it equals another unparsed verdict, never a label or a side).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..datasets.probes import META_AWARE_PROTOCOLS
from ..vocab import DEFAULT_UNPARSED, UnparsedPolicy, check_unparsed
from . import AnalysisInput, register

_UNPARSED = "\x00unparsed"


_MATCH = ["judge", "protocol", "temperature", "item_id", "order", "rep", "step"]


def match_probe_rows(probe: pd.DataFrame, base: pd.DataFrame, *, unparsed: str) -> pd.DataFrame:
    """The probe's rows beside the base dataset's rows of the same trial (judge, protocol, temperature,
    item, order, rep, step), columns suffixed ``_p`` / ``_b``.  Under ``exclude`` a pair with an
    unparsed verdict on either side is dropped; under ``wrong`` unparsed is a value of its own."""
    m = probe.merge(base, on=_MATCH, suffixes=("_p", "_b"))
    if unparsed == UnparsedPolicy.EXCLUDE:
        return m[m["verdict_p"].notna() & m["verdict_b"].notna()]
    return m.assign(verdict_p=m["verdict_p"].astype(object).where(m["verdict_p"].notna(), _UNPARSED),
                    verdict_b=m["verdict_b"].astype(object).where(m["verdict_b"].notna(), _UNPARSED))
PROBE_TABLE_COLUMNS: tuple[str, ...] = (
    "probe", "dataset", "base_dataset", "judge", "protocol", "temperature", "n_matched", "changed",
    "A_base", "A_probe", "moved_toward", "moved_away", "bias", "side_share_base", "side_share_probe", "note",
)


def probe_table(judgments: pd.DataFrame, items: list[Any] | pd.DataFrame, *,
                unparsed: str = DEFAULT_UNPARSED) -> pd.DataFrame:
    """Each probe's figures beside the unperturbed dataset (see the module docstring).

    ``items`` are the run's items (``RunStore.items()``, or ``RunStore.items_frame()``); only
    datasets whose items carry ``meta["probe"]`` are probes.  ``unparsed``: see the module docstring."""
    check_unparsed(unparsed)
    if isinstance(items, pd.DataFrame):
        metas = {(d, str(i)): (m if isinstance(m, dict) else {}) for d, i, m in
                 zip(items["dataset"], items["item_id"], items["meta"], strict=True)}
    else:
        metas = {(it.dataset, str(it.item_id)): it.meta for it in items}
    probe_ds = {}
    for (ds, _), m in metas.items():
        if m.get("probe") and ds not in probe_ds:
            probe_ds[ds] = (m["probe"], m.get("base_dataset"))
    df = judgments.copy()
    df["step"] = df["step"].fillna("").astype(str)
    rows = []
    for ds, (probe, base) in sorted(probe_ds.items()):
        p = df[df["dataset"] == ds]
        b = df[df["dataset"] == base]
        if p.empty or b.empty:
            continue
        m = match_probe_rows(p, b, unparsed=unparsed)
        for (judge, proto, temp), g in m.groupby(["judge", "protocol", "temperature"]):
            n = len(g)
            lab = g["label_p"].isin(["A", "B"])
            rec = {"probe": probe, "dataset": ds, "base_dataset": base, "judge": judge, "protocol": proto,
                   "temperature": temp, "n_matched": n, "changed": float((g["verdict_p"] != g["verdict_b"]).mean()),
                   "A_base": float((g.loc[lab, "verdict_b"] == g.loc[lab, "label_p"]).mean()) if lab.any() else np.nan,
                   "A_probe": float((g.loc[lab, "verdict_p"] == g.loc[lab, "label_p"]).mean()) if lab.any() else np.nan,
                   "moved_toward": np.nan, "moved_away": np.nan, "bias": np.nan,
                   "side_share_base": np.nan, "side_share_probe": np.nan, "note": ""}
            if probe in ("padding", "injection"):
                side = np.array([metas.get((ds, str(i)), {}).get("probe_side") for i in g["item_id"]], dtype=object)
                vb, vp = g["verdict_b"].to_numpy(object), g["verdict_p"].to_numpy(object)
                toward = (vb != side) & (vp == side)
                away = (vb == side) & (vp != side)
                rec.update(moved_toward=float(toward.mean()), moved_away=float(away.mean()),
                           bias=float(toward.mean() - away.mean()), side_share_base=float((vb == side).mean()),
                           side_share_probe=float((vp == side).mean()))
            elif probe in ("labels", "granularity") and not str(proto).startswith(META_AWARE_PROTOCOLS):
                rec["note"] = f"protocol {proto!r} ignores the {probe} probe (its prompt does not change)"
            rows.append(rec)
    return pd.DataFrame(rows, columns=list(PROBE_TABLE_COLUMNS))


@register("probes", order=50, title="Probes",
          description="Controlled edits of the pairs and how often the verdict moves with them (matched row "
                      "by row against the unperturbed dataset; unparsed verdicts under the report's policy).")
def probes_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    """:func:`probe_table` over the run's pairwise rows and items."""
    if inp.pairs.empty or inp.items is None:
        return None
    return probe_table(inp.pairs, list(inp.items), unparsed=inp.unparsed)
