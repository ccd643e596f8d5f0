"""LLMBar (Zeng et al., ICLR 2024): instruction-following pairs with an objectively better output.

Source: a split file (``Natural.json``, ``Adversarial_Neighbor.json`` ...) or a folder holding them
(``Natural.json`` first, then ``Adversarial_*.json`` in name order), or the LLMBar repository's
``Dataset/LLMBar`` folder (``Natural/dataset.json``, ``Adversarial/Neighbor/dataset.json`` ...).  Each file is a JSON list of
``{"input", "output_1", "output_2", "label"}`` with ``label`` 1 or 2 (no ties).

Mapping: ``output_1`` -> ``response_a``, ``output_2`` -> ``response_b``, label 1 -> ``"A"``,
2 -> ``"B"``; ``category`` = split name (file stem); ``item_id`` = ``"<split>-<index>"`` with the
0-based position in the file (``"Natural-0"``), stable across versions of verdictlab and shared with
the LLMBar importer so imported and fresh runs line up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.items import ItemError, PairItem, make_pair_item
from ._common import (
    as_int_choice,
    check_no_options,
    check_unique,
    finish,
    get_str,
    read_records,
    require_path,
)
from .registry import DatasetLoad

LABELS = {1: "A", 2: "B"}


def split_name(path: Path) -> str:
    """The split a file holds: its stem (``Natural.json``), or for the repository layout
    (``.../Natural/dataset.json``, ``.../Adversarial/Neighbor/dataset.json``) the folder names."""
    if path.name != "dataset.json":
        return path.stem
    parent = path.parent
    if parent.parent.name == "Adversarial":
        return f"Adversarial_{parent.name}"
    return parent.name


def split_files(path: Path) -> list[tuple[str, Path]]:
    """``(split, file)`` of an LLMBar folder, Natural first, then the others in name order.  Flat
    split files (``Natural.json`` ...) or the repository layout (``<split>/dataset.json``)."""
    files = [f for f in path.glob("*.json") if not f.name.endswith(".result.json")]
    if not files:
        files = [f for f in path.rglob("dataset.json") if "evaluators" not in f.parts]
    if not files:
        raise ItemError("no LLMBar split files (*.json or <split>/dataset.json) in this folder",
                        path=str(path))
    named = [(split_name(f), f) for f in files]
    return sorted(named, key=lambda sf: (sf[0] != "Natural", sf[0]))


def records_to_items(rows: list[tuple[int, dict[str, Any]]], *, split: str, path: str,
                     dataset: str) -> list[PairItem]:
    items: list[PairItem] = []
    for index, (row, rec) in enumerate(rows):
        question = get_str(rec, "input", path=path, row=row)
        a = get_str(rec, "output_1", path=path, row=row)
        b = get_str(rec, "output_2", path=path, row=row)
        if "label" not in rec:
            raise ItemError("missing required field", path=path, row=row, field="label")
        label = LABELS[as_int_choice(rec["label"], LABELS, path=path, row=row, field="label")]
        items.append(make_pair_item(
            {"item_id": f"{split}-{index}", "dataset": dataset, "question": question,
             "response_a": a, "response_b": b, "label": label, "category": split,
             "meta": {"source": "llmbar", "split": split, "index": index}},
            path=path, row=row))
    return items


def load_llmbar(path: str | None, *, dataset: str | None = None, splits: list[str] | None = None,
                limit: int | None = None, **options: Any) -> DatasetLoad:
    """Load one LLMBar split file or a folder of them (``splits`` picks some by name)."""
    check_no_options("llmbar", options)
    p = require_path(path, "llmbar")
    name = dataset or "llmbar"
    files = split_files(p) if p.is_dir() else [(split_name(p), p)]
    if splits is not None:
        wanted = set(splits)
        unknown = wanted - {s for s, _ in files}
        if unknown:
            raise ItemError(f"unknown LLMBar split(s) {sorted(unknown)}; found "
                            f"{[s for s, _ in files]}", path=str(p), field="splits")
        files = [(s, f) for s, f in files if s in wanted]
    items: list[PairItem] = []
    for split, f in files:
        items.extend(records_to_items(read_records(f), split=split, path=str(f), dataset=name))
    check_unique(items, path=str(p))
    notes = [f"splits: {', '.join(s for s, _ in files)}"]
    return finish(name, list(items), source=str(p), notes=notes, limit=limit)
