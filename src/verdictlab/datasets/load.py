"""What a dataset loader returns (:class:`DatasetLoad`) and the seeded re-ordering of fixed-order sources.

A leaf module (items and numpy only), so loaders, probes and the registry can all import it without
importing each other.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..core.items import PairItem, PointItem


@dataclass
class DatasetLoad:
    """What a loader read: the items and an account of how it read them."""

    name: str
    items: list[PairItem | PointItem]
    source: str | None = None
    dropped: list[dict[str, Any]] = field(default_factory=list)   # {"row": n, "reason": "..."}
    reordered: bool = False            # fixed-order source re-ordered per item with a seeded RNG
    seed: int | None = None
    notes: list[str] = field(default_factory=list)

    def renamed(self, name: str) -> DatasetLoad:
        """The same load under another dataset name (every item's ``dataset`` too)."""
        return replace(self, name=name, items=[it.model_copy(update={"dataset": name}) for it in self.items])

    def summary(self) -> dict[str, Any]:
        """Items, label distribution, ties, dropped rows and why, response length statistics."""
        labels = Counter("null" if getattr(it, "label", None) is None else str(it.label)
                         for it in self.items)
        out: dict[str, Any] = {
            "dataset": self.name,
            "source": self.source,
            "n_items": len(self.items),
            "labels": dict(sorted(labels.items())),
            "n_ties": labels.get("tie", 0),
            "n_dropped": len(self.dropped),
            "dropped_reasons": dict(Counter(d.get("reason", "?") for d in self.dropped)),
            "reordered": self.reordered,
            "seed": self.seed,
            "notes": list(self.notes),
        }
        pairs = [it for it in self.items if isinstance(it, PairItem)]
        if pairs:
            for side in ("response_a", "response_b"):
                lens = np.array([len(getattr(it, side)) for it in pairs], dtype=float)
                out[f"{side}_chars"] = {"mean": float(lens.mean()), "median": float(np.median(lens)),
                                        "min": int(lens.min()), "max": int(lens.max())}
        points = [it for it in self.items if isinstance(it, PointItem)]
        if points:
            lens = np.array([len(it.response) for it in points], dtype=float)
            out["response_chars"] = {"mean": float(lens.mean()), "median": float(np.median(lens)),
                                     "min": int(lens.min()), "max": int(lens.max())}
            out["kind"] = "point" if not pairs else "mixed"
        categories = Counter(it.category for it in self.items if it.category)
        if categories:
            out["categories"] = dict(sorted(categories.items()))
        return out


def reorder_fixed_pairs(records: Sequence[dict[str, Any]], *, seed: int = 42) -> list[bool]:
    """For fixed-order sources (chosen always first): one seeded coin per record saying whether to
    swap it, so the chosen response lands in position B about half the time."""
    rng = np.random.default_rng(seed)
    return [bool(x) for x in rng.integers(0, 2, size=len(records))]
