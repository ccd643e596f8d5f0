"""JudgeBench (Tan et al., ICLR 2025): hard response pairs whose label is objective correctness.

Source: the JSON Lines files of the JudgeBench repository
(``data/dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl``) or the hub dataset
``ScalerLab/JudgeBench`` (splits ``gpt`` and ``claude``).  Records hold ``pair_id, original_id,
source, question, response_model, response_A, response_B, label`` with label ``"A>B"`` or ``"B>A"``
(``"A=B"`` is read as a tie should it appear).

Mapping: ``response_A`` -> ``response_a``; ``item_id`` = ``pair_id``; ``category`` = ``source``
(e.g. ``mmlu-pro-law``, ``livebench-reasoning``).
"""

from __future__ import annotations

from typing import Any

from ..core.items import ItemError, PairItem, make_pair_item
from ._common import check_no_options, check_unique, finish, get_field, get_str
from .hub import source_rows
from .registry import DatasetLoad

LABELS = {"A>B": "A", "B>A": "B", "A=B": "tie", "B=A": "tie"}
HUB_ID = "ScalerLab/JudgeBench"


def load_judgebench(path: str | None = None, *, hub: str | None = None, split: str = "gpt",
                    dataset: str | None = None, limit: int | None = None,
                    **options: Any) -> DatasetLoad:
    check_no_options("judgebench", options)
    src, rows = source_rows(path, hub, loader="judgebench", split=split)
    name = dataset or "judgebench"
    items: list[PairItem] = []
    for row, rec in rows:
        pair_id = get_field(rec, "pair_id", path=src, row=row)
        raw_label = get_field(rec, "label", path=src, row=row)
        if raw_label not in LABELS:
            raise ItemError(f"label must be one of {sorted(LABELS)}, got {raw_label!r}", path=src,
                            row=row, field="label")
        items.append(make_pair_item(
            {"item_id": pair_id, "dataset": name,
             "question": get_str(rec, "question", path=src, row=row),
             "response_a": get_str(rec, "response_A", path=src, row=row),
             "response_b": get_str(rec, "response_B", path=src, row=row),
             "label": LABELS[raw_label], "category": rec.get("source") or None,
             "meta": {"source": "judgebench", "pair_id": pair_id,
                      "original_id": rec.get("original_id"),
                      "response_model": rec.get("response_model")}},
            path=src, row=row))
    check_unique(items, path=src, rows=[r for r, _ in rows])
    return finish(name, list(items), source=src, limit=limit)
