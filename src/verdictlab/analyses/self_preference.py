"""Self-preference: own-family preference against the gold rate, and P(prefers own | own wrong) against
P(prefers other | other wrong) (:mod:`verdictlab.stats.self_preference`).

Needs pair items that name the authoring system of each response (``system_a`` / ``system_b`` -- the
item fields, or ``meta["system_a"]`` / ``meta["system_b"]``)
and the judge's model family: ``inp.extra["judge_families"]`` (judge id -> family) when given, else
:func:`judge_family` reads it from the judge id.  A response belongs to the family when the family
name occurs in its system name (case-insensitive), or by ``inp.extra["system_families"]``
(system -> family).  Units are (item, order) with the judge's modal verdict; unparsed verdicts
follow the report's policy (under unparsed ``wrong`` an unparsed unit has no side and is left out here).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import CELL_KEY
from ..stats.drift import unit_frame
from ..stats.self_preference import SelfPreference, family_side, self_preference
from . import AnalysisInput, register

CELL = list(CELL_KEY)
SELF_PREFERENCE_COLUMNS: tuple[str, ...] = (*CELL, "family", *SelfPreference.__dataclass_fields__)


def judge_family(judge_id: str) -> str | None:
    """The model family named by a judge id: ``family=F`` in a sim judge's spec; otherwise the
    leading letters of the model name after the provider (``openai:gpt-4o`` -> ``gpt``,
    ``anthropic:claude-3-5-haiku`` -> ``claude``, ``openai-compatible:meta-llama/Llama-3-8B`` ->
    ``llama``).  None when nothing can be read."""
    m = re.search(r"(?:^|[,:])family=([^,]+)", judge_id)
    if m:
        return m.group(1).strip().lower()
    model = judge_id.split(":", 1)[-1].rsplit("/", 1)[-1].lower()
    if "=" in model:        # a key=value spec (sim judges) names no model; only family= does
        return None
    m = re.match(r"[a-z]+", model)
    return m.group(0) if m else None


def _models(items: Sequence[Any] | pd.DataFrame) -> pd.DataFrame:
    def get(obj: Any, meta: Any, key: str) -> Any:
        v = getattr(obj, key, None) if obj is not None else None
        return v if v is not None else (meta or {}).get(key)

    if isinstance(items, pd.DataFrame):
        recs = [(d, str(i), r.get("system_a") or (m or {}).get("system_a"),
                 r.get("system_b") or (m or {}).get("system_b"))
                for d, i, m, r in zip(items["dataset"], items["item_id"], items["meta"],
                                      items.to_dict("records"), strict=True)]
    else:
        recs = [(it.dataset, str(it.item_id), get(it, it.meta, "system_a"), get(it, it.meta, "system_b"))
                for it in items]
    out = pd.DataFrame(recs, columns=["dataset", "item_id", "system_a", "system_b"])
    return out[out["system_a"].notna() & out["system_b"].notna()]


def self_preference_table(judgments: pd.DataFrame, items: Sequence[Any] | pd.DataFrame, *,
                   judge_families: Mapping[str, str] | None = None,
                   system_families: dict[str, str] | None = None,
                   policy: FigurePolicy = DEFAULT_POLICY) -> pd.DataFrame:
    """One row per cell whose judge has a family and whose items include own-vs-other pairs."""
    models = _models(items)
    if models.empty or judgments.empty:
        return pd.DataFrame(columns=list(SELF_PREFERENCE_COLUMNS))
    units = unit_frame(judgments, by=CELL, policy=policy).drop(columns=["system_a", "system_b"], errors="ignore")
    units = units.merge(models, on=["dataset", "item_id"])
    rows = []
    for key, g in units.groupby(CELL, sort=True):
        cell = dict(zip(CELL, key, strict=True))
        fam = (judge_families or {}).get(str(cell["judge"])) or judge_family(str(cell["judge"]))
        if not fam:
            continue
        own = family_side(g["system_a"], g["system_b"], fam, system_family=system_families)
        sub = g.assign(own_side=own)
        sub = sub[pd.notna(sub["own_side"])]
        if sub.empty:
            continue
        rows.append({**cell, "family": fam, **asdict(self_preference(sub, confidence=policy.confidence))})
    return pd.DataFrame(rows, columns=list(SELF_PREFERENCE_COLUMNS))


@register("self_preference", order=72, title="Self-preference",
          description="Pairs where one response is the judge's own model family's: how often it picks its own "
                      "against the gold rate, and P(picks own | own is wrong) vs P(picks other | other is "
                      "wrong) -- 'harm' is their difference (Newcombe interval, two-proportion test).")
def self_preference_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    items = inp.items if inp.items is not None else inp.items_frame
    if items is None:
        return None
    t = self_preference_table(inp.pairs, items, judge_families=inp.extra.get("judge_families"),
                       system_families=inp.extra.get("system_families"), policy=inp.policy)
    return t if len(t) else None
