"""Dataset registry: loaders by name, each turning a source into items plus a summary of what it read.

A loader is a function ``(path: str | None, **options) -> DatasetLoad``.  It either loads the whole
source or raises :class:`verdictlab.items.ItemError` naming file, row and field -- nothing is ever
half-loaded.  Loaders register lazily as ``"module:function"`` strings so optional dependencies are
only imported when used.
"""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..items import PairItem, PointItem


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


Loader = Callable[..., DatasetLoad]
_LOADERS: dict[str, str | Loader] = {}
_DESCRIPTIONS: dict[str, str] = {}


def register_loader(name: str, loader: str | Loader, description: str = "") -> None:
    _LOADERS[name] = loader
    _DESCRIPTIONS[name] = description


def dataset_names() -> list[str]:
    return sorted(_LOADERS)


def describe_loaders() -> dict[str, str]:
    return {n: _DESCRIPTIONS.get(n, "") for n in dataset_names()}


def get_loader(name: str) -> Loader:
    loader = _LOADERS.get(name)
    if loader is None:
        raise KeyError(f"unknown dataset {name!r}; known: {', '.join(dataset_names())}")
    if isinstance(loader, str):
        mod, _, attr = loader.partition(":")
        loader = getattr(importlib.import_module(mod), attr)
        _LOADERS[name] = loader
    return loader


def load_dataset(name: str, *, path: str | None = None, **options: Any) -> DatasetLoad:
    """Load a dataset by registry name (``jsonl``, ``llmbar``, ``pandalm``, ``demo`` ...).

    ``probe`` (with optional ``probe_options``) turns the loaded items into a bias probe
    (padding, injection, labels, granularity; see :mod:`verdictlab.probes`)."""
    probe = options.pop("probe", None)
    probe_options = dict(options.pop("probe_options", None) or {})
    load = get_loader(name)(path, **options)
    if probe is not None:
        from ..probes import apply_probe

        probe_options.setdefault("seed", options.get("seed", load.seed if load.seed is not None else 42))
        load = apply_probe(load, probe, **probe_options)
    return load


def reorder_fixed_pairs(records: Sequence[dict[str, Any]], *, seed: int = 42) -> list[bool]:
    """For fixed-order sources (chosen always first): one seeded coin per record saying whether to
    swap it, so the chosen response lands in position B about half the time."""
    rng = np.random.default_rng(seed)
    return [bool(x) for x in rng.integers(0, 2, size=len(records))]
