"""Re-importing into a run store is never silent.

Before a batch is written, its rows are compared with the judgments already stored for the same
trials (and its items with the stored items of the same dataset and id):

* a trial not in the store is **new** and is inserted;
* a trial stored with the same content is **identical**: nothing to write (the import says so);
* a trial stored with different content is **changed**: the import refuses with the number of
  changed rows and one example, unless ``replace=True`` (``--replace``), which overwrites them and
  says how many.  Changed items are treated the same way (``verdictlab run`` refuses changed items too).

"Content" is what the source said about the trial: :data:`CONTENT_COLUMNS`.  Bookkeeping that
changes with every read of the same source (``created_at``, ``parse_detail`` -- which names the
source row --, ``attempts``, ``cache_hit``, ``prompt_hash``) is not compared, so re-importing a
reordered copy of a file is still a no-op.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.items import ItemError, PairItem, PointItem
from ..store import RunStore

#: the judgment columns compared on re-import (besides the trial key, which is the trial_id)
CONTENT_COLUMNS: tuple[str, ...] = (
    "label", "category", "raw_output", "verdict", "parse_status", "fallback_rule", "scores", "p_a",
    "latency_s", "tokens_in", "tokens_out", "cost_usd", "error", "system_a", "system_b",
)
_KEY_SHOWN = ("judge", "dataset", "item_id", "protocol", "order", "temperature", "rep", "step")


class ReimportError(ItemError):
    """Rows (or items) of an import differ from what the store holds for the same trials."""


@dataclass
class ReimportPlan:
    new: list[dict[str, Any]] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)
    n_identical: int = 0
    example: str | None = None            # the first changed row, described
    items_changed: list[str] = field(default_factory=list)   # "dataset/item_id" of changed items

    def refusal(self, source: str) -> str:
        parts = []
        if self.changed:
            parts.append(f"{len(self.changed)} judgment row(s) differ from the judgments already stored "
                         f"for the same trial, e.g. {self.example}")
        if self.items_changed:
            parts.append(f"{len(self.items_changed)} item(s) differ from the stored items with the same id, "
                         f"e.g. {self.items_changed[0]}")
        return ("refusing to import: " + "; ".join(parts) + f" ({len(self.new)} new, {self.n_identical} "
                "identical).  Nothing was written.  Pass --replace (replace=True) to overwrite them with "
                f"the rows of {source}.")


def _norm(column: str, value: Any) -> Any:
    """A value as the store holds it (scores as sorted JSON, NaN as NULL, bool as 0/1)."""
    if value is None:
        return None
    if column == "scores" and isinstance(value, dict):
        return json.dumps(value, sort_keys=True) if value else None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=0.0)
    return a == b


def _describe(row: dict[str, Any], stored: dict[str, Any]) -> str:
    key = " ".join(f"{k}={row.get(k)!r}" for k in _KEY_SHOWN if row.get(k) not in (None, ""))
    diffs = [f"{c} {stored[c]!r} -> {_norm(c, row.get(c))!r}" for c in CONTENT_COLUMNS
             if not _same(_norm(c, row.get(c)), stored[c])]
    return f"trial ({key}): " + ", ".join(diffs[:3]) + (" ..." if len(diffs) > 3 else "")


def _stored_rows(store: RunStore, trial_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    return {tid: dict(zip(CONTENT_COLUMNS, values, strict=True))
            for tid, values in store.stored_content(trial_ids, CONTENT_COLUMNS).items()}


def _changed_items(store: RunStore, items: Sequence[PairItem | PointItem]) -> list[str]:
    if not items:
        return []
    stored = {(it.dataset, it.item_id): it for it in store.items()}
    out = []
    for it in items:
        prev = stored.get((it.dataset, it.item_id))
        if prev is not None and (type(prev) is not type(it)
                                 or prev.model_dump(exclude={"meta"}) != it.model_dump(exclude={"meta"})):
            out.append(f"{it.dataset}/{it.item_id}")
    return out


def plan_reimport(store: RunStore, rows: Sequence[dict[str, Any]],
                  items: Sequence[PairItem | PointItem] = ()) -> ReimportPlan:
    """Sort ``rows`` into new / identical / changed against ``store`` (see the module docstring)."""
    plan = ReimportPlan(items_changed=_changed_items(store, items))
    if store.count() == 0:
        plan.new = list(rows)
        return plan
    stored = _stored_rows(store, [r["trial_id"] for r in rows])
    for r in rows:
        prev = stored.get(r["trial_id"])
        if prev is None:
            plan.new.append(r)
        elif all(_same(_norm(c, r.get(c)), prev[c]) for c in CONTENT_COLUMNS):
            plan.n_identical += 1
        else:
            if plan.example is None:
                plan.example = _describe(r, prev)
            plan.changed.append(r)
    return plan


def replace_judgments(store: RunStore, rows: Sequence[dict[str, Any]]) -> int:
    """Overwrite the stored judgments of ``rows``' trials with ``rows`` (one transaction)."""
    return store.replace_judgments(rows)
