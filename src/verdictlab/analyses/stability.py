"""Anchoring and paraphrase stability: the ``anchoring`` and ``paraphrase`` probes of
:mod:`verdictlab.datasets.probes`, each probed cell matched verdict by verdict (item, order, repetition,
step: :func:`verdictlab.stats.probes.match_probe_rows`) with the same cell on the base dataset.  Figures:
:mod:`verdictlab.stats.stability` -- for anchoring the shift toward the anchor and the
susceptibility with bootstrap intervals over items (and per anchor direction); for paraphrase the
verdict change rate beside the judge's own repetition noise on the base dataset.

Unparsed verdicts: under ``"exclude"`` a matched row with an unparsed side is left out; under
``"wrong"`` an unparsed verdict is a value of its own (it never equals a side, and a parsed verdict
against an unparsed one counts as a change).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import CELL_KEY
from ..stats.group_counts import n_distinct
from ..stats.probes import match_probe_rows
from ..stats.stability import (
    anchor_direction_shifts,
    anchoring_shift,
    change_vs_noise,
    n_changed,
    repetition_disagreement,
)
from . import AnalysisInput, register
from .probes import trial_rows

STABILITY_COLUMNS: tuple[str, ...] = (
    "probe", *CELL_KEY, "base_dataset", "n_matched", "n_items",
    "shift", "shift_lo", "shift_hi", "susceptibility", "susceptibility_lo", "susceptibility_hi",
    "anchor_share_base", "anchor_share_probe", "shift_anchor_a", "shift_anchor_b",
    "change", "change_lo", "change_hi", "noise", "noise_lo", "noise_hi", "n_noise_pairs", "excess",
    "excess_lo", "excess_hi", "excess_p", "source", "note",
)


def _probe_datasets(items: Sequence[Any] | pd.DataFrame) -> dict[str, tuple[str, str | None, dict[str, Any]]]:
    """probe dataset -> (probe, base dataset, {item_id: meta}) for the anchoring / paraphrase probes."""
    recs: Iterable[tuple[Any, Any, Any]]
    if isinstance(items, pd.DataFrame):
        recs = zip(items["dataset"], items["item_id"], items["meta"], strict=True)
    else:
        recs = ((it.dataset, it.item_id, it.meta) for it in items)
    out: dict[str, tuple[str, str | None, dict[str, Any]]] = {}
    for ds, iid, m in recs:
        if isinstance(m, dict) and m.get("probe") in ("anchoring", "paraphrase"):
            out.setdefault(ds, (m["probe"], m.get("base_dataset"), {}))[2][str(iid)] = m
    return out


def _anchor_row(g: pd.DataFrame, metas: dict[str, Any], n_boot: int, seed: int, confidence: float) -> dict[str, Any]:
    side = np.array([metas.get(str(i), {}).get("anchor_side") for i in g["item_id"]], dtype=object)
    vb, vp = g["verdict_b"].to_numpy(object), g["verdict_p"].to_numpy(object)
    r = anchoring_shift(vb, vp, side, g["item_id"].to_numpy(object), n_boot=n_boot, seed=seed, confidence=confidence)
    per_dir = {f"shift_anchor_{d.lower()}": v for d, v in anchor_direction_shifts(vb, vp, side).items()}
    return {"n_items": r.n_items, "shift": r.shift, "shift_lo": r.shift_lo, "shift_hi": r.shift_hi,
            "susceptibility": r.susceptibility, "susceptibility_lo": r.susceptibility_lo,
            "susceptibility_hi": r.susceptibility_hi, "anchor_share_base": r.s_base,
            "anchor_share_probe": r.s_probe, **per_dir}


def _paraphrase_row(g: pd.DataFrame, base_cell: pd.DataFrame, confidence: float) -> dict[str, Any]:
    changed = n_changed(g["verdict_b"], g["verdict_p"])
    diff, pairs = repetition_disagreement(base_cell)
    r = asdict(change_vs_noise(changed, len(g), diff, pairs, confidence=confidence))
    r.pop("n")
    note = "" if pairs else "no repetition noise: run with repetitions >= 2 to tell rewording from noise"
    return {"n_items": n_distinct(g["item_id"]), **r, "note": note}


def stability_table(judgments: pd.DataFrame, items: Sequence[Any] | pd.DataFrame, *,
                    policy: FigurePolicy = DEFAULT_POLICY) -> pd.DataFrame:
    """One row per anchoring / paraphrase probe cell (module docstring)."""
    df = trial_rows(judgments)
    cell_keys = [c for c in CELL_KEY if c != "dataset"]
    rows = []
    for ds, (probe, base, metas) in sorted(_probe_datasets(items).items()):
        p, b = df[df["dataset"] == ds], df[df["dataset"] == base]
        if p.empty or b.empty:
            continue
        m = match_probe_rows(p, b, policy=policy)
        source = next((v.get("paraphrase_source", "") for v in metas.values()), "")
        for key, g in m.groupby(cell_keys, sort=True):
            rec: dict[str, Any] = {c: np.nan for c in STABILITY_COLUMNS}
            rec.update(probe=probe, **dict(zip(cell_keys, key, strict=True)), dataset=ds, base_dataset=base,
                       n_matched=len(g), source=source, note="")
            if probe == "anchoring":
                rec.update(_anchor_row(g, metas, max(policy.n_bootstrap, 1), policy.seed, policy.confidence))
            else:
                same = np.ones(len(b), dtype=bool)
                for c, v in zip(cell_keys, key, strict=True):
                    same &= (b[c] == v).to_numpy()
                rec.update(_paraphrase_row(g, b[same], policy.confidence))
            rows.append(rec)
    return pd.DataFrame(rows, columns=list(STABILITY_COLUMNS))


@register("stability", order=52, title="Anchoring and paraphrase stability",
          description="Anchoring: rise in the share of verdicts for the side a 'previous reviewer' was said to "
                      "prefer (shift, and susceptibility = shift / room to move; bootstrap over items). "
                      "Paraphrase: verdict change rate under a reworded question beside the judge's own "
                      "repetition noise (excess = change - noise).")
def stability_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    items = inp.items if inp.items is not None else inp.items_frame
    if inp.pairs.empty or items is None:
        return None
    t = stability_table(inp.pairs, items, policy=inp.policy.but(n_bootstrap=min(inp.policy.n_bootstrap, 1000)))
    return t if len(t) else None
