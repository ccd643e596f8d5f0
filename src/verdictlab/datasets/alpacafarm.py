"""AlpacaFarm human preference pairs (Dubois et al., NeurIPS 2023).

Source: ``alpaca_human_preference.json`` (a JSON list) or the hub dataset ``tatsu-lab/alpaca_farm``
(config ``alpaca_human_preference``, split ``preference``).  Records hold ``instruction, input,
output_1, output_2, preference`` with preference 1 or 2 (the output the annotator preferred; there
are no ties).

Mapping: ``output_1`` -> ``response_a``, preference 1 -> "A", 2 -> "B"; question = instruction,
followed by the input when there is one; the source has no ids, so ``item_id`` is the 0-based record
position (``"0"``, ``"1"``, ...), stable for a given file.
"""

from __future__ import annotations

from typing import Any

from ..core.items import ItemError, PairItem, make_pair_item
from ._common import as_int_choice, check_no_options, finish, get_str
from .hub import source_rows
from .registry import DatasetLoad

HUB_ID = "tatsu-lab/alpaca_farm"
HUB_CONFIG = "alpaca_human_preference"
LABELS = {1: "A", 2: "B"}


def load_alpacafarm(path: str | None = None, *, hub: str | None = None, split: str = "preference",
                    config: str = HUB_CONFIG, dataset: str | None = None, limit: int | None = None,
                    **options: Any) -> DatasetLoad:
    check_no_options("alpacafarm", options)
    if hub:
        src, rows = source_rows(None, hub, loader="alpacafarm", split=split, config=config)
    else:
        src, rows = source_rows(path, None, loader="alpacafarm", split=split)
    name = dataset or "alpacafarm"
    items: list[PairItem] = []
    for index, (row, rec) in enumerate(rows):
        instruction = get_str(rec, "instruction", path=src, row=row)
        extra = get_str(rec, "input", path=src, row=row, default="")
        if "preference" not in rec:
            raise ItemError("missing required field", path=src, row=row, field="preference")
        pref = as_int_choice(rec["preference"], LABELS, path=src, row=row, field="preference")
        items.append(make_pair_item(
            {"item_id": str(index), "dataset": name,
             "question": f"{instruction}\n\n{extra}" if extra.strip() else instruction,
             "response_a": get_str(rec, "output_1", path=src, row=row),
             "response_b": get_str(rec, "output_2", path=src, row=row),
             "label": LABELS[pref], "meta": {"source": "alpaca_farm", "index": index}},
            path=src, row=row))
    return finish(name, list(items), source=src, limit=limit)
