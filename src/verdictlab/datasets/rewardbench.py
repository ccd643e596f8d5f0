"""RewardBench (Lambert et al. 2024): chosen/rejected pairs over chat, chat-hard, safety and
reasoning subsets.

Source: the hub dataset ``allenai/reward-bench`` (split ``filtered``, 2,985 pairs) or a JSON / JSON Lines
/ Parquet copy.  Records hold ``prompt, chosen, chosen_model, rejected, rejected_model, subset, id``.

The source has a FIXED order: ``chosen`` always comes first.  Shown as is, every gold label would be
"A" and a judge that always picks the first response would look perfect.  So each pair is re-ordered
with one seeded coin (``reorder_fixed_pairs``, default seed 42): heads puts the rejected response in
position A and the label becomes "B".  The load records ``reordered=True`` and the seed, and each
item's ``meta["swapped"]`` says which way its coin fell.  ``reorder=False`` keeps the source order
(for diagnostics only; the summary then warns that every label is "A").
"""

from __future__ import annotations

from typing import Any

from ..core.items import PairItem, make_pair_item
from ._common import check_no_options, check_unique, finish, get_field, get_str
from .hub import source_rows
from .registry import DatasetLoad, reorder_fixed_pairs

HUB_ID = "allenai/reward-bench"


def load_rewardbench(path: str | None = None, *, hub: str | None = None, split: str = "filtered",
                     seed: int = 42, reorder: bool = True, subsets: list[str] | None = None,
                     dataset: str | None = None, limit: int | None = None,
                     **options: Any) -> DatasetLoad:
    check_no_options("rewardbench", options)
    src, rows = source_rows(path, hub, loader="rewardbench", split=split)
    name = dataset or "rewardbench"
    parsed = []
    for row, rec in rows:
        parsed.append((row, {
            "id": get_field(rec, "id", path=src, row=row),
            "prompt": get_str(rec, "prompt", path=src, row=row),
            "chosen": get_str(rec, "chosen", path=src, row=row),
            "rejected": get_str(rec, "rejected", path=src, row=row),
            "subset": get_str(rec, "subset", path=src, row=row, default=None),
            "chosen_model": rec.get("chosen_model"), "rejected_model": rec.get("rejected_model")}))
    # The coins are drawn over the whole source, before any subset filter, so an item's order does
    # not depend on which other subsets were asked for.
    swaps = reorder_fixed_pairs([r for _, r in parsed], seed=seed) if reorder else [False] * len(parsed)
    items: list[PairItem] = []
    kept_rows: list[int] = []
    for (row, r), swap in zip(parsed, swaps, strict=True):
        if subsets is not None and r["subset"] not in subsets:
            continue
        a, b = (r["rejected"], r["chosen"]) if swap else (r["chosen"], r["rejected"])
        items.append(make_pair_item(
            {"item_id": r["id"], "dataset": name, "question": r["prompt"], "response_a": a,
             "response_b": b, "label": "B" if swap else "A", "category": r["subset"],
             "meta": {"source": "reward-bench", "id": r["id"], "swapped": swap,
                      "chosen_model": r["chosen_model"], "rejected_model": r["rejected_model"]}},
            path=src, row=row))
        kept_rows.append(row)
    check_unique(items, path=src, rows=kept_rows)
    notes = [f"fixed-order source (chosen first) re-ordered per item with seed {seed}" if reorder
             else "reorder=False: source order kept, so EVERY label is 'A' (position-biased judges "
                  "will look accurate)"]
    if subsets is not None:
        notes.append(f"subsets: {', '.join(subsets)}")
    return finish(name, list(items), source=src, notes=notes, reordered=reorder,
                  seed=seed if reorder else None, limit=limit)
