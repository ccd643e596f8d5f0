"""The packaged demo dataset: 28 short hand-written pairs with gold labels.

Categories: factual correctness, arithmetic, instruction following (format / length constraints),
verbose-but-wrong vs terse-and-right, and near-ties whose better answer is only slightly better
(the pairs where a position-biased judge shows it).  The better answer sits in position A in 14
pairs and in position B in the other 14.
"""

from __future__ import annotations

from collections import defaultdict
from importlib import resources
from typing import Any

from ..core.items import ItemError
from .jsonl import load_jsonl
from .registry import DatasetLoad


def demo_path() -> str:
    return str(resources.files("verdictlab").joinpath("data/demo.jsonl"))


def load_demo(path: str | None = None, *, pairs: int | None = None, **options: Any) -> DatasetLoad:
    """Load the demo pairs (``path`` overrides the packaged file).

    ``pairs=N`` keeps N pairs chosen round-robin over the categories in file order, each time
    taking the category's next pair whose better answer sits in the position chosen less so far (so
    a small subset still spans every category with balanced labels); the load notes say so."""
    options.setdefault("dataset", "demo")
    load = load_jsonl(path or demo_path(), **options)
    if pairs is not None:
        if not isinstance(pairs, int) or isinstance(pairs, bool) or pairs < 1:
            raise ItemError(f"pairs must be a positive integer, got {pairs!r}", path=load.source, field="pairs")
        if pairs < len(load.items):
            by_cat: dict[str, list[Any]] = defaultdict(list)
            for it in load.items:
                by_cat[it.category or ""].append(it)
            queues = list(by_cat.values())
            chosen: list[Any] = []
            while len(chosen) < pairs:
                for q in queues:
                    if q and len(chosen) < pairs:
                        n_a = sum(it.label == "A" for it in chosen)
                        want = "A" if n_a <= len(chosen) - n_a else "B"
                        k = next((i for i, it in enumerate(q) if it.label == want), 0)
                        chosen.append(q.pop(k))
            keep = {it.item_id for it in chosen}
            load.items = [it for it in load.items if it.item_id in keep]
            load.notes.append(f"kept {pairs} of the demo pairs, round-robin over categories")
    return load
